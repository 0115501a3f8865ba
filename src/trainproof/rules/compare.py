"""Compare rules on the training loss: a run judged against a known-good baseline of the
same task, at the same steps. They catch what no single curve can - a run that learns,
just far worse than it should (shuffled labels, a broken tokenizer, the wrong data) -
and say of a run still in progress whether it is on track at the step it reached.
This module owns what every compare rule reads of a pair (its aligned loss sides, the
N-way ranking row, where findings point) and the rules on where the run's loss stands:
a non-finite end, how far it got, and its level against the baseline's at that step.
How the sides are aligned and how noise is measured lives in compare_align.py; the run's
gain against the baseline's in compare_gain.py; gradient norms and the baseline's own
health in compare_health.py; eval loss, learning rate and step time in compare_eval.py."""

from __future__ import annotations

import numpy as np

from trainproof.model import Finding, Level, Location, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.compare_align import EDGE, MIN_POINTS, Pair, Side, Track, reached

__all__ = ["GAP", "Pair", "comparable", "ranking_row", "run_location", "sides"]

G = "compare"
_EDGE = EDGE  # the start/end windows every loss ratio below reads

GAP = Threshold(
    3, "noise widths",
    "The run's end and the baseline's at the same step are fixed positions, not the lowest of "
    "many blocks (TP-DIVERGE's floor, biased low, needs 4): a one-sided 3-width gap is "
    "crossed by noise about once in 700 comparisons. A width is the standard error of the "
    "difference of the two end medians were the run a healthy replica of the baseline: the "
    "baseline's batch noise over the same steps on both sides (raised by sqrt(spacing ratio) "
    "where the run logs more often, as fewer batches per logged point scatter more), never "
    "the run's own scatter, which the damage inflates (an lr x100 wreck jumps ~26 % per point "
    "and would be 2 widths in its own noise). Healthy gallery seeds scatter up to ~3x their "
    "baseline at some cuts and still stay under it with the 5 % floor. Several baselines: "
    "the spread of their ends when that is wider (seeds differ by more than batches do); the "
    "gap is counted from the top of that envelope (the baseline itself when there is one). "
    "TP-NEG-IMPROVE measures the run's own start-to-end change in the run's own noise.")


def comparable(pair: Pair) -> str | None:
    """Why the loss ratios cannot be taken for this pair, or None when they can."""
    t = pair.loss
    return t if isinstance(t, str) else None


def sides(pair: Pair) -> tuple[Side, Side, Track] | Skip:
    """(baseline, run) loss summaries over the aligned steps, and the track they come from."""
    t = pair.loss
    if isinstance(t, str):
        return Skip(SkipKind.TOO_FEW if "needs" in t else SkipKind.DEGENERATE, t)
    return t.side(t.base), t.side(t.run), t


def _collapse_step(s: Series, min_tail: int, grad: Series | None = None) -> float | None:
    """Step from which the loss is non-finite, or exactly 0 after positive values (the
    zeros HF's logging_nan_inf_filter writes for NaN losses), through to the end. A point
    logged where grad_norm is non-finite is such a hidden NaN however short the tail (the
    filter logs 0.0, or an average standing in for the NaN losses): the rest of a run in
    progress has not been logged yet."""
    v = s.values
    bad = ~np.isfinite(v)
    if grad is not None:
        bad |= np.isin(s.steps, grad.steps[~np.isfinite(grad.values)])
    zero = v == 0.0
    tail_bad = bad | zero
    if not tail_bad[-1]:
        return None
    start = 0 if tail_bad.all() else len(v) - int(np.argmin(tail_bad[::-1]))
    if not bad[start:].any() and np.count_nonzero(zero[start:]) < min_tail:
        return None  # a few zero batches are not a collapse
    if start == 0 and not bad.any():
        return None  # all zero from the start: TP-ZERO-LOSS's finding, not a collapse
    return float(s.steps[start])


def _collapse_what(tail: np.ndarray) -> str:
    if not np.isfinite(tail).all():
        return "NaN/Inf"
    if (tail == 0.0).any():
        return "exactly 0 (HF's NaN filter)"
    return "logged beside a non-finite grad_norm (HF's NaN filter stands in for NaN losses)"


def ranking_row(pair: Pair) -> dict[str, object]:
    """The numbers of the N-way table for one pair: how far the run got, its loss ratios
    over the aligned steps, and its eval end ratio where both sides log eval loss."""
    row: dict[str, object] = {"run": pair.run.path}
    if pair.progress is not None:
        row["reached"] = reached(*pair.progress)
    got = sides(pair)
    if not isinstance(got, Skip):
        b, r, t = got
        row.update(step=float(t.steps[-1]), floor=r.floor, end=r.end, floor_ratio=r.floor / b.floor,
                    end_ratio=r.end / b.end, improvement=(r.start - r.end) / r.start)
    ev = pair.eval
    if not isinstance(ev, str):
        row["eval_end_ratio"] = ev.side(ev.run, blocks=False).end / ev.side(ev.base, blocks=False).end
    return row


def run_location(pair: Pair, step: float | None = None) -> Location:
    """Where a compare finding points: the run, at a step where one applies."""
    return Location(pair.run.path, step)


END_NONFINITE = rule(
    id="TP-END-NONFINITE", level=Level.FAIL, group=G,
    title="The run's loss ends in NaN/Inf (or the NaN filter's zeros); the baseline's does not.",
    evidence="run loss is {what} from step {step} to the end ({n} points); baseline ends at {base_end}",
    summary="The run's loss collapsed to non-finite values, or to the exact zeros HF logs for them, "
    "while the baseline finished with a finite loss. A run that is NaN from its first point "
    "FAILs here too.",
    why="No ratio can be taken against NaN, yet a run that ends in NaN is as far from its "
    "baseline as a run can be; calling the pair uncomparable would hide the worst case.",
    fix="Run `trainproof epoch` on the run: TP-NAN, TP-NAN-GRAD or TP-ZERO-LOSS-ONSET say where it broke.",
    thresholds={"min_tail": Threshold(5, "points", "As TP-ZERO-LOSS-ONSET: a few zero batches are "
                                      "not a collapse; any non-finite end is, and so is a zero "
                                      "logged where grad_norm is NaN (HF's NaN filter at work).")},
    fires=Example({"baseline": {"loss": [2.0, 1.8, 1.6, 1.5, 1.4]},
                   "run": {"loss": [2.0, 1.9, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0]}}),
    passes=Example({"baseline": {"loss": [2.0, 1.8, 1.6, 1.5, 1.4]},
                    "run": {"loss": [2.0, 1.8, 1.65, 1.5, 1.45]}}),
)


@check("nonfinite-end", END_NONFINITE)
def nonfinite_end(pair: Pair) -> list[Finding] | Skip:
    r = pair.run.get("loss")
    bs = [b.get("loss") for b in pair.baselines]
    if r is None or any(b is None for b in bs):
        return Skip(SkipKind.NO_DATA, "loss missing on one side")
    tail = int(END_NONFINITE.t("min_tail"))
    for base, b in zip(pair.baselines, bs, strict=True):
        if b is not None and _collapse_step(b, tail, base.get("grad_norm")) is not None:
            return Skip(SkipKind.DEGENERATE, f"the baseline {base.path}'s own loss ends non-finite")
    step = _collapse_step(r, tail, pair.run.get("grad_norm"))
    if step is None:
        return []
    end = r.values[r.steps >= step]
    what = _collapse_what(end)
    base_end = float(bs[0].finite_only().values[-1]) if bs[0] is not None and len(bs[0].finite_only()) else "nan"
    return [END_NONFINITE.finding(run_location(pair, step), what=what, step=step, n=int(end.size), base_end=base_end)]


PARTIAL = rule(
    id="TP-CMP-PARTIAL", level=Level.INFO, group=G,
    title="Judged over the steps the run and the baseline share, not against the baseline's end.",
    evidence="the run reached step {run_last} ({reached:.0%} of the baseline's {base_last}); every "
    "loss ratio is taken at steps {first}..{step}, the baseline interpolated at the run's steps, "
    "so the verdict says whether the run is on track at step {step}",
    summary="The run and the baseline end at different steps (a run still in progress, or one "
    "longer than its baseline); the comparison covers the steps both logged.",
    why="A run at 10 % of its schedule has not had the baseline's 100 % to learn; comparing it "
    "with the baseline's end calls every healthy run in progress a failure.",
    fix="Nothing to fix. Compare again when the run has gone further; the verdict then covers more.",
    fires=Example({"baseline": {"loss": [2.0, 1.8, 1.6, 1.5, 1.4, 1.35, 1.3, 1.28]},
                   "run": {"loss": [2.0, 1.82, 1.61, 1.5, 1.41]}}),
    passes=Example({"baseline": {"loss": [2.0, 1.8, 1.6, 1.5, 1.4]},
                    "run": {"loss": [2.0, 1.82, 1.61, 1.5, 1.41]}}),
)


@check("progress", PARTIAL)
def progress(pair: Pair) -> list[Finding] | Skip:
    got = sides(pair)
    if pair.progress is None or isinstance(got, Skip):
        return Skip(SkipKind.NO_DATA, "no aligned loss on both sides")
    run_last, base_last = pair.progress
    if run_last == base_last:
        return []
    t = got[2]
    return [PARTIAL.finding(run_location(pair, float(t.steps[-1])), run_last=run_last, base_last=base_last,
                            reached=reached(run_last, base_last), first=float(t.steps[0]),
                            step=float(t.steps[-1]))]


OFF_TRACK = rule(
    id="TP-LOSS-OFF-TRACK", level=Level.FAIL, group=G,
    title="At the step the run reached, its loss sits far above the baseline's at that step.",
    evidence="at step {step} the run's loss {run_end} is {ratio:.2f}x the baseline's {base_end} "
    "(> {limit_min_ratio}x), {gap:.1f} noise widths above it (> {limit_gap}; a width is "
    "{width:.2%} in log loss, from {how}; medians of the last {k} aligned points)",
    summary="Measured at the same step, the run's loss is above the baseline's (or above the "
    "envelope of several baselines) by more than its noise and by more than seeds differ.",
    why="This is the question a running job is compared for: is it where a known-good run was "
    "at this step? A run that is off track early (a learning rate that wrecked the pretrained "
    "weights, labels that do not match the inputs) will not catch up by itself.",
    fix="Diff the run's learning rate, data and labels against the baseline's; stop the job "
    "rather than pay for the rest of it.",
    thresholds={
        "gap": GAP,
        "min_ratio": Threshold(1.05, "x baseline at the same step",
                               "Seeds of one recipe differ in init and batch order and end within "
                               "a few percent of each other; a gap the batch noise calls real but "
                               "under 5 % is seed variation, not a broken run."),
        "min_points": MIN_POINTS, **_EDGE,
    },
    fires=Example({"baseline": {"loss": [5.5, 5.4, 5.45, 5.3, 5.35, 5.2, 5.25, 5.1, 5.15, 5.0]},
                   "run": {"loss": [5.5, 6.6, 6.5, 6.55, 6.4, 6.45, 6.3, 6.35, 6.2, 6.25]}}),
    passes=Example({"baseline": {"loss": [5.5, 5.4, 5.45, 5.3, 5.35, 5.2, 5.25, 5.1, 5.15, 5.0]},
                    "run": {"loss": [5.5, 5.42, 5.4, 5.33, 5.3, 5.22, 5.2, 5.12, 5.1, 5.03]}}),
)


@check("off-track", OFF_TRACK)
def off_track(pair: Pair) -> list[Finding] | Skip:
    got = sides(pair)
    if isinstance(got, Skip):
        return got
    _, r, t = got
    lo, hi = t.envelope()
    width, how = t.width()
    ratio = r.end / hi
    gap = float(np.log(ratio) / width) if width > 0 else float("inf")
    if ratio > OFF_TRACK.t("min_ratio") and gap > OFF_TRACK.t("gap"):
        step = float(t.steps[-1])
        return [OFF_TRACK.finding(run_location(pair, step), step=step, run_end=r.end, base_end=hi, ratio=ratio,
                                  gap=gap, width=width, how=how, k=r.k, base_low=lo)]
    return []


FLOOR_RATIO = rule(
    id="TP-FLOOR-RATIO", level=Level.FAIL, group=G,
    title="Loss floor is far above the baseline's.",
    evidence="run floor {run_floor} vs baseline floor {base_floor} over steps {first}..{step} "
    "(ratio {ratio:.2f}x > {limit_ratio})",
    summary="The best loss the run reached is a multiple of the best loss the baseline reached "
    "over the same steps.",
    why="Same task, same model, several times the achievable loss: the run learns something, "
    "but not the task - shuffled labels, a wrong tokenizer, corrupted data.",
    fix="Diff the run's data pipeline and config against the baseline's.",
    thresholds={"ratio": Threshold(2.0, "x baseline floor", "Seeds of one healthy config "
                                   "differ by a few percent; 2x is a different regime."),
                "min_points": MIN_POINTS},
    fires=Example({"baseline": {"loss": [1.5, 1.2, 1.0, 0.95, 0.94]},
                   "run": {"loss": [15.0, 9.0, 6.0, 5.7, 5.6]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.2, 1.0, 0.95, 0.94]},
                    "run": {"loss": [1.5, 1.25, 1.05, 0.97, 0.95]}}),
)


@check("floor-ratio", FLOOR_RATIO)
def floor_ratio(pair: Pair) -> list[Finding] | Skip:
    got = sides(pair)
    if isinstance(got, Skip):
        return got
    b, r, t = got
    ratio = r.floor / b.floor
    if ratio > FLOOR_RATIO.t("ratio"):
        return [FLOOR_RATIO.finding(run_location(pair, r.floor_step), run_floor=r.floor, base_floor=b.floor,
                                    ratio=ratio, first=float(t.steps[0]), step=float(t.steps[-1]))]
    return []


END_RATIO = rule(
    id="TP-END-RATIO", level=Level.FAIL, group=G,
    title="End loss is far above the baseline's.",
    evidence="run end {run_end} vs baseline {base_end} at step {step} (medians of the last {k} "
    "aligned points; ratio {ratio:.2f}x > {limit_ratio})",
    summary="Where the run got to is a multiple of where the baseline was at the same step.",
    why="The result you would ship is several times worse than the one you know is achievable.",
    fix="Look for what differs from the baseline: learning rate, data, precision, seed-only "
    "changes should not do this.",
    thresholds={"ratio": Threshold(2.0, "x baseline end", "As for the floor: 2x is outside "
                                   "seed-to-seed variation."), **_EDGE, "min_points": MIN_POINTS},
    fires=Example({"baseline": {"loss": [1.5, 1.2, 1.1, 1.08, 1.06]},
                   "run": {"loss": [1.4, 3.0, 6.0, 7.4, 7.5]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.2, 1.1, 1.08, 1.06]},
                    "run": {"loss": [1.5, 1.25, 1.12, 1.09, 1.07]}}),
)


@check("end-ratio", END_RATIO)
def end_ratio(pair: Pair) -> list[Finding] | Skip:
    got = sides(pair)
    if isinstance(got, Skip):
        return got
    b, r, t = got
    ratio = r.end / b.end
    if ratio > END_RATIO.t("ratio"):
        step = float(t.steps[-1])
        return [END_RATIO.finding(run_location(pair, step), run_end=r.end, base_end=b.end, ratio=ratio,
                                  k=r.k, step=step)]
    return []
