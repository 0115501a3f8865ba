"""Counts NaN, Inf and non-zero elements of tensors straight from storage bytes,
one bounded chunk at a time, so a multi-GB storage costs a few MiB of memory.
bfloat16 has no numpy dtype: its 16 bits are the top half of a float32."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from trainproof.probes.checkpoint_model import TensorInfo

CHUNK_BYTES = 8 << 20

# dtype name (torch / safetensors spelling) -> (numpy dtype, itemsize)
_NUMPY = {
    "float32": "f4", "float64": "f8", "float16": "f2", "bfloat16": "u2", "int64": "i8", "int32": "i4",
    "int16": "i2", "int8": "i1", "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
    "bool": "u1", "complex64": "c8", "complex128": "c16",
    "F32": "f4", "F64": "f8", "F16": "f2", "BF16": "u2", "I64": "i8", "I32": "i4", "I16": "i2",
    "I8": "i1", "U8": "u1", "U16": "u2", "U32": "u4", "U64": "u8", "BOOL": "u1",
}
# dtypes whose bytes are real but that numpy cannot decode: counted as unmeasured
ITEMSIZE_ONLY = {"float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
                 "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1}
SAFETENSORS_NAMES = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16",
                     "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
                     "U16": "uint16", "U32": "uint32", "U64": "uint64", "BOOL": "bool",
                     "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu"}


def itemsize(dtype: str) -> int | None:
    if dtype in _NUMPY:
        return np.dtype(_NUMPY[dtype]).itemsize
    return ITEMSIZE_ONLY.get(dtype)


def _decode(raw: bytes, dtype: str, order: str) -> np.ndarray:
    arr = np.frombuffer(raw, dtype=np.dtype(_NUMPY[dtype]).newbyteorder(order))
    if dtype in ("bfloat16", "BF16"):
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return arr


@dataclass
class Span:
    """A tensor that occupies elements [start, stop) of a storage."""

    tensor: TensorInfo
    start: int
    stop: int


def contiguous_span(t: TensorInfo, offset: int, stride: tuple[int, ...]) -> Span | None:
    """The element range of a row-major tensor, or None for a strided view."""
    expected, acc = [], 1
    for dim in reversed(t.shape):
        expected.append(acc)
        acc *= dim
    expected.reverse()
    dims = [(d, s, e) for d, s, e in zip(t.shape, stride, expected, strict=False) if d != 1]
    if stride and len(stride) != len(t.shape):
        return None
    if all(s == e for _, s, e in dims):
        return Span(t, offset, offset + t.numel)
    return None


def count_stream(chunks: Iterable[bytes], dtype: str, spans: list[Span], order: str = "<") -> None:
    """Feed a storage's bytes in order; accumulate counts into each span's tensor."""
    size = itemsize(dtype)
    if dtype not in _NUMPY or not size:
        for s in spans:
            s.tensor.unmeasured_why = f"{dtype} values are not decoded"
        return
    pos = 0  # element index of the chunk's first element
    carry = b""
    for chunk in chunks:
        raw = carry + chunk if carry else chunk
        usable = len(raw) - len(raw) % size
        carry = raw[usable:]
        if not usable:
            continue
        arr = _decode(raw[:usable], dtype, order)
        end = pos + arr.size
        for s in spans:
            a, b = max(s.start, pos), min(s.stop, end)
            if a < b:
                _accumulate(s.tensor, arr[a - pos:b - pos])
        pos = end


def _accumulate(t: TensorInfo, x: np.ndarray) -> None:
    t.measured += int(x.size)
    if x.dtype.kind in "fc":
        finite = int(np.count_nonzero(np.isfinite(x)))
        if finite < x.size:  # the rare case pays for telling NaN from Inf
            t.nan += int(np.count_nonzero(np.isnan(x)))
            t.inf += x.size - finite - int(np.count_nonzero(np.isnan(x)))
    t.nonzero += int(np.count_nonzero(x))
