"""Single-run rules: what one training log says about itself (epoch, doctor, watch,
the callbacks). Each rule is declared once here with its thresholds and docs; the
judge right below it is the only code that decides whether it fires."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import Gate, not_yet, progress_gate

G = "single_run"

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


def _where(run: Run, step: float | None = None) -> Location:
    return Location(run.path, None if step is None else float(step))


def _loss(run: Run) -> Series | None:
    return run.get("loss")


def finite_loss(run: Run, minimum: int) -> Series | Skip:
    """The finite loss points, or a typed skip when there are fewer than `minimum`."""
    s = _loss(run)
    if s is None:
        return Skip(SkipKind.NO_DATA, "no loss column in the log")
    f = s.finite_only()
    if len(f) < minimum:
        return Skip(SkipKind.TOO_FEW, f"{len(f)} finite loss points, needs {minimum}")
    return f


# ---------------------------------------------------------------- non-finite values

NAN = rule(
    id="TP-NAN", level=Level.FAIL, group=G,
    title="Loss is NaN or Inf.",
    evidence="{count} non-finite {metric} value(s) of {n}; first at step {step} ({value})",
    summary="A logged loss (train or eval) is NaN or infinite.",
    why="A non-finite loss means the weights or the optimizer state are already poisoned; "
    "every later step trains on garbage.",
    fix="Lower the learning rate, enable gradient clipping, use bf16 instead of fp16 or a "
    "loss scaler, and look for log(0) or division by zero in the loss.",
    thresholds={"min_points": Threshold(1, "points", "One non-finite value is the finding itself; "
                                        "no baseline or trend is needed.")},
    fires=Example({"loss": [2.0, 1.8, float("nan"), 1.7]}),
    passes=Example({"loss": [2.0, 1.8, 1.75, 1.7]}),
)

NAN_GRAD = rule(
    id="TP-NAN-GRAD", level=Level.FAIL, group=G,
    title="Gradient norm is NaN or Inf.",
    evidence="{count} non-finite grad_norm value(s) of {n}; first at step {step} ({value}){hidden}",
    summary="A logged gradient norm is NaN or infinite.",
    why="HF Trainer's logging_nan_inf_filter (on by default) drops NaN/Inf losses from the "
    "logged average, so a non-finite gradient norm is often the only trace that the "
    "update blew up. An fp16 loss scaler skips such steps; repeated ones mean it cannot.",
    fix="As for TP-NAN: lower the learning rate, clip gradients, prefer bf16; check whether "
    "the logged loss at those steps is an artefact of the NaN filter.",
    thresholds={"min_points": Threshold(1, "grad_norm points", "As for TP-NAN: one non-finite "
                                        "norm is the finding.")},
    fires=Example({"loss": [2.0, 1.8, 1.7, 1.6], "grad_norm": [1.0, float("inf"), 1.2, 1.1]}),
    passes=Example({"loss": [2.0, 1.8, 1.7, 1.6], "grad_norm": [1.0, 0.9, 1.2, 1.1]}),
)


def _nonfinite(run: Run, s: Series, rule_, **extra: object) -> Iterator[Finding]:
    bad = ~s.finite
    if bad.any():
        i = stats.first_index(bad)
        yield rule_.finding(
            _where(run, s.steps[i]), metric=s.name, count=int(bad.sum()), n=len(s),
            step=float(s.steps[i]), value=float(s.values[i]), **extra,
        )


@check("nan", NAN, NAN_GRAD)
def non_finite_values(run: Run) -> Iterator[Finding] | Skip:
    present = [s for s in (run.get("loss"), run.get("eval_loss")) if s is not None]
    if not present:
        return Skip(SkipKind.NO_DATA, "no loss column in the log")
    out: list[Finding] = []
    for s in present:
        if not s.finite.all():
            out.extend(_nonfinite(run, s, NAN))
            break  # one TP-NAN per report: the first poisoned metric is the evidence
    g = run.get("grad_norm")
    if g is not None:
        out.extend(_nonfinite(run, g, NAN_GRAD, hidden=_filtered_hint(run, g)))
    return out


def _filtered_hint(run: Run, g: Series) -> str:
    """Say so when the loss at a non-finite-gradient step looks like HF's NaN filter at work."""
    loss = run.get("loss")
    if loss is None or g.finite.all():
        return ""
    bad_steps = g.steps[~g.finite]
    at = np.isin(loss.steps, bad_steps)
    if at.any() and np.all(np.isfinite(loss.values[at])):
        return "; the loss logged at those steps is finite - HF's logging_nan_inf_filter may have hidden NaN losses"
    return ""


def _nan_filter_hint(run: Run, onset: float) -> str:
    g = run.get("grad_norm")
    if g is None:
        return ""
    after = ~np.isfinite(g.values[g.steps >= onset])
    if after.size and after.mean() > 0.5:
        return ("; grad_norm is non-finite over the same steps - HF's logging_nan_inf_filter logs "
                "NaN losses as 0.0, so these zeros are most likely NaNs")
    return ""


# ---------------------------------------------------------------- zero and flat loss

ZERO_LOSS = rule(
    id="TP-ZERO-LOSS", level=Level.FAIL, group=G,
    title="Loss is exactly zero on every step.",
    evidence="all {n} finite loss values are exactly 0",
    summary="Every finite loss value is exactly 0.",
    why="A loss of exactly 0 means nothing is being optimised: labels fully masked (-100 "
    "everywhere), an empty target, or a loss that is not connected to the model.",
    fix="Check the label masking and the collator; print one batch's labels.",
    thresholds={"min_points": Threshold(5, "points", "Fewer points cannot tell a pattern from a "
                                        "coincidence.")},
    fires=Example({"loss": [0.0] * 6}),
    passes=Example({"loss": [0.5, 0.4, 0.3, 0.2, 0.1, 0.05]}),
)

ZERO_LOSS_ONSET = rule(
    id="TP-ZERO-LOSS-ONSET", level=Level.FAIL, group=G,
    title="Loss collapsed to exactly zero.",
    evidence="loss is exactly 0 on the last {tail} points, from step {step} on (was {before} before){hidden}",
    summary="Loss becomes exactly 0 from some step on and stays there.",
    why="A loss that was positive and then sits at exactly 0 usually means a data shard with "
    "no trainable tokens, or HF's NaN filter logging 0.0 for NaN losses.",
    fix="Inspect the batches after that step; check grad_norm there for NaN/Inf.",
    thresholds={"min_tail": Threshold(5, "points", "A shorter run of zeros can be a few "
                                      "empty batches, not a collapse."),
                "min_points": Threshold(6, "points", "min_tail zeros after at least one positive "
                                        "loss: a collapse needs a before.")},
    fires=Example({"loss": [2.0, 1.5, 1.2, 0, 0, 0, 0, 0]}),
    passes=Example({"loss": [2.0, 1.5, 1.2, 1.0, 0.9, 0.8, 0.7, 0.6]}),
)


@check("zero-loss", ZERO_LOSS, ZERO_LOSS_ONSET, loss_curve=True)
def loss_exactly_zero(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(min(ZERO_LOSS.t("min_points"), ZERO_LOSS_ONSET.t("min_points"))))
    if isinstance(s, Skip):
        return s
    zero = s.values == 0.0
    if zero.all():
        if len(s) >= ZERO_LOSS.t("min_points"):
            return [ZERO_LOSS.finding(_where(run), n=len(s))]
        return []
    nonzero = np.flatnonzero(~zero)
    tail = len(s) - 1 - int(nonzero[-1])
    if tail >= ZERO_LOSS_ONSET.t("min_tail"):
        i = len(s) - tail
        return [ZERO_LOSS_ONSET.finding(_where(run, s.steps[i]), tail=tail, step=float(s.steps[i]),
                                        before=float(s.values[i - 1]),
                                        hidden=_nan_filter_hint(run, float(s.steps[i])))]
    return []


FLAT = rule(
    id="TP-FLAT", level=Level.FAIL, group=G,
    title="Loss does not change.",
    evidence="loss range {range} over {n} points is {rel:.2g} of its median {median} (< {limit_rel_range}){seen}",
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


@check("flat-loss", FLAT, loss_curve=True)
def loss_flat(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(FLAT.t("min_points")))
    if isinstance(s, Skip):
        return s
    if np.all(s.values == 0.0):
        return Skip(SkipKind.DEGENERATE, "loss is all zero (judged by zero-loss)")
    gate = progress_gate(run, s)
    if not gate.open:
        return not_yet(gate)
    span = float(s.values.max() - s.values.min())
    med = stats.robust_median(s.values)
    rel = span / abs(med) if med else float("inf")
    if rel < FLAT.t("rel_range"):
        return [FLAT.finding(_where(run), range=span, n=len(s), median=med, rel=rel, seen=seen_phrase(gate))]
    return []


def seen_phrase(gate: Gate) -> str:
    """How much of the run a progress finding saw, as its evidence ends."""
    return f"; {gate.seen}" if gate.seen else ""


# ---------------------------------------------------------------- divergence and no progress

DIVERGE = rule(
    id="TP-DIVERGE", level=Level.FAIL, group=G,
    title="Loss curve is diverging.",
    evidence="end loss {end} vs floor {floor} around step {floor_step} ({through:.0%} through the "
    "run); ratio {ratio:.2f} > {limit_ratio}, {gap_se:.0f} standard errors above the batch noise "
    "(medians of {block}-point blocks; raw min {raw_min} at step {raw_min_step}, raw end {raw_end}); "
    "held for {after} points after the floor, their median {held_se:.0f} standard errors above it{seen}",
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
        "min_blocks_after_floor": Threshold(
            2, "blocks",
            "A divergence is a rise that lasts: at least two blocks (six points on a short log, "
            "two fiftieths of a long one) must follow the floor's block. A floor in the last "
            "block or two is the run still settling - the freshest evidence is the floor itself."),
        "min_held_se": Threshold(
            4, "standard errors",
            "Sustained, not a late spike: the median of every point after the floor's block must "
            "also sit this many standard errors above the floor (the same bar as min_gap_se), so "
            "most of the run after its best point is worse than it, not just the last block."),
    },
    fires=Example({"loss": [1.4, 1.3, 1.2, 1.25, 2.5, 4.0, 6.0, 7.5, 7.4]}),
    passes=Example({"loss": [1.5, 1.3, 1.2, 1.1, 1.05, 1.0, 1.02, 1.01, 1.0]}),
    limits="A positive loss is required: ratios of losses that can be negative (ELBO, "
    "RL objectives) are meaningless, so the check is skipped for them. A floor in the last "
    "blocks of the log is not judged: a loss that only now turned up is for a later look.",
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
    after, held_se = _held_after_floor(s.values, b, i, floor, sigma)
    measured = dict(end=end, floor=floor, floor_step=float(b.steps[i]), ratio=ratio,
                    through=float(through), block=b.size, raw_end=float(s.values[-1]),
                    raw_min=float(s.values[j]), raw_min_step=float(s.steps[j]), sigma=sigma,
                    gap_se=float(gap_se), blocks_after=b.medians.size - 1 - i, held_se=held_se,
                    after=after)
    fires = (ratio > DIVERGE.t("ratio") and gap_se > DIVERGE.t("min_gap_se")
             and measured["blocks_after"] >= DIVERGE.t("min_blocks_after_floor")
             and held_se > DIVERGE.t("min_held_se"))
    return bool(fires), measured


def _held_after_floor(values: np.ndarray, b: stats.Blocks, i: int, floor: float,
                      sigma: float) -> tuple[int, float]:
    """(points after the floor's block, how far their median sits above the floor in
    standard errors of the log's noise). Blocks are end-aligned; when the log's length is
    not a multiple of the block size the first block overlaps the second (stats.Blocks)."""
    n, size = values.size, b.size
    head = n - (n // size) * size
    end = (size if i == 0 else head + i * size) if head else (i + 1) * size
    rest = values[end:]
    if rest.size == 0 or floor <= 0:
        return 0, 0.0
    se = stats.MEDIAN_SE * sigma * np.sqrt(1.0 / size + 1.0 / rest.size)
    gap = float(np.log(np.median(rest) / floor))
    return int(rest.size), (gap / se if se > 0 else (np.inf if gap > 0 else 0.0))


@check("divergence", DIVERGE, DIVERGE_NOISE, loss_curve=True)
def loss_diverging(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(DIVERGE.t("min_points")))
    if isinstance(s, Skip):
        return s
    if s.values.min() <= 0:
        return Skip(SkipKind.DEGENERATE, "loss is not positive; end/min ratio is meaningless")
    gate = progress_gate(run, s)
    if not gate.open:
        return not_yet(gate)
    fires, common = divergence_measure(s)
    if fires:
        return [DIVERGE.finding(_where(run, common["floor_step"]), seen=seen_phrase(gate), **common)]
    raw_ratio = float(s.values[-1] / common["raw_min"])
    if max(raw_ratio, common["ratio"]) > DIVERGE_NOISE.t("ratio"):
        return [DIVERGE_NOISE.finding(_where(run, common["raw_min_step"]), raw_ratio=raw_ratio, **common)]
    return []


# ---------------------------------------------------------------- gradients

ZERO_GRAD = rule(
    id="TP-ZERO-GRAD", level=Level.FAIL, group=G,
    title="Gradient norm is exactly zero on every step.",
    evidence="all {n} finite grad_norm values are exactly 0",
    summary="Every finite gradient norm is exactly 0.",
    why="No gradient reaches the parameters: everything frozen, a detached loss, or all "
    "labels masked.",
    fix="Check which parameters require grad and that the loss depends on them.",
    thresholds={"min_points": Threshold(3, "points", "A zero norm on the first logged steps "
                                        "can be a logging artefact.")},
    fires=Example({"loss": [1, 1, 1, 1], "grad_norm": [0.0, 0.0, 0.0, 0.0]}),
    passes=Example({"loss": [1, 0.9, 0.8, 0.7], "grad_norm": [0.5, 0.4, 0.45, 0.4]}),
)


@check("zero-grad", ZERO_GRAD)
def gradient_zero(run: Run) -> list[Finding] | Skip:
    g = run.get("grad_norm")
    if g is None:
        return Skip(SkipKind.NO_DATA, "no grad_norm column in the log")
    f = g.finite_only()
    if len(f) < ZERO_GRAD.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(f)} finite grad_norm points, needs "
                    f"{int(ZERO_GRAD.t('min_points'))}")
    if np.all(f.values == 0.0):
        return [ZERO_GRAD.finding(_where(run), n=len(f))]
    return []


GRAD_SPIKE = rule(
    id="TP-GRAD-SPIKE", level=Level.WARN, group=G,
    title="Gradient norm spikes detected.",
    evidence="max grad_norm {max} at step {step} > {limit_ratio}x median ({median})",
    summary="The largest gradient norm is far above the run's typical one.",
    why="Spikes precede divergence and loss plateaus; with clipping they silently shrink the "
    "effective learning rate, without it they can wreck the weights in one step.",
    fix="Enable or tighten gradient clipping, lower the peak learning rate or lengthen "
    "warm-up; look at the batch at that step.",
    thresholds={
        "ratio": Threshold(10, "x median grad_norm", "Healthy gallery runs peak <= 2.1x their "
                           "median; the lrx100 run reaches 4,800x."),
        "min_points": Threshold(6, "points", "A median of fewer points is not a baseline."),
    },
    fires=Example({"loss": [1] * 6, "grad_norm": [0.5, 0.6, 0.5, 40.0, 0.55, 0.5]}),
    passes=Example({"loss": [1] * 6, "grad_norm": [0.5, 0.6, 0.5, 0.9, 0.55, 0.5]}),
)


@check("grad-spike", GRAD_SPIKE)
def gradient_spike(run: Run) -> list[Finding] | Skip:
    g = run.get("grad_norm")
    if g is None:
        return Skip(SkipKind.NO_DATA, "no grad_norm column in the log")
    f = g.finite_only()
    if len(f) < GRAD_SPIKE.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(f)} finite grad_norm points, needs "
                    f"{int(GRAD_SPIKE.t('min_points'))}")
    med = stats.robust_median(f.values)
    if med <= 0:
        return Skip(SkipKind.DEGENERATE, "median grad_norm is 0")
    i = int(np.argmax(f.values))
    if f.values[i] > GRAD_SPIKE.t("ratio") * med:
        return [GRAD_SPIKE.finding(_where(run, f.steps[i]), max=float(f.values[i]),
                                   step=float(f.steps[i]), median=med,
                                   ratio=float(f.values[i] / med))]
    return []


# ---------------------------------------------------------------- learning rate

ZERO_LR = rule(
    id="TP-ZERO-LR", level=Level.FAIL, group=G,
    title="Learning rate is zero (or negative) on essentially every step.",
    evidence="lr <= 0 on {count} of {n} logged steps ({share:.1%} >= {limit_share:.0%})",
    summary="The logged learning rate is <= 0 on (nearly) every step.",
    why="With lr = 0 the optimizer takes no step at all; the run costs its full budget and "
    "returns the initial weights.",
    fix="Check the learning-rate argument, the scheduler (warm-up that never ends, a decay "
    "that starts at 0) and per-group lr overrides.",
    thresholds={"share": Threshold(0.99, "of logged steps", "A schedule may touch 0 at its "
                                   "very first or last step; 99 % is every step that matters."),
                "min_points": Threshold(1, "lr points", "An lr of 0 on every logged step is a fact "
                                        "about the optimizer at each of them, however few.")},
    fires=Example({"loss": [1.5] * 5, "lr": [0.0] * 5}),
    passes=Example({"loss": [1.5, 1.4, 1.3, 1.2, 1.1], "lr": [1e-4] * 5}),
)

ZERO_LR_PARTIAL = rule(
    id="TP-ZERO-LR-PARTIAL", level=Level.WARN, group=G,
    title="Learning rate is zero on a notable share of steps.",
    evidence="lr <= 0 on {count} of {n} logged steps ({share:.1%} > {limit_share:.0%}), first at step {step}",
    summary="The logged learning rate is <= 0 on more than a tenth of the steps.",
    why="Steps at lr = 0 are paid for and learn nothing: a warm-up that is far too long, a "
    "schedule sized for fewer steps than the run has, or a restart that reset the lr.",
    fix="Match the scheduler's total steps to the run; check warm-up length and restarts.",
    thresholds={"share": Threshold(0.10, "of logged steps", "Warm-up from 0 or a decay to 0 "
                                   "costs a step or two, not a tenth of the run."),
                "min_points": ZERO_LR.thresholds["min_points"]},
    fires=Example({"loss": [1.5] * 10, "lr": [0, 0, 0, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4]}),
    passes=Example({"loss": [1.5] * 10, "lr": [0] + [1e-4] * 9}),
    limits="On fewer than 10 logged lr points a single zero is already more than a tenth, so a "
    "schedule logged at 0 on its very first or last point warns on a short log.",
)


@check("lr", ZERO_LR, ZERO_LR_PARTIAL)
def learning_rate_zero(run: Run) -> list[Finding] | Skip:
    lr = run.get("lr")
    if lr is None:
        return Skip(SkipKind.NO_DATA, "no lr column in the log")
    f = lr.finite_only()
    if len(f) < ZERO_LR.t("min_points"):
        return Skip(SkipKind.DEGENERATE, "no finite lr value")
    zero = f.values <= 0
    part = stats.share(zero)
    values = dict(count=int(zero.sum()), n=len(f), share=part)
    if part >= ZERO_LR.t("share"):
        return [ZERO_LR.finding(_where(run), **values)]
    if part > ZERO_LR_PARTIAL.t("share"):
        i = stats.first_index(zero)
        return [ZERO_LR_PARTIAL.finding(_where(run, f.steps[i]), step=float(f.steps[i]), **values)]
    return []
