"""Compressed logs: the one place a log file is opened for reading, so every text
format (JSONL, CSV, trainer_state.json, Coqui, text logs) reads `.gz`, `.bz2`, `.xz`
and `.zst` files the same way it reads plain ones, streamed.

The sniff sees the decompressed head and the name without its compression suffix
(`metrics.jsonl.gz` sniffs as `metrics.jsonl`). Tar archives are not logs and are
never opened as one. Decompression is bounded: past `MAX_RATIO` times the compressed
size (and at least `MIN_CAP` bytes) the read stops with one line, exit 2, so a small
file cannot expand into unbounded time and memory. A corrupt stream is one line too;
a stream that ends early (a copy cut short, a compressor still writing) is read up to
the cut and said so in the report's notes."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO

from trainproof.model import InputError

# Limits on what a compressed log may expand to. Text logs compress 5-20x (timestamps
# and changing floats), JSON lines of repeated keys up to ~50x; 200x leaves room for
# those and stops a gzip bomb (~1000x) or an xz/bz2/zstd one (10^6x) early.
MAX_RATIO = 200  # decompressed bytes per compressed byte, at most
MIN_CAP = 256 << 20  # bytes: a small compressed log may always expand this far

_SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}
_ARCHIVES = (".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tgz", ".tbz2", ".txz")


def _errors() -> tuple[type[BaseException], ...]:
    """What a decoder raises on a corrupt stream. The decoders' modules are imported
    where a compressed log is read, not with this module: most logs are plain, and
    gzip/bz2/lzma/zlib cost ~3 ms of every start-up (#14)."""
    import lzma
    import zlib

    return (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError)


_truncated: ContextVar[list[str] | None] = ContextVar("trainproof_truncated", default=None)


def compression(name: str) -> str | None:
    """'gzip', 'bzip2', 'xz' or 'zstd' for a compressed log's name; None for anything
    else, archives (.tar.gz, .tgz) included."""
    low = name.lower()
    if low.endswith(_ARCHIVES):
        return None
    return _SUFFIXES.get(os.path.splitext(low)[1])


def is_archive(name: str) -> bool:
    return name.lower().endswith(_ARCHIVES)


def logical_name(name: str) -> str:
    """The name a format sniffs: `metrics.jsonl.gz` -> `metrics.jsonl`."""
    return name[: name.rfind(".")] if compression(name) else name


def missing_decoder(name: str) -> str | None:
    """Why a compressed log of this name cannot be read here, or None when it can."""
    if compression(name) != "zstd":
        return None
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return "a .zst log needs the zstandard package (pip install 'trainproof[zstd]')"
    return None


def cap_for(compressed_size: int) -> int:
    return max(MIN_CAP, MAX_RATIO * compressed_size)


def open_log(path: Path) -> IO[bytes]:
    """A binary stream of the log's bytes, decompressed when its name says so."""
    kind = compression(path.name)
    if kind is None:
        return open(path, "rb")
    raw = open(path, "rb")  # noqa: SIM115
    try:
        inner = _decompressor(kind, raw, path)
    except BaseException:
        raw.close()
        raise
    cap = cap_for(os.fstat(raw.fileno()).st_size)
    return io.BufferedReader(_Bounded(inner, raw, path, kind, cap), buffer_size=1 << 20)


def _decompressor(kind: str, raw: IO[bytes], path: Path) -> IO[bytes]:
    if kind == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bzip2":
        import bz2

        return bz2.BZ2File(raw, mode="rb")
    if kind == "xz":
        import lzma

        return lzma.LZMAFile(raw, mode="rb")
    why = missing_decoder(path.name)
    if why is not None:
        raise InputError(f"{path}: {why}")
    return _ZstdReader(raw)  # type: ignore[return-value]


class _ZstdReader(io.RawIOBase):
    """Frames of a .zst file decoded in small input pieces (one piece cannot expand past
    a few tens of MB), across concatenated frames; a stream that stops inside a frame
    raises EOFError as gzip, bz2 and xz do (zstandard's own reader ends silently)."""

    PIECE = 1024  # compressed bytes per decode call

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__()
        import zstandard

        self._new = zstandard.ZstdDecompressor().decompressobj
        self._error = zstandard.ZstdError
        self._raw, self._obj, self._buf = raw, self._new(), b""
        self._in_frame = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        while not self._buf:
            piece = self._raw.read(self.PIECE)
            if not piece:
                if self._in_frame:
                    raise EOFError("the zstd stream ends inside a frame")
                return 0
            try:
                self._buf = self._decode(piece)
            except self._error as exc:  # a plain Exception subclass: say it as a ValueError
                raise ValueError(str(exc)) from None
        n = min(len(buf), len(self._buf))
        buf[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def _decode(self, piece: bytes) -> bytes:
        out = [self._obj.decompress(piece)]
        self._in_frame = not self._obj.eof
        while self._obj.eof and self._obj.unused_data:  # the next frame starts in this piece
            rest, self._obj = self._obj.unused_data, self._new()
            out.append(self._obj.decompress(rest))
            self._in_frame = not self._obj.eof
        return b"".join(out)


class _Bounded(io.RawIOBase):
    """The decompressed bytes, counted against the cap; decoder errors become one
    InputError line, and an early end of stream ends the data (noted, not fatal)."""

    def __init__(self, inner: IO[bytes], raw: IO[bytes], path: Path, kind: str, cap: int) -> None:
        super().__init__()
        self._inner, self._raw, self._path, self._kind, self._cap = inner, raw, path, kind, cap
        self._seen = 0
        self._ended = False
        self._read = getattr(inner, "read1", inner.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        if self._ended:
            return 0
        try:
            # read1: one decode step, so the bytes before an early end are returned before
            # the EOFError is (read(n) would loop and drop them with the exception)
            data = self._read(len(buf))
        except EOFError:  # gzip/bz2/xz: the stream stops before its end marker
            return self._cut()
        except _errors() as exc:
            raise InputError(f"{self._path}: corrupt {self._kind} stream ({_short(exc)})") from None
        n = len(data)
        self._seen += n
        if self._seen > self._cap:
            raise InputError(f"{self._path}: decompresses to more than {self._cap:,} bytes "
                             f"({MAX_RATIO}x its compressed size, at least {MIN_CAP >> 20} MiB); "
                             "refused as a possible decompression bomb: decompress it yourself "
                             "to judge it")
        buf[:n] = data
        return n

    def _cut(self) -> int:
        self._ended = True
        sink = _truncated.get()
        if sink is not None:
            sink.append(f"{self._path.name}: the {self._kind} stream ends early (a copy cut short or a "
                        "compressor still writing); read up to the cut")
        return 0

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(*_errors()):
                self._inner.close()
            self._raw.close()
        super().close()


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]


@contextlib.contextmanager
def stream_notes() -> Iterator[list[str]]:
    """Collect what the streams opened inside the block have to say (an early end)."""
    notes: list[str] = []
    token = _truncated.set(notes)
    try:
        yield notes
    finally:
        _truncated.reset(token)


def read_head(path: Path, size: int) -> bytes:
    """The first `size` decompressed bytes for a sniff; b"" when the stream cannot be read."""
    try:
        with open_log(path) as fh:
            return fh.read(size)
    except (InputError, *_errors()):
        return b""
