"""What every reader returns, and the accumulator readers use to build it.

Readers return columns (name -> steps, values) rather than yielding one
(column, step, value) triple at a time: a Python call per point is the dominant
cost on multi-GB logs, and the column form is what numpy wants anyway."""

from __future__ import annotations

import math
import mmap
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from trainproof.files import require_regular
from trainproof.frozen import FACTORY, NamedTuple, record
from trainproof.model import InputError
from trainproof.parsers.compressed import read_head
from trainproof.parsers.stores import Store


@record(frozen=False)
class RawLog:
    """What a reader measured: raw columns name -> (steps, values), before mapping."""

    columns: dict[str, tuple[np.ndarray, np.ndarray]]
    records: int
    notes: list[str] = field(default_factory=list)
    meta: dict[str, object] = field(default_factory=dict)
    step_column: str | None = None

    def __init__(self, columns: dict[str, tuple[np.ndarray, np.ndarray]], records: int,
                 notes: list[str] = FACTORY, meta: dict[str, object] = FACTORY,
                 step_column: str | None = None) -> None:
        # written out, not generated (trainproof.frozen, #14)
        self.columns = columns
        self.records = records
        self.notes = [] if notes is FACTORY else notes
        self.meta = {} if meta is FACTORY else meta
        self.step_column = step_column


_PAGE = mmap.PAGESIZE
_MAPPED_FROM = 1 << 20  # bytes: a buffer this large moves to a mapping of its own
# Growing a mapping in place needs mremap (Linux); elsewhere mmap.resize of an anonymous
# mapping is refused, and the buffers stay array('d') as they were.
_MAPPABLE = sys.platform.startswith("linux") and hasattr(mmap, "MAP_PRIVATE")


class _Floats:
    """A growing float64 buffer: an array('d') while small, then an anonymous memory
    mapping of its own, grown in place (mremap) to twice its size when full. A large
    array('d') grows by realloc inside the allocator's heap while that heap's mapping
    threshold rises (to 32 MiB) with every large block freed: four 38 MiB columns grown
    side by side there left holes and copies, and the RSS after reading 5M lines moved by
    ~10 MiB with the order the columns were created in (the hash seed) (#14). A mapping
    holds only the pages written: the room it keeps ahead costs address space, not memory."""

    __slots__ = ("_map", "_n", "_small")

    def __init__(self) -> None:
        self._small: array[float] | None = array("d")
        self._map: mmap.mmap | None = None
        self._n = 0  # values held

    def __len__(self) -> int:
        return self._n

    def frombytes(self, raw: memoryview) -> None:
        """Append float64 values given as bytes."""
        if self._small is not None:
            self._small.frombytes(raw)
            self._n = len(self._small)
            if self._n * 8 >= _MAPPED_FROM and _MAPPABLE:
                self._map = self._mapping(self._n * 16)
                self._map[: self._n * 8] = memoryview(self._small).cast("B")
                self._small = None
            return
        assert self._map is not None
        at, end = self._n * 8, self._n * 8 + raw.nbytes
        if end > len(self._map):
            self._map.resize(_pages(max(end, 2 * len(self._map))))
        self._map[at:end] = raw
        self._n = end // 8

    @staticmethod
    def _mapping(size: int) -> mmap.mmap:
        return mmap.mmap(-1, _pages(size), flags=mmap.MAP_PRIVATE)  # shared memory would not grow (SIGBUS)

    def head(self, n: int) -> _Floats:
        """A new buffer holding a copy of the first n values."""
        out = _Floats()
        out.frombytes(memoryview(self.view()[:n]).cast("B"))
        return out

    def view(self) -> np.ndarray:
        """The values held, as a float64 array over this buffer (no copy). A mapping with
        a view out cannot grow again: Columns starts new buffers once it hands them out."""
        if not self._n:
            return np.empty(0)
        return np.frombuffer(self._small if self._map is None else self._map, dtype=np.float64, count=self._n)


def _pages(size: int) -> int:
    return -(-size // _PAGE) * _PAGE


class _Steps:
    """One growing step buffer, shared by the columns read from the same rows."""

    __slots__ = ("before", "data", "last")

    def __init__(self) -> None:
        self.data = _Floats()
        self.last: np.ndarray | None = None  # the steps array appended last (kept: ids stay unique)
        self.before = 0  # the buffer's length before `last` was appended


class Columns:
    """Per-column (step, value) buffers. Values grow in place in _Floats buffers (a
    large buffer grows by remapping, not by copying, and leaves no holes behind), and
    columns extended with the same steps array in step with each other share one steps
    buffer, so the points of a 5M-line log cost their 8 bytes each once: no list of
    parts to join at the end, no steps array per column. arrays() hands out views of
    the buffers and starts new ones; a later call joins what it handed out before with
    what came since (watch reads a growing log this way)."""

    __slots__ = ("_by_last", "_done", "_grow", "_points", "bad")

    def __init__(self) -> None:
        self._points: dict[str, tuple[array, array]] = {}
        self._grow: dict[str, tuple[_Steps, _Floats]] = {}
        self._by_last: dict[int, _Steps] = {}  # id of a steps array -> the buffer it was appended to last
        self._done: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # handed out by arrays()
        self.bad: dict[str, int] = {}  # per column: values that were not numbers

    def add(self, name: str, step: float, value: float) -> None:
        col = self._points.get(name)
        if col is None:
            col = self._points[name] = (array("d"), array("d"))
        col[0].append(step)
        col[1].append(value)

    def extend(self, name: str, steps: np.ndarray, values: np.ndarray) -> None:
        self._flush(name)
        self._append(name, np.ascontiguousarray(steps, dtype=np.float64),
                     np.ascontiguousarray(values, dtype=np.float64))

    def _append(self, name: str, steps: np.ndarray, values: np.ndarray) -> None:
        col = self._grow.get(name)
        if col is None:
            buf = self._by_last.get(id(steps))
            if buf is None or buf.last is not steps or buf.before != 0:
                buf = _Steps()
            col = self._grow[name] = (buf, _Floats())
        buf, vals = col
        n = len(vals)
        if buf.last is steps and buf.before == n:
            pass  # a sibling column appended these very steps at this very length
        else:
            if len(buf.data) != n:  # the siblings moved on without this column: its own copy
                fork = _Steps()
                fork.data = buf.data.head(n)
                buf = fork
                self._grow[name] = (buf, vals)
            buf.before, buf.last = n, steps
            buf.data.frombytes(memoryview(steps).cast("B"))
            self._by_last[id(steps)] = buf
        vals.frombytes(memoryview(values).cast("B"))

    def reject(self, name: str, count: int = 1) -> None:
        self.bad[name] = self.bad.get(name, 0) + count

    def _flush(self, name: str) -> None:
        col = self._points.pop(name, None)
        if col is not None and len(col[0]):
            self._append(name, np.frombuffer(col[0], dtype=np.float64), np.frombuffer(col[1], dtype=np.float64))

    def arrays(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        for name in list(self._points):
            self._flush(name)
        views: dict[int, np.ndarray] = {}  # one view per steps buffer: columns share it
        for name, (buf, vals) in self._grow.items():
            n = len(vals)
            whole = views.get(id(buf))
            if whole is None:
                whole = views[id(buf)] = buf.data.view()
            new = (whole if n == len(whole) else whole[:n], vals.view())
            old = self._done.get(name)
            self._done[name] = new if old is None else (np.concatenate([old[0], new[0]]),
                                                        np.concatenate([old[1], new[1]]))
        self._grow.clear()  # the buffers now back the arrays handed out: new points go to new ones
        self._by_last.clear()
        return dict(self._done)

    def bad_notes(self) -> list[str]:
        return [f"{n} non-numeric value(s) in column '{k}' ignored" for k, n in sorted(self.bad.items())]


_SPECIAL = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
            "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}


def overflowed(text: str | bytes, value: float) -> bool:
    """A finite literal past float64's range (`1e400`, a 400-digit integer) that float()
    read as inf. No logger writes one - a float that large prints as `inf` - so it is a
    value that could not be read, not an infinite loss."""
    if not math.isinf(value):
        return False
    low = text.lower() if isinstance(text, str) else text.decode("ascii", "replace").lower()
    return "inf" not in low


def number(v: object) -> float | None:
    """A JSON/CSV cell as a float, or None when it is not a number.
    Booleans are not numbers: `true` is not a loss of 1.0; an integer or a literal past
    float64's range is not one either (see overflowed)."""
    t = type(v)
    if t is float:
        return v  # type: ignore[return-value]
    if t is int:
        try:
            return float(v)  # type: ignore[arg-type]
        except OverflowError:  # a 400-digit integer in a JSON log
            return None
    if t is str:
        s = v.strip()  # type: ignore[union-attr]
        try:
            f = float(s)
        except ValueError:
            return _SPECIAL.get(s.lower())
        return None if overflowed(s, f) else f
    return None


Sniff = Callable[[str, bytes], bool]
Read = Callable[[Path], RawLog]


HEAD = 8192  # bytes a sniff sees unless its format asks for more


class Format(NamedTuple):
    """One log format in the registry: how to recognise it and how to read it."""

    name: str
    sniff: Sniff  # (file name, first KiBs) -> is this mine?
    read: Read
    description: str
    head: int = HEAD  # bytes of the file the sniff is given
    compressed: bool = False  # the reader opens files through open_log, so .gz/.bz2/.xz/.zst work
    store: Store | None = None  # set when one path can hold several runs (stores.py)
    # A second look, with the path, after the sniff matched: for containers whose head
    # says too little (any SQLite file starts alike). False only when surely not mine.
    confirm: Callable[[Path], bool] | None = None
    # A run directory whose every file is part of the one run (DVCLive's per-metric TSVs
    # and summary): doctor judges the directory and looks at nothing under it on its own.
    owns_dir: bool = False


def read_text_head(path: Path, size: int = HEAD) -> bytes:
    """The first bytes of a log as its reader will see them (decompressed)."""
    return read_head(path, size)


def require_file(path: Path) -> None:
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a log file")
    require_regular(path)


class LineBlocks:
    """A byte stream as blocks of whole lines (each ending at a newline), read `size`
    bytes at a time: readers decode a block in one call instead of a call per line.
    A line longer than `max_line` is skipped and counted in `oversized`, so one runaway
    line (a progress bar that never prints a newline) costs bounded memory; what follows
    the last newline is left in `tail` once the blocks are exhausted (a half-written last
    line, or a final line without its newline). `cr` reads a carriage return as a line
    end too (tqdm redraws its bar with them)."""

    def __init__(self, fh: BinaryIO, size: int, max_line: int, cr: bool = False) -> None:
        self._fh, self._size, self._max, self._cr = fh, size, max_line, cr
        self.oversized = 0
        self.tail = b""

    def __iter__(self) -> Iterator[bytes]:
        rest, skipping = b"", False
        while block := self._fh.read(self._size):
            if self._cr:
                block = block.replace(b"\r", b"\n")
            cut = block.rfind(b"\n")
            if cut < 0:
                if not skipping:
                    rest += block
                    if len(rest) > self._max:
                        rest, skipping = b"", True
                continue
            head, tail = block[: cut + 1], block[cut + 1 :]
            if skipping:  # the rest of an oversized line
                head, skipping, rest = head[head.find(b"\n") + 1 :], False, b""
                self.oversized += 1
            yield rest + head
            rest = tail
        if skipping:
            self.oversized += 1
        else:
            self.tail = rest


def bounded_lines(fh: BinaryIO, max_line: int) -> Iterator[bytes | None]:
    """The lines of a stream one at a time, each read at most `max_line` bytes at once: a
    longer line is read past without being kept and comes out as None (the caller counts
    it), so one runaway line costs bounded memory."""
    while line := fh.readline(max_line):
        if len(line) == max_line and not line.endswith(b"\n"):
            while (rest := fh.readline(max_line)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        yield line


class LineViews:
    """LineBlocks' blocks (the same bytes, the same oversized lines skipped and counted,
    the same tail), each as a memoryview into one buffer reused from block to block and
    valid until the next one is asked for: no new bytes objects per block (LineBlocks
    makes two copies of every block, `block[:cut]` and `rest + head`), and no block-sized
    allocation to leave freed heap behind (#14). The buffer grows only for a line longer
    than a block."""

    def __init__(self, fh: BinaryIO, size: int, max_line: int) -> None:
        self._fh, self._size, self._max = fh, size, max_line
        self.oversized = 0
        self.tail = b""

    def __iter__(self) -> Iterator[memoryview]:
        size = self._size
        buf = bytearray(2 * size)
        start = end = 0  # buf[start:end]: the bytes after the last newline so far
        skipping = False
        while True:
            if start:  # move what is left of the last line to the front
                buf[: end - start] = buf[start:end]
                end, start = end - start, 0
            if len(buf) - end < size:
                buf.extend(bytes(len(buf)))  # a line longer than a block: twice the room
            with memoryview(buf) as room:
                got = self._fh.readinto(room[end: end + size])
            if not got:
                break
            cut = buf.rfind(b"\n", end, end + got)
            end += got
            if cut < 0:
                if skipping:
                    end = 0
                elif end > self._max:
                    end, skipping = 0, True
                continue
            first = start
            if skipping:  # the rest of an oversized line
                first, skipping = buf.find(b"\n", 0, cut + 1) + 1, False
                self.oversized += 1
            with memoryview(buf) as whole:
                view = whole[first: cut + 1]
            yield view
            view.release()  # raises if the caller kept an export of it: the buffer is reused
            start = cut + 1
        if skipping:
            self.oversized += 1
        else:
            self.tail = bytes(buf[start:end])
