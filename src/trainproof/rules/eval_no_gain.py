"""Single-run rule on an eval loss that never beat its first evaluation while the train loss
fell (TP-EVAL-NEVER-BETTER, WARN). The first evaluation is the model before (or barely
after) training touched it; an eval curve whose best is not materially below it, and whose
end sits well above it, says the training moved the model away from the held-out data from
the start: it never generalised (a model trained on another distribution than it is
evaluated on, labels that carry no signal, an LM too small or a learning rate too high for
its data). TP-OVERFIT reads a climb as a ratio to the eval minimum (20 %), which
under-reads a rise on a high loss (0.94 nats on 9.7 is 10 %, a perplexity 2.6x); this rule
reads the end against the start, in the curve's own noise and a declared share. When
TP-OVERFIT fires it owns the run; when the train loss did not fall, TP-EVAL-DIVERGE judges
it. Declared once here; the judge below is the only code that decides whether it fires."""

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
    title="The eval loss never beat its first evaluation while the train loss fell - it ended "
    "well above it, or the train loss fell tenfold: the model never generalised.",
    evidence="eval loss {start:.4g} at step {start_step:g} (the first of {n} evaluations), best "
    "{floor:.4g} at step {floor_step:g} ({gain:.1%} below it; <= {limit_max_gain:.0%}), "
    "{end:.4g} at the end (median of the last {k}): {rise:+.1%} against the first evaluation, "
    "{rise_se:.1f} standard errors of its own noise ({sigma:.1%} per evaluation); train loss "
    "{train_then:.4g} -> {train_now:.4g} ({train_fall:.0%} lower); {arm}{corroboration}",
    summary="Of at least five evaluations, none is more than 2 % below the first, while the train "
    "loss fell over the same steps: by at least 10 % with the last evaluations at least 5 % and "
    "3 standard errors of the eval curve's own noise above the first, or by 90 % (tenfold) "
    "wherever they ended.",
    why="Every ordinary run's held-out loss falls below where it started before anything else "
    "happens: the first steps of training fit what the train and eval data share. Overfitting "
    "comes after that, as a climb from a minimum below the start. A curve that never gets "
    "below its first evaluation while the train loss falls has fitted nothing the eval data "
    "share with the training data: the eval set is another distribution, the labels carry no "
    "signal (the galleries' shuffled-label runs: eval 7-12 % above its start, train down "
    "13-25 %), or the model is too small or its learning rate too high to learn more than "
    "the train set's surface. A ratio to the eval minimum under-reads this on a high loss: "
    "fresh3's medimind LM, eval 9.76 -> 9.705 -> 10.4-10.7, is 10 % - 0.94 nats, perplexity "
    "x2.6.",
    fix="Evaluate one training batch through the eval path and compare its loss with the "
    "train loss; check that the eval set is drawn from the same distribution as the training "
    "data and that the labels line up with their inputs; keep the checkpoint of the first "
    "evaluation if nothing later beats it.",
    thresholds={
        "min_points": Threshold(5, "evaluations",
                                "A start, a best and an end of three, and second differences to "
                                "measure the curve's noise from, need five."),
        "max_gain": Threshold(0.02, "fraction of the first evaluation",
                              "Not materially below it: 2 % is within what an eval curve wobbles "
                              "around a level (a checkpoint caught a little better), far below "
                              "what the first steps of any run that learned take off its held-out "
                              "loss."),
        "min_rise": Threshold(0.05, "fraction of the first evaluation",
                              "TP-LOSS-ROSE's band: on a very smooth eval curve a rise of a few "
                              "parts in a thousand can be many noise units and mean nothing."),
        "min_rise_se": Threshold(3.0, "standard errors",
                                 "log(end / first) against the eval curve's own noise "
                                 "(evalcurve.eval_noise: second differences at lags 1 to 3, the "
                                 "scale of the end, a median of up to three evaluations): "
                                 "TP-EVAL-DIVERGE's bar and noise."),
        "min_train_fall": Threshold(0.10, "fraction of the train loss at the first evaluation",
                                    "The train loss fell substantially over the steps the eval "
                                    "curve covers (its last tenth, at most five points, against "
                                    "the point at the first evaluation): the model was learning "
                                    "something, only not what the eval measures. A flat train "
                                    "loss is TP-DEAD-RUN's; a rising one TP-EVAL-DIVERGE's."),
        "tenfold_fall": Threshold(0.90, "fraction of the train loss at the first evaluation",
                                  "Without the climb: a model that fits its training data ten "
                                  "times better than when it was first evaluated, and not 2 % of "
                                  "it reaches held-out data, never generalised, wherever its eval "
                                  "loss ended. Overfitting that large moves the eval loss up "
                                  "(TP-OVERFIT, or the first arm); an eval loss that neither falls "
                                  "nor climbs beside it does not respond to what the model learns "
                                  "- inputs the eval path prepares differently (a missing "
                                  "rescale), labels that do not match, another distribution "
                                  "(fresh14's abhishek07-web: train 1.14 -> 0.028, val 1.600 -> "
                                  "1.584, ln 5 = 1.609, val accuracy 1/5). On the public runs and "
                                  "the galleries no other run meets this arm that the first arm or "
                                  "TP-OVERFIT does not already report."),
    },
    fires=Example({"loss": [9.76, 9.5, 9.1, 8.7, 8.3, 8.0, 7.8, 7.6, 7.5, 7.4],
                   "eval_loss": [9.76, 9.705, 9.86, 9.97, 10.09, 10.18, 10.4, 10.6, 10.65, 10.64]},
                  note="an LM whose eval loss never got below its start"),
    passes=Example({"loss": [9.76, 9.5, 9.1, 8.7, 8.3, 8.0, 7.8, 7.6, 7.5, 7.4],
                    "eval_loss": [9.76, 9.3, 9.0, 8.8, 8.7, 8.75, 8.8, 8.9, 8.95, 9.0]},
                   note="the eval loss fell first, then climbed back a little: overfitting, TP-OVERFIT's to weigh"),
    limits="Judged from the first evaluation the log holds: a log that begins after the eval "
    "loss has already fallen shows its best at the start only if nothing after it improved. "
    "An eval loss that is not positive, or fewer than five finite evaluations, is not judged; "
    "a run TP-OVERFIT already reports is left to it. Corroborating metrics (eval accuracy, "
    "WER) are shown, never decide.",
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
    sigma = ec.eval_noise(e.values)
    se = sigma * np.sqrt(1.0 + stats.MEDIAN_SE**2 / k)
    rise_se = float(np.log(end / start) / se) if se > 0 else float(np.inf)
    then, now = ec.train_then_and_now(t, float(e.steps[0]))
    fall = 1.0 - now / then if then > 0 else 0.0
    if rise >= r.t("min_rise") and rise_se >= r.t("min_rise_se") and fall >= r.t("min_train_fall"):
        arm = (f"ended {r.t('min_rise'):.0%} and {r.t('min_rise_se'):g} standard errors above its first "
               f"evaluation while the train loss fell {r.t('min_train_fall'):.0%} or more")
    elif fall >= r.t("tenfold_fall"):
        arm = f"the train loss fell {r.t('tenfold_fall'):.0%} or more (tenfold) while the eval loss never got better"
    else:
        return []
    overfit = ec.eval_loss_climbing(run)
    if not isinstance(overfit, Skip) and overfit:
        return Skip(SkipKind.COVERED, "TP-OVERFIT reports the climb")
    return [r.finding(Location(run.path, float(e.steps[0])), start=start, start_step=float(e.steps[0]),
                      n=len(e), floor=floor, floor_step=float(e.steps[i]), gain=gain, end=end, k=k, rise=rise,
                      rise_se=rise_se, sigma=sigma, train_then=then, train_now=now, train_fall=fall, arm=arm,
                      corroboration=ec.corroboration(run, float(e.steps[0])))]
