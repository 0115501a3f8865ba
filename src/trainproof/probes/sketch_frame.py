"""The bytes a dataset sketch travels in between processes: a magic line, a
length-prefixed JSON header (with the length of every array) and the arrays' raw bytes,
little-endian. Parsed, never unpickled: a worker's output is data, not code."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np


def pack(magic: bytes, head: dict[str, object], arrays: Sequence[np.ndarray]) -> bytes:
    """`arrays` are one-dimensional; their dtypes are the reader's to know."""
    h = json.dumps({**head, "sizes": [len(a) for a in arrays]}).encode()
    return b"".join((magic, struct.pack("<I", len(h)), h, *(np.ascontiguousarray(a).tobytes() for a in arrays)))


def peek_head(b: bytes, magic: bytes) -> dict[str, Any]:
    """The header alone, to choose how to read the arrays. Raises ValueError."""
    if not b.startswith(magic):
        raise ValueError("wrong sketch type")
    (hl,) = struct.unpack_from("<I", b, len(magic))
    return json.loads(b[len(magic) + 4:len(magic) + 4 + hl])


def unpack(b: bytes, magic: bytes, dtypes: Sequence[str]) -> tuple[dict[str, Any], list[np.ndarray]]:
    """Header and arrays; the arrays are read-only views of `b` (no copy: an eval index
    is handed to every piece of the dataset). Raises ValueError or struct.error."""
    head = peek_head(b, magic)
    at = len(magic) + 4 + struct.unpack_from("<I", b, len(magic))[0]
    out = []
    for size, dt in zip(head["sizes"], dtypes, strict=True):
        out.append(np.frombuffer(b, dt, int(size), at))
        at += int(size) * np.dtype(dt).itemsize
    if at != len(b):
        raise ValueError("truncated or padded")
    return head, out
