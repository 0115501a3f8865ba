"""CRC-32C (Castagnoli) as TFRecord framing uses it: masked, over the length field
and over the record body.

Two ways to compute it, both exact:
- `crc32c(data)` for one record: google-crc32c's C code when installed, else a
  table-driven pure-Python loop (slow, correct).
- `crc32c_rows(buf, starts, length)` for many records of one length at once, in
  numpy. CRC is affine in the data for a fixed length, so a record's register is
  the XOR of one table lookup per byte position (the byte's contribution, shifted
  by the bytes that follow it) plus a constant for the all-zero message. That turns
  millions of per-record calls into a few whole-array operations.
"""

from __future__ import annotations

import numpy as np

_POLY = 0x82F63B78  # CRC-32C, reflected
_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF


def _byte_table() -> np.ndarray:
    reg = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        reg = np.where(reg & 1, (reg >> 1) ^ np.uint32(_POLY), reg >> 1).astype(np.uint32)
    return reg


TABLE = _byte_table()
_TABLE_LIST = [int(x) for x in TABLE]

try:  # the C implementation, when installed
    import google_crc32c as _gcrc
except ImportError:  # pragma: no cover - exercised by test_tfevents_crc via the pure path
    _gcrc = None


def crc32c_pure(data: bytes | memoryview) -> int:
    reg = _U32
    tab = _TABLE_LIST
    for b in bytes(data):
        reg = tab[(reg ^ b) & 0xFF] ^ (reg >> 8)
    return reg ^ _U32


def crc32c(data: bytes | memoryview) -> int:
    if _gcrc is not None:
        return _gcrc.value(bytes(data))
    return crc32c_pure(data)


def mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & _U32


def mask_rows(crc: np.ndarray) -> np.ndarray:
    c = crc.astype(np.uint32)
    return ((c >> np.uint32(15)) | (c << np.uint32(17))) + np.uint32(_MASK_DELTA)


class _Shifted:
    """Per-position tables: row k is the register contribution of a byte followed
    by k zero bytes; zero[k] is the final register of k zero bytes from the
    standard initial value."""

    def __init__(self) -> None:
        self.rows = TABLE[None, :].copy()
        self.zero = [_U32]

    def ensure(self, length: int) -> None:
        while self.rows.shape[0] < length:
            last = self.rows[-1]
            nxt = TABLE[last & 0xFF] ^ (last >> np.uint32(8))
            self.rows = np.vstack([self.rows, nxt[None, :]])
        while len(self.zero) <= length:
            reg = self.zero[-1]
            self.zero.append(_TABLE_LIST[reg & 0xFF] ^ (reg >> 8))


_SHIFTED = _Shifted()
ROW_LIMIT = 512  # longer records are checked one by one (they are rare: graphs, images)


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """CRC-32C of every row of an (n, length) uint8 array (a strided view is fine).

    Columns where every row holds the same byte (field keys, lengths, tag names in
    a group of same-shaped records) add the same constant to every row, so they
    cost one lookup in total; only the varying columns are looked up per row."""
    n, length = rows.shape
    if length > ROW_LIMIT:
        raise ValueError(f"rows of {length} bytes: check them one by one")
    if n == 0 or length == 0:
        return np.full(n, crc32c(b""), dtype=np.uint32)
    _SHIFTED.ensure(length)
    tables = _SHIFTED.rows
    first = rows[0]
    varying = (rows != first).any(axis=0) if n > 1 else np.zeros(length, dtype=bool)
    const = 0
    for i in np.flatnonzero(~varying).tolist():
        const ^= int(tables[length - 1 - i][first[i]])
    out = np.full(n, const ^ _SHIFTED.zero[length] ^ _U32, dtype=np.uint32)
    for i in np.flatnonzero(varying).tolist():
        out ^= tables[length - 1 - i][rows[:, i]]
    return out


def crc32c_varying(rows: np.ndarray, columns: list[int]) -> np.ndarray:
    """The part of each row's CRC register that comes from the given columns.

    For rows known to agree on every other column with some representative row r,
    crc(row) = crc(r) ^ part(r) ^ part(row): the callers check that agreement."""
    n, length = rows.shape
    _SHIFTED.ensure(length)
    out = np.zeros(n, dtype=np.uint32)
    for i in columns:
        out ^= _SHIFTED.rows[length - 1 - i][rows[:, i]]
    return out


def byte_rows(buf: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """buf[s:s+length] for every s in starts as one (n, length) uint8 array: a
    gather of fixed-size void items, which numpy copies row by row."""
    if length == 0:
        return np.zeros((starts.size, 0), dtype=np.uint8)
    items = np.ndarray((buf.size - length + 1,), dtype=f"V{length}", buffer=buf, strides=(1,))
    return items[starts].view(np.uint8).reshape(starts.size, length)
