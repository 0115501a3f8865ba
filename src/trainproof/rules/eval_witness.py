"""The eval loss as a witness for the end-vs-start rules (TP-DEAD-RUN, TP-LOSS-ROSE).

The train loss of a short, noisy log cannot always tell a dead run from one that learned
10 %: its start is one logged point and its noise is the batch's. The eval loss has no
batch noise - the same held-out set, evaluated again - so it says two things the train
loss cannot, and says them the same way however often the train loss was logged:

- identical at every evaluation: the weights never changed (lr = 0, frozen parameters, an
  optimizer that never steps); whatever the train loss did, it was its data;
- fallen beyond its own noise, on a run whose train loss never climbed above its first
  point (or that ended below the train loss's first point, whatever it climbed): the run
  learned, even when the train log is too noisy to show it.

Measures only; the thresholds are declared here and listed by TP-DEAD-RUN, whose judge
(rules/rise.py) decides what a witness changes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Run, Series
from trainproof.rules.base import Threshold

MIN_EVALS = Threshold(
    4, "eval points",
    "The eval witness needs four evaluations: a curve's own noise is measured from second "
    "differences (stats.log_noise_detrended, as TP-OVERFIT's and TP-EVAL-DIVERGE's is), which "
    "needs four points, and four identical evaluations are not a coincidence of rounding.")
FROZEN_REL = Threshold(
    1e-6, "of the median eval loss",
    "Frozen: every evaluation within this share of the median. The same weights on the same "
    "held-out set give the same loss (both galleries' lr=0 runs repeat it to the last bit at "
    "all 10-20 evaluations); a model that learns at all moves its eval loss by parts in a "
    "thousand between evaluations (the healthy gallery runs: >= 3.5 % over the run).")
EVAL_END = Threshold(
    3, "eval points",
    "The eval end is the median of the last three evaluations, as the eval-curve rules' end.")
FELL_SE = Threshold(
    3.0, "standard errors",
    "Learned: log(first eval / eval end) above this many standard errors of the eval curve's "
    "own noise (second differences; the first evaluation one point, the end a median). "
    "TP-LOSS-ROSE's and the eval-curve rules' bar. The healthy runs of both galleries sit at "
    ">= 5.1, the lr=0 runs are frozen, bad-labels and overfit eval losses rise.")
WRECK_SE = Threshold(
    3.0, "standard errors",
    "A falling eval loss speaks for the run only when the train loss never climbed above its "
    "first logged point by more than this many standard errors of its noise (one point against "
    "one point: sqrt 2 x the log's noise; for a steady fall of the train loss, rules/"
    "steady_fall.py, its highest block median against the start): a run wrecked in its first "
    "steps (lr x100 on a pretrained model) then learns back part of what it lost, and its eval "
    "loss falls from the wreck, not from the start (both galleries' lr x100 runs climb 6.7-13 "
    "standard errors; healthy runs <= 1.4; on block medians, the lr x100 logs whose train loss "
    "falls steadily climb >= 8, the fresh half's slow continued-training run 0.9). "
    "TP-LOSS-ROSE's bar.")

WRECK_WINDOW = Threshold(
    1 / 3, "of the log's positive points, from the first",
    "Where a wreck's climb is looked for. A wrecked start climbs first and is won back after, so "
    "its peak sits early however the log was cut or thinned (both galleries' lr x100 logs peak at "
    "their second to fourth point, in each perturbation of tests/test_invariance.py), while the "
    "highest of a hundred noisy points anywhere sits ~2.5 of its standard deviations up by chance "
    "alone: one batch at point 79 of 100 (fresh18's erlingdevold, 0.815 against a first point of "
    "0.204 at 30 % noise per point) is a spike, not a wreck. At least three points are read.")

RECOVERED = Threshold(
    0.10, "of the train loss's first point",
    "A climb of the train loss past witness_wreck_se stops the eval loss from speaking for the "
    "run - unless the eval loss ended this share below the train loss's first logged point: "
    "the final model then scores better on held-out data than the starting one did on its own "
    "training batches (a held-out loss is rarely below the train loss of the same model by "
    "more than dropout's few percent), so whatever the climb was, the run got past its start. "
    "TP-DEAD-RUN's clear band. Both galleries' lr x100 runs end their eval loss above their "
    "train loss's first point (gallery2: 5.38-5.46 against 5.27-5.79; gallery: 6.26-6.34 "
    "against 5.49-5.57): wrecked, never recovered. The fresh7 LSTM that raised it "
    "(dranovegor, cut three points short) ends its eval loss at a third of its train start.")

MIN_FALL = Threshold(
    0.02, "of the first evaluation",
    "Below TP-DEAD-RUN's min_improvement a learned witness clears the run only when the eval "
    "loss also fell by this share of its first evaluation: a FAIL must rest on evidence the "
    "run did not learn, and a held-out loss that fell this far beyond its noise is evidence "
    "it did. A frozen model moves its eval loss by < 1e-6 of its value (witness_frozen_rel); a "
    "near-dead run (an LR orders of magnitude too small) drifts smoothly by parts per thousand, "
    "which the noise test alone would call significant on a smooth eval curve, so the bar is a "
    "share, not a z: 2 %, several times that drift, and half the train-side band (the eval "
    "loss has no batch noise, so a fall of 2 % of it is not a chance draw). The slowly "
    "learning LoRA that raised it (fresh4 marthinsurya) fell 4.3 %.")

THRESHOLDS = {"witness_wreck_window": WRECK_WINDOW,
              "witness_min_evals": MIN_EVALS, "witness_min_fall": MIN_FALL, "witness_frozen_rel": FROZEN_REL,
              "witness_eval_end": EVAL_END, "witness_fell_se": FELL_SE, "witness_wreck_se": WRECK_SE,
              "witness_recovered": RECOVERED}


class Witness(NamedTuple):
    frozen: bool  # every evaluation identical: the weights never changed
    learned: bool  # the eval loss fell beyond its noise and the train loss shows no wreck
    n: int  # evaluations read
    first: float
    end: float
    z: float  # log(first / end) in standard errors of the eval curve's noise

    @property
    def fall(self) -> float:
        """The eval loss's fall as a share of its first evaluation."""
        return (self.first - self.end) / self.first if self.first > 0 else 0.0

    def says(self) -> str:
        """What a frozen witness adds to TP-DEAD-RUN's evidence (a learned one makes no
        finding: it only keeps TP-DEAD-RUN from firing)."""
        return (f"; the eval loss is {self.first:.6g} at all {self.n} evaluations: the weights "
                "never changed, so the train loss moved with its data alone")


def eval_witness(run: Run, train: Series, t: Callable[[str], float]) -> Witness | None:
    """What the eval loss says about whether the model changed and learned; None when the
    log has too few finite positive evaluations to say anything. `train` is the finite
    positive train loss the calling rule judges; `t` reads the thresholds above as the
    rule that lists them declares (configuration overrides included)."""
    ev = run.get("eval_loss")
    if ev is None:
        return None
    e = ev.finite_only()
    if len(e) < t("witness_min_evals") or e.values.min() <= 0:
        return None
    v = e.values
    first = float(v[0])
    mid = float(stats.median(v))
    if float(np.ptp(v)) <= t("witness_frozen_rel") * mid:
        return Witness(True, False, len(e), first, first, 0.0)
    k = min(int(t("witness_eval_end")), v.size)
    end = float(stats.median(v[-k:]))
    sigma = stats.log_noise_detrended(v)
    se = sigma * np.sqrt(1.0 + stats.MEDIAN_SE**2 / k)
    gain = float(np.log(first / end))
    z = gain / se if se > 0 else (np.inf if gain > 0 else 0.0)
    past_start = train.values.size > 0 and end < (1.0 - t("witness_recovered")) * float(train.values[0])
    learned = z > t("witness_fell_se") and (past_start or not _climbed(train, t))
    return Witness(False, bool(learned), len(e), first, end, float(z))


def wrecked(train: Series, t: Callable[[str], float]) -> bool:
    """Did the positive train loss climb above its first point by more than witness_wreck_se
    (a start wrecked in the first steps, whose later fall is from the wreck)?"""
    return _climbed(train, t)


def _climbed(train: Series, t: Callable[[str], float]) -> bool:
    """Did the train loss climb above its first point by more than witness_wreck_se of its
    noise within witness_wreck_window of the log (a wreck)? Read on its positive points: an
    exact 0 among them (a bounded loss, one perfect batch) says nothing of a climb."""
    x = train.values[train.values > 0]
    if x.size < 3 or train.values[0] <= 0:
        return False
    se = stats.log_noise(x) * np.sqrt(2.0)
    window = max(3, int(np.ceil(round(t("witness_wreck_window") * x.size, 9))))  # ceil(n / 3): 9 -> 3
    rise = float(np.log(x[:window].max() / x[0]))
    return rise > 0 and (se == 0 or rise / se > t("witness_wreck_se"))
