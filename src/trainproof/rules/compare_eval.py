"""Compare rules beyond the training loss: eval loss (where the run generalises, which the
train loss cannot show), the learning rate the run actually used, and step time. All
are read over the steps the run shares with its baseline(s), as in compare.py."""

from __future__ import annotations

import numpy as np

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.compare import sides
from trainproof.rules.compare_align import MIN_EVAL_POINTS, Pair, Side, Track
from trainproof.rules.compare_health import shared_medians

G = "compare"


def eval_sides(pair: Pair) -> tuple[Side, Side, Track] | Skip:
    """(baseline, run) eval-loss summaries over the aligned eval steps. Eval points are
    averages over a fixed held-out set, not batches: the floor is the lowest point."""
    t = pair.eval
    if isinstance(t, str):
        return Skip(SkipKind.TOO_FEW if "needs" in t else SkipKind.NO_DATA, t)
    return t.side(t.base, blocks=False), t.side(t.run, blocks=False), t


_EVAL_RATIO = Threshold(2.0, "x baseline", "As TP-FLOOR-RATIO and TP-END-RATIO on the train loss: "
                        "seeds of one recipe differ by a few percent, 2x is a different regime.")

EVAL_FLOOR_RATIO = rule(
    id="TP-EVAL-FLOOR-RATIO", level=Level.FAIL, group=G,
    title="Best eval loss is far above the baseline's.",
    evidence="run best eval loss {run_floor} (step {floor_step}) vs baseline {base_floor} over eval "
    "steps {first}..{step} (ratio {ratio:.2f}x > {limit_ratio})",
    summary="The lowest held-out loss the run reached is a multiple of the baseline's over the same steps.",
    why="The held-out loss is what the run is for; a train loss that looks fine beside a "
    "several-fold eval loss means the model learned the training set, not the task.",
    fix="Check the eval data and preprocessing match the baseline's, then the training data.",
    thresholds={"ratio": _EVAL_RATIO, "min_points": MIN_EVAL_POINTS},
    fires=Example({"baseline": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [2.0, 1.6, 1.3, 1.2, 1.15]},
                   "run": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [6.0, 5.0, 4.5, 4.2, 4.0]}}),
    passes=Example({"baseline": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [2.0, 1.6, 1.3, 1.2, 1.15]},
                    "run": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [2.0, 1.62, 1.32, 1.22, 1.16]}}),
)

EVAL_END_RATIO = rule(
    id="TP-EVAL-END-RATIO", level=Level.FAIL, group=G,
    title="Eval loss is far above the baseline's at the same step.",
    evidence="run eval loss {run_end} vs baseline {base_end} at step {step} (medians of the last {k} "
    "eval points; ratio {ratio:.2f}x > {limit_ratio})",
    summary="Where the run's held-out loss got to is a multiple of where the baseline's was at the same step.",
    why="The checkpoint you would ship is judged on held-out data; several times the known-good "
    "eval loss is a broken run whatever the train loss says.",
    fix="Diff data, labels and eval preprocessing against the baseline's.",
    thresholds={"ratio": _EVAL_RATIO, "min_points": MIN_EVAL_POINTS},
    fires=Example({"baseline": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [2.0, 1.6, 1.3, 1.2, 1.15]},
                   "run": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [2.0, 1.8, 2.5, 3.5, 4.0]}}),
    passes=Example({"baseline": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [2.0, 1.6, 1.3, 1.2, 1.15]},
                    "run": {"loss": [2.0, 1.5, 1.2, 1.1, 1.0], "eval_loss": [2.0, 1.62, 1.32, 1.22, 1.16]}}),
)


@check("eval-ratio", EVAL_FLOOR_RATIO, EVAL_END_RATIO)
def eval_ratio(pair: Pair) -> list[Finding] | Skip:
    got = eval_sides(pair)
    if isinstance(got, Skip):
        return got
    b, r, t = got
    step = float(t.steps[-1])
    out = []
    if r.floor / b.floor > EVAL_FLOOR_RATIO.t("ratio"):
        out.append(EVAL_FLOOR_RATIO.finding(Location(pair.run.path, r.floor_step), run_floor=r.floor,
                                            base_floor=b.floor, ratio=r.floor / b.floor, step=step,
                                            floor_step=r.floor_step, first=float(t.steps[0])))
    if r.end / b.end > EVAL_END_RATIO.t("ratio"):
        out.append(EVAL_END_RATIO.finding(Location(pair.run.path, step), run_end=r.end, base_end=b.end,
                                          ratio=r.end / b.end, k=r.k, step=step))
    return out


EVAL_GAP = rule(
    id="TP-EVAL-GAP", level=Level.WARN, group=G,
    title="Eval loss is above the baseline's while train loss is below it (overfitting, relative to the baseline).",
    evidence="at step {step} the run's train loss is {train_ratio:.2f}x the baseline's ({run_train} vs "
    "{base_train}) and its eval loss {eval_ratio:.2f}x ({run_eval} vs {base_eval}; > {limit_min_ratio}x)",
    summary="Compared with the baseline at the same step, the run fits its training data better and "
    "the held-out data worse.",
    why="Lower train loss with higher eval loss is memorisation: a smaller or repeated training set, "
    "less regularisation, more epochs. Ranked by train loss alone such a run looks best.",
    fix="Keep the checkpoint at the run's eval minimum; check the training set's size and "
    "duplication and the regularisation against the baseline's.",
    thresholds={"min_ratio": Threshold(1.05, "x baseline eval loss",
                                       "As TP-LOSS-OFF-TRACK: seeds of one recipe sit within a few "
                                       "percent of each other; 5 % above is not seed variation."),
                "max_train_ratio": Threshold(1.0, "x baseline train loss",
                                             "Train loss below the baseline's at all: the run fits its "
                                             "training data at least as well as the known-good run, so "
                                             "its higher eval loss is not under-training."),
                "min_points": MIN_EVAL_POINTS},
    fires=Example({"baseline": {"loss": [2.0, 1.6, 1.4, 1.3, 1.25], "eval_loss": [2.0, 1.7, 1.5, 1.45, 1.4]},
                   "run": {"loss": [2.0, 1.2, 0.6, 0.3, 0.2], "eval_loss": [2.0, 1.8, 2.0, 2.3, 2.6]}}),
    passes=Example({"baseline": {"loss": [2.0, 1.6, 1.4, 1.3, 1.25], "eval_loss": [2.0, 1.7, 1.5, 1.45, 1.4]},
                    "run": {"loss": [2.0, 1.55, 1.35, 1.28, 1.22], "eval_loss": [2.0, 1.68, 1.49, 1.44, 1.39]}}),
)


@check("eval-gap", EVAL_GAP)
def eval_gap(pair: Pair) -> list[Finding] | Skip:
    ev, tr = eval_sides(pair), sides(pair)
    if isinstance(ev, Skip):
        return ev
    if isinstance(tr, Skip):
        return tr
    eb, er, et = ev
    b, r, _ = tr
    eval_ratio, train_ratio = er.end / eb.end, r.end / b.end
    if eval_ratio > EVAL_GAP.t("min_ratio") and train_ratio < EVAL_GAP.t("max_train_ratio"):
        step = float(et.steps[-1])
        return [EVAL_GAP.finding(Location(pair.run.path, step), step=step, train_ratio=train_ratio,
                                 run_train=r.end, base_train=b.end, eval_ratio=eval_ratio,
                                 run_eval=er.end, base_eval=eb.end)]
    return []


LR_BELOW = rule(
    id="TP-LR-BELOW-BASELINE", level=Level.FAIL, group=G,
    title="The run's learning rate is zero, or a tiny fraction of the baseline's at the same steps.",
    evidence="median lr {run_lr} vs the baseline's {base_lr} up to step {step} "
    "({ratio:.3g}x < {limit_ratio}x)",
    summary="Over the steps both logged, the run's median learning rate is under a hundredth of the "
    "baseline's (or zero).",
    why="A run at lr 0 cannot be on track, however close its loss still is: early in training "
    "(warm-up) a healthy loss has not moved yet either, so the loss alone cannot tell them apart, "
    "but the logged learning rate can.",
    fix="Check the learning-rate argument, the scheduler (a warm-up or decay that sits at 0) and "
    "per-group lr overrides against the baseline's config.",
    thresholds={"ratio": Threshold(0.01, "x baseline median lr",
                                   "Sweeps and schedules move the learning rate by factors of 2 to 10; "
                                   "a hundredth of a known-good recipe's is a run that does not train "
                                   "(or a units slip), not a tuning choice.")},
    fires=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1], "lr": [1e-3] * 5},
                   "run": {"loss": [1.5, 1.5, 1.49, 1.5, 1.5], "lr": [0.0] * 5}}),
    passes=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1], "lr": [1e-3] * 5},
                    "run": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1], "lr": [3e-4] * 5}}),
)


@check("lr", LR_BELOW)
def lr_below(pair: Pair) -> list[Finding] | Skip:
    got = shared_medians(pair, "lr")
    if isinstance(got, Skip):
        return got
    rm, bm, step = got
    if not bm > 0:
        return Skip(SkipKind.DEGENERATE, "the baseline's own learning rate is not positive")
    ratio = max(rm, 0.0) / bm
    if ratio < LR_BELOW.t("ratio"):
        return [LR_BELOW.finding(Location(pair.run.path), run_lr=rm, base_lr=bm, ratio=ratio, step=step)]
    return []


STEP_TIME_RATIO = rule(
    id="TP-STEP-TIME-RATIO", level=Level.WARN, group=G,
    title="Steps take far longer than the baseline's (throughput regression).",
    evidence="median step time {run_med} s vs the baseline's {base_med} s up to step {step} "
    "({ratio:.2f}x > {limit_ratio}x)",
    summary="The run's median step time over the shared steps is well above the baseline's.",
    why="Same recipe, same hardware, slower steps: a lost fused kernel or compile, a dataloader "
    "regression, a new sync per step - each multiplies the bill for the whole run.",
    fix="Check the machine type, library versions, dataloader workers and any per-step "
    "callbacks against the baseline's; profile one step.",
    thresholds={"ratio": Threshold(1.5, "x baseline median step time",
                                   "Identical jobs on one machine type differ in median step time "
                                   "by a few percent; half again as slow is a change, not jitter."),
                "min_points": Threshold(5, "step_time points per side", "A median of a few steps, "
                                        "so one slow (compiling, checkpointing) step cannot decide.")},
    fires=Example({"baseline": {"loss": [1.0] * 6, "step_time": [0.5, 0.51, 0.49, 0.5, 0.5, 0.52]},
                   "run": {"loss": [1.0] * 6, "step_time": [1.0, 1.1, 0.98, 1.0, 1.05, 1.0]}}),
    passes=Example({"baseline": {"loss": [1.0] * 6, "step_time": [0.5, 0.51, 0.49, 0.5, 0.5, 0.52]},
                    "run": {"loss": [1.0] * 6, "step_time": [0.52, 0.5, 0.51, 0.5, 0.53, 0.5]}}),
    limits="Compare runs on the same hardware: the rule cannot know the baseline ran on a faster GPU.",
)


@check("step-time", STEP_TIME_RATIO)
def step_time_ratio(pair: Pair) -> list[Finding] | Skip:
    need = int(STEP_TIME_RATIO.t("min_points"))
    for side in (pair.run, *pair.baselines):
        s = side.get("step_time")
        n = len(s.finite_only()) if s is not None else 0
        if s is not None and n < need:
            return Skip(SkipKind.TOO_FEW, f"{n} step_time points in {side.path}, needs {need}")
    got = shared_medians(pair, "step_time")
    if isinstance(got, Skip):
        return got
    rm, bm, step = got
    if not bm > 0 or not np.isfinite(rm):
        return Skip(SkipKind.DEGENERATE, "no positive step time on one side")
    if rm / bm > STEP_TIME_RATIO.t("ratio"):
        return [STEP_TIME_RATIO.finding(Location(pair.run.path), run_med=rm, base_med=bm,
                                        ratio=rm / bm, step=step)]
    return []

