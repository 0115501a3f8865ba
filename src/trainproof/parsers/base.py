"""What every reader returns, and the accumulator readers use to build it.

Readers return columns (name -> steps, values) rather than yielding one
(column, step, value) triple at a time: a Python call per point is the dominant
cost on multi-GB logs, and the column form is what numpy wants anyway."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainproof.files import require_regular
from trainproof.model import InputError
from trainproof.parsers.compressed import read_head
from trainproof.parsers.stores import Store


@dataclass
class RawLog:
    columns: dict[str, tuple[np.ndarray, np.ndarray]]
    records: int
    notes: list[str] = field(default_factory=list)
    meta: dict[str, object] = field(default_factory=dict)
    step_column: str | None = None


class Columns:
    """Per-column (step, value) buffers: single points go to array('d'), whole
    chunks (from vectorised readers) are kept as numpy arrays until the end."""

    __slots__ = ("_chunks", "_points", "bad")

    def __init__(self) -> None:
        self._points: dict[str, tuple[array, array]] = {}
        self._chunks: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.bad: dict[str, int] = {}  # per column: values that were not numbers

    def add(self, name: str, step: float, value: float) -> None:
        col = self._points.get(name)
        if col is None:
            col = self._points[name] = (array("d"), array("d"))
        col[0].append(step)
        col[1].append(value)

    def extend(self, name: str, steps: np.ndarray, values: np.ndarray) -> None:
        self._flush(name)
        self._chunks.setdefault(name, []).append((steps, values))

    def reject(self, name: str, count: int = 1) -> None:
        self.bad[name] = self.bad.get(name, 0) + count

    def _flush(self, name: str) -> None:
        col = self._points.pop(name, None)
        if col is not None and len(col[0]):
            pair = (np.frombuffer(col[0], dtype=np.float64), np.frombuffer(col[1], dtype=np.float64))
            self._chunks.setdefault(name, []).append(pair)

    def arrays(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        for name in list(self._points):
            self._flush(name)
        out = {}
        # Columns read from the same rows hold the same step arrays (one per block): join
        # those once and share the result. The step parts are dropped before any values are
        # joined and each column's value parts as soon as they are, so memory peaks at the
        # points kept plus one column, not at twice the points.
        groups: dict[tuple[int, ...], list[str]] = {}
        for k in self._chunks:
            if len(self._chunks[k]) == 1:
                out[k] = self._chunks[k][0]
            else:  # every part is alive here, so equal ids are the same arrays
                groups.setdefault(tuple(id(p[0]) for p in self._chunks[k]), []).append(k)
        for names in groups.values():
            steps = np.concatenate([p[0] for p in self._chunks[names[0]]])
            values = {k: [p[1] for p in self._chunks.pop(k)] for k in names}
            for k in names:
                out[k] = (steps, np.concatenate(values.pop(k)))
        self._chunks.clear()
        return out

    def bad_notes(self) -> list[str]:
        return [f"{n} non-numeric value(s) in column '{k}' ignored" for k, n in sorted(self.bad.items())]


_SPECIAL = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
            "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}


def number(v: object) -> float | None:
    """A JSON/CSV cell as a float, or None when it is not a number.
    Booleans are not numbers: `true` is not a loss of 1.0."""
    t = type(v)
    if t is float or t is int:
        return float(v)  # type: ignore[arg-type]
    if t is str:
        s = v.strip()  # type: ignore[union-attr]
        try:
            return float(s)
        except ValueError:
            return _SPECIAL.get(s.lower())
    return None


Sniff = Callable[[str, bytes], bool]
Read = Callable[[Path], RawLog]


HEAD = 8192  # bytes a sniff sees unless its format asks for more


@dataclass(frozen=True)
class Format:
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


def read_text_head(path: Path, size: int = HEAD) -> bytes:
    """The first bytes of a log as its reader will see them (decompressed)."""
    return read_head(path, size)


def require_file(path: Path) -> None:
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a log file")
    require_regular(path)
