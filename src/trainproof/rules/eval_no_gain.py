"""Single-run rule on an eval loss that never beat its first evaluation while the train loss
fell (TP-EVAL-NEVER-BETTER, WARN). The first evaluation is the model before (or barely
after) training touched it, or - in a log that starts late - the model that had learned
what it could by then; an eval curve whose best is not materially below it while the train
loss keeps falling says that nothing the training did after it reached held-out data (a
model trained on another distribution than it is evaluated on, labels that carry no signal,
an LM too small or a learning rate too high for its data, or steps spent memorising).
Whether the eval loss then climbs or holds its level does not change that: TP-OVERFIT reads
a climb as a ratio to the eval minimum (20 %), which under-reads a rise on a high loss (0.94
nats on 9.7 is 10 %, a perplexity 2.6x) and never sees a held level. When TP-OVERFIT fires
it owns the run; when the train loss rose, TP-EVAL-DIVERGE and the dead-run rules
judge it; when the train loss did not fall at all, neither curve improved, which this rule
says too (a WARN beside their FAILs, alone where the train log is too short for them).
Declared once here; the judge below is the only code that decides whether it fires."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Skip, SkipKind
from trainproof.rules import eval_mismatch  # noqa: F401  (registers eval-mismatch, which this check follows)
from trainproof.rules import evalcurve as ec
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.run import G

EVAL_NEVER_BETTER = rule(
    id="TP-EVAL-NEVER-BETTER", level=Level.WARN, group=G,
    title="The eval loss never beat its first evaluation: what the model learned after it did "
    "not reach held-out data, or it learned nothing.",
    evidence="eval loss {start:.4g} at step {start_step:g} (the first of {n} evaluations), best "
    "{floor:.4g} at step {floor_step:g} ({gain:.1%} below it; <= {limit_max_gain:.0%}), "
    "{end:.4g} at the end (median of the last {k}): {rise:+.1%} against the first evaluation; "
    "train loss {train_then:.4g} -> {train_now:.4g} ({train_fall:.0%} lower): {arm}{corroboration}",
    summary="Of at least five evaluations, none is more than 2 % below the first and the last is "
    "not the best, while the train loss fell by at least 10 % over the same steps, or did not "
    "fall at all (under 5 %) - wherever the eval loss ended.",
    why="Every ordinary run's held-out loss falls below where it started before anything else "
    "happens: the first steps of training fit what the train and eval data share, and as long as "
    "the train loss keeps falling for that reason the eval loss follows it down. A curve that "
    "never gets below its first evaluation while the train loss falls has fitted nothing more "
    "that the eval data share with the training data: the eval set is another distribution, the "
    "labels carry no signal (the galleries' shuffled-label runs: eval 7-12 % above its start, "
    "train down 13-25 %), the model is too small or its learning rate too high to learn more "
    "than the train set's surface, or - in a log whose first evaluation comes after the model "
    "had already learned what it could - every step after it was spent on memorisation. Whether "
    "the eval loss then climbs (overfitting) or holds its level (fresh38's prithvi-bagul: val "
    "4.26 for 64 epochs while the train loss halves), the training after the first evaluation "
    "bought nothing on held-out data. When the train loss did not fall either, neither curve "
    "improved: the run learned nothing, the dead-run finding read from the held-out side, which "
    "matters where the train log is too short for TP-DEAD-RUN. A ratio to the eval minimum "
    "under-reads a climb on a high "
    "loss: fresh3's medimind LM, eval 9.76 -> 9.705 -> 10.4-10.7, is 10 % - 0.94 nats, "
    "perplexity x2.6.",
    fix="Evaluate one training batch through the eval path and compare its loss with the "
    "train loss; check that the eval set is drawn from the same distribution as the training "
    "data and that the labels line up with their inputs; keep the checkpoint of the first "
    "evaluation if nothing later beats it, and stop (or regularise) a run that has nothing left "
    "to learn from its data.",
    thresholds={
        "min_points": Threshold(5, "evaluations",
                                "A start, a best and an end, with two evaluations between them: "
                                "four intervals of training in which the eval loss could have "
                                "improved. Three identical-looking evaluations happen in healthy "
                                "runs (a fine-tune evaluated each epoch for three epochs)."),
        "max_gain": Threshold(0.02, "fraction of the first evaluation",
                              "Not materially below it: 2 % is within what an eval curve wobbles "
                              "around a level (a checkpoint caught a little better), far below "
                              "what the first steps of any run that learned take off its held-out "
                              "loss."),
        "min_train_fall": Threshold(0.10, "fraction of the train loss at the first evaluation",
                                    "The train loss fell substantially over the steps the eval "
                                    "curve covers (its last tenth, at most five points, against "
                                    "the median of five points at the first evaluation): the model "
                                    "was learning something, only not what the eval measures. A "
                                    "mean over a logging interval wobbles by a few percent; a "
                                    "tenth is a trend."),
        "flat_train_fall": Threshold(0.05, "fraction of the train loss at the first evaluation",
                                     "...or the train loss did not fall beyond a logging interval's "
                                     "wobble (TP-LOSS-ROSE's 5 % band): neither curve improved, "
                                     "which TP-DEAD-RUN and TP-EVAL-DIVERGE fail when they can judge "
                                     "it, and which a log too short for them (fresh47's njrun1804: "
                                     "7 train points, val 5.45 -> 6.31 never 0.4 % below its first; "
                                     "fresh16's deolinda1506: 6) would otherwise pass. Between the "
                                     "two bars a slow train fall beside an eval loss that may be "
                                     "following it inside the 2 % band is not judged (the design "
                                     "half's ansarill: eval 3.178 -> 3.117 falling smoothly, train "
                                     "-8 %)."),
    },
    fires=Example({"loss": [9.76, 9.5, 9.1, 8.7, 8.3, 8.0, 7.8, 7.6, 7.5, 7.4],
                   "eval_loss": [9.76, 9.705, 9.86, 9.97, 10.09, 10.18, 10.4, 10.6, 10.65, 10.64]},
                  note="an LM whose eval loss never got below its start"),
    passes=Example({"loss": [9.76, 9.5, 9.1, 8.7, 8.3, 8.0, 7.8, 7.6, 7.5, 7.4],
                    "eval_loss": [9.76, 9.3, 9.0, 8.8, 8.7, 8.75, 8.8, 8.9, 8.95, 9.0]},
                   note="the eval loss fell first, then climbed back a little: overfitting, TP-OVERFIT's to weigh"),
    limits="Judged from the first evaluation the log holds: a log that begins after the eval "
    "loss has already fallen shows its best at the start only if nothing after it improved, and "
    "then says so (a WARN, never a FAIL: the log cannot tell a model that learned all it could "
    "before its first evaluation from one that never generalised). An eval loss that is not "
    "positive, or fewer than five finite evaluations, is not judged; nor is one whose last "
    "evaluation is its best (still improving, however slowly); a run TP-OVERFIT already "
    "reports is left to it. Corroborating metrics (eval accuracy, WER) are shown, never decide.",
)


@check("eval-never-better", EVAL_NEVER_BETTER, after="eval-mismatch")
def eval_never_better(run: Run) -> list[Finding] | Skip:
    r = EVAL_NEVER_BETTER
    e = ec.eval_curve(run, int(r.t("min_points")))
    if isinstance(e, Skip):
        return e
    t = ec.train_curve(run)
    if t is None:
        return Skip(SkipKind.NO_DATA, "no train loss: whether the model learned anything is unknown")
    start, i = float(e.values[0]), int(np.argmin(e.values))
    floor = float(e.values[i])
    k = max(1, min(3, len(e) - 1 - i))  # the end: up to three evaluations after the best
    end = float(stats.median(e.values[-k:]))
    gain, rise = 1.0 - floor / start, end / start - 1.0
    if gain > r.t("max_gain"):
        return []
    if i == len(e) - 1 and floor < start:
        # its best is its last evaluation: still reaching new lows, however slowly, so the
        # training is still buying something on held-out data (gallery2's healthy seed 44:
        # 2.913 -> 2.962 -> 2.862, falling over its last six evaluations)
        return []
    then, now = ec.train_then_and_now(t, float(e.steps[0]))
    fall = 1.0 - now / then if then > 0 else 0.0
    if fall >= r.t("min_train_fall"):
        arm = "the train loss fell: what it learned did not reach held-out data"
    elif fall < r.t("flat_train_fall"):
        arm = "the train loss did not fall either: neither curve improved"
    else:  # a slow fall beside an eval loss that may be following it inside the 2 % band
        return []
    overfit = ec.eval_loss_climbing(run)
    if not isinstance(overfit, Skip) and overfit:
        return Skip(SkipKind.COVERED, "TP-OVERFIT reports the climb")
    return [r.finding(Location(run.path, float(e.steps[0])), start=start, start_step=float(e.steps[0]),
                      n=len(e), floor=floor, floor_step=float(e.steps[i]), gain=gain, end=end, k=k, rise=rise,
                      train_then=then, train_now=now, train_fall=fall, arm=arm,
                      corroboration=ec.corroboration(run, float(e.steps[0])))]
