"""Where the step and the value sit inside one single-scalar Event record.

A training loop writes the same tag with the same metadata in records of the same
length over and over; only wall time, step and value change. So the layout of one
record, decoded by the general path, is a template: every record of the group
whose other bytes equal the template's holds the same tag, plugin and dtype, with
its step and value at the same offsets (tfevents_decode checks those bytes).
Layouts are only taken from records that decide on their own that they hold a
scalar: a simple_value, or a tensor carrying its own `scalars` metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from trainproof.parsers.tfevents_proto import Undecodable, varint

# value encodings a template can read at a fixed offset: name -> byte width
WIDTH = {"f4": 4, "f8": 8, "f2": 2, "bf16": 2}
_CONTENT_KIND = {1: "f4", 2: "f8", 19: "f2", 14: "bf16"}  # TensorFlow DataType -> kind


@dataclass(frozen=True)
class Layout:
    tag: str
    wall: int | None  # offset of the 8 wall-time bytes
    step: tuple[int, int] | None  # the step varint's bytes
    value: int  # offset of the value bytes
    kind: str  # one of WIDTH
    tensor: bool  # a scalars-plugin tensor (else a simple_value)


def spans(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, payload start, payload end) for each field."""
    while pos < end:
        key, pos = varint(buf, pos, end)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, nxt = varint(buf, pos, end)
        elif wt == 2:
            n, pos = varint(buf, pos, end)
            nxt = pos + n
        elif wt in (1, 5):
            nxt = pos + (8 if wt == 1 else 4)
        else:
            raise Undecodable(f"wire type {wt}")
        if nxt > end:
            raise Undecodable("field runs past its message")
        yield num, wt, pos, nxt
        pos = nxt


def _tensor_value(buf: bytes, a: int, b: int) -> tuple[int, str] | None:
    """(offset, kind) of a rank-0 float tensor's value at a fixed place, or None."""
    dtype, where = None, None
    for num, wt, s, e in spans(buf, a, b):
        if num == 1 and wt == 0:
            dtype = varint(buf, s, e)[0]
        elif num == 2 and wt == 2:
            if e != s:  # a shape with dims (or unknown rank): not rank 0
                return None
        elif num in (4, 5, 6) and where is None:
            where = (num, wt, s, e)
        else:
            return None
    kind = _CONTENT_KIND.get(dtype or 0)
    if kind is None or where is None:
        return None
    num, wt, s, e = where
    fixed = (num == 4 and wt == 2) or (num == 5 and kind == "f4") or (num == 6 and kind == "f8")
    return (s, kind) if fixed and e - s == WIDTH[kind] else None


def _value_layout(buf: bytes, a: int, b: int) -> tuple[str, int, str, bool] | None:
    tag, simple, tensor, plugin = None, None, None, None
    for num, wt, s, e in spans(buf, a, b):
        if num == 1 and wt == 2 and tag is None:
            tag = buf[s:e].decode("utf-8", "replace")
        elif num == 2 and wt == 5:
            simple = s
        elif num == 8 and wt == 2:
            tensor = (s, e)
        elif num == 9 and wt == 2:
            plugin = _plugin(buf, s, e)
        else:
            return None
    if tag is None:
        return None
    if simple is not None and tensor is None:
        return tag, simple, "f4", False
    if tensor is not None and simple is None and plugin == "scalars":
        got = _tensor_value(buf, *tensor)
        return None if got is None else (tag, *got, True)
    return None


def _plugin(buf: bytes, a: int, b: int) -> str | None:
    for num, wt, s, e in spans(buf, a, b):
        if num == 1 and wt == 2:
            for n2, w2, s2, e2 in spans(buf, s, e):
                if n2 == 1 and w2 == 2:
                    return buf[s2:e2].decode("utf-8", "replace")
    return None


def layout(buf: bytes) -> Layout | None:
    """The layout of an Event holding exactly one scalar value, or None."""
    wall = step = summary = None
    try:
        for num, wt, s, e in spans(buf, 0, len(buf)):
            if num == 1 and wt == 1:
                wall = s
            elif num == 2 and wt == 0:
                step = (s, e)
            elif num == 5 and wt == 2 and summary is None:
                summary = (s, e)
            else:
                return None
        if summary is None:
            return None
        values = [(s, e) for num, wt, s, e in spans(buf, *summary) if num == 1 and wt == 2]
        got = _value_layout(buf, *values[0]) if len(values) == 1 else None
    except Undecodable:
        return None
    return None if got is None else Layout(got[0], wall, step, *got[1:])
