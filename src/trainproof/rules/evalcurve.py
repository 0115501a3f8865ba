"""The eval loss as a curve in its own right. One measure, `measure_climb`: how far the
held-out loss climbed back from its best evaluation, against its own drop and its own
noise. Two verdicts on it, split by the train loss: it kept falling, or sits far below
the held-out loss - the model is memorising, TP-OVERFIT (WARN); otherwise the model is
being damaged, as by a learning rate too high for fine-tuning, TP-EVAL-DIVERGE (FAIL). Metrics logged beside the eval
loss (eval_wer, eval_accuracy, reward) are read to corroborate a finding, never to make
or unmake one. An eval-only log (no train loss) is judged here, which is what makes it
more than NOT-CHECKED. Declared here with their thresholds; the judges below are the
only code that decides whether they fire."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import progress_gate
from trainproof.rules.run import G, seen_phrase

_MIN_POINTS = Threshold(5, "eval points", "Evaluations are few: a start, a best and a held end "
                        "need at least five.")
_AFTER = Threshold(
    2, "eval points after the best",
    "Two evaluations after the best one, both counted in the end: one bad evaluation can be a "
    "checkpoint caught mid-spike; two in a row on a fixed eval set are a trend.")
_END = Threshold(3, "eval points", "The end is the median of the last (up to) three evaluations "
                 "after the best: a majority of them must be high.")
_GAP_SE = Threshold(
    3.0, "standard errors",
    "log(end / best) against the eval curve's own noise in log space, measured from second "
    "differences (`eval_noise`): evaluations are sparse, so the trend between two of them is "
    "as large as their noise and first differences would count it as noise. The end is a "
    "level held over up to three evaluations, so the noise is taken at that scale too - the "
    "largest of the second-difference noises at lags 1 to 3: an eval loss on a small "
    "held-out set wanders over several evaluations, and its lowest point and a later "
    "median then sit apart by more than the point-to-point noise says (fresh13's imajin14: "
    "3.2 % a point, 7 % at three). TP-LOSS-ROSE's bar.")
_GIVEBACK = Threshold(
    0.5, "of the curve's own drop (log space)",
    "Relative to what the curve gained: half of the drop from the first evaluation at full LR "
    "to the best, in log space - back up to the geometric mean of start and best - is no "
    "wobble around a plateau and no transient that is recovering (a design-half public run "
    "whose eval loss went 2208 -> 603 -> 1038 -> 667 gives back 27 % over its last three "
    "evaluations), while a curve that fell 10x is not failed for a 20 % uptick. A curve that "
    "never dropped gives back all it rises. On a loss near 0.2 a ratio to the best is the "
    "wrong unit (0.219 -> 0.40 is a small absolute move and a huge one against the curve's "
    "own gain).")
_NEVER_BACK = Threshold(
    8, "evaluations after the first",
    "A curve whose every later evaluation sits above its first by the rise margin is worse than "
    "it started whatever its noise: a flat noisy curve lands below its first evaluation about "
    "half the time, so eight in a row above it happen by chance about once in 256 runs.")
_RISE = Threshold(
    0.1, "fraction of the best eval loss",
    "On a very smooth eval curve a rise of a few parts in a thousand can be many noise units "
    "and still mean nothing; a plateaued train loss beside an eval loss a few percent above "
    "its best is mild overfitting, not damage. Twice TP-LOSS-ROSE's 5 % band, because this "
    "FAIL stands on the eval curve alone; an LR too high moves eval loss by tens of percent.")
_MEMORISED = Threshold(
    0.25, "of the best eval loss",
    "A train loss that saturated near 0 cannot keep falling, so 'kept falling' alone misses the "
    "commonest overfit of all: the training set memorised early, held-out loss climbing after. "
    "Damage moves both curves together - on the public runs TP-EVAL-DIVERGE fails (an LR too "
    "high for a Whisper fine-tune, a run whose train loss froze) the train loss ends at "
    "0.59-0.82 of the eval loss's best - while a model that fits its training set four times "
    "better than it ever fit held-out data (at the eval minimum or at the end) is memorising, "
    "whatever its train curve does in the noise near 0 (fresh10/iancarrasco: train 0.0025 -> "
    "0.0053 at 163 % noise per point, eval best 0.043). A ratio of the two losses: the same in any unit.")
_TRAIN_END_SHARE = Threshold(
    0.1, "of the train loss points",
    "The train loss 'now' is the median of the last tenth of the log: recent enough to be the "
    "end, long enough that one noisy batch does not decide it. 'Then', at the eval minimum, is "
    "the median of as many points, those logged nearest its step.")
_TRAIN_END_MAX = Threshold(5, "points", "At most 5 points, so on a long log 'now' stays the end "
                           "of training and not its last tenth.")
_CLIMB = {"min_after_floor": _AFTER, "end_points": _END, "min_gap_se": _GAP_SE,
          "min_giveback": _GIVEBACK, "min_rise": _RISE, "never_back": _NEVER_BACK}

OVERFIT = rule(
    id="TP-OVERFIT", level=Level.WARN, group=G,
    title="Eval loss climbs while train loss falls (overfitting).",
    evidence="eval loss {eval_end} at the end vs its min {eval_min} at step {eval_min_step} "
    "({ratio:.2f}x > {limit_ratio}); train loss {train_then} -> {train_end} meanwhile{memorised}{corroboration}",
    summary="Held-out loss rose well above its own minimum while the training loss kept falling, or "
    "sat far below it (a training set memorised early).",
    why="The model is memorising the training set; the checkpoint nearest the eval minimum "
    "generalises better than the last one.",
    fix="Keep the checkpoint at the eval minimum (load_best_model_at_end), add data or "
    "regularisation, or train fewer epochs.",
    thresholds={
        "ratio": Threshold(1.2, "x eval min", "Eval noise between evaluations of a fixed set "
                           "is a few percent; 20 % is a trend."),
        "min_points": Threshold(4, "eval points", "A minimum and a climb need several evaluations."),
        "train_end_share": _TRAIN_END_SHARE,
        "train_end_max": _TRAIN_END_MAX,
        "memorised": _MEMORISED,
    },
    fires=Example({"loss": [1.4, 1.0, 0.6, 0.3, 0.1, 0.05], "eval_loss": [1.4, 1.3, 1.6, 2.0, 2.6, 3.1]}),
    passes=Example({"loss": [1.4, 1.0, 0.8, 0.7, 0.65, 0.6], "eval_loss": [1.5, 1.3, 1.2, 1.15, 1.12, 1.1]}),
    limits="Eval loss rising while an accuracy-like metric still improves (a classifier growing "
    "over-confident) is still reported: the metric corroborates, it does not overrule. A climb "
    "under the ratio is not reported even when it is many noise units: a run trained on "
    "shuffled labels (examples/gallery*/bad_labels) has an eval loss that rises 7-13 % from "
    "its first evaluation, tens of noise units, while the train loss falls, and a loss curve "
    "alone cannot tell that from mild overfitting by its size; that its eval loss never got "
    "below its first evaluation is TP-EVAL-NEVER-BETTER's finding (compare against a baseline "
    "for the rest).",
)

EVAL_DIVERGE = rule(
    id="TP-EVAL-DIVERGE", level=Level.FAIL, group=G,
    title="Eval loss climbed back over its own gain while the train loss did not fall.",
    evidence="eval loss {start} at step {start_step} -> best {floor} at step {floor_step} -> "
    "{end} at the end (median of the last {k}): {gave} (>= {limit_min_giveback:.0%}), "
    "{gap_se:.1f} standard errors of its own noise ({sigma:.1%} per "
    "evaluation; > {limit_min_gap_se}), {rise:.0%} above the best; train loss {train}{corroboration}{seen}",
    summary="The held-out loss ended well above its best evaluation - by a large share of what it "
    "had gained, or above where it started - measured in its own noise, with the train loss "
    "not falling meanwhile (or not logged).",
    why="When both curves get worse the model is being damaged, not memorising: a learning rate "
    "too high for fine-tuning (a Whisper fine-tune at 3e-3: train 1.24 -> 2.16 -> 1.79, eval "
    "2.55 -> 3.1-4.5). The checkpoint at the eval minimum is the one worth keeping. On a loss "
    "near 0.2 a ratio to the best is the wrong unit - 0.219 -> 0.40 is 1.8x, a small absolute "
    "move and a huge one against the curve's own gain and noise - so this rule measures "
    "against those, not a fixed ratio.",
    fix="Keep the checkpoint at the eval minimum (load_best_model_at_end); lower the learning "
    "rate (fine-tunes: 1e-5 to 1e-4) or lengthen warm-up, then train again.",
    thresholds={"min_points": _MIN_POINTS, **_CLIMB, "memorised": _MEMORISED},
    fires=Example({"loss": [1.24, 1.9, 2.16, 2.0, 1.9, 1.85, 1.8, 1.79],
                   "eval_loss": [2.55, 2.6, 3.1, 3.6, 4.5, 4.0, 3.9, 4.1]}),
    passes=Example({"loss": [1.4, 1.2, 1.1, 1.0, 0.95, 0.9, 0.88, 0.86],
                    "eval_loss": [1.5, 1.3, 1.2, 1.15, 1.12, 1.1, 1.11, 1.1]}),
    limits="Judged from the first evaluation, warm-up included (damage done while the LR warms "
    "up is the commonest way a fine-tune's held-out loss ends above where it started, so the "
    "progress gate, TP-TOO-EARLY, does not hold this rule back), and again from the first "
    "evaluation after warm-up (schedule.py), so a drop made during warm-up does not hide a climb "
    "that gives back what the full-rate phase gained. A positive eval loss is required. When "
    "the train loss kept falling past the eval minimum, or ends under a quarter of the eval "
    "loss's best, the climb is TP-OVERFIT's (WARN). Corroborating metrics are reported in the "
    "evidence; they never make or unmake the finding.",
)

# Metrics beside the eval loss and which way is better: they corroborate, never decide.
# `reward` is read once a reader maps it (rules/rl.py's canonical column on main).
CORROBORATING = (("eval_wer", -1.0), ("eval_accuracy", 1.0), ("reward", 1.0))


class Climb(NamedTuple):
    """How the eval loss climbed back from its best evaluation (steps are the log's)."""

    start: float
    start_step: float
    floor: float
    floor_step: float
    end: float  # median of the last k evaluations after the best
    k: int
    sigma: float  # the eval curve's own noise per evaluation, log space
    gap_se: float  # log(end / floor) in standard errors of that noise
    giveback: float  # log(end / floor) over log(start / floor); inf when it never dropped
    rise: float  # end / floor - 1
    fires: bool  # the climb test, the train loss aside


def measure_climb(e: Series) -> Climb | None:
    """The climb-back test on a positive finite eval loss; None when its best evaluation
    has fewer than min_after_floor evaluations after it (nothing has climbed back yet)."""
    i = int(np.argmin(e.values))
    after = len(e) - 1 - i
    if after < _AFTER.value:
        return None
    k = min(int(_END.value), after)
    start, floor, end = float(e.values[0]), float(e.values[i]), float(stats.median(e.values[-k:]))
    sigma = eval_noise(e.values)
    up = float(np.log(end / floor))
    se = sigma * np.sqrt(1.0 + stats.MEDIAN_SE**2 / k)
    gap_se = up / se if se > 0 else (np.inf if up > 0 else 0.0)
    drop = float(np.log(start / floor))
    giveback = up / drop if drop > 0 else (np.inf if up > 0 else 0.0)
    fires = gap_se > _GAP_SE.value and giveback >= _GIVEBACK.value and end / floor - 1.0 >= _RISE.value
    # Worse than it started, by count rather than by noise: a damaged curve swings, which
    # inflates its own noise estimate, but it never comes back to its first evaluation.
    later = e.values[1:]
    fires = fires or bool(i == 0 and later.size >= _NEVER_BACK.value
                          and np.all(later >= start * (1.0 + _RISE.value)))
    return Climb(start, float(e.steps[0]), floor, float(e.steps[i]), end, k, sigma, gap_se,
                 giveback, end / floor - 1.0, bool(fires))


def eval_noise(values: np.ndarray) -> float:
    """An eval curve's noise per evaluation in log space, at the scale of the end's median
    (up to end_points evaluations): `stats.log_noise_wander`. TP-EVAL-DIVERGE and
    TP-EVAL-NEVER-BETTER both measure an end against a single evaluation in it."""
    return stats.log_noise_wander(values, int(_END.value))


def train_then_and_now(t: Series, step: float) -> tuple[float, float]:
    """The finite train loss at `step` (an eval minimum) and at the end: "the train loss
    kept falling" means now < then. Both are medians of the same k points - "then" the k
    logged nearest the step - so one noisy batch decides neither: a single point at the step
    let a halved log of the same run swap which side of the end it fell (public run
    byerenozer, whose train loss rises 0.12 -> 0.31 and then sits at 0.17-0.18)."""
    k = max(1, min(int(_TRAIN_END_MAX.value), int(len(t) * _TRAIN_END_SHARE.value)))
    near = np.argsort(np.abs(t.steps - step), kind="stable")[:k]
    return stats.robust_median(t.values[near]), stats.robust_median(t.values[-k:])


def memorising(then: float, now: float, eval_best: float) -> str | None:
    """Why a climbing eval loss beside this train loss is memorisation (TP-OVERFIT's), or
    None when it is not: the train loss kept falling past the eval minimum, or it sat far
    below the best the model ever did on held-out data - at that minimum or at the end - when
    saturated near 0 it cannot fall, and a median of a few points there is as noisy as the
    points (a train loss that then climbs to the eval's level is TP-DIVERGE's on the train
    curve)."""
    if now < then:
        return ""
    low = min(then, now)
    if low < _MEMORISED.value * eval_best:
        at = "at the eval minimum" if low == then else "at the end"
        return (f", {low:.4g} {at} under {_MEMORISED.value:.0%} of the best eval loss: the training set "
                "is fit far better than the model ever generalised")
    return None


def train_curve(run: Run) -> Series | None:
    tr = run.get("loss")
    t = tr.finite_only() if tr is not None else None
    return t if t is not None and len(t) else None


def corroboration(run: Run, floor_step: float) -> str:
    """What the metrics beside the eval loss say between the eval floor and the end."""
    said = []
    for name, better in CORROBORATING:
        s = run.get(name)
        f = s.finite_only() if s is not None else None
        if f is None or len(f) < 2:
            continue
        then = float(f.values[min(np.searchsorted(f.steps, floor_step), len(f) - 1)])
        now = float(f.values[-1])
        word = "also worse" if (now - then) * better < 0 else "not worse"
        said.append(f"{name} {then:.4g} -> {now:.4g} ({word})")
    return "; " + ", ".join(said) if said else ""


def _from(e: Series, start: float | None) -> Series:
    if start is None:
        return e
    keep = e.steps >= start
    return Series(e.name, e.steps[keep], e.values[keep])


def eval_curve(run: Run, minimum: int) -> Series | Skip:
    ev = run.get("eval_loss")
    if ev is None:
        return Skip(SkipKind.NO_DATA, "no eval_loss in the log - this run has no generalisation signal")
    e = ev.finite_only()
    if len(e) < minimum:
        return Skip(SkipKind.TOO_FEW, f"{len(e)} eval points, needs {minimum}")
    if e.values.min() <= 0:
        return Skip(SkipKind.DEGENERATE, "eval loss is not positive")
    return e


@check("overfit", OVERFIT, loss_curve=True)
def eval_loss_climbing(run: Run) -> list[Finding] | Skip:
    e = eval_curve(run, int(OVERFIT.t("min_points")))
    if isinstance(e, Skip):
        return e
    t = train_curve(run)
    if t is None:
        return Skip(SkipKind.NO_DATA, "no train loss to compare the eval curve with")
    i = int(np.argmin(e.values))
    e_min, e_end = float(e.values[i]), float(e.values[-1])
    then, train_end = train_then_and_now(t, float(e.steps[i]))
    ratio = e_end / e_min
    why = memorising(then, train_end, e_min)
    if ratio <= OVERFIT.t("ratio") or why is None:
        return []  # a train loss that did not keep falling is TP-EVAL-DIVERGE's, if anything
    return [OVERFIT.finding(Location(run.path, float(e.steps[i])), eval_end=e_end, eval_min=e_min,
                            eval_min_step=float(e.steps[i]), ratio=ratio,
                            train_then=then, train_end=train_end, memorised=why,
                            corroboration=corroboration(run, float(e.steps[i])))]


@check("eval-curve", EVAL_DIVERGE, loss_curve=True)
def eval_loss_worse(run: Run) -> list[Finding] | Skip:
    e = eval_curve(run, int(EVAL_DIVERGE.t("min_points")))
    if isinstance(e, Skip):
        return e
    # Judged from the first evaluation, warm-up included, and without waiting for the
    # progress gate: this is a claim that the model got worse, not that it failed to get
    # better, and a learning rate that wrecks a fine-tune does it while it warms up (the
    # first evaluation is the only witness of the model before the damage).
    # It is also judged from the first evaluation at full LR, so a drop made while the LR
    # warmed up does not hide a climb that gives back what the full-rate phase gained.
    gate = progress_gate(run, e)
    c = measure_climb(e)
    after = _from(e, gate.start)
    if (c is None or not c.fires) and len(after) >= EVAL_DIVERGE.t("min_points") and len(after) < len(e):
        c = measure_climb(after)
    if c is None or not c.fires:
        return []
    t = train_curve(run)
    if t is None:
        train = "not logged"
    else:
        then, now = train_then_and_now(t, c.floor_step)
        if memorising(then, now, c.floor) is not None:
            return []  # memorising, not damage: TP-OVERFIT's
        train = f"{then:.4g} at the best -> {now:.4g} now (not falling)"
    return [EVAL_DIVERGE.finding(
        Location(run.path, c.floor_step), start=c.start, start_step=c.start_step, floor=c.floor,
        floor_step=c.floor_step, end=c.end, k=c.k, giveback=c.giveback, gap_se=c.gap_se,
        sigma=c.sigma, rise=c.rise, train=train, gave=_gave(c), corroboration=corroboration(run, c.floor_step),
        seen=seen_phrase(gate))]


def _gave(c: Climb) -> str:
    if np.isfinite(c.giveback):
        return f"gave back {c.giveback:.0%} of its own drop"
    return "never below its first evaluation: worse than it started"
