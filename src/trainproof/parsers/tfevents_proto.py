"""The general path: one Event record decoded field by field (protobuf wire
format, no protobuf library), for every record the vectorised path does not take.

What is a scalar (as TensorBoard's scalars dashboard reads them):
- `Summary.Value.simple_value` (TF1, torch SummaryWriter, tensorboardX);
- `Summary.Value.tensor` when the tag's plugin is `scalars` (from this value's
  metadata, or from the first value of the tag that carried metadata) and the
  tensor is rank 0 of dtype float, double, half or bfloat16, its value in
  `tensor_content` or in the typed `float_val` / `double_val` / `half_val` field.
Histograms, images, audio, text, hparams and every other plugin are not scalars.
"""

from __future__ import annotations

import struct

import numpy as np

from trainproof.parsers.tfevents_frame import Damage

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
# TensorFlow DataType -> (numpy dtype of tensor_content, typed field, wire size)
_DT_FLOAT, _DT_DOUBLE, _DT_BFLOAT16, _DT_HALF = 1, 2, 14, 19
_CONTENT = {_DT_FLOAT: np.dtype("<f4"), _DT_DOUBLE: np.dtype("<f8"), _DT_HALF: np.dtype("<f2"),
            _DT_BFLOAT16: np.dtype("<u2")}


class Undecodable(ValueError):
    pass


def varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            break
    raise Undecodable("bad varint")


def fields(buf: bytes, pos: int, end: int):
    """(field number, wire type, value or (start, end)) for each field in buf[pos:end]."""
    while pos < end:
        key, pos = varint(buf, pos, end)
        num, wt = key >> 3, key & 7
        if wt == 0:
            value, pos = varint(buf, pos, end)
            yield num, wt, value
        elif wt == 2:
            n, pos = varint(buf, pos, end)
            if pos + n > end:
                raise Undecodable("field runs past its message")
            yield num, wt, (pos, pos + n)
            pos += n
        elif wt in (1, 5):
            size = 8 if wt == 1 else 4
            if pos + size > end:
                raise Undecodable("field runs past its message")
            yield num, wt, pos
            pos += size
        else:
            raise Undecodable(f"wire type {wt}")


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _plugin_name(buf: bytes, span: tuple[int, int]) -> str:
    for num, wt, v in fields(buf, *span):
        if num == 1 and wt == 2:  # plugin_data
            for n2, w2, v2 in fields(buf, *v):
                if n2 == 1 and w2 == 2:
                    return buf[v2[0]:v2[1]].decode("utf-8", "replace")
    return ""


def _first_typed(buf: bytes, num: int, wt: int, v, dtype: int) -> float | None:
    """The first element of a typed *_val field matching dtype, packed or not."""
    if dtype == _DT_FLOAT and num == 5:
        if wt == 5:
            return _F32.unpack_from(buf, v)[0]
        if wt == 2 and v[1] - v[0] >= 4:
            return _F32.unpack_from(buf, v[0])[0]
    elif dtype == _DT_DOUBLE and num == 6:
        if wt == 1:
            return _F64.unpack_from(buf, v)[0]
        if wt == 2 and v[1] - v[0] >= 8:
            return _F64.unpack_from(buf, v[0])[0]
    elif dtype in (_DT_HALF, _DT_BFLOAT16) and num == 13:
        bits = v if wt == 0 else (varint(buf, v[0], v[1])[0] if wt == 2 and v[1] > v[0] else None)
        if bits is not None:
            return _half_bits(bits & 0xFFFF, dtype)
    return None


def _half_bits(bits: int, dtype: int) -> float:
    if dtype == _DT_HALF:
        return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])
    return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])


def tensor_scalar(buf: bytes, span: tuple[int, int]) -> float | None:
    """A rank-0 float tensor's value, or None when the tensor is not one."""
    dtype, rank, content, typed = 0, 0, None, []
    for num, wt, v in fields(buf, *span):
        if num == 1 and wt == 0:
            dtype = v
        elif num == 2 and wt == 2:
            rank = sum(1 for n2, _, _ in fields(buf, *v) if n2 == 2)
        elif num == 4 and wt == 2:
            content = v
        elif num in (5, 6, 13):
            typed.append((num, wt, v))
    if rank != 0 or dtype not in _CONTENT:
        return None
    dt = _CONTENT[dtype]
    if content is not None and content[1] - content[0] == dt.itemsize:
        raw = np.frombuffer(buf, dtype=dt, count=1, offset=content[0])
        return _half_bits(int(raw[0]), dtype) if dtype == _DT_BFLOAT16 else float(raw[0])
    if content is not None and content[1] > content[0]:
        return None
    for num, wt, v in typed:
        got = _first_typed(buf, num, wt, v, dtype)
        if got is not None:
            return got
    return None


def _value(buf: bytes, span: tuple[int, int], plugins: dict[str, str], damage: Damage
           ) -> tuple[str, float] | None:
    tag = node = ""
    simple = tensor = meta = None
    for num, wt, v in fields(buf, *span):
        if num == 1 and wt == 2:
            tag = buf[v[0]:v[1]].decode("utf-8", "replace")
        elif num == 7 and wt == 2:
            node = buf[v[0]:v[1]].decode("utf-8", "replace")
        elif num == 2 and wt == 5:
            simple = _F32.unpack_from(buf, v)[0]
        elif num == 8 and wt == 2:
            tensor = v
        elif num == 9 and wt == 2:
            meta = v
    tag = tag or node
    if meta is not None and tag not in plugins:
        plugins[tag] = _plugin_name(buf, meta)
    if simple is not None:
        return tag, simple
    if tensor is None or plugins.get(tag) != "scalars":
        return None
    got = tensor_scalar(buf, tensor)
    if got is None:
        damage.not_scalar += 1
        return None
    return tag, got


def decode_event(buf: bytes, start: int, end: int, plugins: dict[str, str], damage: Damage
                 ) -> tuple[int, list[tuple[str, float]]]:
    """(step, [(tag, value)...]) of one Event; raises Undecodable."""
    step, out = 0, []
    summaries = []
    for num, wt, v in fields(buf, start, end):
        if num == 2:
            if wt != 0:
                raise Undecodable("step is not a varint")
            step = _int64(v)
        elif num == 5 and wt == 2:
            summaries.append(v)
    for span in summaries:
        for num, wt, v in fields(buf, *span):
            if num == 1 and wt == 2:
                got = _value(buf, v, plugins, damage)
                if got is not None:
                    out.append(got)
    return step, out
