"""Regular JSON rows decoded straight into columns, without a dict per row (msgspec,
when installed: the [fast] extra).

Training logs repeat the same few keys on every row. A block of rows is decoded into a
msgspec Struct whose fields are the keys seen so far, each optional (missing reads as
None, like dict.get) and typed number, string or null, and each column is then read
with one C loop. The decoder refuses (and the block goes through the general path
unchanged) any row with a key not in the struct or one the readers rewrite (progress
fields), a boolean, a nested object or list, a bare NaN/Infinity, a number out of
range, or anything that is not an object. So this path only sees rows the general
path reads as flat dicts without booleans, and hands the same per-column value lists
to the same conversion (rows.add_columns): it is a faster decoder, not a second
reading of the values. The key set grows with the keys the general path meets, so a
new key costs one slow block, not every one. No byte scan of the block is needed: the
types do the checking."""

from __future__ import annotations

import importlib.util
import math
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from trainproof.parsers.progress import LLAMAFACTORY_STEP, LLAMAFACTORY_TOTAL, SWIFT_KEY

# msgspec is imported when a reader first learns keys (importing it costs ~10 ms that
# start-up and small logs need not pay); None when it is not installed ([fast] extra).
msgspec: Any = True if importlib.util.find_spec("msgspec") is not None else None


def _msgspec() -> Any:
    global msgspec
    if msgspec is True:
        import msgspec as module

        msgspec = module
    return msgspec


MAX_KEYS = 256  # a row with more distinct keys than this is not a metrics row: no struct
_UNNAMEABLE = re.compile(r'["\\\x00-\x1f]')  # what msgspec refuses in a field's name


_REWRITTEN = frozenset({SWIFT_KEY, LLAMAFACTORY_STEP, LLAMAFACTORY_TOTAL})
# No bool (so the conversion may skip its bool scan), no object or list (nothing to flatten).
_CELL = int | float | str | None
# Cells of a numbers-only block: no string either, so a NaN in its matrix is a missing
# cell or a null and nothing else (JSON has no NaN literal, and msgspec refuses NaN,
# Infinity and numbers out of range). msgspec turns an integer into the float that
# Python's float() gives (checked on 200k integers of 15-40 digits, -0 and 2^53+1
# included), and a missing key reads as NaN rather than None: numpy converts a float
# ~20 % faster than it converts None or an int.
_NUMBER = float | None


class Template:
    """The keys seen so far and a decoder for lists of rows made of those keys only
    (built when first needed: a log read in one block never imports msgspec)."""

    __slots__ = ("_decoder", "_getters", "_lines", "_lines_packed", "_numeric", "_packed", "keys")

    def __init__(self) -> None:
        self.keys: tuple[str, ...] = ()
        self._decoder: Any = None
        self._numeric: Any = None
        self._packed: _Packed | None = None  # numbers()' rows to floats, for this key set
        self._lines: Any = None  # the same row type, for newline-delimited text
        self._getters: dict[str, attrgetter[Any]] = {}
        # numbers_lines' decoder of float rows and their _Packed layout, built when first needed
        self._lines_packed: tuple[Any, _Packed | None] | None = None

    def learn(self, rows: Iterable[dict[str, Any]]) -> None:
        """Add the keys of rows the general path decoded (never a progress field: rows
        that carry one are rewritten by progress.lift, so they stay on the general path).
        A key msgspec cannot name a field (a `"`, a backslash or a control character in
        it: defstruct refuses it) is not learnt either, and its rows stay on the general
        path too (it made the reader fail with an internal error)."""
        if msgspec is None or len(self.keys) >= MAX_KEYS:
            return
        known = set(self.keys)
        new = set().union(*rows) - known - _REWRITTEN if rows else set()
        if not new or len(known) + len(new) > MAX_KEYS or not all(type(k) is str for k in new):
            return
        # msgspec refuses a field named with a quote, a backslash or a control character
        # (ValueError building the struct: such a valid log was refused, exit 2). Not learnt,
        # such a key makes its rows fail the typed decoders: they go the general way.
        new = {k for k in new if not _UNNAMEABLE.search(k)}
        if not new:
            return
        self.keys = (*self.keys, *sorted(new))
        self._decoder = self._lines = self._numeric = self._packed = self._lines_packed = None
        self._getters = {k: attrgetter(f"f{i}") for i, k in enumerate(self.keys)}

    def decode(self, array_text: bytes) -> list[Any] | None:
        """The rows of a JSON array of objects, or None: not every row fits, use the general path."""
        if not self.keys:
            return None
        ms = _msgspec()
        if self._decoder is None:
            self._build(ms)
        try:
            return self._decoder.decode(array_text)
        except (ms.DecodeError, ms.ValidationError):
            return None

    def numbers(self, array_text: bytes | bytearray) -> np.ndarray | None:
        """A JSON array of objects of known keys whose every value is a number or null, as
        one float64 matrix (a row per object, a column per key in `keys` order, NaN where a
        row has no value: there is no other NaN), or None: use decode().

        Why: converting a block column by column costs a pass over the rows per key, and
        a sparse column (eval entries) a list and a mask besides; here every cell goes
        through numpy's conversion once: the rows' MessagePack encoding read as float64
        (_Packed), or, where a cell is null, one C loop over the rows' tuples. The values
        are the ones the column-wise conversion gives (numpy's float64 of the Python
        float, or of the float an integer is); an integer past float64's range fails the
        decode, and the block goes the other way. The matrix may be a transposed view
        (Fortran order): rows.add_matrix wants it by key, and gets it without a copy.
        A block refused here costs the part decoded before the refusal: nothing much for
        a text column (on its first row), one decode at worst."""
        if not self.keys:
            return None
        ms = _msgspec()
        if self._numeric is None:
            row = self._row(ms, _NUMBER, math.nan)
            self._numeric = ms.json.Decoder(list[row])
            self._packed = _Packed.of(ms, row, len(self.keys))
        try:
            rows = self._numeric.decode(array_text)
        except (ms.DecodeError, ms.ValidationError):
            return None
        width = len(self.keys)
        if self._packed is not None:
            by_key = self._packed.columns(rows)
            if by_key is not None:
                return by_key.T
        flat = np.fromiter(chain.from_iterable(map(ms.structs.astuple, rows)), dtype=np.float64,
                           count=len(rows) * width)
        return flat.reshape(len(rows), width)

    def decode_lines(self, text: bytes | memoryview, lines: int) -> list[Any] | None:
        """The rows of `lines` newline-ended lines of JSON objects, one row per line, or
        None as decode() says it. Read where they lie: no array text to build (two copies
        of every block, #14). msgspec reads whitespace-separated values, so a line holding
        two objects gives two rows where a line reader sees one malformed line: a row count
        other than the line count is refused (the caller has made sure no line is blank)."""
        if not self.keys:
            return None
        ms = _msgspec()
        if self._lines is None:
            self._build(ms)
        try:
            rows = self._lines.decode_lines(text)
        except (ms.DecodeError, ms.ValidationError):
            return None
        return rows if len(rows) == lines else None

    def numbers_lines(self, text: bytes | memoryview, lines: int) -> np.ndarray | None:
        """decode_lines' rows as one float64 array of a row per key (in `keys` order) and
        a column per line, NaN where a line has no value (there is no other NaN: see
        _NUMBER), when every value is a number; None otherwise (decode_lines decides).
        Why: taking 5M rows' four values out of their structs one attribute at a time
        cost ~0.4 s per 1M lines, nearly as much as decoding them (#14). Here msgspec
        writes the decoded rows back out as MessagePack, where every value is a float64
        (the fields are typed float) at the same offset in every row, and numpy reads
        each key's values from that buffer with one strided copy."""
        if not self.keys:
            return None
        ms = _msgspec()
        if self._lines_packed is None:
            row = self._row(ms, float, math.nan)
            self._lines_packed = (ms.json.Decoder(row), _Packed.of(ms, row, len(self.keys)))
        decoder, packed = self._lines_packed
        if packed is None:
            return None
        try:
            rows = decoder.decode_lines(text)
        except (ms.DecodeError, ms.ValidationError):
            return None
        return packed.columns(rows) if len(rows) == lines else None

    def _build(self, ms: Any) -> None:
        row_type = self._row(ms, _CELL)
        self._decoder = ms.json.Decoder(list[row_type])
        self._lines = ms.json.Decoder(row_type)

    def _row(self, ms: Any, cell: Any, missing: Any = None) -> Any:
        fields = [(f"f{i}", cell, missing) for i in range(len(self.keys))]
        return ms.defstruct("Row", fields, rename={f"f{i}": k for i, k in enumerate(self.keys)},
                            forbid_unknown_fields=True, gc=False)

    def cells(self, rows: list[Any], key: str) -> tuple[Iterator[Any], Callable[[int], Any]] | None:
        """rows.Cells for these rows: the values of `key` as an iterator and one row's value,
        or None when the first row has none (a sparse column: the list way is cheaper)."""
        get = self._getters.get(key)
        if get is None or get(rows[0]) is None:
            return None
        return map(get, rows), lambda i: get(rows[i])

    def column(self, rows: list[Any], key: str) -> list[Any]:
        """Every row's value for `key`, None where absent: what rows.column gives for dicts."""
        get = self._getters.get(key)
        return [None] * len(rows) if get is None else list(map(get, rows))


PACKED_MAX = 32 << 20  # bytes of MessagePack a slice at most (a 1 MiB slice of trainer rows: ~1.1 MB)


class _Packed:
    """Decoded rows (numbers()' of a JSON array, numbers_lines()' of JSON lines) to a
    (keys x rows) float64 array through msgspec's MessagePack
    encoder instead of a Python-level pass over every cell (a tuple per row and a float
    unboxed per cell: ~60 % of the conversion's time, #14).

    A row of this struct type encodes as a map of the same keys in the same order, every
    value a float64 (0xcb and 8 big-endian bytes) - the same bits as the Python float, so
    the same value, NaN and -0.0 included - or a null (one byte). So a list of rows without
    a None is a header and then rows of one fixed size, each value at a fixed offset that
    a probe row of distinct values finds once per key set; no value can be longer than 9
    bytes, so the expected length holds exactly when no cell is None. Any other length
    (a null in the slice) leaves the rows to the cell-by-cell conversion."""

    __slots__ = ("_buf", "_encoder", "_offsets", "_size")

    def __init__(self, encoder: Any, size: int, offsets: list[int]) -> None:
        self._encoder = encoder
        self._size = size
        self._offsets = offsets
        self._buf = bytearray()  # reused from slice to slice: no fresh pages per slice

    @classmethod
    def of(cls, ms: Any, row_type: Any, width: int) -> _Packed | None:
        """The layout of `row_type`'s encoding, or None where a probe value cannot be told
        apart from the rest of the row: a safeguard only, as it would take a key holding
        those very bytes, NUL bytes included, which msgspec refuses in a field's name."""
        encoder = ms.msgpack.Encoder()
        probe = [float(1000 + i) for i in range(width)]
        packed = encoder.encode(row_type(*probe))
        offsets = []
        for value in probe:
            mark = b"\xcb" + struct.pack(">d", value)
            at = packed.find(mark)
            if at < 0 or packed.find(mark, at + 1) >= 0:
                return None
            offsets.append(at + 1)
        return cls(encoder, len(packed), offsets)

    def columns(self, rows: list[Any]) -> np.ndarray | None:
        """Every key's values over the rows (NaN where missing), or None: a cell is None, or
        the encoding would pass PACKED_MAX (every row carries every key's name and value:
        sparse rows of a wide key set encode far larger than their text)."""
        n, size, buf = len(rows), self._size, self._buf
        if n * size > PACKED_MAX:
            return None
        self._encoder.encode_into(rows, buf)
        head = 1 if n < 16 else 3 if n < 1 << 16 else 5  # fixarray, array 16, array 32
        if len(buf) != head + n * size:
            return None
        if not n:  # no view of an empty stretch of the buffer: numpy refuses its offset
            return np.empty((len(self._offsets), 0), dtype=np.float64)
        by_key = np.empty((len(self._offsets), n), dtype=np.float64)
        for out, at in zip(by_key, self._offsets, strict=True):
            out[:] = np.ndarray((n,), dtype=">f8", buffer=buf, offset=head + at, strides=(size,))
        return by_key
