"""Following one growing file: each poll returns the complete lines appended since the
last one. The offset only ever moves past a newline, so a half-written last line is
read again, whole, on a later poll and is never a data point on its own.

A file that shrank (truncated), was replaced (new inode, as log rotation and
`open(..., "w")` after unlink do) or was rewritten in place (its first line changed,
as Lightning's CSVLogger does when a new metric appears) is reported as restarted:
the caller drops what it read and the tail starts again from byte 0."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BLOCK = 8 << 20  # bytes read per poll at most; the caller polls again while `more`
HEAD = 4096  # bytes of the first line kept to notice an in-place rewrite


@dataclass(frozen=True)
class Chunk:
    data: bytes  # complete lines (each ends with b"\n"), possibly empty
    restarted: str | None = None  # "truncated" / "replaced" / "rewritten": start over
    missing: bool = False  # the file does not exist (now)
    more: bool = False  # the read stopped at BLOCK: poll again at once


class Tail:
    def __init__(self, path: Path, block: int = BLOCK) -> None:
        self.path = path
        self.block = block
        self.offset = 0
        self.skipped_long = 0  # lines longer than a whole block, skipped
        self._ident: tuple[int, int] | None = None
        self._head = b""
        self._skipping = False

    def poll(self) -> Chunk:
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())  # of the file we opened, not of a later replacement
                ident = (st.st_dev, st.st_ino)
                restarted = self._restarted(fh, ident, st.st_size)
                if restarted:
                    self.offset, self._head, self._skipping = 0, b"", False
                self._ident = ident
                fh.seek(self.offset)
                data = fh.read(self.block)
        except FileNotFoundError:
            return Chunk(b"", missing=True)
        return self._complete(data, restarted)

    def _restarted(self, fh: BinaryIO, ident: tuple[int, int], size: int) -> str | None:
        if self._ident is None:
            return None
        if ident != self._ident:
            return "replaced"
        if size < self.offset:
            return "truncated"
        if self._head and fh.read(len(self._head)) != self._head:
            return "rewritten"
        return None

    def _complete(self, data: bytes, restarted: str | None) -> Chunk:
        full = len(data) == self.block
        if self._skipping:  # the rest of a line longer than a block
            nl = data.find(b"\n")
            if nl < 0:
                self.offset += len(data)
                return Chunk(b"", restarted, more=full)
            self.offset += nl + 1
            data, self._skipping = data[nl + 1 :], False
            self.skipped_long += 1
        cut = data.rfind(b"\n")
        if cut < 0:
            if full:  # one line fills a whole block: not a log record, skip it
                self.offset += len(data)
                self._skipping = True
            return Chunk(b"", restarted, more=full)
        complete = data[: cut + 1]
        if not self._head and self.offset == 0:
            self._head = complete[: min(HEAD, complete.find(b"\n") + 1)]
        self.offset += len(complete)
        return Chunk(complete, restarted, more=full)
