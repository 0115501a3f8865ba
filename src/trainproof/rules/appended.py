"""Appended runs: a log file into which a script appended a NEW training run each time it
ran (Keras' CSVLogger(append=True), `python train.py >> train.log`, a metrics.json that a
re-run from scratch writes on). Owns when a log holds several runs and which part of it
is judged: the LAST run, the one the file ends with - the run the user is asking about.

A resume continues its counter from a checkpoint: its steps go back at most to the
checkpoint's step, never to where counting began, and it stays joined (rules/resume.py).
A new run starts its counter at the origin again: the step (or, where the rows are
numbered in order, the epoch) goes back to where the log's counting began. `last_run`
cuts a parsed Run to its last run; parsers/__init__.build_run calls it, so every reader's
Run - judged by `epoch`, `doctor`, `compare` or `watch` - is the last run alone, and the
TP-APPENDED-RUNS finding says how many runs there were and which one was judged."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules import resume  # noqa: F401  (registers the resume check this follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.run import G

_EX_RUN = [2.0, 1.6, 1.3, 1.1, 0.95, 0.85, 0.8, 0.76]

APPENDED = rule(
    id="TP-APPENDED-RUNS", level=Level.INFO, group=G,
    title="The log holds several training runs appended one after another: the last one was judged.",
    evidence="{how_many} runs by the {counter} counter ({ranges}); judged: the last ({judged}), "
    "the one the log ends with; the earlier {earlier} run(s) were not judged",
    summary="A counter that goes back to where the log's counting began (a step back to the first "
    "step, an epoch back to the first epoch) starts a new training run, not a resume: only the "
    "last run is judged, and this finding says how many there were.",
    why="A script that appends to the same log file each time it runs (Keras' CSVLogger with "
    "append=True, `>> train.log`, a metrics.json written on) leaves several runs in one file. "
    "Read as one curve, the second run's fresh start is a loss that rose far above the first "
    "run's floor: a false divergence. The run the user asks about is the one the file ends with.",
    fix="Nothing to fix when the earlier runs are of no interest; to judge one of them, give it "
    "its own file (or start each run with a new log file).",
    thresholds={
        "origin_tol": Threshold(
            0.5, "logging intervals",
            "A counter went back to the origin when the new stretch's first value is at or below "
            "the log's first value, or when the new stretch, extrapolated back one of its own "
            "logging intervals, starts within half an interval of where the log's counting began "
            "(its first value less its first interval): a second run that logs at another interval "
            "starts there too; a resume from a checkpoint starts a whole interval or more later."),
        "carried": Threshold(
            0.5, "of the loss's gain before the boundary (by factors: in log space)",
            "A counter back at the origin while the loss kept at least half of what it had "
            "gained since the log began is one run going on (trained weights beginning the loop "
            "again, TP-RESUME-REPLAY's case; a logger counting steps per epoch; Keras fit() called "
            "again on the same model, the second phase of a transfer-learning recipe, whose epochs "
            "CSVLogger(append=True) numbers from 0 again) and stays joined; a new run from scratch "
            "starts near the log's first level, near 0 % of it. Both the new stretch's first point "
            "and the median of its first edge_points must have kept it: a new run whose loss drops "
            "within its first logging intervals is at the log's start level at its first point "
            "only. The gain is measured by factors, as a loss falls: a run that fell 1.6 -> "
            "0.0016 and a new one starting at 0.03 kept 60 % of the fall in absolute terms, a "
            "quarter of it by factors."),
        "edge_points": Threshold(
            3, "points",
            "Each level (the log's start, the end of the stretch before the boundary, the start of "
            "the one after) is the median of this many points: the smallest window with a majority, "
            "so that short appended runs are measured on their own points."),
        "min_points": Threshold(
            2, "points",
            "A stretch after such a boundary is a run of its own only with two points or more: one "
            "point has no logging interval to place it by, and is left joined to the run before it."),
    },
    fires=Example({"loss": [*_EX_RUN, *_EX_RUN[:5]], "steps": [*range(1, 9), *range(1, 6)]},
                  note="a run of 8 steps, then a new run from scratch appended: its counter starts at 1 again"),
    passes=Example({"loss": [*_EX_RUN, 0.8, 0.76, 0.74, 0.72], "steps": [*range(1, 9), 7, 8, 9, 10]},
                   note="a run resumed from its checkpoint at step 6: the overlap written again"),
    limits="Only a counter going back to the log's origin is a new run: a re-run resumed from "
    "the very first checkpoint, logging once per checkpoint, looks like one. A step counter "
    "that starts over while the loss carries on from where it was - trained weights beginning "
    "the loop again (TP-RESUME-REPLAY's case), a logger that counts steps per epoch - is one "
    "run and stays joined (TP-RESUMED says where), and so is an epoch counter that starts over "
    "while the loss carries on (fit() called again on the same model); so is a new run that "
    "starts where the last one ended. In a log whose step counter starts over, "
    "a column whose step restarts cannot be matched with the loss's (an eval logged in some "
    "runs only) is left out of the judged run, with a note. Of a log with more than 40 counter "
    "boundaries the parser describes the first and the last 20: the run judged is still the "
    "last, and the count says 'at least'.",
)

_SHOWN = 4  # runs spelled out in the evidence; the count says how many there were
_KEPT = 20  # runs described in meta (memory stays bounded)
_CARRIED_ASKED = 20  # epoch boundaries asked whether the loss carried on (Python per boundary)


class _Start(NamedTuple):
    """Where a new run begins in a series: the index of its first point and, for a counter
    the parser continued (a restart), how far its steps were shifted on."""

    index: int
    shift: float


def _interval(steps: np.ndarray, i: int) -> float | None:
    return float(steps[i + 1] - steps[i]) if i + 1 < steps.size and steps[i + 1] > steps[i] else None


def _at_origin(first: float, first_interval: float | None, s0: float, interval: float) -> bool:
    """Whether a stretch whose first value is `s0`, logged every `interval`, began where the
    log's counting began."""
    if s0 <= first:
        return True
    origin = first - (first_interval if first_interval is not None else interval)
    return s0 - interval <= origin + APPENDED.t("origin_tol") * interval


def _position(s: Series, b: dict) -> int:
    """The index in the joined series of the first point after boundary `b`."""
    if b["kind"] == "restart":  # continued after `from`, the last joined step before it
        return int(np.searchsorted(s.steps, b["from"], side="right"))
    return int(np.searchsorted(s.steps, b["to"], side="left"))


def _step_starts(run: Run, name: str, ref: bool) -> list[tuple[dict, _Start]]:
    """The boundaries of series `name` where its step counter went back to the origin. The
    reference curve's stretches need min_points and a logging interval; another
    column's may be one point (an evaluation at the end of each run) back at its first step."""
    s = run.get(name)
    found = run.meta.get("resumes")
    bounds = (found.get(name) or []) if isinstance(found, dict) and s is not None else []
    if not bounds or s is None or (ref and s.steps.size < 2):
        return []
    first, first_iv = float(s.steps[0]), _interval(s.steps, 0)
    placed = sorted(((_position(s, b), b) for b in bounds), key=lambda pb: pb[0])
    out = []
    for k, (i, b) in enumerate(placed):
        end = placed[k + 1][0] if k + 1 < len(placed) else s.steps.size
        iv = _interval(s.steps, i) if i + 1 < end else None
        # (a column's earlier run may be wholly replaced by the later write at its steps: its
        # last run then starts at index 0)
        if i >= s.steps.size or (ref and (i == 0 or end - i < APPENDED.t("min_points") or iv is None)):
            continue
        s0 = float(b["to"])
        if not (s0 <= first if iv is None else _at_origin(first, first_iv, s0, iv)):
            continue
        if ref and b["kind"] == "restart" and _carried_on(s, i, placed[k - 1][0] if k else 0):
            # the loss carried on from where it was: trained weights began the loop again
            # (TP-RESUME-REPLAY's case) or a logger counts per epoch - one run, kept joined
            continue
        out.append((b, _Start(i, float(s.steps[i]) - s0)))
    return out


def _carried_on(s: Series, i: int, prev: int) -> bool:
    """Whether the loss after the boundary at index `i` carried on from where the stretch
    before it (from index `prev`) ended, rather than starting again near the log's first
    level: medians of the edge_points points on each side and at the log's start, so the
    levels are the runs' own even when the runs are short."""
    m = int(APPENDED.t("edge_points"))
    v = s.values
    if i - prev < m or v.size - i < m or i < 2 * m:
        return False  # the levels need points of their own: too short to say, the counter decides
    start, before, after = (float(np.median(v[a:a + m])) for a in (0, i - m, i))
    # The new stretch's own first point as well as its median: a new run that drops fast
    # (a pretrained backbone, a log every 20 iterations) is at the log's start level at its
    # first point only, while trained weights carried on are at the carried level from it.
    first = float(v[i])
    if min(start, before, after, first) > 0:
        # a loss falls by factors: a run that fell 1.6 -> 0.0016 and a new one that starts at
        # 0.03 kept 60 % of its fall in absolute terms and a quarter of it by factors
        start, before, after, first = np.log(start), np.log(before), np.log(after), np.log(first)
    gain = start - before
    if not np.isfinite(start + before + after + first) or gain <= 0:
        return False  # no gain before the boundary: nothing to carry on; the counter decides
    return bool(min(start - after, start - first) / gain >= APPENDED.t("carried"))


def _key(b: dict) -> tuple:
    return b["kind"], b["from"], b["to"]


def _starts_for(run: Run, name: str, ref: str, starts: list[tuple[dict, _Start]]) -> list[tuple[dict, _Start]] | None:
    """Where the runs of `starts` (found in the reference series) begin in series `name`:
    at the same boundaries when the column was written on the same rows, else at its own
    returns to the origin when it has as many; None when it cannot be told."""
    if name == ref:
        return starts
    mine = _step_starts(run, name, ref=False)
    keys = {_key(b) for b, _ in starts}
    same = [m for m in mine if _key(m[0]) in keys]
    if len(same) == len(starts):
        return same
    return mine if len(mine) == len(starts) else None


def _epoch_starts(run: Run) -> np.ndarray:
    """Indices in the epoch series where the epoch went back to the origin while the rows
    (the step counter) went on. Vectorised: a hostile epoch column may go back every row."""
    e = run.get("epoch")
    if e is None or e.values.size < 3:
        return np.empty(0, dtype=np.int64)
    v = e.values
    back = np.flatnonzero(v[1:] < v[:-1]) + 1
    if back.size == 0:
        return back
    ends = np.append(back[1:], v.size)
    iv = v[np.minimum(back + 1, v.size - 1)] - v[back]  # each stretch's own logging interval
    first, first_iv = float(v[0]), _interval(v, 0)
    origin = first - (first_iv if first_iv is not None else iv)
    tol = APPENDED.t("origin_tol")
    at = (v[back] <= first) | (v[back] - iv <= origin + tol * iv)
    starts = back[(ends - back >= APPENDED.t("min_points")) & (iv > 0) & at]
    return _not_carried_on(run, e.steps, starts)


def _not_carried_on(run: Run, rows: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The epoch boundaries after which the loss did not carry on from where it was: `fit()`
    called again on the same model (a fine-tuning phase at a lower LR, the usual transfer-
    learning recipe) numbers its epochs from 0 again into the same CSVLogger file while the
    weights go on - one run, kept joined, as a step counter that starts over is."""
    s = run.get("loss")
    if s is None or starts.size == 0 or starts.size > _CARRIED_ASKED:
        return starts  # many boundaries: a hostile column, or runs from scratch; the counter decides
    at = np.searchsorted(s.steps, rows[starts], side="left")
    keep, prev = [], 0
    for k, i in zip(starts, at, strict=True):
        if not _carried_on(s, int(i), prev):
            keep.append(k)
            prev = int(i)
    return np.asarray(keep, dtype=np.int64)


def _epoch_ranges(values: np.ndarray, starts: np.ndarray) -> tuple[list[tuple[float, float, int]], int]:
    """_ranges of the first and last _KEPT // 2 runs only, and how many runs there are."""
    edges = np.concatenate([[0], starts, [values.size]]).astype(np.int64)
    n = edges.size - 1
    pick = range(n) if n <= _KEPT else [*range(_KEPT // 2), *range(n - _KEPT // 2, n)]
    return [(float(values[edges[k]]), float(values[edges[k + 1] - 1]), int(edges[k + 1] - edges[k]))
            for k in pick], n


def _ranges(values: np.ndarray, starts: list[int]) -> list[tuple[float, float, int]]:
    """(first, last, points) of each run's stretch of `values`, runs beginning at `starts`."""
    edges = [0, *starts, values.size]
    return [(float(values[a]), float(values[b - 1]), b - a) for a, b in itertools.pairwise(edges)]


def last_run(run: Run, by_epoch: bool = True) -> Run:
    """`run` cut to the last of the training runs appended in its log, with the split
    described in meta["appended"] and a note; `run` itself when it holds one run.
    `by_epoch`: the steps are the log's own row order (no step column), so an epoch back at
    its origin while they go on is a new run; where a step column counts on (a
    trainer_state.json's global step), the weights went on with it and the epoch alone
    does not split the log."""
    ref = "loss" if run.get("loss") is not None else "eval_loss" if run.get("eval_loss") is not None else None
    if ref is None:
        return run
    found = run.meta.get("resumes")
    if isinstance(found, dict) and found.get(ref):
        # The step counter went back: it says what each boundary was; the epoch, which goes
        # back with it, is not asked again (a loop replayed on trained weights stays joined).
        starts = _step_starts(run, ref, ref=True)
        return _cut_by_steps(run, ref, starts) if starts else run
    epochs = _epoch_starts(run) if by_epoch else np.empty(0, dtype=np.int64)
    if epochs.size:
        return _cut_by_epoch(run, epochs)
    return run


def _cut_by_steps(run: Run, ref: str, starts: list[tuple[dict, _Start]]) -> Run:
    s = run.series[ref]
    series, notes = {}, list(run.notes)
    for name, c in run.series.items():
        mine = _starts_for(run, name, ref, starts)
        if mine is None:
            notes.append(f"'{name}' could not be split into the same runs as the {ref}: left out of "
                         "the judged run")
            continue
        cut = mine[-1][1]
        series[name] = Series(name, c.steps[cut.index:] - cut.shift, c.values[cut.index:])
    cut = starts[-1][1]
    runs = _ranges(s.steps, [st.index for _, st in starts])
    # each run in its own counter: a restarted stretch was shifted on by the parser
    shifts = [0.0, *(st.shift for _, st in starts)]
    ranges = [(a - sh, b - sh, n) for (a, b, n), sh in zip(runs, shifts, strict=True)]
    meta = _last_meta(run, ref, starts, "step", ranges)
    counts = run.meta.get("resume_counts")
    bounds = run.meta["resumes"][ref]  # type: ignore[index]
    # the parser describes the first and the last boundaries of a long list: runs that began
    # between them are not seen, so the count is a lower bound (the last run is still right)
    meta["appended"]["at_least"] = isinstance(counts, dict) and int(counts.get(ref, 0)) > len(bounds)
    return _finish(run, series, notes, meta)


def _cut_by_epoch(run: Run, starts: np.ndarray) -> Run:
    e = run.series["epoch"]
    at = float(e.steps[starts[-1]])
    shift = at - min(float(s.steps[0]) for s in run.series.values() if len(s))
    series = {}
    for name, c in run.series.items():
        k = int(np.searchsorted(c.steps, at, side="left"))
        series[name] = Series(name, c.steps[k:] - shift, c.values[k:])
    ranges, count = _epoch_ranges(e.values, starts)
    meta = _last_meta(run, "epoch", [], "epoch", ranges, at=at, shift=shift, count=count)
    return _finish(run, series, list(run.notes), meta)


def _last_meta(run: Run, ref: str, starts: list[tuple[dict, _Start]], counter: str,
               ranges: list[tuple[float, float, int]], at: float | None = None, shift: float = 0.0,
               count: int | None = None) -> dict:
    """The Run's meta for its last run: the split described, and only the resume boundaries
    that lie inside the last run, their joined steps moved into its own counter."""
    meta = dict(run.meta)
    meta["appended"] = {"runs": len(ranges) if count is None else count, "counter": counter,
                        "ranges": ranges[:_KEPT // 2] + ranges[max(_KEPT // 2, len(ranges) - _KEPT // 2):]}
    found = run.meta.get("resumes")
    if not isinstance(found, dict):
        return meta
    kept: dict[str, list[dict]] = {}
    for name, bounds in found.items():
        s = run.series.get(name)
        if s is None:
            continue
        if counter == "step":
            mine = _starts_for(run, name, ref, starts)
            if not mine:
                continue
            lo, sh = mine[-1][1].index, mine[-1][1].shift
        else:
            lo, sh = int(np.searchsorted(s.steps, at, side="left")), shift
        # the parser's restarts continue the joined count; a resume's `to` is a joined step
        # when the log's steps never restarted (the epoch split), so both move then
        inside = [{**b, "from": b["from"] - sh, "to": b["to"] - (sh if counter == "epoch" else 0.0)}
                  for b in bounds if _position(s, b) > lo]
        if inside:
            kept[name] = inside
    meta["resumes"] = kept
    meta["resume_counts"] = {k: len(v) for k, v in kept.items()}
    return meta


def _finish(run: Run, series: dict[str, Series], notes: list[str], meta: dict) -> Run:
    info = meta["appended"]
    first, last, _ = info["ranges"][-1]
    notes.append(f"this log holds {info['runs']} training runs appended one after another (the "
                 f"{info['counter']} counter went back to its origin {info['runs'] - 1} time(s)): only the "
                 f"last, {info['counter']} {first:g}-{last:g}, is judged; the earlier runs are not")
    if not meta.get("resumes"):
        meta.pop("resumes", None)
        meta.pop("resume_counts", None)
    return replace(run, series=series, notes=tuple(notes), meta=meta)


def _describe(ranges: list, count: int) -> str:
    """Each run's counter range, the first few and the last when there are many."""
    shown = [f"{a:g}-{b:g}, {n} point(s)" for a, b, n in ranges]
    if count > _SHOWN:
        shown = [*shown[:_SHOWN - 1], f"{count - _SHOWN} more", shown[-1]]
    return "; ".join(shown)


@check("appended", APPENDED, after="resume")
def runs_appended(run: Run) -> list[Finding] | Skip:
    if run.get("loss") is None and run.get("eval_loss") is None:
        return Skip(SkipKind.NO_DATA, "no loss column in the log")
    info = run.meta.get("appended")
    if not isinstance(info, dict):
        return []
    ranges = info["ranges"]
    count = int(info["runs"])
    first, last, n = ranges[-1]
    how_many = f"at least {count}" if info.get("at_least") else str(count)
    return [APPENDED.finding(Location(run.path, first), count=count, how_many=how_many, counter=info["counter"],
                             ranges=_describe(ranges, count), judged=f"{info['counter']} {first:g}-{last:g}, "
                             f"{n} point(s)", earlier=count - 1)]
