"""TP-EVAL-NAN-TRANSIENT: a non-finite eval loss that came back, beside a training loss that
never went non-finite - the evaluation's arithmetic, not poisoned weights. Its check follows
TP-NAN's (rules/gradients.py), which asks `came_back` before calling an eval loss TP-NAN's."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Run, Series
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, where  # and registers the nan check this one follows

EVAL_NAN_TRANSIENT = rule(
    id="TP-EVAL-NAN-TRANSIENT", level=Level.WARN, group=G,
    title="The eval loss was NaN or Inf at some evaluations, finite again after; the training "
    "loss never was.",
    evidence="{count} non-finite eval_loss value(s) of {n}, first at step {step} ({value}), last at "
    "step {last}; the eval loss is finite from step {back} to the end ({tail} evaluation(s)) and all "
    "{n_train} training loss values are finite",
    summary="Evaluations that computed a non-finite loss while the model itself stayed finite: the "
    "evaluation's arithmetic, not the weights.",
    why="Weights that go NaN or Inf do not come back: every later forward pass and update carries "
    "the poison. A training loss finite at every logged point and an eval loss finite again "
    "afterwards put the non-finite values in the evaluation itself - an empty set of matched "
    "predictions in an early detector epoch, a division by a zero count, a log of a zero "
    "probability in a metric-style loss. The run is not broken, but a best-checkpoint or "
    "early-stopping choice made on that metric can be.",
    fix="Check the evaluation loop for empty batches or zero denominators at those steps; make "
    "early stopping and best-checkpoint selection ignore non-finite values.",
    thresholds={"min_points": Threshold(1, "points", "One non-finite evaluation that came back is the finding.")},
    fires=Example({"loss": [2.0, 1.8, 1.7, 1.6], "eval_loss": [float("nan"), 1.9, 1.8, 1.75]}),
    passes=Example({"loss": [2.0, 1.8, 1.7, 1.6], "eval_loss": [2.1, 1.9, 1.8, 1.75]}),
    limits="Needs a logged training loss, finite at every point; without one, or with a "
    "non-finite one anywhere, a non-finite eval loss is TP-NAN's. An eval loss whose last "
    "value is non-finite is TP-NAN's too: nothing after it shows the model recovered.",
)


def came_back(run: Run, s: Series) -> Finding | None:
    """TP-EVAL-NAN-TRANSIENT for an eval loss `s` whose non-finite values were followed by
    finite ones to the end, beside a training loss finite throughout; None when TP-NAN owns it."""
    train = run.get("loss")
    if s.name != "eval_loss" or train is None or len(train) == 0 or not stats.all_finite(train.values) \
            or not bool(s.finite[-1]):
        return None
    bad = np.flatnonzero(~s.finite)
    back = int(bad[-1]) + 1
    return EVAL_NAN_TRANSIENT.finding(where(run, s.steps[bad[0]]), count=int(bad.size), n=len(s),
                                   step=float(s.steps[bad[0]]), value=float(s.values[bad[0]]),
                                   last=float(s.steps[bad[-1]]), back=float(s.steps[back]),
                                   tail=len(s) - back, n_train=len(train))


@check("eval-nan", EVAL_NAN_TRANSIENT, after="nan")
def eval_nan_transient(run: Run) -> list[Finding]:
    s = run.get("eval_loss")
    if s is None or stats.all_finite(s.values):
        return []
    return [f] if (f := came_back(run, s)) is not None else []

