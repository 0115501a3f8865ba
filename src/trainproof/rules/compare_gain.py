"""Compare rules on what the run gained from its start, measured against what the
baseline gained over the same steps: a run that ended far above the baseline in units
of the baseline's own progress, one that got worse, one that improved far less."""

from __future__ import annotations

import numpy as np

from trainproof.model import Finding, Level, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.compare import GAP, G, run_location, sides
from trainproof.rules.compare_align import Pair, Side, Track

MIN_GAIN = Threshold(
    3, "noise widths",
    "The baseline's own start-to-end gain sets the scale of the share rules only once it is "
    "larger than its batch noise; in warm-up or a short overlap it is not, and a share of "
    "noise is noise.")


def _gain_in_widths(t: Track, b: Side) -> float:
    """The baseline's own start-to-end gain over the aligned steps, in its noise widths."""
    se = t.change_se(t.base_sigma)
    return float(np.log(b.start / b.end) / se) if se > 0 else float("inf")


END_EXCESS = rule(
    id="TP-END-EXCESS", level=Level.FAIL, group=G,
    title="The run ended far above the baseline, measured in the baseline's own progress.",
    evidence="at step {step} run {run_end} vs baseline {base_end}: {excess} higher, {share:.2f} of "
    "everything the baseline gained by then ({base_start} -> {base_end}; > {limit_share}) and "
    "{ratio:.2f}x its loss (> {limit_min_ratio})",
    summary="The run sits more than half of the baseline's improvement (over the same steps) "
    "above the baseline.",
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
        "min_gain": MIN_GAIN,
    },
    fires=Example({"baseline": {"loss": [5.45, 5.4, 5.3, 5.2, 5.1, 5.0, 4.95, 4.9, 4.88, 4.87]},
                   "run": {"loss": [5.55, 6.9, 6.6, 6.4, 6.2, 6.1, 6.0, 5.95, 5.9, 5.9]}}),
    passes=Example({"baseline": {"loss": [5.45, 5.4, 5.3, 5.2, 5.1, 5.0, 4.95, 4.9, 4.88, 4.87]},
                    "run": {"loss": [5.5, 5.42, 5.3, 5.22, 5.1, 5.0, 4.97, 4.92, 4.9, 4.89]}}),
)


@check("end-excess", END_EXCESS)
def end_excess(pair: Pair) -> list[Finding] | Skip:
    got = sides(pair)
    if isinstance(got, Skip):
        return got
    b, r, t = got
    bs, be, re_ = b.start, b.end, r.end
    gain = bs - be
    if gain <= 0 or _gain_in_widths(t, b) < END_EXCESS.t("min_gain"):
        return Skip(SkipKind.DEGENERATE, f"the baseline had not improved beyond its noise by step "
                    f"{t.steps[-1]:g}; its progress sets no scale yet")
    share, ratio = (re_ - be) / gain, re_ / be
    if share > END_EXCESS.t("share") and ratio > END_EXCESS.t("min_ratio"):
        step = float(t.steps[-1])
        return [END_EXCESS.finding(run_location(pair, step), run_end=re_, base_end=be, base_start=bs,
                                   excess=re_ - be, share=share, ratio=ratio, step=step)]
    return []


NEG_IMPROVE = rule(
    id="TP-NEG-IMPROVE", level=Level.FAIL, group=G,
    title="The run got worse from start to end.",
    evidence="start {start} -> end {end} at step {step} (medians of {k} points; {gap:.1f} noise "
    "widths, > {limit_gap}), while the baseline went {base_start} -> {base_end} over the same steps",
    summary="The run's loss rose from its start by more than its noise while the baseline's fell.",
    why="Training made the model worse than its initialisation; whatever it is doing is not "
    "the task.",
    fix="Lower the learning rate; check precision (fp16 overflow) and data.",
    thresholds={"min_worsening": Threshold(0.05, "of the run's start",
                                           "Within 5 % a run has not moved either way (TP-IMPROVE-"
                                           "DEFICIT's ground): an lr=0 run ends 0.4 % above its start "
                                           "on batch noise alone."),
                "gap": GAP},
    fires=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.25, 1.2, 1.15, 1.1, 1.05, 1.02, 1.0]},
                   "run": {"loss": [1.4, 1.3, 1.5, 2.0, 2.6, 3.5, 4.4, 5.5, 6.4, 7.0]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.25, 1.2, 1.15, 1.1, 1.05, 1.02, 1.0]},
                    "run": {"loss": [1.5, 1.42, 1.3, 1.26, 1.2, 1.16, 1.1, 1.06, 1.03, 1.01]}}),
)

IMPROVE_DEFICIT = rule(
    id="TP-IMPROVE-DEFICIT", level=Level.FAIL, group=G,
    title="The run improved far less than the baseline.",
    evidence="by step {step} the run improved {run_imp:.1%} vs the baseline's {base_imp:.1%} "
    "({share:.2f} of the baseline's < {limit_share}; the baseline's gain is {gain:.1f} noise widths)",
    summary="The run's relative start-to-end improvement is a small fraction of the baseline's "
    "over the same steps.",
    why="A run that barely moves while the same recipe moved a lot is not training: lr 0, "
    "frozen weights, a scheduler stuck in warm-up.",
    fix="Compare the logged lr and the trainable parameter count with the baseline's.",
    thresholds={"share": Threshold(0.25, "of the baseline's improvement", "Seeds of one "
                                   "healthy config improve within 2x of each other."),
                "min_gain": MIN_GAIN},
    fires=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0, 0.95, 0.94, 0.94]},
                   "run": {"loss": [1.52, 1.50, 1.51, 1.49, 1.50, 1.50, 1.49, 1.48, 1.49, 1.49]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0, 0.95, 0.94, 0.94]},
                    "run": {"loss": [1.5, 1.4, 1.32, 1.2, 1.1, 1.05, 1.0, 0.97, 0.95, 0.95]}}),
)


@check("improvement", NEG_IMPROVE, IMPROVE_DEFICIT)
def improvement(pair: Pair) -> list[Finding] | Skip:
    got = sides(pair)
    if isinstance(got, Skip):
        return got
    b, r, t = got
    bs, be, rs, re_, k = b.start, b.end, r.start, r.end, r.k
    step = float(t.steps[-1])
    base_imp, run_imp = (bs - be) / bs, (rs - re_) / rs
    se = t.change_se(t.run_sigma)
    worse = float(np.log(re_ / rs) / se) if se > 0 else float("inf")
    if re_ > rs * (1 + NEG_IMPROVE.t("min_worsening")) and worse > NEG_IMPROVE.t("gap") and base_imp > 0:
        return [NEG_IMPROVE.finding(run_location(pair, step), start=rs, end=re_, k=k, base_start=bs,
                                    base_end=be, step=step, gap=worse)]
    gain = _gain_in_widths(t, b) if base_imp > 0 else 0.0
    if gain < IMPROVE_DEFICIT.t("min_gain"):
        return Skip(SkipKind.DEGENERATE, f"the baseline had not improved beyond its noise by step "
                    f"{step:g}; relative improvement is meaningless")
    share = run_imp / base_imp
    if share < IMPROVE_DEFICIT.t("share"):
        return [IMPROVE_DEFICIT.finding(run_location(pair, step), run_imp=run_imp, base_imp=base_imp,
                                        share=share, step=step, gain=gain)]
    return []
