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


# Writers whose logged train loss is a plain mean over the epoch's batches, with nothing that
# drops or replaces a non-finite one: weights gone NaN show as a NaN train loss in the next
# row (Ultralytics' running mean of the batch loss items; Keras' epoch logs, which its own
# TerminateOnNaN reads). HF's Trainer is not one: logging_nan_inf_filter logs a NaN batch as
# the interval's average, so its train loss can stay finite after the weights went NaN.
UNFILTERED_TRAIN_LOSS = ("ultralytics", "keras")

EVAL_NAN_TO_END = rule(
    id="TP-EVAL-NAN-TO-END", level=Level.WARN, group=G,
    title="The eval loss is NaN or Inf to the end while the training loss, computed after it from "
    "the same weights, stays finite: the evaluation's arithmetic, not the model.",
    evidence="{count} non-finite eval_loss value(s) of {n}, from step {step} ({value}) to the last "
    "evaluation; all {n_train} training loss values are finite, {after} of them logged after the "
    "first evaluation of that stretch, by a writer that logs non-finite train losses as they are ({writer})",
    summary="An eval loss non-finite at every evaluation from some step to the end (often all of "
    "them), beside a train loss finite at every point, logged by a writer that does not filter "
    "non-finite train losses.",
    why="Weights that went NaN or Inf make every later forward pass non-finite. A train loss "
    "computed after a non-finite evaluation, from the very weights that were evaluated, and "
    "finite, says those weights were finite: the evaluation's own arithmetic produced the "
    "value - a validation loss never computed (YOLO runs whose val losses are NaN at all 140 "
    "or 200 epochs while mAP climbs to 0.46 or 0.83), an empty set, a division by zero. The "
    "model is not broken, but the eval loss is no use: best-checkpoint and early-stopping "
    "choices made on it are arbitrary.",
    fix="Find why the evaluation's loss is not finite (an empty or all-ignored eval batch, a "
    "loss reduced over zero elements, a mismatch between the eval targets and the loss); select "
    "checkpoints on a metric that is finite meanwhile.",
    thresholds={"min_points": Threshold(
        1, "train loss points",
        "At least one finite train loss logged after the first evaluation of the non-finite "
        "stretch that runs to the end: its weights were used again, and gave a finite loss.")},
    fires=Example({"loss": [2.0, 1.8, 1.7, 1.6, 1.5], "eval_loss": [float("nan")] * 5, "format": "ultralytics"},
                  note="an Ultralytics results.csv"),
    passes=Example({"loss": [2.0, 1.8, 1.7, 1.6, 1.5], "eval_loss": [2.1, 1.9, 1.8, 1.75, 1.7]}),
    limits="Only for the writers named in UNFILTERED_TRAIN_LOSS (Ultralytics' results.csv, Keras "
    "History); elsewhere - HF's Trainer filters non-finite train losses by default, a generic "
    "CSV says nothing of how its losses were reduced - such an eval loss is TP-NAN's (FAIL).",
)


def came_back(run: Run, s: Series) -> Finding | None:
    """The finding that owns an eval loss `s` with non-finite values beside a training loss
    finite throughout: TP-EVAL-NAN-TRANSIENT when finite ones follow to the end,
    TP-EVAL-NAN-TO-END when it is non-finite to the end but a writer that does not filter
    the train loss logged finite ones after it; None when TP-NAN owns it."""
    train = run.get("loss")
    if s.name != "eval_loss" or train is None or len(train) == 0 or not stats.all_finite(train.values):
        return None
    bad = np.flatnonzero(~s.finite)
    if not bool(s.finite[-1]):
        return _never_back(run, s, train, bad)
    back = int(bad[-1]) + 1
    return EVAL_NAN_TRANSIENT.finding(where(run, s.steps[bad[0]]), count=int(bad.size), n=len(s),
                                   step=float(s.steps[bad[0]]), value=float(s.values[bad[0]]),
                                   last=float(s.steps[bad[-1]]), back=float(s.steps[back]),
                                   tail=len(s) - back, n_train=len(train))


def _never_back(run: Run, s: Series, train: Series, bad: np.ndarray) -> Finding | None:
    if run.format not in UNFILTERED_TRAIN_LOSS:
        return None
    first_of_tail = int(np.flatnonzero(s.finite)[-1]) + 1 if s.finite.any() else 0
    after = int(np.count_nonzero(train.steps > s.steps[first_of_tail]))
    if after < EVAL_NAN_TO_END.t("min_points"):
        return None
    return EVAL_NAN_TO_END.finding(where(run, s.steps[first_of_tail]), count=int(bad.size), n=len(s),
                                   step=float(s.steps[first_of_tail]), value=float(s.values[first_of_tail]),
                                   n_train=len(train), after=after, writer=run.format)


@check("eval-nan", EVAL_NAN_TRANSIENT, EVAL_NAN_TO_END, after="nan")
def eval_nan_transient(run: Run) -> list[Finding]:
    s = run.get("eval_loss")
    if s is None or stats.all_finite(s.values):
        return []
    return [f] if (f := came_back(run, s)) is not None else []

