"""Single-run rules: what one training log says about itself (epoch, doctor, watch,
the callbacks): a flat loss, divergence, overfitting. Each rule is declared once here
with its thresholds and docs; the judge right below it is the only code that decides
whether it fires. Non-finite values and gradient spikes are rules/gradients.py's, exact
zeros (loss, gradient, LR) rules/zeros.py's; `after=` keeps the checks in report order."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules import zeros  # noqa: F401  (registers zero-loss, which flat-loss follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, finite_loss
from trainproof.rules.gradients import where as _where

_BLOCK = Threshold(
    3, "points",
    "Floors and ends are medians of blocks of consecutive logged points: a level counts as "
    "reached only when most of a block sits at it, so one lucky batch is not a floor. Three "
    "is the smallest block with a majority.",
)
_BLOCKS = Threshold(
    50, "blocks",
    "Long logs use blocks of n // 50 points, so per-step batch noise on a 100,000-step log "
    "is damped as much as on a 150-step one.",
)


# ---------------------------------------------------------------- flat loss

FLAT = rule(
    id="TP-FLAT", level=Level.FAIL, group=G,
    title="Loss does not change.",
    evidence="loss range {range} over {n} points is {rel:.2g} of its median {median} (< {limit_rel_range})",
    summary="The loss stays within a negligible band for the whole run.",
    why="A loss that does not move means no parameter that matters is being updated: frozen "
    "weights, a detached graph, lr effectively zero, or a constant batch.",
    fix="Confirm requires_grad on the trained parameters, that optimizer.step() runs, and "
    "that the learning rate is non-zero.",
    thresholds={
        "rel_range": Threshold(0.001, "of |median loss|",
                               "The old absolute band (0.001 at a loss near 1) made relative, so a "
                               "loss of 1e-4 that halves is not called flat and the verdict does "
                               "not depend on the loss's units."),
        "min_points": Threshold(5, "points", "One point is not a flat run."),
    },
    fires=Example({"loss": [2.3026] * 8}),
    passes=Example({"loss": [2.3, 2.1, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4]}),
)


@check("flat-loss", FLAT, loss_curve=True, after="zero-loss")
def loss_flat(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(FLAT.t("min_points")))
    if isinstance(s, Skip):
        return s
    if np.all(s.values == 0.0):
        return Skip(SkipKind.DEGENERATE, "loss is all zero (judged by zero-loss)")
    span = float(s.values.max() - s.values.min())
    med = stats.robust_median(s.values)
    rel = span / abs(med) if med else float("inf")
    if rel < FLAT.t("rel_range"):
        return [FLAT.finding(_where(run), range=span, n=len(s), median=med, rel=rel)]
    return []


# ---------------------------------------------------------------- divergence and no progress

DIVERGE = rule(
    id="TP-DIVERGE", level=Level.FAIL, group=G,
    title="Loss curve is diverging.",
    evidence="end loss {end} vs floor {floor} around step {floor_step} ({through:.0%} through the "
    "run); ratio {ratio:.2f} > {limit_ratio}, {gap_se:.0f} standard errors above the batch noise "
    "(medians of {block}-point blocks; raw min {raw_min} at step {raw_min_step}, raw end {raw_end})",
    summary="The run ended far above the best loss it had reached.",
    why="Hours of training after the best point made the model worse; the checkpoint worth "
    "keeping is behind you and every further step costs GPU time for nothing.",
    fix="Keep the checkpoint nearest the floor step; lower the learning rate or add "
    "warm-up/clipping before resuming.",
    thresholds={
        "ratio": Threshold(1.5, "x floor", "Ending 50 % above the floor is far outside the "
                           "wobble of a converging run (healthy gallery runs end <= 1.15x)."),
        "min_points": Threshold(5, "points", "Needs a start, a floor and an end."),
        "min_block": _BLOCK,
        "max_blocks": _BLOCKS,
        "min_gap_se": Threshold(
            4, "standard errors",
            "log(end / floor) must exceed 4 standard errors of the difference of two block "
            "medians, with the batch noise measured from the log itself in log space (1.4826 x "
            "median |step-to-step change of log loss| / sqrt 2). Near a loss floor of ~0.03 "
            "healthy per-step logs scatter by 50 %, so a ratio alone calls them diverged; the "
            "floor is also the lowest of many blocks, which biases it low by up to ~2 standard "
            "errors. An exploding loss grows by a steady factor per step, which log differences "
            "measure as trend-sized, so it still clears the bar by far."),
    },
    fires=Example({"loss": [1.4, 1.3, 1.2, 1.25, 2.5, 4.0, 6.0, 7.5, 7.4]}),
    passes=Example({"loss": [1.5, 1.3, 1.2, 1.1, 1.05, 1.0, 1.02, 1.01, 1.0]}),
    limits="A positive loss is required: ratios of losses that can be negative (ELBO, "
    "RL objectives) are meaningless, so the check is skipped for them.",
)

DIVERGE_NOISE = rule(
    id="TP-DIVERGE-NOISE", level=Level.INFO, group=G,
    title="End/min ratio is high, but within batch-to-batch noise.",
    evidence="raw end {raw_end} vs raw min {raw_min} at step {raw_min_step} is {raw_ratio:.2f}x; "
    "medians of {block}-point blocks give {ratio:.2f}x (floor {floor} around step {floor_step}, end {end}), "
    "a gap of {gap_se:.1f} standard errors of the batch noise ({sigma:.1%} per point)",
    summary="A minimum the noise explains makes the run look diverged; the smoothed curve, "
    "measured against its own noise, does not.",
    why="Per-step losses of small batches scatter widely; the lowest single batch is not a "
    "floor the model reached. Saying so keeps a reader of the raw numbers from a false alarm.",
    fix="Nothing to fix; compare eval loss, or smooth the logged loss (larger logging_steps).",
    thresholds={"ratio": DIVERGE.thresholds["ratio"], "min_points": DIVERGE.thresholds["min_points"]},
    fires=Example({"loss": [1.0 + ((i * 7919) % 13) / 13 for i in range(200)]}),
    passes=Example({"loss": [1.0] * 100 + [1.01] * 100}),
)


def loss_blocks(s: Series) -> stats.Blocks:
    """The loss as divergence and the compare floor see it: medians of blocks."""
    return stats.block_medians(s.steps, s.values, int(DIVERGE.t("min_block")), int(DIVERGE.t("max_blocks")))


def divergence_measure(s: Series) -> tuple[bool, dict[str, float]]:
    """TP-DIVERGE's test on a positive finite loss: (does it fire, the numbers measured).
    The rules that defer to TP-DIVERGE ask it here rather than repeating it."""
    b = loss_blocks(s)
    i = int(np.argmin(b.medians))
    floor, end = float(b.medians[i]), float(b.medians[-1])
    ratio = end / floor
    first, last = float(s.steps[0]), float(s.steps[-1])
    through = (b.steps[i] - first) / (last - first) if last > first else 0.0
    j = int(np.argmin(s.values))
    sigma = stats.log_noise(s.values)
    se = stats.MEDIAN_SE * sigma * np.sqrt(2.0 / b.size)
    gap_se = float(np.log(end / floor) / se) if se > 0 else np.inf
    measured = dict(end=end, floor=floor, floor_step=float(b.steps[i]), ratio=ratio,
                    through=float(through), block=b.size, raw_end=float(s.values[-1]),
                    raw_min=float(s.values[j]), raw_min_step=float(s.steps[j]), sigma=sigma,
                    gap_se=float(gap_se))
    return bool(ratio > DIVERGE.t("ratio") and gap_se > DIVERGE.t("min_gap_se")), measured


@check("divergence", DIVERGE, DIVERGE_NOISE, loss_curve=True, after="flat-loss")
def loss_diverging(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(DIVERGE.t("min_points")))
    if isinstance(s, Skip):
        return s
    if s.values.min() <= 0:
        return Skip(SkipKind.DEGENERATE, "loss is not positive; end/min ratio is meaningless")
    fires, common = divergence_measure(s)
    if fires:
        return [DIVERGE.finding(_where(run, common["floor_step"]), **common)]
    raw_ratio = float(s.values[-1] / common["raw_min"])
    if max(raw_ratio, common["ratio"]) > DIVERGE_NOISE.t("ratio"):
        return [DIVERGE_NOISE.finding(_where(run, common["raw_min_step"]), raw_ratio=raw_ratio, **common)]
    return []


# ---------------------------------------------------------------- generalisation

OVERFIT = rule(
    id="TP-OVERFIT", level=Level.WARN, group=G,
    title="Eval loss climbs while train loss falls (overfitting).",
    evidence="eval loss {eval_end} at the end vs its min {eval_min} at step {eval_min_step} "
    "({ratio:.2f}x > {limit_ratio}); train loss {train_then} -> {train_end} meanwhile",
    summary="Held-out loss rose well above its own minimum while the training loss kept falling.",
    why="The model is memorising the training set; the checkpoint nearest the eval minimum "
    "generalises better than the last one.",
    fix="Keep the checkpoint at the eval minimum (load_best_model_at_end), add data or "
    "regularisation, or train fewer epochs.",
    thresholds={
        "ratio": Threshold(1.2, "x eval min", "Eval noise between evaluations of a fixed set "
                           "is a few percent; 20 % is a trend."),
        "min_points": Threshold(4, "eval points", "A minimum and a climb need several evaluations."),
        "train_end_share": Threshold(0.1, "of the train loss points", "The train loss 'now' is the "
                                     "median of the last tenth of the log: recent enough to be the "
                                     "end, long enough that one noisy batch does not decide it."),
        "train_end_max": Threshold(5, "points", "At most 5 points, so on a long log 'now' stays the "
                                   "end of training and not its last tenth."),
    },
    fires=Example({"loss": [1.4, 1.0, 0.6, 0.3, 0.1, 0.05], "eval_loss": [1.4, 1.3, 1.6, 2.0, 2.6, 3.1]}),
    passes=Example({"loss": [1.4, 1.0, 0.8, 0.7, 0.65, 0.6], "eval_loss": [1.5, 1.3, 1.2, 1.15, 1.12, 1.1]}),
)


@check("overfit", OVERFIT, loss_curve=True)
def eval_loss_climbing(run: Run) -> list[Finding] | Skip:
    ev = run.get("eval_loss")
    if ev is None:
        return Skip(SkipKind.NO_DATA, "no eval_loss in the log - this run has no generalisation signal")
    e = ev.finite_only()
    if len(e) < OVERFIT.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(e)} eval points, needs {int(OVERFIT.t('min_points'))}")
    tr = run.get("loss")
    if tr is None or not len(tr.finite_only()):
        return Skip(SkipKind.NO_DATA, "no train loss to compare the eval curve with")
    t = tr.finite_only()
    i = int(np.argmin(e.values))
    e_min, e_end = float(e.values[i]), float(e.values[-1])
    if e_min <= 0:
        return Skip(SkipKind.DEGENERATE, "eval loss is not positive")
    # Train loss at the eval minimum vs at the end: "falls" means it kept going down.
    then = float(t.values[min(np.searchsorted(t.steps, e.steps[i]), len(t) - 1)])
    k = max(1, min(int(OVERFIT.t("train_end_max")), int(len(t) * OVERFIT.t("train_end_share"))))
    train_end = stats.robust_median(t.values[-k:])
    ratio = e_end / e_min
    if ratio > OVERFIT.t("ratio") and train_end < then:
        return [OVERFIT.finding(_where(run, e.steps[i]), eval_end=e_end, eval_min=e_min,
                                eval_min_step=float(e.steps[i]), ratio=ratio,
                                train_then=then, train_end=train_end)]
    return []
