"""Inspects a .safetensors file from its own layout: an 8-byte little-endian header
length, a JSON header of {name: {dtype, shape, data_offsets}}, then the data. The
header must describe the data exactly: offsets in bounds, no overlaps, no gaps, no
trailing bytes, and each tensor's byte length equal to its shape times its itemsize."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from trainproof.parsers.jsonutil import loads
from trainproof.probes.checkpoint_model import FileScan, Integrity, TensorInfo
from trainproof.probes.checkpoint_stats import CHUNK_BYTES, SAFETENSORS_NAMES, Span, count_stream, itemsize

HEADER_CAP = 100_000_000  # the safetensors library's own limit on header size
MAX_DIMS = 64  # more dimensions than any framework allows


class _Bad(Exception):
    def __init__(self, integrity: Integrity, detail: str) -> None:
        super().__init__(detail)
        self.integrity = integrity


def inspect_safetensors(path: Path) -> FileScan:
    size = path.stat().st_size
    scan = FileScan(str(path), "safetensors", Integrity.OK, size=size)
    try:
        with path.open("rb") as fh:
            header, data_start = _header(fh.read, size)
            entries = _entries(header, size - data_start)
            scan.tensors = [t for t, _, _ in entries]
            _count(fh, data_start, entries, scan.path)
    except _Bad as exc:
        scan.integrity, scan.detail = exc.integrity, str(exc)
    return scan


def _header(read, size: int) -> tuple[dict, int]:
    raw = read(8)
    if len(raw) < 8:
        raise _Bad(Integrity.TRUNCATED, f"{len(raw)} bytes: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw)
    if n > HEADER_CAP:
        raise _Bad(Integrity.CORRUPT, f"header length {n} exceeds the format's {HEADER_CAP}-byte limit")
    if 8 + n > size:
        raise _Bad(Integrity.TRUNCATED, f"the header declares {n} bytes but the file has {size - 8} after it")
    try:
        header = loads(read(n))
    except ValueError as exc:  # UnicodeDecodeError, too deep, an integer of 5,000 digits
        raise _Bad(Integrity.CORRUPT, f"header is not JSON: {str(exc)[:200]}") from None
    if not isinstance(header, dict):
        raise _Bad(Integrity.CORRUPT, "header is not a JSON object")
    return header, 8 + n


def _entries(header: dict, data_len: int) -> list[tuple[TensorInfo, int, int]]:
    out = []
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (a, b) = spec["dtype"], _sizes(spec["shape"], MAX_DIMS), spec["data_offsets"]
            a, b = _sizes([a, b], 2)
        except (KeyError, TypeError, ValueError):
            raise _Bad(Integrity.CORRUPT, f"tensor {name!r} has a malformed header entry") from None
        size = itemsize(dtype)
        if size is None:
            raise _Bad(Integrity.CORRUPT, f"tensor {name!r} has unknown dtype {dtype!r}")
        numel = 1
        for d in shape:
            numel *= d
        if b - a != numel * size or a < 0:
            raise _Bad(Integrity.CORRUPT, f"tensor {name!r}: offsets [{a}, {b}) hold {b - a} bytes, "
                       f"shape {list(shape)} x {size} needs {numel * size}")
        if b > data_len:
            raise _Bad(Integrity.TRUNCATED, f"tensor {name!r} ends at data byte {b} but only {data_len} "
                       "are present")
        out.append((TensorInfo(name, SAFETENSORS_NAMES.get(dtype, dtype), shape, numel), a, b))
    _coverage(out, data_len)
    return out


def _sizes(values: list, most: int) -> tuple[int, ...]:
    """Whole numbers in [0, 2**63), at most `most` of them: a shape of a million
    dimensions or of 400-digit sizes is a malformed header, not arithmetic to do."""
    if not isinstance(values, list) or len(values) > most:
        raise ValueError("not a short list")
    if not all(type(v) is int and 0 <= v < 1 << 63 for v in values):
        raise ValueError("not sizes")
    return tuple(values)


def _coverage(entries: list[tuple[TensorInfo, int, int]], data_len: int) -> None:
    pos = 0
    for t, a, b in sorted(entries, key=lambda e: (e[1], e[2])):
        if a < pos:
            raise _Bad(Integrity.CORRUPT, f"tensor {t.name!r} at [{a}, {b}) overlaps the previous tensor")
        if a > pos:
            raise _Bad(Integrity.CORRUPT, f"{a - pos} data bytes before tensor {t.name!r} belong to no tensor")
        pos = b
    if pos < data_len:
        raise _Bad(Integrity.CORRUPT, f"{data_len - pos} trailing bytes after the last tensor")


def _count(fh, data_start: int, entries: list[tuple[TensorInfo, int, int]], path: str) -> None:
    for t, a, b in sorted(entries, key=lambda e: e[1]):
        size = itemsize(_raw_dtype(t.dtype)) or 1
        fh.seek(data_start + a)
        count_stream(_read_range(fh, b - a), _raw_dtype(t.dtype), [Span(t, 0, (b - a) // size)])


_BACK = {v: k for k, v in SAFETENSORS_NAMES.items()}


def _raw_dtype(name: str) -> str:
    return _BACK.get(name, name)


def _read_range(fh, n: int) -> Iterator[bytes]:
    while n > 0:
        chunk = fh.read(min(CHUNK_BYTES, n))
        if not chunk:
            raise _Bad(Integrity.TRUNCATED, "the data ends early")
        n -= len(chunk)
        yield chunk
