"""The chart data a report carries for the renderers that draw (the HTML report): each
metric thinned to a few points per pixel column, keeping every point a finding cites.
Never a judging input: the rules read the full series, and nothing here changes a verdict.

Thinning is min/max per bucket of equal step width (the extremes a reader looks for -
a spike, a NaN's neighbour, the floor - survive, which even thinning would drop), plus
the first and last point and the point at every step a finding names."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from trainproof.model import Finding, Run, Series
from trainproof.stats import CHUNK

Curve = tuple[tuple[float, ...], tuple[float, ...]]

# Buckets are pixel columns: the loss chart is 720 px wide, the small charts 340.
BUCKETS = {"loss": 720, "eval_loss": 720, "lr": 340, "grad_norm": 340}
CHART_METRICS = tuple(BUCKETS)
# Names of the compare report's extra curves (the renderer draws them under the run's).
BASELINE, ENVELOPE_LO, ENVELOPE_HI = "baseline loss", "envelope low", "envelope high"


def cited_steps(findings: Iterable[Finding]) -> list[float]:
    """The steps findings point at (Location.step), in order, without repeats."""
    return sorted({float(f.location.step) for f in findings
                   if f.location.step is not None and np.isfinite(f.location.step)})


def thin(steps: np.ndarray, values: np.ndarray, buckets: int, keep: Sequence[float] = ()) -> Curve:
    """At most ~2*buckets finite points of (steps, values): each bucket's lowest and highest,
    the first and last point, and the point at (or nearest before) every step in `keep`."""
    if not (_all_finite(values) and _all_finite(steps)):
        ok = np.isfinite(values) & np.isfinite(steps)
        steps, values = steps[ok], values[ok]
    n = int(steps.size)
    if n <= 2 * buckets:
        return tuple(steps.tolist()), tuple(values.tolist())
    lo, hi = float(steps[0]), float(steps[-1])
    width = (hi - lo) or 1.0
    starts, ascending = _stretches(_bucket_chunks(steps, lo, width, buckets))
    if starts.size <= _STRETCHES and ascending:
        low, high = _stretch_extremes(values, starts)
    else:
        low, high = _sorted_extremes(values, _buckets(steps, lo, width, buckets))
    cited = np.searchsorted(steps, np.asarray(keep, dtype=float), side="right") - 1
    idx = np.sort(np.concatenate([low, high, [0, n - 1], cited[cited >= 0]]))
    idx = idx[np.r_[True, idx[1:] != idx[:-1]]]  # np.unique, without its import of numpy.ma
    return tuple(steps[idx].tolist()), tuple(values[idx].tolist())


def _buckets(steps: np.ndarray, lo: float, width: float, buckets: int) -> np.ndarray:
    """Each point's bucket, min(int((step - lo) / width * buckets), buckets - 1), computed a
    chunk at a time into one array: the same arithmetic per point, without four temporaries
    the size of the series (#14). Stored as int16 while every bucket fits (the buckets
    compare and sort alike; 10 MB for 5M points instead of 38)."""
    col = np.empty(steps.size, dtype=np.int16 if buckets <= _NARROW else np.int64)
    for a, part in zip(range(0, steps.size, CHUNK), _bucket_chunks(steps, lo, width, buckets), strict=True):
        if col.dtype != part.dtype and part.size and part.min() < -_NARROW:  # unsorted steps far below
            # the first: the buckets as computed, in int64 (an int16 would wrap)
            col = col.astype(np.int64)
        col[a: a + CHUNK] = part
    return col


def _bucket_chunks(steps: np.ndarray, lo: float, width: float, buckets: int) -> Iterator[np.ndarray]:
    """The buckets of CHUNK points at a time, in int64."""
    for a in range(0, steps.size, CHUNK):
        yield np.minimum(((steps[a: a + CHUNK] - lo) / width * buckets).astype(np.int64), buckets - 1)


_NARROW = (1 << 15) - 1  # the largest int16

_STRETCHES = 4096  # more buckets than this (no chart has them) are sorted, not looped over


def _all_finite(a: np.ndarray) -> bool:
    """np.isfinite(a).all(), a chunk at a time (no series-sized mask when it is)."""
    return all(bool(np.isfinite(a[i: i + CHUNK]).all()) for i in range(0, a.size, CHUNK))


def _stretches(chunks: Iterable[np.ndarray]) -> tuple[np.ndarray, bool]:
    """(np.flatnonzero(np.r_[True, col[1:] != col[:-1]]), np.all(col[1:] >= col[:-1])) of
    the buckets `col` that `chunks` yields in order, each chunk compared with the element
    before it: no series-sized masks, and no bucket array at all (#14: 10 MB at 5M points)."""
    starts, ascending, at, last = [np.zeros(1, dtype=np.intp)], True, 0, None
    for part in chunks:
        if last is not None and part.size:
            a, b = np.r_[last, part[:-1]], part
        else:
            a, b = part[:-1], part[1:]
        starts.append(np.flatnonzero(b != a) + at + (part.size - b.size))
        ascending = ascending and bool(np.all(b >= a))
        at += part.size
        last = part[-1] if part.size else last
    return np.concatenate(starts), ascending


def _sorted_extremes(values: np.ndarray, col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each bucket that has points, the index of its lowest value (the first of equal
    ones) and of its highest (the last of equal ones): what a stable sort by (bucket,
    value) puts first and last in each bucket."""
    order = np.lexsort((values, col))  # by bucket, then by value within the bucket
    sorted_col = col[order]
    first = np.flatnonzero(np.r_[True, sorted_col[1:] != sorted_col[:-1]])
    last = np.r_[first[1:] - 1, col.size - 1]
    return order[first], order[last]


def _stretch_extremes(values: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_sorted_extremes where the buckets ascend (a Series' steps), so each bucket is one
    stretch of points beginning at `starts`: argmin / argmax of each stretch (the first of
    equal values; the last, reading backwards) instead of sorting 5M values (1.1 s a curve)."""
    ends = np.r_[starts[1:], values.size]
    low = np.empty(starts.size, dtype=np.intp)
    high = np.empty(starts.size, dtype=np.intp)
    for k, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        part = values[a:b]
        low[k] = a + int(part.argmin())
        high[k] = b - 1 - int(part[::-1].argmax())
    return low, high


def _series(s: Series | None, buckets: int, keep: Sequence[float]) -> Curve | None:
    if s is None:
        return None
    got = thin(np.asarray(s.steps, dtype=float), np.asarray(s.values, dtype=float), buckets, keep)
    return got if got[0] else None


def run_curves(run: Run, findings: Iterable[Finding] = ()) -> dict[str, Curve]:
    """loss, eval_loss, lr and grad_norm of `run`, thinned, keeping the steps `findings` cite."""
    keep = cited_steps(findings)
    out = {}
    for name, buckets in BUCKETS.items():
        got = _series(run.get(name), buckets, keep)
        if got is not None:
            out[name] = got
    return out


def compare_curves(run: Run, baselines: Sequence[Run], bases_at_run: tuple[np.ndarray, np.ndarray] | None,
                   findings: Iterable[Finding] = ()) -> dict[str, Curve]:
    """The run's curves, the first baseline's loss, and - with several baselines - the
    envelope (lowest and highest baseline loss at each of the run's aligned steps, as the
    compare rules interpolated them: `bases_at_run` is (steps, bases matrix))."""
    keep = cited_steps(findings)
    out = run_curves(run, findings)
    base = _series(baselines[0].get("loss") if baselines else None, BUCKETS["loss"], keep)
    if base is not None:
        out[BASELINE] = base
    if bases_at_run is not None and len(baselines) > 1:
        steps, bases = bases_at_run
        out[ENVELOPE_LO] = thin(steps, bases.min(axis=0), BUCKETS["loss"], keep)
        out[ENVELOPE_HI] = thin(steps, bases.max(axis=0), BUCKETS["loss"], keep)
    return out


def as_arrays(curve: Curve) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(curve[0], dtype=float), np.asarray(curve[1], dtype=float)


def steps_of(curves: Mapping[str, Curve]) -> tuple[float, float] | None:
    """The step range every curve of a report spans together."""
    firsts = [c[0][0] for c in curves.values() if c[0]]
    lasts = [c[0][-1] for c in curves.values() if c[0]]
    return (min(firsts), max(lasts)) if firsts else None
