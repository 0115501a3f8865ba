"""The eval loss as a curve in its own right: TP-EVAL-DIVERGE, the held-out loss climbing
back over its own gain, beyond its own noise, while the train loss is not falling (a
learning rate too high makes both curves worse; TP-OVERFIT owns the case where the train
loss keeps falling). Metrics logged beside the eval loss (eval_wer, eval_accuracy,
reward) are read to corroborate a finding, never to make one. Declared here with its
thresholds; the judge below is the only code that decides whether it fires. An eval-only
log (no train loss) is judged here, which is what makes it more than NOT-CHECKED."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import not_yet, progress_gate
from trainproof.rules.run import G, seen_phrase, train_then_and_now

EVAL_DIVERGE = rule(
    id="TP-EVAL-DIVERGE", level=Level.FAIL, group=G,
    title="Eval loss climbed back over its own gain while the train loss did not fall.",
    evidence="eval loss {start} at step {start_step} -> best {floor} at step {floor_step} -> "
    "{end} at the end (median of the last {k}): gave back {giveback:.0%} of its own drop "
    "(>= {limit_min_giveback:.0%}), {gap_se:.1f} standard errors of its own noise ({sigma:.1%} per "
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
    thresholds={
        "min_points": Threshold(5, "eval points", "Evaluations are few: a start, a best and a "
                                "held end need at least five."),
        "min_after_floor": Threshold(
            2, "eval points after the best",
            "Two evaluations after the best one, both counted in the end: one bad evaluation can "
            "be a checkpoint caught mid-spike; two in a row on a fixed eval set are a trend."),
        "end_points": Threshold(3, "eval points", "The end is the median of the last (up to) "
                                "three evaluations after the best: a majority of them must be high."),
        "min_gap_se": Threshold(
            3.0, "standard errors",
            "log(end / best) against the eval curve's own noise in log space, measured from "
            "second differences (stats.log_noise_detrended): evaluations are sparse, so the "
            "trend between two of them is as large as their noise and first differences would "
            "count it as noise. TP-LOSS-ROSE's bar."),
        "min_giveback": Threshold(
            0.5, "of the curve's own drop (log space)",
            "Relative to what the curve gained: giving back half of the drop from the first "
            "evaluation to the best is no longer a wobble around a plateau; a curve that never "
            "dropped gives back everything it rises."),
        "min_rise": Threshold(
            0.05, "fraction of the best eval loss",
            "TP-LOSS-ROSE's band, mirrored: on a very smooth eval curve a rise of a few parts in "
            "a thousand can be many noise units and still mean nothing."),
    },
    fires=Example({"loss": [1.24, 1.9, 2.16, 2.0, 1.9, 1.85, 1.8, 1.79],
                   "eval_loss": [2.55, 2.6, 3.1, 3.6, 4.5, 4.0, 3.9, 4.1]}),
    passes=Example({"loss": [1.4, 1.2, 1.1, 1.0, 0.95, 0.9, 0.88, 0.86],
                    "eval_loss": [1.5, 1.3, 1.2, 1.15, 1.12, 1.1, 1.11, 1.1]}),
    limits="A positive eval loss is required. When the train loss kept falling past the eval "
    "minimum the climb is TP-OVERFIT's (WARN). Corroborating metrics are reported in the "
    "evidence; they never make or unmake the finding.",
)

# Metrics beside the eval loss and which way is better: they corroborate, never decide.
CORROBORATING = (("eval_wer", -1.0), ("eval_accuracy", 1.0), ("reward", 1.0))


def _end(e: Series, i: int) -> tuple[float, int]:
    k = min(int(EVAL_DIVERGE.t("end_points")), len(e) - 1 - i)
    return float(np.median(e.values[-k:])), k


def _train_text(run: Run, floor_step: float) -> tuple[bool, str]:
    """(the train loss kept falling past the eval floor, how evidence says it)."""
    tr = run.get("loss")
    t = tr.finite_only() if tr is not None else None
    if t is None or not len(t):
        return False, "not logged"
    then, now = train_then_and_now(t, floor_step)
    return now < then, f"{then:.4g} at the best -> {now:.4g} now (not falling)"


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
        verdict = "also worse" if (now - then) * better < 0 else "not worse"
        said.append(f"{name} {then:.4g} -> {now:.4g} ({verdict})")
    return "; " + ", ".join(said) if said else ""


@check("eval-curve", EVAL_DIVERGE, loss_curve=True)
def eval_loss_worse(run: Run) -> list[Finding] | Skip:
    ev = run.get("eval_loss")
    if ev is None:
        return Skip(SkipKind.NO_DATA, "no eval_loss in the log")
    e = ev.finite_only()
    if len(e) < EVAL_DIVERGE.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(e)} eval points, needs {int(EVAL_DIVERGE.t('min_points'))}")
    if e.values.min() <= 0:
        return Skip(SkipKind.DEGENERATE, "eval loss is not positive")
    gate = progress_gate(run, e)
    if not gate.open:
        return not_yet(gate)
    i = int(np.argmin(e.values))
    if len(e) - 1 - i < EVAL_DIVERGE.t("min_after_floor"):
        return []  # the best evaluation is (nearly) the last: nothing has climbed back yet
    start, floor = float(e.values[0]), float(e.values[i])
    end, k = _end(e, i)
    sigma = stats.log_noise_detrended(e.values)
    rise = float(np.log(end / floor))
    se = sigma * np.sqrt(1.0 + stats.MEDIAN_SE**2 / k)
    gap_se = rise / se if se > 0 else (np.inf if rise > 0 else 0.0)
    drop = float(np.log(start / floor))
    giveback = rise / drop if drop > 0 else np.inf
    if not (gap_se > EVAL_DIVERGE.t("min_gap_se") and giveback >= EVAL_DIVERGE.t("min_giveback")
            and end / floor - 1.0 >= EVAL_DIVERGE.t("min_rise")):
        return []
    falling, train = _train_text(run, float(e.steps[i]))
    if falling:
        return []  # the train loss kept falling: memorising, TP-OVERFIT's
    return [EVAL_DIVERGE.finding(
        Location(run.path, float(e.steps[i])), start=start, start_step=float(e.steps[0]), floor=floor,
        floor_step=float(e.steps[i]), end=end, k=k, giveback=giveback, gap_se=gap_se, sigma=sigma,
        rise=end / floor - 1.0, train=train, corroboration=corroboration(run, float(e.steps[i])),
        seen=seen_phrase(gate))]
