"""Single-run rules: what one training log says about itself (epoch, doctor, watch,
the callbacks): a flat loss, divergence, overfitting. Each rule is declared once here
with its thresholds and docs; the judge right below it is the only code that decides
whether it fires. Non-finite values and gradient spikes are rules/gradients.py's, exact
zeros (loss, gradient, LR) rules/zeros.py's; `after=` keeps the checks in report order."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.memo import last_series
from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules import train_rise as tr
from trainproof.rules import zeros  # noqa: F401  (registers zero-loss, which flat-loss follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import Gate, not_yet, progress_gate
from trainproof.rules.gradients import G, finite_loss
from trainproof.rules.gradients import where as _where


def surrogate_loss(run: Run) -> Skip | None:
    """The skip of a rule that reads the loss's shape when the loss is a policy-gradient
    surrogate (a reward is logged): its level and stillness mean nothing, the reward rules
    judge the run."""
    if run.get("reward") is None:
        return None
    return Skip(SkipKind.COVERED, "a policy-gradient loss (a reward is logged) is a surrogate; "
                "the reward is judged instead")


def positive_loss(run: Run, minimum: int, why: str) -> Series | Skip:
    """The finite loss points for a rule that judges the loss in ratios: a typed skip, saying
    `why` a ratio needs it, when any of them is zero or negative."""
    s = finite_loss(run, minimum)
    if not isinstance(s, Skip) and s.values.min() <= 0:
        return Skip(SkipKind.DEGENERATE, f"loss is not positive; {why}")
    return s


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


@check("flat-loss", FLAT, loss_curve=True, after="zero-loss")
def loss_flat(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(FLAT.t("min_points")))
    if isinstance(s, Skip):
        return s
    if not s.values.any():  # all exactly zero (either sign), without a 5M-point mask (#14)
        return Skip(SkipKind.DEGENERATE, "loss is all zero (judged by zero-loss)")
    gate = progress_gate(run, s)
    if not gate.open:
        return not_yet(gate)
    span = float(s.values.max() - s.values.min())
    med = loss_median(s)
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
    "held for {after} points after the floor, their median {held_se:.0f} standard errors above it; "
    "{gave} (>= {limit_min_giveback:.0%}){seen}",
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
        "min_giveback": Threshold(
            0.1, "of the run's own gain (start -> floor, in the loss's units)",
            "A ratio to the floor is the wrong unit near zero: a classifier that memorised its "
            "train set (0.22 -> 0.0078 -> 0.021, public run fresh2/atharva-m) ends 2.7x its floor, "
            "5 standard errors up, on a rise of 0.013 nats - 6 % of what it had gained. A run "
            "that diverges loses a large part of what it learned or climbs back above its start: "
            "every diverging log TP-DIVERGE failed before this bar (evidence/curve, "
            "../shared/corpus lr_hot and fp16_nan, the public runs labelled FAIL) gives back more "
            "than all of its gain (>= 110 %), and a loss "
            "that fell 1.9 -> 0.09 and then grows 1 % a step passes 10 % once it has tripled its "
            "floor (about 110 steps; tests/test_invariance.py's held rise ends at 15 %). Runs that "
            "converge or overfit and then jitter at their floor give back 2-7 % (public runs). "
            "Differences of losses over a difference of losses: the same for any loss scale or "
            "unit (nats or bits). Block medians, as for the floor and end."),
        "giveback_shade_se": Threshold(
            1.0, "standard errors of one block median",
            "The give-back is measured between the end lowered and the floor raised by this many "
            "standard errors of one block median (the log's own noise): the floor is the lowest "
            "of many noisy blocks, biased low by about one standard error where two to five blocks "
            "sit at the floor's level (the expected minimum of that many draws), and the end is one "
            "block. Near a floor of a few hundredths a converged classifier jittering by 40 % per "
            "point (public run fresh4/atharvbindal, cut two points short) otherwise gave back 11 % "
            "on one noisy end block, and a loss averaged in pairs at 60 % per point "
            "(fresh/cloud-zhoubingye) 15 % from a single dip; shaded they give back 7 % and 9 %. A "
            "divergence gives back more than all of its gain, where one standard error is small."),
    },
    fires=Example({"loss": [1.4, 1.3, 1.2, 1.25, 2.5, 4.0, 6.0, 7.5, 7.4]}),
    passes=Example({"loss": [1.5, 1.3, 1.2, 1.1, 1.05, 1.0, 1.02, 1.01, 1.0]}),
    limits="A positive loss is required: ratios of losses that can be negative (ELBO, "
    "RL objectives) are meaningless, so the check is skipped for them. A floor in the last "
    "blocks of the log is not judged: a loss that only now turned up is for a later look. "
    "A rise from a near-zero floor that is a small share of the run's gain (a memorised "
    "loss jittering by hundredths of a nat) is not reported here, however many noise units "
    "it is; overfitting shows on the eval loss (TP-OVERFIT).",
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

TRAIN_RISE_EVAL_FELL = rule(
    id="TP-TRAIN-RISE-EVAL-FELL", level=Level.WARN, group=G,
    title="The training loss climbed far above its floor while the eval loss improved.",
    evidence="end loss {end} vs floor {floor} around step {floor_step} ({through:.0%} through the run): "
    "ratio {ratio:.2f}, {gap_se:.0f} standard errors above the batch noise, held for {after} points; but "
    "the eval loss went {eval_first:.4g} -> {eval_last:.4g} over its {eval_n} evaluations after the floor "
    "(its best {eval_best:.4g}): the model did not get worse, the training batches did{seen}",
    summary="What TP-DIVERGE would fail - a training loss far above its floor to the end - beside an eval "
    "loss that improved after that floor: not a diverged model, but training batches that changed.",
    why="A diverged model is worse on every input, so the held-out loss climbs with the training "
    "loss. When it ends at or below its first evaluation after the training floor, the weights "
    "improved while the training loss rose: the batches seen late are harder than those seen "
    "early - data sorted or grouped by source, length or label, a curriculum, augmentation or "
    "dropout that ramps up, a mixture whose weights change. Public run fresh39/vineet-sharma1927 "
    "(train 0.29 -> 0.49 over two epochs, eval 0.563 -> 0.485) was labelled a plateau by its reader.",
    fix="Check how the training data is ordered (shuffle each epoch), and whether the training "
    "objective changed during the run (augmentation, regularisation or a sampling schedule); the "
    "eval loss is the run's measure of progress here.",
    thresholds={
        "min_evals_after": tr.MIN_EVALS_AFTER,
        "max_end_over_best": tr.MAX_END_OVER_BEST,
        "min_points": DIVERGE.thresholds["min_points"],
    },
    fires=Example({"loss": [0.65, 0.55, 0.5, 0.42, 0.33, 0.3, 0.29, 0.3, 0.31, 0.4, 0.47, 0.48, 0.49, 0.48],
                   "eval_loss": [0.7, 0.66, 0.62, 0.6, 0.58, 0.57, 0.56, 0.55, 0.54, 0.52, 0.51, 0.5, 0.49, 0.485]},
                  note="the training loss climbs 0.29 -> 0.48 while the eval loss falls 0.56 -> 0.485"),
    passes=Example({"loss": [0.65, 0.55, 0.5, 0.42, 0.33, 0.3, 0.29, 0.3, 0.31, 0.4, 0.47, 0.48, 0.49, 0.48],
                    "eval_loss": [0.7, 0.66, 0.62, 0.6, 0.58, 0.57, 0.56, 0.57, 0.58, 0.6, 0.63, 0.65, 0.66, 0.66]},
                   note="the same climb with the eval loss rising too: TP-DIVERGE's FAIL"),
    limits="Read only where TP-DIVERGE would fail and an eval loss is logged at two evaluations "
    "or more after the training floor; without them the climb stays a divergence. An eval loss "
    "that ends at or below its first evaluation after the floor and near its best is enough: a "
    "diverged model's does not. A positive eval loss only.",
)


@last_series
def loss_blocks(s: Series) -> stats.Blocks:
    """The loss as divergence and the compare floor see it: medians of blocks."""
    return stats.block_medians(s.steps, s.values, int(DIVERGE.t("min_block")), int(DIVERGE.t("max_blocks")))


@last_series
def loss_median(s: Series) -> float:
    """stats.robust_median of the series' values, measured once per series (TP-FLAT and
    TP-LOSS-FROZEN's flat test ask it of the same loss: a partitioned 5M-point copy each)."""
    return stats.robust_median(s.values)


@last_series
def loss_noise(s: Series) -> float:
    """stats.log_noise of the series' values, measured once per series."""
    return stats.log_noise(s.values)


def divergence_measure(s: Series) -> tuple[bool, dict[str, float]]:
    """TP-DIVERGE's test on a positive finite loss: (does it fire, the numbers measured).
    The rules that defer to TP-DIVERGE ask it here rather than repeating it."""
    fires, measured = _divergence(s)
    return fires, dict(measured)


@last_series
def _divergence(s: Series) -> tuple[bool, dict[str, float]]:
    b = loss_blocks(s)
    i = int(np.argmin(b.medians))
    floor, end = float(b.medians[i]), float(b.medians[-1])
    ratio = end / floor
    first, last = float(s.steps[0]), float(s.steps[-1])
    through = (b.steps[i] - first) / (last - first) if last > first else 0.0
    j = int(np.argmin(s.values))
    sigma = loss_noise(s)
    se = stats.MEDIAN_SE * sigma * np.sqrt(2.0 / b.size)
    gap_se = float(np.log(end / floor) / se) if se > 0 else np.inf
    after, held_se = _held_after_floor(s.values, b, i, floor, sigma)
    # Share of the gain (first block -> floor) given back by the end; a floor in the first
    # block never gained anything, so any rise gives back "all" of it. End and floor are each
    # shaded toward the other by the noise of one block: the floor is the lowest of many.
    start = float(b.medians[0])
    shade = float(np.exp(DIVERGE.t("giveback_shade_se") * stats.MEDIAN_SE * sigma / np.sqrt(b.size)))
    giveback = ((end / shade - floor * shade) / (start - floor) if start > floor
                else (np.inf if end > floor else 0.0))
    measured = dict(end=end, floor=floor, floor_step=float(b.steps[i]), ratio=ratio,
                    start=start, giveback=float(giveback),
                    through=float(through), block=b.size, raw_end=float(s.values[-1]),
                    raw_min=float(s.values[j]), raw_min_step=float(s.steps[j]), sigma=sigma,
                    gap_se=float(gap_se), blocks_after=b.medians.size - 1 - i, held_se=held_se,
                    after=after)
    fires = (ratio > DIVERGE.t("ratio") and gap_se > DIVERGE.t("min_gap_se")
             and measured["blocks_after"] >= DIVERGE.t("min_blocks_after_floor")
             and held_se > DIVERGE.t("min_held_se") and giveback >= DIVERGE.t("min_giveback"))
    return bool(fires), measured


def _gave(m: dict[str, float]) -> str:
    """The give-back clause of TP-DIVERGE's evidence."""
    if np.isfinite(m["giveback"]):
        return (f"gave back {m['giveback']:.0%} of its gain from {m['start']:.4g} to the floor (end and floor "
                f"each shaded {DIVERGE.t('giveback_shade_se'):g} standard error of a block toward the other)")
    return f"never below its start {m['start']:.4g}: every rise gives back all it gained"


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
    gap = float(np.log(stats.median(rest) / floor))
    return int(rest.size), (gap / se if se > 0 else (np.inf if gap > 0 else 0.0))


@check("divergence", DIVERGE, DIVERGE_NOISE, TRAIN_RISE_EVAL_FELL, loss_curve=True, after="flat-loss")
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
        # A divergence damages the model: an eval loss that improved after the floor says the
        # weights did not get worse, so the climb is the training batches'.
        if (ev := tr.eval_fell_after(run, common["floor_step"], TRAIN_RISE_EVAL_FELL.t)) is not None:
            return [TRAIN_RISE_EVAL_FELL.finding(_where(run, common["floor_step"]), seen=seen_phrase(gate),
                                                 eval_first=ev.first, eval_last=ev.last, eval_n=ev.n,
                                                 eval_best=ev.best, **common)]
        return [DIVERGE.finding(_where(run, common["floor_step"]), seen=seen_phrase(gate),
                                gave=_gave(common), **common)]
    raw_ratio = float(s.values[-1] / common["raw_min"])
    if max(raw_ratio, common["ratio"]) > DIVERGE_NOISE.t("ratio"):
        return [DIVERGE_NOISE.finding(_where(run, common["raw_min_step"]), raw_ratio=raw_ratio, **common)]
    return []


    return []
