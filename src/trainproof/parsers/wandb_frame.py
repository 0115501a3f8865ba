"""W&B record-log framing (`run-<id>.wandb`): header check, blocks, fragments, checksums.

The file starts with a 7-byte header: the ident `:W&B`, the magic 0xBEE1 (uint16,
little-endian) and a version byte (0). Then LevelDB-log framing: 32 KiB blocks
counted from the start of the file (the header sits inside block 0), each holding
records of `uint32 checksum | uint16 length | uint8 type | data`, all little-endian.
Type is FULL, or FIRST / MIDDLE... / LAST for a payload split across blocks; a block
whose tail is too short for a record header is padded with zeros.

The checksum is zlib's CRC-32 of the type byte followed by the data (the format
comment in wandb's source says CRC-32C; its files use CRC-32): verified against every
record of files written by wandb 0.31.0 (tests/fixtures/wandb). A record whose
checksum fails is counted and never read; its length is trusted only when the record
it points at checks out, else reading resumes at the next position in the block that
holds a record that does (a chance CRC-32 match is a one in four billion event).
Reading is streamed a few blocks at a time; an assembled payload is held only until
its LAST fragment (and never above MAX_RECORD), so memory does not grow with the file.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from trainproof.model import InputError

IDENT = b":W&B"
MAGIC = 0xBEE1
VERSION = 0
FILE_HEADER = 7
BLOCK = 32 * 1024
RECORD_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
READ_BLOCKS = 32  # blocks per read: 1 MiB, few enough syscalls, little memory
MAX_RECORD = 64 << 20  # an assembled payload beyond this (huge media) is skipped, not buffered
_HEAD = struct.Struct("<IHB")
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (FULL, FIRST, MIDDLE, LAST)}


@dataclass
class Damage:
    bad_checksum: int = 0  # record fragments whose CRC failed: never read
    bad_header: int = 0  # impossible type or length: reading resumes at the next good record
    skipped_bytes: int = 0  # from a damaged record whose length was not trusted to where reading resumed
    broken: int = 0  # payloads lost because a fragment of theirs was missing or damaged
    oversized: int = 0  # payloads above MAX_RECORD, skipped
    truncated: bool = False  # the file ends inside a record or a record header

    def notes(self) -> list[str]:
        out = []
        if self.bad_checksum:
            out.append(f"{self.bad_checksum} record(s) failed their CRC-32 checksum and were not read")
        if self.bad_header:
            out.append(f"{self.bad_header} record header(s) are impossible (type or length) and were "
                       "not read")
        if self.skipped_bytes:
            out.append(f"{self.skipped_bytes} bytes after damaged records skipped: reading resumed at the "
                       "next record that checks out")
        if self.broken:
            out.append(f"{self.broken} record(s) split across blocks lost a fragment; not read")
        if self.oversized:
            out.append(f"{self.oversized} record(s) larger than {MAX_RECORD >> 20} MiB skipped unread")
        if self.truncated:
            out.append("file ends inside a record: the writer stopped mid-write (or the copy was cut); "
                       "read up to the cut")
        return out


def check_header(head: bytes, name: str) -> None:
    """Raise InputError unless head begins with a W&B record-log header this reader knows."""
    if not head:
        raise InputError(f"{name}: empty file, not a W&B run log (no ':W&B' header)")
    if not head.startswith(IDENT[: len(head)]) or len(head) < FILE_HEADER:
        raise InputError(f"{name}: not a W&B run log (no ':W&B' header)")
    magic, version = struct.unpack_from("<HB", head, 4)
    if magic != MAGIC:
        raise InputError(f"{name}: W&B log header has magic 0x{magic:04X}, expected 0x{MAGIC:04X}")
    if version != VERSION:
        raise InputError(f"{name}: W&B log format version {version} is not supported (known: {VERSION})")


def is_header(head: bytes) -> bool:
    return len(head) >= FILE_HEADER and head.startswith(IDENT) and struct.unpack_from("<H", head, 4)[0] == MAGIC


class _Assembler:
    """Joins FIRST/MIDDLE/LAST fragments; counts payloads that lose a fragment once each."""

    def __init__(self, damage: Damage) -> None:
        self.damage = damage
        self.parts: list[bytes] | None = None
        self.size = 0
        self.dropping = False  # ignore MIDDLE/LAST until the next FIRST or FULL

    def lose(self) -> None:
        """The payload being assembled (if any) is lost; its remaining fragments are ignored."""
        if self.parts is not None:
            self.damage.broken += 1
        self.parts, self.size, self.dropping = None, 0, True

    def take(self, kind: int, data: bytes) -> bytes | None:
        if kind in (FULL, FIRST):
            if self.parts is not None:
                self.damage.broken += 1  # a FIRST that never got its LAST
            self.dropping = False
            if kind == FULL:
                self.parts = None
                return data
            self.parts, self.size = [data], len(data)
            return None
        if self.parts is None:  # MIDDLE/LAST with no FIRST before it
            if not self.dropping:
                self.damage.broken += 1
            self.dropping = kind == MIDDLE
            return None
        self.parts.append(data)
        self.size += len(data)
        if self.size > MAX_RECORD:
            self.damage.oversized += 1
            self.parts, self.size, self.dropping = None, 0, kind == MIDDLE
            return None
        if kind == MIDDLE:
            return None
        out = b"".join(self.parts)
        self.parts, self.size = None, 0
        return out


def _verified(block: bytes, pos: int, cut_ok: bool) -> bool:
    """Does a record that checks out start at pos? (cut_ok: a record running past the
    end of the file's last block counts; the file may have been cut there.)"""
    n = len(block)
    crc, length, kind = _HEAD.unpack_from(block, pos)
    end = pos + RECORD_HEADER + length
    if kind not in _TYPE_CRC or end > BLOCK:
        return False
    if end > n:
        return cut_ok
    return zlib.crc32(block[pos + RECORD_HEADER:end], _TYPE_CRC[kind]) == crc


def _resume(block: bytes, pos: int) -> int:
    """Where reading resumes after damage at pos: the next position holding a record
    that checks out, or the block's end (the next block starts clean)."""
    n = len(block)
    if n - pos < RECORD_HEADER or not block[pos:].strip(b"\0"):
        return n
    for q in range(pos, n - RECORD_HEADER + 1):
        if block[q + 6] in _TYPE_CRC and _verified(block, q, cut_ok=False):  # the type byte first: cheap
            return q
    return n


def _block(block: bytes, pos: int, asm: _Assembler) -> Iterator[bytes]:
    """The payloads completed in one block (pos: where its records start). A block
    shorter than BLOCK is the file's last, so a record running past it was cut."""
    damage, n = asm.damage, len(block)
    while n - pos >= RECORD_HEADER:
        crc, length, kind = _HEAD.unpack_from(block, pos)
        end = pos + RECORD_HEADER + length
        nxt = -1  # where reading resumes after damage, once known
        if kind == 0 and length == 0 and crc == 0 and not block[pos:].strip(b"\0"):
            return  # zero-filled tail (preallocated or padding)
        if kind not in _TYPE_CRC or end > BLOCK:  # no writer makes this: a damaged header
            damage.bad_header += 1
        elif end > n:  # the file was cut in this record, unless good records follow
            nxt = _resume(block, pos + 1)
            if nxt == n:
                damage.truncated = True
                return
            damage.bad_header += 1
        elif zlib.crc32(block[pos + RECORD_HEADER:end], _TYPE_CRC[kind]) != crc:
            damage.bad_checksum += 1
        else:
            got = asm.take(kind, block[pos + RECORD_HEADER:end])
            if got is not None:
                yield got
            pos = end
            continue
        asm.lose()
        # the length is trusted only when a good record follows where it points
        if end <= n and (n - end < RECORD_HEADER or _verified(block, end, cut_ok=True)):
            pos = end
        else:
            nxt = nxt if nxt >= 0 else _resume(block, pos + 1)
            damage.skipped_bytes += nxt - pos
            pos = nxt
    if pos < n and n < BLOCK and block[pos:].strip(b"\0"):
        damage.truncated = True  # a record header cut short by the end of the file


def read_payloads(fh: BinaryIO, damage: Damage, name: str) -> Iterator[bytes]:
    """Every intact record payload of a W&B log, in file order, streamed."""
    head = fh.read(FILE_HEADER)
    check_header(head, name)
    asm = _Assembler(damage)
    block0 = fh.read(BLOCK - FILE_HEADER)
    # _block works on offsets within a whole block: block 0 gets the file header's place back
    yield from _block(bytes(FILE_HEADER) + block0, FILE_HEADER, asm)
    eof = len(block0) < BLOCK - FILE_HEADER
    while not eof:
        chunk = fh.read(BLOCK * READ_BLOCKS)
        eof = len(chunk) < BLOCK * READ_BLOCKS
        for start in range(0, len(chunk), BLOCK):
            yield from _block(chunk[start:start + BLOCK], 0, asm)
    if asm.parts is not None:
        damage.truncated = True
