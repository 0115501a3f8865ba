"""What the learning-rate series and the run's meta say about the training schedule:
where warm-up ends, the peak LR, restarts of a cyclic or cosine-with-restarts schedule,
steps where the LR touches exactly 0, and how far through the planned run the log is.

This module measures; it never judges. Rules (rules/) decide what a warm-up or a
restart changes about a verdict. `read_schedule` never raises: an absent, constant,
non-finite or odd LR series gives a Schedule whose fields are None / empty.

The only numbers here are tolerances for reading a deterministic LR series whose logged
values may be rounded by the logger (text logs print 2-4 significant digits); they say
when two logged LR values are "the same", not whether a run is healthy."""

from __future__ import annotations

import weakref

import numpy as np

from trainproof.frozen import NamedTuple
from trainproof.model import Run
from trainproof.stats import CHUNK, all_finite, first_where, where

# Two logged LR values within this share of each other are the same LR: loggers round
# (HF text logs print "2e-05", 1-3 significant digits), so a schedule that is flat or
# at its peak can read as a tiny wobble. A real step of any LR schedule in use (linear,
# cosine, step decay) moves by more than this between logged points or is a flat stretch.
SAME_LR = 1e-3

# Relative difference below which two LRs computed by a scheduler are the same value.
ROUNDOFF = 1e-9

# Meta keys that carry the planned number of optimizer steps: HF trainer_state.json's
# `max_steps` (also what parsers/progress.py files LLaMA-Factory's `total_steps` and
# ms-swift's max_steps under), and `total_steps` should a reader keep that spelling.
PLANNED_KEYS = ("max_steps", "total_steps")


class Schedule(NamedTuple):
    """The schedule as the log shows it. Steps are the log's own step values."""

    warmup_end: float | None  # step where a rising LR first reaches its peak; None if no warm-up is seen
    peak_lr: float | None  # the largest finite LR logged
    restarts: tuple[float, ...]  # steps where the LR jumps back up after decaying (cosine-with-restarts, cyclic)
    zero_touches: tuple[float, ...]  # steps where the LR is exactly 0 inside a schedule that is otherwise non-zero
    planned_steps: float | None  # max_steps (HF trainer_state meta) / total_steps (LLaMA-Factory) / None
    last_step: float | None  # the last step logged by any series of the run
    # True when the LR was still rising at its last logged point: the log ends inside
    # warm-up (warmup_end is then that last LR step, the furthest warm-up is known to go).
    warming_up: bool = False

    @property
    def seen_fraction(self) -> float | None:
        """last_step / planned_steps when both are known."""
        if self.planned_steps is None or self.last_step is None or self.planned_steps <= 0:
            return None
        return self.last_step / self.planned_steps


NO_SCHEDULE = Schedule(None, None, (), (), None, None)


# The last run read and its schedule: a report asks for it from several checks (eight
# on a trainer_state.json), each a pass over the lr series (~30 ms at 1M points). A
# weak reference, so no run is kept alive for the cache's sake.
_last: tuple[weakref.ref[Run], Schedule] | None = None


def read_schedule(run: Run) -> Schedule:
    """The run's schedule from run.get("lr") and run.meta; never raises on odd data."""
    global _last
    if _last is not None and _last[0]() is run:
        return _last[1]
    try:
        sched = _read(run)
    except Exception:  # a schedule reading is context for rules, never a reason to fail a report
        sched = NO_SCHEDULE
    _last = (weakref.ref(run), sched)
    return sched


def _read(run: Run) -> Schedule:
    planned = planned_steps(run.meta)
    span = run.step_span
    last = float(span[1]) if span is not None else None
    lr = run.get("lr")
    if lr is None:
        return Schedule(None, None, (), (), planned, last)
    if all_finite(lr.values):  # no 5M-point mask on a finite LR (#14)
        steps, values = lr.steps, lr.values
    else:
        ok = np.isfinite(lr.values)
        steps, values = lr.steps[ok], lr.values[ok]
    if values.size == 0 or not values.max() > 0:  # finite values: max > 0 iff any is
        return Schedule(None, None, (), (), planned, last)
    peak = float(values.max())
    moves = _moves(values)  # one pass, read by warm-up and restarts alike
    warm_i, rising_to_end = _warmup(values, moves)
    warmup_end = float(steps[warm_i]) if warm_i is not None else None
    prefix_end = warm_i if warm_i is not None else 0
    return Schedule(
        warmup_end=warmup_end,
        peak_lr=peak,
        restarts=tuple(float(steps[i]) for i in _restarts(values, prefix_end, moves)),
        zero_touches=tuple(float(steps[i]) for i in _zero_touches(values)),
        planned_steps=planned,
        last_step=last,
        warming_up=rising_to_end,
    )


def planned_steps(meta: object) -> float | None:
    """The planned optimizer steps from a reader's meta, when it is a positive number."""
    if not hasattr(meta, "get"):
        return None
    for key in PLANNED_KEYS:
        v = meta.get(key)  # type: ignore[union-attr]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v > 0:
            return float(v)
    return None


def _moves(values: np.ndarray) -> np.ndarray:
    """+1 / -1 / 0 for each step between logged points: up, down, or the same LR (within
    SAME_LR). From 0, any positive LR is up. A chunk at a time: the same comparisons per
    step, without series-sized float temporaries (#14: 50 MB on a 5M-point LR)."""
    n = max(values.size - 1, 0)
    out = np.empty(n, dtype=np.int8)
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        a, b = values[lo:hi], values[lo + 1: hi + 1]
        up = np.where(a > 0, b > a * (1.0 + SAME_LR), b > 0)
        down = b < a * (1.0 - SAME_LR)
        out[lo:hi] = up.astype(np.int8) - down.astype(np.int8)
    return out


def _warmup(values: np.ndarray, moves: np.ndarray | None = None) -> tuple[int | None, bool]:
    """(index where the initial rise first reaches its peak, whether it is still rising at
    the last point). The initial rise is the longest prefix that never goes down; warm-up
    is seen only when that prefix ends higher than it began."""
    n = values.size
    moves = _moves(values) if moves is None else moves
    down = first_where(moves, lambda m: m < 0)  # chunked: no series-sized masks (#14)
    j = down if down >= 0 else n - 1  # last index of the prefix
    top = float(values[: j + 1].max())
    if not (j and moves[:j].max() > 0):
        return None, False  # no rise: the first logged LR is already the initial peak
    near = top * (1.0 - SAME_LR)
    first = first_where(values[: j + 1], lambda v: v >= near)
    # Still rising at the end: the prefix runs to the last point and that point is above the
    # first one at the peak. A long warm-up logged every step moves by less than SAME_LR per
    # point near its top, so the last move alone cannot say it; a constant LR after warm-up
    # repeats the peak exactly (ROUNDOFF allows for float arithmetic in the scheduler).
    still = j == n - 1 and (moves[-1] > 0 or values[-1] > values[first] * (1.0 + ROUNDOFF))
    return (n - 1 if still else first), bool(still)


def _restarts(values: np.ndarray, start: int, moves: np.ndarray | None = None) -> list[int]:
    """Indices after `start` where the LR rises and the last move before it was a fall."""
    moves = (_moves(values) if moves is None else moves)[start:]
    idx = where(moves, lambda m: m != 0)  # chunked: no 5M-point mask beside `moves` (#14)
    if idx.size < 2:
        return []
    signs = moves[idx]
    hits = idx[1:][(signs[1:] > 0) & (signs[:-1] < 0)]
    return [int(i) + start + 1 for i in hits]


def _zero_touches(values: np.ndarray) -> list[int]:
    """Single logged points at exactly 0 (neighbours, where they exist, above 0) in a
    series that has positive values: the point where a schedule passes through 0 (a
    warm-up from 0, a decay to 0, a cycle's trough), not a stretch spent at lr = 0."""
    at = where(values, lambda v: v == 0.0)  # the zeros, then their neighbours: no series-sized masks
    before = np.zeros(at.size, dtype=bool)
    after = np.zeros(at.size, dtype=bool)
    inner = at > 0
    before[inner] = values[at[inner] - 1] == 0.0
    inner = at < values.size - 1
    after[inner] = values[at[inner] + 1] == 0.0
    return [int(i) for i in at[~before & ~after]]
