"""TFRecord framing: where each record of an event file starts, read in blocks.

A record is `uint64 length | uint32 masked-crc32c(length) | data | uint32
masked-crc32c(data)`. Record starts form a chain (each one is found from the
previous record's length), so finding them is sequential; but the records of a
training loop repeat a short pattern of lengths, so after a few records the
walk predicts the next thousands of starts and checks them all at once in numpy.
A failed prediction only ends the speculative block: the walk goes on record by
record. Every length field's CRC is verified before a length is trusted; after
a bad one, reading resumes at the next position that holds a valid header.

Yields chunks of framed records; the record bodies' own CRCs are checked by the
decoder, which groups records by length anyway.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainproof.parsers.tfevents_crc import byte_rows, crc32c, crc32c_rows, mask, mask_rows

HEADER = 12  # length + its CRC
OVERHEAD = 16  # header + data CRC
BLOCK = 16 << 20
MAX_RECORD = 64 << 20  # longer records (huge graphs or images) are skipped unread
_SPEC_MIN, _SPEC_MAX = 1024, 1 << 16
_MAX_PERIOD = 16
_LEN = struct.Struct("<Q")
_U32 = struct.Struct("<I")


@dataclass
class Damage:
    bad_header: int = 0  # length fields that failed their CRC
    skipped_bytes: int = 0  # bytes passed over while looking for the next valid header
    bad_data: int = 0  # record bodies that failed their CRC
    undecodable: int = 0  # bodies that passed their CRC but are not an Event
    truncated_bytes: int = 0  # a record cut off by the end of the file
    oversized: int = 0  # records above MAX_RECORD, skipped unread
    not_scalar: int = 0  # scalars-plugin tensors that are not a rank-0 float

    def notes(self) -> list[str]:
        out = []
        if self.bad_header:
            out.append(f"{self.bad_header} record header(s) failed their CRC; reading resumed at the next "
                       f"valid record ({self.skipped_bytes} bytes skipped)")
        if self.bad_data:
            out.append(f"{self.bad_data} record(s) failed their data CRC and were not read")
        if self.undecodable:
            out.append(f"{self.undecodable} record(s) passed their CRC but do not decode as an Event; not read")
        if self.oversized:
            limit = f"{MAX_RECORD >> 20} MiB" if MAX_RECORD >= 1 << 20 else f"{MAX_RECORD} bytes"
            out.append(f"{self.oversized} record(s) larger than {limit} skipped unread")
        if self.not_scalar:
            out.append(f"{self.not_scalar} scalars-plugin tensor(s) are not a rank-0 float, double, half "
                       "or bfloat16; not read")
        if self.truncated_bytes:
            out.append(f"file ends inside a record ({self.truncated_bytes} bytes): the writer stopped "
                       "mid-write; read up to the cut")
        return out


@dataclass
class Chunk:
    raw: bytes
    buf: np.ndarray  # uint8 view of raw
    starts: np.ndarray  # int64 record starts in raw
    lengths: np.ndarray  # int64 data lengths


def _header_ok(raw: bytes, pos: int) -> bool:
    return mask(crc32c(raw[pos:pos + 8])) == _U32.unpack_from(raw, pos + 8)[0]


def _period(lengths: list[int]) -> list[int] | None:
    """The shortest pattern the recent lengths repeat (two equal neighbours are
    not a period of 1 when the records around them say otherwise)."""
    tail = lengths[-2 * _MAX_PERIOD:]
    for p in range(1, min(_MAX_PERIOD, len(tail) // 2) + 1):
        if tail[p:] == tail[:-p]:
            return tail[-p:]
    return None


def _speculate(lens64: np.ndarray, pos: int, end: int, period: list[int], count: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """The longest run of records from pos that follows the length pattern."""
    lengths = np.tile(np.asarray(period, dtype=np.int64), max(1, count // len(period)))
    ends = pos + np.cumsum(lengths + OVERHEAD)
    fits = int(np.searchsorted(ends, end, side="right"))
    lengths, ends = lengths[:fits], ends[:fits]
    starts = ends - lengths - OVERHEAD
    if starts.size == 0:
        return starts, lengths
    wrong = np.flatnonzero(lens64[starts].astype(np.int64) != lengths)
    k = int(wrong[0]) if wrong.size else starts.size
    return starts[:k], lengths[:k]


def walk(raw: bytes, lens64: np.ndarray, pos: int, end: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Starts and lengths of the whole records from pos; where the walk stopped."""
    starts: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    seq_s: list[int] = []
    seq_l: list[int] = []
    count = _SPEC_MIN
    while True:
        for _ in range(2 * _MAX_PERIOD):
            if pos + HEADER > end:
                break
            n = _LEN.unpack_from(raw, pos)[0]
            if n > end - pos - OVERHEAD:
                break
            seq_s.append(pos)
            seq_l.append(n)
            pos += n + OVERHEAD
        else:
            period = _period(seq_l)
            if period is None:
                continue
            s, n = _speculate(lens64, pos, end, period, count)
            if s.size == 0:
                count = _SPEC_MIN
                continue
            starts.append(np.asarray(seq_s, dtype=np.int64))
            lengths.append(np.asarray(seq_l, dtype=np.int64))
            starts.append(s)
            lengths.append(n)
            seq_s, seq_l = [], []
            pos = int(s[-1] + n[-1] + OVERHEAD)
            count = min(2 * count, _SPEC_MAX) if s.size >= count else _SPEC_MIN
            continue
        break
    starts.append(np.asarray(seq_s, dtype=np.int64))
    lengths.append(np.asarray(seq_l, dtype=np.int64))
    return np.concatenate(starts), np.concatenate(lengths), pos


def first_bad_header(buf: np.ndarray, starts: np.ndarray) -> int:
    """Index of the first record whose length field fails its CRC, or -1."""
    if starts.size == 0:
        return -1
    computed = mask_rows(crc32c_rows(byte_rows(buf, starts, 8)))
    stored = np.ascontiguousarray(byte_rows(buf, starts + 8, 4)).view("<u4").ravel()
    bad = np.flatnonzero(computed != stored)
    return int(bad[0]) if bad.size else -1


def find_header(buf: np.ndarray, pos: int, end: int) -> int:
    """First position >= pos holding a valid record header, or -1."""
    window = 1 << 20
    while pos + HEADER <= end:
        n = min(window, end - HEADER + 1 - pos)
        rows = np.lib.stride_tricks.as_strided(buf[pos:], shape=(n, 8), strides=(1, 1))
        stored = np.ndarray((n,), dtype="<u4", buffer=buf, offset=pos + 8, strides=(1,))
        hit = np.flatnonzero(mask_rows(crc32c_rows(rows)) == stored)
        if hit.size:
            return pos + int(hit[0])
        pos += n
    return -1


def _u64_view(buf: np.ndarray) -> np.ndarray:
    return np.ndarray((max(0, buf.size - 7),), dtype="<u8", buffer=buf, strides=(1,))


class _Blocks:
    """Reading state of one file: what is carried from block to block, and whether
    the reader is looking for the next valid header after a bad one."""

    def __init__(self, fh, damage: Damage) -> None:
        self.fh, self.damage = fh, damage
        self.carry, self.want, self.resync, self.eof = b"", BLOCK, False, False

    def chunks(self) -> Iterator[Chunk]:
        while not self.eof:
            block = self.fh.read(self.want)
            self.eof = len(block) < self.want
            raw = self.carry + block
            self.want = BLOCK
            pos = yield from self._scan(raw, np.frombuffer(raw, dtype=np.uint8))
            self.carry = raw[pos:]
        if self.carry:
            if self.resync:
                self.damage.skipped_bytes += len(self.carry)
            else:
                self.damage.truncated_bytes += len(self.carry)

    def _scan(self, raw: bytes, buf: np.ndarray):
        """Yield the whole records of one block; return where the unread rest starts."""
        lens64, pos, end = _u64_view(buf), 0, len(raw)
        while True:
            if self.resync:
                q = find_header(buf, pos, end)
                if q < 0:
                    keep = 0 if self.eof else min(end - pos, HEADER - 1)
                    self.damage.skipped_bytes += end - pos - keep
                    return end - keep
                self.damage.skipped_bytes += q - pos
                pos, self.resync = q, False
            starts, lengths, stop = walk(raw, lens64, pos, end)
            k = first_bad_header(buf, starts)
            if k >= 0:
                starts, lengths, stop = starts[:k], lengths[:k], int(starts[k])
            if starts.size:
                yield Chunk(raw, buf, starts, lengths)
            pos = stop
            if k < 0 and (end - pos < HEADER or _header_ok(raw, pos)):
                return self._incomplete(raw, pos, end)
            self.damage.bad_header += 1
            self.damage.skipped_bytes += 1  # the bad header's first byte; the search starts after it
            self.resync = True
            pos += 1

    def _incomplete(self, raw: bytes, pos: int, end: int) -> int:
        """The record at pos does not fit in the block: read on, or skip it when too long."""
        if end - pos < HEADER or self.eof:
            return pos
        n = _LEN.unpack_from(raw, pos)[0]
        if n > MAX_RECORD:
            self.damage.oversized += 1
            self.fh.seek(n + OVERHEAD - (end - pos), 1)
            return end
        self.want = max(BLOCK, pos + n + OVERHEAD - end)
        return pos


def read_chunks(path: Path, damage: Damage) -> Iterator[Chunk]:
    """Every framed record of the file, in order, a block at a time."""
    with open(path, "rb") as fh:
        yield from _Blocks(fh, damage).chunks()
