"""Compare rules: a run judged against a known-good baseline of the same task. They
catch what no single curve can - a run that learns, just far worse than it should
(shuffled labels, a broken tokenizer, the wrong data)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.run import loss_blocks

G = "compare"


@dataclass(frozen=True)
class Side:
    """One side's loss as every compare rule reads it, measured once."""

    start: float  # median of the first k points
    end: float  # median of the last k points
    k: int
    floor: float  # lowest block median (TP-DIVERGE's blocks)
    floor_step: float


@dataclass(frozen=True)
class Pair:
    baseline: Run
    run: Run

    @cached_property
    def sides(self) -> tuple[Side, Side] | Skip:
        """(baseline, run) summaries, or why the ratio checks cannot run."""
        why = comparable(self)
        if why is not None:
            return Skip(SkipKind.DEGENERATE, why)
        return _side(self.baseline), _side(self.run)


def _positive_loss(run: Run) -> Series | None:
    s = run.get("loss")
    if s is None:
        return None
    f = s.finite_only()
    return f if len(f) >= 2 and f.values.min() > 0 else None


def comparable(pair: Pair) -> str | None:
    """Why the pair cannot be compared at all, or None when it can."""
    for side, r in (("baseline", pair.baseline), ("run", pair.run)):
        if _positive_loss(r) is None:
            return f"{side} {r.path} has no positive finite loss series of 2+ points"
    return None


def _side(run: Run) -> Side:
    s = _positive_loss(run)
    assert s is not None  # what comparable() checked
    start, end, k = edge_medians(s)
    floor, step = _floor(s)
    return Side(start, end, k, floor, step)


def _collapse_step(s: Series, min_tail: int) -> float | None:
    """Step from which the loss is non-finite, or exactly 0 after positive values (the
    zeros HF's logging_nan_inf_filter writes for NaN losses), through to the end."""
    v = s.values
    bad = ~np.isfinite(v) | (v == 0.0)
    if not bad[-1] or bad.all():
        return None
    start = len(v) - int(np.argmin(bad[::-1]))  # first index of the trailing bad run
    tail = v[start:]
    if np.isfinite(tail).all() and tail.size < min_tail:
        return None  # a few zero batches are not a collapse
    return float(s.steps[start])


def _floor(s: Series) -> tuple[float, float]:
    b = loss_blocks(s)
    i = int(b.medians.argmin())
    return float(b.medians[i]), float(b.steps[i])


_EDGE = {
    "edge_points": Threshold(5, "points", "Start and end are medians of 5 points, as in 0.17.0: "
                             "one batch cannot decide."),
    "edge_fraction": Threshold(0.02, "of points", "On long logs the windows grow with the log "
                               "so noise cannot decide."),
}


def edge_medians(s: Series) -> tuple[float, float, int]:
    """Start and end medians as the compare rules take them."""
    k = stats.edge_window(len(s), int(_EDGE["edge_points"].value), _EDGE["edge_fraction"].value)
    k = min(k, len(s) // 2) or 1
    return stats.robust_median(s.values[:k]), stats.robust_median(s.values[-k:]), k


def ranking_row(pair: Pair) -> dict[str, object]:
    """The numbers of the N-way table for one comparable pair."""
    if isinstance(pair.sides, Skip):
        return {"run": pair.run.path}
    b, r = pair.sides
    return {"run": pair.run.path, "floor": r.floor, "end": r.end, "floor_ratio": r.floor / b.floor,
            "end_ratio": r.end / b.end, "improvement": (r.start - r.end) / r.start}


def _loc(pair: Pair, step: float | None = None) -> Location:
    return Location(pair.run.path, step)


END_NONFINITE = rule(
    id="TP-END-NONFINITE", level=Level.FAIL, group=G,
    title="The run's loss ends in NaN/Inf (or the NaN filter's zeros); the baseline's does not.",
    evidence="run loss is {what} from step {step} to the end ({n} points); baseline ends at {base_end}",
    summary="The run's loss collapsed to non-finite values, or to the exact zeros HF logs for them, "
    "while the baseline finished with a finite loss.",
    why="No ratio can be taken against NaN, yet a run that ends in NaN is as far from its "
    "baseline as a run can be; calling the pair uncomparable would hide the worst case.",
    fix="Run `trainproof epoch` on the run: TP-NAN, TP-NAN-GRAD or TP-ZERO-LOSS-ONSET say where it broke.",
    thresholds={"min_tail": Threshold(5, "points", "As TP-ZERO-LOSS-ONSET: a few zero batches are "
                                      "not a collapse; any non-finite end is.")},
    fires=Example({"baseline": {"loss": [2.0, 1.8, 1.6, 1.5, 1.4]},
                   "run": {"loss": [2.0, 1.9, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0]}}),
    passes=Example({"baseline": {"loss": [2.0, 1.8, 1.6, 1.5, 1.4]},
                    "run": {"loss": [2.0, 1.8, 1.65, 1.5, 1.45]}}),
)


@check("nonfinite-end", END_NONFINITE)
def nonfinite_end(pair: Pair) -> list[Finding] | Skip:
    r, b = pair.run.get("loss"), pair.baseline.get("loss")
    if r is None or b is None:
        return Skip(SkipKind.NO_DATA, "loss missing on one side")
    if _collapse_step(b, int(END_NONFINITE.t("min_tail"))) is not None:
        return Skip(SkipKind.DEGENERATE, "the baseline's own loss ends non-finite")
    step = _collapse_step(r, int(END_NONFINITE.t("min_tail")))
    if step is None:
        return []
    tail = r.values[r.steps >= step]
    what = "exactly 0 (HF's NaN filter)" if np.isfinite(tail).all() else "NaN/Inf"
    base_end = float(b.finite_only().values[-1])
    return [END_NONFINITE.finding(_loc(pair, step), what=what, step=step, n=int(tail.size), base_end=base_end)]


FLOOR_RATIO = rule(
    id="TP-FLOOR-RATIO", level=Level.FAIL, group=G,
    title="Loss floor is far above the baseline's.",
    evidence="run floor {run_floor} vs baseline floor {base_floor} (ratio {ratio:.2f}x > {limit_ratio})",
    summary="The best loss the run reached is a multiple of the best loss the baseline reached.",
    why="Same task, same model, several times the achievable loss: the run learns something, "
    "but not the task - shuffled labels, a wrong tokenizer, corrupted data.",
    fix="Diff the run's data pipeline and config against the baseline's.",
    thresholds={"ratio": Threshold(2.0, "x baseline floor", "Seeds of one healthy config "
                                   "differ by a few percent; 2x is a different regime.")},
    fires=Example({"baseline": {"loss": [1.5, 1.2, 1.0, 0.95, 0.94]},
                   "run": {"loss": [15.0, 9.0, 6.0, 5.7, 5.6]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.2, 1.0, 0.95, 0.94]},
                    "run": {"loss": [1.5, 1.25, 1.05, 0.97, 0.95]}}),
)


@check("floor-ratio", FLOOR_RATIO)
def floor_ratio(pair: Pair) -> list[Finding] | Skip:
    if isinstance(pair.sides, Skip):
        return pair.sides
    b, r = pair.sides
    ratio = r.floor / b.floor
    if ratio > FLOOR_RATIO.t("ratio"):
        return [FLOOR_RATIO.finding(_loc(pair, r.floor_step), run_floor=r.floor, base_floor=b.floor,
                                    ratio=ratio)]
    return []


END_RATIO = rule(
    id="TP-END-RATIO", level=Level.FAIL, group=G,
    title="End loss is far above the baseline's.",
    evidence="run end {run_end} vs baseline end {base_end} (medians of the last {k} points; "
    "ratio {ratio:.2f}x > {limit_ratio})",
    summary="Where the run finished is a multiple of where the baseline finished.",
    why="The result you would ship is several times worse than the one you know is achievable.",
    fix="Look for what differs from the baseline: learning rate, data, precision, seed-only "
    "changes should not do this.",
    thresholds={"ratio": Threshold(2.0, "x baseline end", "As for the floor: 2x is outside "
                                   "seed-to-seed variation."), **_EDGE},
    fires=Example({"baseline": {"loss": [1.5, 1.2, 1.1, 1.08, 1.06]},
                   "run": {"loss": [1.4, 3.0, 6.0, 7.4, 7.5]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.2, 1.1, 1.08, 1.06]},
                    "run": {"loss": [1.5, 1.25, 1.12, 1.09, 1.07]}}),
)


@check("end-ratio", END_RATIO)
def end_ratio(pair: Pair) -> list[Finding] | Skip:
    if isinstance(pair.sides, Skip):
        return pair.sides
    b, r = pair.sides
    ratio = r.end / b.end
    if ratio > END_RATIO.t("ratio"):
        return [END_RATIO.finding(_loc(pair), run_end=r.end, base_end=b.end, ratio=ratio,
                                  k=r.k if r.k == b.k else f"{r.k}/{b.k}")]
    return []


END_EXCESS = rule(
    id="TP-END-EXCESS", level=Level.FAIL, group=G,
    title="The run ended far above the baseline, measured in the baseline's own progress.",
    evidence="run end {run_end} vs baseline end {base_end}: {excess} higher, {share:.2f} of everything "
    "the baseline gained ({base_start} -> {base_end}; > {limit_share}) and {ratio:.2f}x its end (> {limit_min_ratio})",
    summary="The run finished more than half of the baseline's whole improvement above the baseline's end.",
    why="A ratio of 2 only suits losses that can fall several-fold. When a recipe moves the loss "
    "from 5.45 to 4.87, a run that ends at 5.9 has lost more than all of it, yet sits at 1.2x. "
    "The baseline's own start-to-end gain is the scale the task itself sets.",
    fix="Diff the run's data, labels and learning rate against the baseline's.",
    thresholds={
        "share": Threshold(0.5, "of the baseline's improvement",
                           "Healthy seeds in our gallery end within 0.15 of the improvement of each "
                           "other; every broken run there ends >= 0.9 above it (corpus: >= 6)."),
        "min_ratio": Threshold(1.1, "x baseline end",
                               "Keeps a baseline that barely improved from making small differences "
                               "look large; healthy seeds end within 1.02x of each other."),
    },
    fires=Example({"baseline": {"loss": [5.45, 5.4, 5.3, 5.2, 5.1, 5.0, 4.95, 4.9, 4.88, 4.87]},
                   "run": {"loss": [5.55, 6.9, 6.6, 6.4, 6.2, 6.1, 6.0, 5.95, 5.9, 5.9]}}),
    passes=Example({"baseline": {"loss": [5.45, 5.4, 5.3, 5.2, 5.1, 5.0, 4.95, 4.9, 4.88, 4.87]},
                    "run": {"loss": [5.5, 5.42, 5.3, 5.22, 5.1, 5.0, 4.97, 4.92, 4.9, 4.89]}}),
)


@check("end-excess", END_EXCESS)
def end_excess(pair: Pair) -> list[Finding] | Skip:
    if isinstance(pair.sides, Skip):
        return pair.sides
    b, r = pair.sides
    bs, be, re_ = b.start, b.end, r.end
    gain = bs - be
    if gain <= 0:
        return Skip(SkipKind.DEGENERATE, "the baseline did not improve; its progress sets no scale")
    share, ratio = (re_ - be) / gain, re_ / be
    if share > END_EXCESS.t("share") and ratio > END_EXCESS.t("min_ratio"):
        return [END_EXCESS.finding(_loc(pair), run_end=re_, base_end=be, base_start=bs, excess=re_ - be,
                                   share=share, ratio=ratio)]
    return []


NEG_IMPROVE = rule(
    id="TP-NEG-IMPROVE", level=Level.FAIL, group=G,
    title="The run got worse from start to end.",
    evidence="start {start} -> end {end} (medians of {k} points), while the baseline went "
    "{base_start} -> {base_end}",
    summary="The run's end loss is above its start loss while the baseline improved.",
    why="Training made the model worse than its initialisation; whatever it is doing is not "
    "the task.",
    fix="Lower the learning rate; check precision (fp16 overflow) and data.",
    thresholds={"min_worsening": Threshold(0.05, "of the run's start",
                                           "Within 5 % a run has not moved either way (TP-IMPROVE-"
                                           "DEFICIT's ground): an lr=0 run ends 0.4 % above its start "
                                           "on batch noise alone.")},
    fires=Example({"baseline": {"loss": [1.5, 1.3, 1.2, 1.1, 1.0]},
                   "run": {"loss": [1.4, 2.0, 4.0, 6.0, 7.0]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.3, 1.2, 1.1, 1.0]},
                    "run": {"loss": [1.5, 1.35, 1.2, 1.15, 1.05]}}),
)

IMPROVE_DEFICIT = rule(
    id="TP-IMPROVE-DEFICIT", level=Level.FAIL, group=G,
    title="The run improved far less than the baseline.",
    evidence="run improved {run_imp:.1%} vs baseline {base_imp:.1%} ({share:.2f} of the "
    "baseline's < {limit_share})",
    summary="The run's relative start-to-end improvement is a small fraction of the baseline's.",
    why="A run that barely moves while the same recipe moved a lot is not training: lr 0, "
    "frozen weights, a scheduler stuck in warm-up.",
    fix="Compare the logged lr and the trainable parameter count with the baseline's.",
    thresholds={"share": Threshold(0.25, "of the baseline's improvement", "Seeds of one "
                                   "healthy config improve within 2x of each other.")},
    fires=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0, 0.95, 0.94, 0.94]},
                   "run": {"loss": [1.52, 1.50, 1.51, 1.49, 1.50, 1.50, 1.49, 1.48, 1.49, 1.49]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0, 0.95, 0.94, 0.94]},
                    "run": {"loss": [1.5, 1.4, 1.32, 1.2, 1.1, 1.05, 1.0, 0.97, 0.95, 0.95]}}),
)


@check("improvement", NEG_IMPROVE, IMPROVE_DEFICIT)
def improvement(pair: Pair) -> list[Finding] | Skip:
    if isinstance(pair.sides, Skip):
        return pair.sides
    b, r = pair.sides
    bs, be, rs, re_, k = b.start, b.end, r.start, r.end, r.k
    base_imp, run_imp = (bs - be) / bs, (rs - re_) / rs
    if re_ > rs * (1 + NEG_IMPROVE.t("min_worsening")) and base_imp > 0:
        return [NEG_IMPROVE.finding(_loc(pair), start=rs, end=re_, k=k, base_start=bs, base_end=be)]
    if base_imp <= 0:
        return Skip(SkipKind.DEGENERATE, "the baseline did not improve; relative improvement is meaningless")
    share = run_imp / base_imp
    if share < IMPROVE_DEFICIT.t("share"):
        return [IMPROVE_DEFICIT.finding(_loc(pair), run_imp=run_imp, base_imp=base_imp, share=share)]
    return []


GRADNORM_RATIO = rule(
    id="TP-GRADNORM-RATIO", level=Level.WARN, group=G,
    title="Gradient norms are far above the baseline's.",
    evidence="run median grad_norm {run_med} vs baseline {base_med} ({ratio:.2f}x > {limit_ratio})",
    summary="The run's typical gradient norm is a multiple of the baseline's.",
    why="Persistently large gradients mean a sharper, less stable optimisation than the "
    "recipe is known to produce.",
    fix="Check the learning rate, loss scaling and clipping against the baseline's config.",
    thresholds={"ratio": Threshold(5.0, "x baseline median", "Medians are robust to single "
                                   "spikes; 5x is a different optimisation regime.")},
    fires=Example({"baseline": {"loss": [1.0] * 3, "grad_norm": [0.4, 0.5, 0.45]},
                   "run": {"loss": [1.0] * 3, "grad_norm": [4.0, 5.0, 4.5]}}),
    passes=Example({"baseline": {"loss": [1.0] * 3, "grad_norm": [0.4, 0.5, 0.45]},
                    "run": {"loss": [1.0] * 3, "grad_norm": [0.5, 0.6, 0.55]}}),
)


@check("gradnorm-ratio", GRADNORM_RATIO)
def gradnorm_ratio(pair: Pair) -> list[Finding] | Skip:
    gb, gr = pair.baseline.get("grad_norm"), pair.run.get("grad_norm")
    if gb is None or gr is None:
        return Skip(SkipKind.NO_DATA, "grad_norm missing on one side")
    bm = stats.robust_median(gb.finite_only().values)
    rm = stats.robust_median(gr.finite_only().values)
    if not bm > 0 or not np.isfinite(rm):
        return Skip(SkipKind.DEGENERATE, "no positive finite grad_norm median on one side")
    ratio = rm / bm
    if ratio > GRADNORM_RATIO.t("ratio"):
        return [GRADNORM_RATIO.finding(_loc(pair), run_med=rm, base_med=bm, ratio=ratio)]
    return []


BAD_BASELINE = rule(
    id="TP-BAD-BASELINE", level=Level.WARN, group=G,
    title="The baseline itself fails single-run checks.",
    evidence="baseline {path} is {verdict}: {ids}",
    summary="The run was compared against a baseline that is not known-good.",
    why="Ratios against a broken baseline can pass a broken run.",
    fix="Pick a baseline that passes `trainproof epoch`.",
)
