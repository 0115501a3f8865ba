"""The end of the loss compared with its start, one rule per condition: the loss ended
above where it started (TP-LOSS-ROSE), or neither rose nor fell meaningfully (TP-DEAD-RUN).
A loss that ended far above the best level it reached is TP-DIVERGE's (rules/run.py);
both rules here leave that case to it. Declared here with their thresholds; the judges
below are the only code that decides whether they fire."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.memo import last_series
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules import eval_witness as ew
from trainproof.rules import late_start as ls
from trainproof.rules import steady_fall as sf
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import not_yet, progress_gate
from trainproof.rules.run import (
    DIVERGE,
    G,
    divergence_measure,
    finite_loss,
    loss_blocks,
    loss_noise,
    positive_loss,
    seen_phrase,
)

DEAD_RUN = rule(
    id="TP-DEAD-RUN", level=Level.FAIL, group=G,
    title="Loss never improved over the run (dead run).",
    evidence="start {start} ({start_is}) vs end {end} (median of the last {m}, steps "
    "{end_from}-{end_to}): {improvement:.1%} "
    "improvement, {gain_se:.1f} standard errors of the log's noise ({sigma:.1%} per point); a run "
    "improves by >= {limit_min_improvement:.0%} and >= {limit_min_gain_se} standard errors{resolved}{trend}"
    "{witness}{seen}",
    summary="The loss at the end is not meaningfully lower than at the start, and not "
    "meaningfully higher either (that is TP-LOSS-ROSE).",
    why="A run that does not learn burns its whole budget: lr of zero, frozen weights, a "
    "scheduler that never leaves warm-up, labels the model cannot use.",
    fix="Check the learning rate actually applied (logged lr), the optimizer's parameter "
    "groups, and that the loss is computed on trainable outputs.",
    thresholds={
        "min_improvement": Threshold(0.05, "fraction of the start median",
                                     "Healthy fine-tunes in both galleries improve >= 10 %; lr=0 "
                                     "runs move <= 3 % on batch noise alone. A long, slow run near "
                                     "its floor gains less and learns: a steady fall across the "
                                     "run (trend_z, trend_fall_se) waives this band, and so "
                                     "does an eval loss that fell beyond its noise by "
                                     "witness_min_fall."),
        "min_points": Threshold(10, "points", "A start block and an end block that do not overlap."),
        "clear_improvement": Threshold(
            0.10, "fraction of the start median",
            "Above this gain the noise test no longer decides: a FAIL says the run did not learn, "
            "and a loss that ended 10 % below its start did, however noisy its log. Twice the "
            "band that lr=0 runs stay inside; on a log noisy enough that 10 % is within 2.5 "
            "standard errors (one-batch losses logged every step scatter by ~20 % per point) a "
            "3-point start block cannot tell a dead run from a learning one, and absence of "
            "proof is not evidence of a dead run."),
        "end_fraction": Threshold(
            0.2, "of the finite points",
            "The end is the median of the last fifth of the log (at least a block): the end of a "
            "run is its slowest-moving part (the schedule has decayed, the loss flattened), so a "
            "wide window costs little bias and damps batch noise that a 3-point block cannot - "
            "on the out-of-sample gallery's 40-point logs (5-6 % noise per point) a healthy run "
            "cut by one point read as dead with a 3-point end. The start stays a block: the start "
            "is where the loss moves fastest."),
        "full_first_interval": Threshold(
            0.5, "of the typical logging interval",
            "The first point stands as a start on its own only when it was logged at least half a "
            "typical interval from step 0, so it averages about as many batches as the points after "
            "it (a logging interval of 50 steps makes step 1's lone batch ~7x noisier)."),
        "full_first_grid": Threshold(
            0.05, "of the typical logging interval",
            "...and only when the second point sits one interval from step 0 (to this share): the "
            "layout of an extra first point (HF's logging_first_step: steps 1, 10, 20 ...). A log "
            "whose points sit off that grid (10, 58, 106 ...: a counter that did not start at 0, or "
            "a log thinned after the fact) says nothing about what its first point covers, and a "
            "step offset must not change a verdict."),
        "min_gain_se": Threshold(
            2.5, "standard errors",
            "Below clear_improvement, the improvement counts only when log(start / end) also "
            "exceeds this many standard errors of the log's own noise (TP-DIVERGE's estimate; the "
            "start one point, the end a median of the last fifth): a fixed band alone lets noisy "
            "dead runs pass, since batch noise alone moves a dead run's end by 5 % in one draw of "
            "twenty at 4 % per point. Measured over the perturbations of tests/test_invariance.py "
            "on both galleries: lr=0 runs reach at most 1.45 standard errors (and, halved, a chance "
            "gain of 10.1 %, which clear_improvement lets pass: TP-ZERO-LR still fails them); "
            "healthy, bad-labels and overfit runs whose gain is under 10 % sit at 4.7 and more, "
            "except one halved healthy log at 2.0 (8.9 %), which the eval witness below "
            "clears."),
        "resolve_se": Threshold(
            2.0, "standard errors",
            "A FAIL says the run did not learn, so it needs evidence of that, not only a lack of "
            "proof that it did: the run's gain, at its upper bound - the measured log-gain plus "
            "this many of its standard errors - must stay below clear_improvement's log-gain. "
            "Two bounds are taken and the tighter one used: the end against the start (one "
            "point's noise at the start, a median's at the end) and, on a log of nine blocks or "
            "more (where the trend test can show a fall), the Theil-Sen line through the block "
            "medians (rules/steady_fall.py), whose fall over the run uses every point and is the "
            "tighter one on long logs. Two standard errors is the usual one-sided "
            "~98 % bound, and no weaker than what the rules ask before a positive claim "
            "(min_gain_se 2.5, trend_z 3.5, TP-LOSS-ROSE's 3): one standard error, the earlier "
            "value, let a 60-step LoRA demo logged every step at 20 % noise per point, whose "
            "single first point is worth as little as any other, be called dead because that "
            "point happened to sit low. Measured over the perturbations of "
            "tests/test_invariance.py: every lr=0 log of both galleries and ../shared/corpus "
            "stays resolved (their eval loss is frozen, or the line's bound is at most 0.08 "
            "against 0.105); the public dead runs keep a bound of at most 0.07. A frozen eval "
            "loss, or a loss that first climbed far above its start (witness_wreck_se), is "
            "evidence on its own. A run the log cannot resolve is TP-NO-PROGRESS (WARN: no "
            "clear progress, too noisy to call dead), never a FAIL and never a silent PASS."),
        # The eval loss as a witness (rules/eval_witness.py): frozen evaluations make a run
        # dead whatever its train log's noise; a falling eval loss on a run with no wrecked
        # start waives the noise test for a gain between the two bands above.
        **ew.THRESHOLDS,
        # A steady fall across the whole run (rules/steady_fall.py) is learning however small
        # the gain from start to end: it waives both bands above, on a start not wrecked.
        **sf.THRESHOLDS,
    },
    fires=Example({"loss": [1.52, 1.50, 1.55, 1.49, 1.51, 1.50, 1.52, 1.48, 1.50, 1.49]}),
    passes=Example({"loss": [1.52, 1.45, 1.40, 1.35, 1.30, 1.20, 1.15, 1.10, 1.05, 1.00]}),
    limits="The start is the first logged point (the median of the first full block when the "
    "first point covers less than half a logging interval from step 0) "
    "(TP-DIVERGE's block size: 3 points, n // 50 on long logs), whatever the log's length "
    "modulo the block size; the end is the median of the last fifth. A loss that ends in "
    "NaN/Inf is TP-NAN's. A run started from an already-converged checkpoint is 'dead' by "
    "construction. A loss that ended above its start beyond the log's noise is TP-LOSS-ROSE's; "
    "one that rose past TP-DIVERGE's ratio, or that TP-DIVERGE fails, is TP-DIVERGE's. With "
    "four or more evaluations the eval loss is a witness (rules/eval_witness.py): the same "
    "value at every evaluation means the weights never changed, so the run is dead unless its "
    "train loss fell by clear_improvement from its first block (a rise is then the data's, not "
    "TP-LOSS-ROSE's); an eval loss that fell beyond its own noise, on a run whose train loss "
    "never climbed above its first point (or whose eval loss ended witness_recovered below that "
    "point, whatever the climb), waives the noise test for a gain between "
    "min_improvement and clear_improvement, and, when it also fell by witness_min_fall of its "
    "first evaluation, clears a gain below min_improvement too. An eval logger that repeats a stale value reads as "
    "frozen. A loss whose block medians fall steadily across the run (rules/steady_fall.py: "
    "Mann-Kendall and Theil-Sen, trend_z and trend_fall_se) learned, however small its gain, "
    "unless the eval loss is frozen or the loss first climbed above its start beyond "
    "witness_wreck_se (a wrecked start learning back). A FAIL needs the gain's upper bound "
    "(resolve_se) below clear_improvement, by the ends or by the line through the blocks; a "
    "log too noisy or too short for that gets TP-NO-PROGRESS (WARN) instead, so a dead run "
    "logged that noisily is a WARN. The trend test takes the logged points "
    "as independent draws around the curve: a log of running means since the start, or a "
    "frozen model fed data that grows steadily easier, can pass it; on very long logs the "
    "block medians are so precise that a fall of a fraction of a per cent is significant.",
)

NO_PROGRESS = rule(
    id="TP-NO-PROGRESS", level=Level.WARN, group=G,
    title="No clear progress, in a log too noisy to call the run dead.",
    evidence="start {start} ({start_is}) vs end {end} (median of the last {m}, steps "
    "{end_from}-{end_to}): {improvement:.1%} improvement, {gain_se:.1f} standard errors of the "
    "log's noise: no clear gain; but at {sigma:.1%} noise per point over {n} points the log "
    "cannot rule out one of {clear:.0%} either: it may have gained up to {upper:.0%} ({bound}, "
    "at {resolve_se:g} standard errors){seen}",
    summary="The loss did not clearly fall, and its log is too noisy or too short to tell a dead "
    "run from one that learned a little: look at the curve, or log the loss over more batches.",
    why="A run that shows no progress may be dead (TP-DEAD-RUN) - or a short, noisy log of a "
    "model that was already good at the task, where one-batch losses scatter by 20 % and one "
    "first point is as noisy as any other. A FAIL needs evidence; this says what is missing.",
    fix="Check the learning rate actually applied and that the loss falls on a held-out set "
    "(an eval loss settles it); log the loss averaged over more steps, or run longer.",
    # its bands are TP-DEAD-RUN's (min_improvement, clear_improvement, resolve_se), read there
    thresholds={"min_points": DEAD_RUN.thresholds["min_points"]},
    fires=Example({"loss": [0.77, 0.84, 1.08, 0.89, 0.76, 0.94, 0.62, 1.0, 0.86, 0.76, 0.88, 1.09,
                            0.95, 0.64, 0.88, 0.64, 1.0, 0.83, 0.77, 0.93]}),
    passes=Example({"loss": [1.52, 1.45, 1.40, 1.35, 1.30, 1.20, 1.15, 1.10, 1.05, 1.00]}),
    limits="Judged by TP-DEAD-RUN's check, on the runs it would fail (a gain under "
    "min_improvement, or under clear_improvement and inside min_gain_se), when neither bound of "
    "resolve_se places the gain below clear_improvement and nothing else witnesses a dead run "
    "(a frozen eval loss, a wrecked start). A dead run logged this noisily is a WARN here, not a "
    "FAIL; TP-ZERO-LR and TP-FLAT still fail what they see. A short smoke run that moved a few "
    "per cent the right way within its noise is warned about too: its log shows no clear gain.",
)


SMALL_GAIN = rule(
    id="TP-SMALL-GAIN", level=Level.WARN, group=G,
    title="The loss fell, clearly but little: the run barely learned.",
    evidence="start {start} ({start_is}) vs end {end} (median of the last {m}, steps "
    "{end_from}-{end_to}): {improvement:.1%} improvement, under the {min_improvement:.0%} a run "
    "that learns makes, but {gain_se:.1f} standard errors of the log's noise ({sigma:.1%} per "
    "point; >= {limit_min_gain_se:g}) and >= {limit_min_fall:.0%}: the model changed{eval_said}{seen}",
    summary="The loss ended below its start by far more than its noise, but by only a few per "
    "cent: not a dead run, a run that barely learned (an early plateau, a task the model can "
    "hardly fit, a learning rate too low).",
    why="TP-DEAD-RUN's band exists because a dead run's loss drifts by a few per cent on batch "
    "noise alone; a log of epoch means hardly drifts at all, and a fall of tens of standard "
    "errors is the weights changing, however small. Calling that 'never improved' is wrong, "
    "and passing it silently hides a run that is learning almost nothing.",
    fix="Look at the curve: a plateau after the first epoch wants a higher learning rate or a "
    "better-conditioned input (normalised features and targets); a slow steady fall wants more "
    "steps.",
    thresholds={
        "min_gain_se": Threshold(
            10, "standard errors",
            "log(start / end) in standard errors of the log's own noise (TP-DEAD-RUN's estimate). "
            "A dead run's gain is noise: the galleries' lr=0 runs reach at most 1.45 over every "
            "perturbation, and the public runs labelled dead with a gain of 1-5 % sit at 3.2 and "
            "less, except one whose eval loss ended above its start (below). Ten is seven times "
            "the most noise gave and a one-sided chance of 1e-23: the weights changed."),
        "min_fall": sf.TREND_MIN_FALL,
        "min_points": DEAD_RUN.thresholds["min_points"],
    },
    fires=Example({"loss": [0.9872, 0.9527, 0.9483, 0.9469, 0.9459, 0.9449, 0.9444, 0.9439, 0.9433, 0.9425]},
                  note="ten epoch means, 4.5 % lower at the end, at 0.1 % noise per epoch"),
    passes=Example({"loss": [1.52, 1.45, 1.40, 1.35, 1.30, 1.20, 1.15, 1.10, 1.05, 1.00]}),
    limits="Judged by TP-DEAD-RUN's check, on the runs it would fail for a gain under "
    "min_improvement. Not when the eval loss (four or more evaluations) held still or ended "
    "above its first evaluation: what the train loss gained did not reach held-out data, and the "
    "run stays TP-DEAD-RUN's; nor on a start wrecked and won back (witness_wreck_se). A finely "
    "printed log's drift in its last digits is many standard errors and no learning: min_fall "
    "keeps it out. A frozen model fed data that grows steadily easier would pass for learning.",
)

LATE_START_PLATEAU = rule(
    id="TP-LATE-START-PLATEAU", level=Level.WARN, group=G,
    title="No progress over a log that starts in the middle of its run.",
    evidence="start {start} ({start_is}) vs end {end} (median of the last {m}, steps "
    "{end_from}-{end_to}): {improvement:.1%} improvement, {gain_se:.1f} standard errors of the "
    "log's noise; but the log starts at epoch {epoch:g} (the next logged epoch is {next_epoch:g}): "
    "the run's first {late:g} epochs or more are not in it, so this is a plateau of the stretch "
    "logged, not evidence that the run never learned{seen}",
    summary="The loss did not improve over what was logged, and the log begins a whole epoch or "
    "more into the run: a plateau of its later stretch.",
    why="TP-DEAD-RUN's FAIL says a run never learned, which needs the run's start: a model's "
    "loss falls fastest in its first steps. A log whose epoch counter begins past its first "
    "logging interval (a resumed run logging to a new file, fit() continued from an initial "
    "epoch) holds only a later stretch, where a converged model's loss is flat by design. "
    "Public run fresh29/ytes-k (epochs 60-74 of a forecaster, flat) was labelled a plateau by "
    "its reader and failed as dead.",
    fix="Read the earlier part of the run (the log of the run it resumed from): if the loss fell "
    "there, the run converged and more epochs buy nothing (stop it, or lower the learning rate "
    "for a last gain); if it never fell, treat it as TP-DEAD-RUN.",
    thresholds={
        "min_epochs_before": ls.MIN_EPOCHS_BEFORE,
        "min_points": DEAD_RUN.thresholds["min_points"],
    },
    fires=Example({"epoch": list(range(60, 75)),
                   "loss": [6.73, 6.69, 6.65, 7.02, 6.86, 6.65, 6.6, 6.59, 7.2, 6.67, 6.71, 6.61,
                            6.85, 6.86, 6.61]},
                  note="epochs 60-74 of a resumed run, flat"),
    passes=Example({"epoch": list(range(0, 15)),
                    "loss": [6.73, 6.69, 6.65, 7.02, 6.86, 6.65, 6.6, 6.59, 7.2, 6.67, 6.71, 6.61,
                             6.85, 6.86, 6.61]},
                   note="the same flat loss from epoch 0: TP-DEAD-RUN's FAIL"),
    limits="Read from an `epoch` column; a log without one (Keras History JSON, DVCLive) is taken "
    "to start at its beginning. Judged only on the runs TP-DEAD-RUN would fail, and not when "
    "an eval loss frozen to the bit says the weights never changed (that stays a FAIL).",
)

LOSS_ROSE = rule(
    id="TP-LOSS-ROSE", level=Level.FAIL, group=G,
    title="Loss ended above where it started.",
    evidence="end {end} (median of the last {k} point(s), to step {end_step}) vs first loss "
    "{start} at step {start_step}: {ratio:.2f}x over {n} points; {test}{seen}",
    summary="The end of the loss sits above its first logged point: by a wide margin on a log "
    "too short to measure its noise, by several standard errors of that noise on a longer one.",
    why="A run whose loss ends above where it began made the model worse over its whole "
    "budget: a learning rate far too high (on a pretrained model, a first few steps at lr x100 "
    "wreck the weights and the rest of the run never wins it back), a wrong sign, or a broken "
    "target. Epoch-level logs (Keras, fastai) of a few epochs are normal runs and deserve that "
    "answer too.",
    fix="Lower the learning rate (or add warm-up and clipping) and check the loss and labels "
    "on one batch.",
    thresholds={
        "ratio": Threshold(
            DIVERGE.t("ratio"), "x first loss",
            "Logs too short for TP-DIVERGE: TP-DIVERGE's margin over the floor; the first point "
            "is at or above the floor, so a rise this test calls also clears TP-DIVERGE's ratio. "
            "A log this short cannot measure its own noise, so the margin alone stands in for "
            "it: healthy gallery runs end <= 1.15x their floor."),
        "min_gap_se": Threshold(
            3.0, "standard errors",
            "Longer logs: log(end / first loss) must exceed this many standard errors of the "
            "log's own noise (TP-DIVERGE's estimate; the first loss is one point, the end the "
            "median of the last fifth). It does not hinge on block alignment: the first point is "
            "the model before training moved it, the one witness of a start wrecked within the "
            "first logged steps. Over the perturbations of tests/test_invariance.py that keep "
            "the first point, the first gallery's lr x100 runs sit at 3.9-8.6 and the lr=0 runs "
            "of both galleries at <= 1.4; higher than TP-DEAD-RUN's bar for a gain because the "
            "start here is one point, not a median."),
        "min_rise": Threshold(
            0.05, "fraction of the first loss",
            "Longer logs: the end must also be this far above the first loss - TP-DEAD-RUN's "
            "band around the start, mirrored - so a flat run whose end drifts a hair above a "
            "low first point on a very smooth log is a dead run, not a rising one."),
        "min_points": Threshold(2, "finite loss points", "A start and an end; on so few points "
                                "the ratio margin, not more points, guards against noise."),
        "divergence_points": DIVERGE.thresholds["min_points"],
    },
    fires=Example({"loss": [2.3, 3.1, 4.0, 5.2]}),
    passes=Example({"loss": [2.3, 1.9, 1.7, 1.6]}),
    limits="A first point logged alone less than half a logging interval from step 0 (HF's "
    "logging_first_step) is one batch, not the start: the rise is measured from the next point. "
    "From TP-DIVERGE's min_points on, the noise test replaces the margin; a loss that "
    "ended far above its floor by TP-DIVERGE's test is left to TP-DIVERGE. A loss that rose "
    "and came back down inside the log is not flagged, and a blow-up before the first logged "
    "point leaves no start to compare with (TP-NAN catches the NaN it usually ends in); a "
    "coarser log whose first point already averages the wrecked steps may miss it. A positive "
    "loss is required. An eval loss identical at every evaluation (four or more) says the "
    "weights never changed: the rise is the data's, and the run is TP-DEAD-RUN's.",
)


def end_points(s: Series) -> int:
    """How many points the end median of TP-DEAD-RUN and TP-LOSS-ROSE holds."""
    return min(len(s), max(loss_blocks(s).size, int(len(s) * DEAD_RUN.t("end_fraction"))))


class Rise(NamedTuple):
    ratio: float
    z: float
    sigma: float
    k: int  # points in the end median
    fires: bool
    test: str  # which test decided, as evidence says it


def from_full_start(s: Series) -> Series:
    """The series from its first point that covers a whole logging interval: a lone first
    step (HF's `logging_first_step`) is one batch, not the run's start."""
    if first_point_is_full(s):
        return s
    return Series(s.name, s.steps[1:], s.values[1:])


@last_series
def measure_rise(s: Series) -> Rise:
    """TP-LOSS-ROSE's test on a positive finite loss (TP-DEAD-RUN defers to it)."""
    s = from_full_start(s)
    n = len(s)
    short = n < LOSS_ROSE.t("divergence_points")
    k = 1 if short else end_points(s)
    ratio, z, sigma = stats.start_rise(s.values, k, loss_noise(s))
    if short:
        return Rise(ratio, z, sigma, k, ratio > LOSS_ROSE.t("ratio"),
                    f"> {LOSS_ROSE.t('ratio')}x, the margin for a log too short to measure its noise "
                    f"(< {int(LOSS_ROSE.t('divergence_points'))} points)")
    fires = z > LOSS_ROSE.t("min_gap_se") and ratio > 1.0 + LOSS_ROSE.t("min_rise")
    return Rise(ratio, z, sigma, k, fires,
                f"{ratio - 1:.1%} above it (> {LOSS_ROSE.t('min_rise'):.0%}) and {z:.1f} standard "
                f"errors of the log's own noise ({sigma:.1%} per point; > {LOSS_ROSE.t('min_gap_se')})")


@check("rise", LOSS_ROSE, loss_curve=True)
def loss_rose(run: Run) -> list[Finding] | Skip:
    s = positive_loss(run, int(LOSS_ROSE.t("min_points")), "end/start ratio is meaningless")
    if isinstance(s, Skip):
        return s
    gate = progress_gate(run, s)
    if not gate.open:
        return not_yet(gate)
    r = measure_rise(s)
    if not r.fires:
        return []
    w = ew.eval_witness(run, s, DEAD_RUN.t)
    if w is not None and w.frozen:
        return []  # the weights never changed: a rise is the data's, and the run is TP-DEAD-RUN's
    if len(s) >= DIVERGE.t("min_points") and divergence_measure(s)[0]:
        return []  # far above its floor too: one finding, TP-DIVERGE's
    t = from_full_start(s)
    start, end_v = float(t.values[0]), float(r.ratio * t.values[0])
    return [LOSS_ROSE.finding(Location(run.path, float(s.steps[-1])), end=end_v, start=start,
                              end_step=float(s.steps[-1]), start_step=float(t.steps[0]),
                              ratio=r.ratio, n=len(s), k=r.k, gap_se=r.z, sigma=r.sigma,
                              test=r.test, seen=seen_phrase(gate))]


def _typical_interval(steps: np.ndarray) -> float:
    """The median step between logged points. Steps that increase have positive
    differences, their own absolute values: stats.diff_median takes that median without a
    series-sized difference array (#14)."""
    if bool(np.all(steps[1:] > steps[:-1])):
        return float(stats.diff_median(steps, 1, log=False))
    return float(stats.median(np.diff(steps), overwrite=True))


@last_series
def first_point_is_full(s: Series) -> bool:
    """Does the first logged point cover a whole logging interval, like the points after it?
    A first point logged earlier than one typical interval from step 0 averages fewer
    batches (HF's `logging_first_step`), so it scatters more than its neighbours."""
    if s.steps.size < 3:
        return True
    typical, first = _typical_interval(s.steps), float(s.steps[0])
    # Only a fresh run's counter says how many steps the first point covers (from step 0); a
    # log that starts at step 0 or before, or far past it (a resume), tells nothing: full. Nor
    # does one whose second point is not one interval from step 0 (HF's 1, 10, 20 ... is; a
    # counter offset or thinned, 10, 58, 106 ..., is not): its first point is not an early extra.
    on_grid = abs(float(s.steps[1]) - typical) <= DEAD_RUN.t("full_first_grid") * typical
    return not (0 < first < typical * DEAD_RUN.t("full_first_interval") and on_grid)


@check("dead-run", DEAD_RUN, NO_PROGRESS, SMALL_GAIN, LATE_START_PLATEAU, loss_curve=True)
def loss_not_improving(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(DEAD_RUN.t("min_points")))
    if isinstance(s, Skip):
        return s
    if not np.isfinite(run.series["loss"].values[-1]):
        # A run that ended in NaN/Inf has no end loss to measure a gain to; TP-NAN owns it.
        return Skip(SkipKind.COVERED, "the loss ends non-finite: judged by nan")
    b = loss_blocks(s)
    if b.medians.size < 2:
        return Skip(SkipKind.TOO_FEW, "the log fits in one block; a start and an end are needed")
    gate = progress_gate(run, s)
    if not gate.open:
        return not_yet(gate)
    # The start is the loss before training moved it: the first logged point, the one
    # witness of the model before the run changed it (a fine-tune's loss moves fastest in its
    # first steps, so a block median mixes early learning or early damage into the start; the
    # noise test below gives the single point its full per-point error).
    m = end_points(s)
    window, first = float(b.medians[0]), float(s.values[0])
    # ...but only a first point that averages as many steps as the others: HF's
    # `logging_first_step` logs step 1 alone, one batch's loss among means of dozens, whose
    # scatter says nothing about where training started.
    full = first_point_is_full(s)
    # The eval loss speaks whatever the train loss's exact zeros (a bounded loss, a perfect
    # batch); only a start that is not positive leaves nothing to weigh it against.
    witness = ew.eval_witness(run, s, DEAD_RUN.t) if s.values[0] > 0 else None
    frozen = witness is not None and witness.frozen
    # Weights that never changed make the first point one more batch of the same model, not
    # the model before training: the start is the first block's median, as for a partial
    # first point.
    full = full and not frozen
    start, end = (first if full else window), stats.robust_median(s.values[-m:])
    if start <= 0:
        return Skip(SkipKind.DEGENERATE, "start loss is not positive; relative improvement is meaningless")
    improvement = (start - end) / start
    sigma = loss_noise(s)
    # Standard error of log(start / end): one point's sigma for a first-point start, a
    # median's for a block start; the end is a median of m points.
    start_var = 1.0 if full else stats.MEDIAN_SE**2 / b.size
    se = sigma * np.sqrt(start_var + stats.MEDIAN_SE**2 / m)
    gain_se = float(np.log(start / end) / se) if se > 0 and end > 0 else np.inf
    if end / start > DIVERGE.t("ratio"):
        return []  # the loss rose far: that is divergence, and TP-DIVERGE owns it
    if s.values.min() > 0 and ((measure_rise(s).fires and not frozen) or divergence_measure(s)[0]):
        return []  # it rose beyond the noise (TP-LOSS-ROSE's) or far above its floor (TP-DIVERGE's)
    # The candidates: a gain below the band, and a gain inside the noise while it is small and
    # the eval loss does not show the run learned. Whether the log resolves them is below.
    learned = witness is not None and witness.learned
    small = improvement < DEAD_RUN.t("clear_improvement") and gain_se < DEAD_RUN.t("min_gain_se")
    if frozen:
        small = improvement < DEAD_RUN.t("clear_improvement")  # no noise test: the model never moved
    # Below the band, only a learned witness that also fell by a real share of the eval loss
    # clears the run: a near-dead run's eval drifts by parts per thousand, beyond its noise.
    below = improvement < DEAD_RUN.t("min_improvement") and not (
        learned and witness is not None and witness.fall >= DEAD_RUN.t("witness_min_fall"))
    if not (below or (small and not learned)):
        return []
    # A steady fall across the run is learning however small the gain from start to end
    # (a long, slow run near its floor); a frozen eval loss says the weights never moved.
    # Measured only here, on the runs the bands would fail, so a healthy run pays nothing.
    trend = None if frozen else sf.steady_fall(s, start, start_var, DEAD_RUN.t, b, sigma)
    if trend is not None and trend.learned:
        return []
    # A FAIL needs evidence that the run did not learn: the gain's upper bound (resolve_se
    # standard errors above the measured one), by end-vs-start or by the line through the
    # blocks, whichever is tighter, below clear_improvement's. A frozen eval loss is such
    # evidence, and so is a loss that first climbed far above its start (a wrecked start:
    # its gain is from the wreck - the eval witness's guard).
    clear_log = -float(np.log1p(-DEAD_RUN.t("clear_improvement")))
    r = DEAD_RUN.t("resolve_se")
    by_ends = float(np.log(start / end)) + r * float(se) if end > 0 else np.inf
    # the line only where the trend test had the power to show a fall (nine blocks or more):
    # through fewer, a line and its error rest on too few medians to be evidence
    by_line = (trend.upper(r) if trend is not None and sf.can_show_fall(trend.blocks, DEAD_RUN.t)
               else np.inf)
    upper = min(by_ends, by_line)
    resolved = (frozen or upper < clear_log
                or (trend is not None and trend.wrecked)
                or (s.values.min() > 0 and ew.wrecked(s, DEAD_RUN.t)))
    k = b.size
    moved = (not frozen and improvement >= SMALL_GAIN.t("min_fall") and gain_se >= SMALL_GAIN.t("min_gain_se")
             and not (trend is not None and trend.wrecked) and not ew.wrecked(s, DEAD_RUN.t)
             and not (witness is not None and witness.end > witness.first))
    start_is = (f"the first logged point, step {s.steps[0]:g}" if full else
                f"the median of the first {k} losses, steps {s.steps[0]:g}-{s.steps[k - 1]:g}: the "
                f"first point, {first:.4g} at step {s.steps[0]:g}, "
                + ("the weights never changed (eval loss below)" if frozen else
                   "covers less than a logging interval"))
    if moved:
        # The gain is small but far beyond the noise, and no held-out loss contradicts it:
        # the run barely learned, it did not fail to learn.
        eval_said = ("" if witness is None else
                     f"; the eval loss agrees: {witness.first:.4g} -> {witness.end:.4g} over {witness.n} evaluations")
        return [SMALL_GAIN.finding(Location(run.path), m=m, start=start, end=end, improvement=improvement,
                                   gain_se=gain_se, sigma=sigma, start_is=start_is,
                                   end_from=float(s.steps[-m]), end_to=float(s.steps[-1]),
                                   min_improvement=DEAD_RUN.t("min_improvement"),
                                   eval_said=eval_said, seen=seen_phrase(gate))]
    if not resolved:
        # No clear progress, but the log cannot tell a dead run from one that learned a
        # little: a WARN that says what is missing, not a FAIL and not a silent PASS.
        bound = _bound_name(by_line, by_ends)
        return [NO_PROGRESS.finding(Location(run.path), k=k, m=m, start=start, end=end,
                                    improvement=improvement, sigma=sigma, start_is=start_is,
                                    end_from=float(s.steps[-m]), end_to=float(s.steps[-1]),
                                    min_improvement=DEAD_RUN.t("min_improvement"),
                                    clear=DEAD_RUN.t("clear_improvement"), resolve_se=r,
                                    upper=float(-np.expm1(-upper)), bound=bound,
                                    gain_se=gain_se, n=len(s), seen=seen_phrase(gate))]
    if not frozen and (late := ls.late_start(run, LATE_START_PLATEAU.t)) is not None:
        # The log holds a later stretch of its run only: flat there is a plateau of what was
        # logged, and "never learned" would claim the part the log does not hold.
        return [LATE_START_PLATEAU.finding(Location(run.path), m=m, start=start, end=end,
                                           improvement=improvement, gain_se=gain_se, start_is=start_is,
                                           end_from=float(s.steps[-m]), end_to=float(s.steps[-1]),
                                           epoch=late[0], next_epoch=late[1], late=late[0] - (late[1] - late[0]),
                                           seen=seen_phrase(gate))]
    said = witness.says() if frozen and witness is not None else ""
    placed = ("" if frozen or upper >= clear_log else
              f"; the log bounds the gain under the clear {DEAD_RUN.t('clear_improvement'):.0%}: at most "
              f"{-np.expm1(-upper):.1%} by {_bound_name(by_line, by_ends)} ({r:g} standard errors)")
    return [DEAD_RUN.finding(Location(run.path), k=k, m=m, start=start, end=end, improvement=improvement,
                             gain_se=gain_se, sigma=sigma,
                             first=first, window=window, start_is=start_is,
                             start_from=float(s.steps[0]),
                             start_to=float(s.steps[k - 1]), end_from=float(s.steps[-m]),
                             end_to=float(s.steps[-1]), witness=said, seen=seen_phrase(gate),
                             resolved=placed, upper=float(-np.expm1(-upper)) if np.isfinite(upper) else None,
                             trend=trend.says() if trend is not None else "",
                             trend_z=trend.z if trend is not None else None,
                             trend_fall_se=trend.fall_se if trend is not None else None)]


def _bound_name(by_line: float, by_ends: float) -> str:
    """Which of TP-DEAD-RUN's two upper bounds on the gain was the tighter one."""
    return "the line through the block medians" if by_line <= by_ends else "the end against the start"
