"""A training loss that climbed far above its floor while the held-out loss improved
(TP-TRAIN-RISE-EVAL-FELL). TP-DIVERGE's FAIL says the run diverged: the weights got worse.
A divergence damages the model, so its eval loss, where one is logged after the floor, climbs
too. An eval loss that ended at or below its first evaluation after the train floor says the
weights got better meanwhile: the climb is in what the training batches were (their order,
a curriculum, an augmentation that ramps up), not damage - a WARN that says so. Judged by
TP-DIVERGE's check, on the runs it would fail; the rule is declared beside TP-DIVERGE in
rules/run.py, and this module reads the eval loss after the floor."""

from __future__ import annotations

from collections.abc import Callable

from trainproof.frozen import NamedTuple
from trainproof.model import Run
from trainproof.rules.base import Threshold

MIN_EVALS_AFTER = Threshold(
    2, "evaluations",
    "Evaluations after the training floor: a first and a last, so the eval loss's own "
    "direction over the climb can be read; one evaluation says nothing about a trend.")
MAX_END_OVER_BEST = Threshold(
    1.2, "x the eval loss's best",
    "...and the eval loss ends within TP-OVERFIT's ratio of its best evaluation: the model "
    "is as good on held-out data as it has been. Both are asked: an eval loss whose first "
    "evaluation after the floor is itself a collapse (16.9 against a best of 0.70) 'improves' "
    "from it while the model stays damaged (tests/test_train_rise.py holds the ratio equal "
    "to TP-OVERFIT's).")


class EvalAfterFloor(NamedTuple):
    first: float
    last: float
    n: int
    best: float


def eval_fell_after(run: Run, floor_step: float, t: Callable[[str], float]) -> EvalAfterFloor | None:
    """The eval loss's first and last finite evaluations after the training floor, and its best,
    when there are min_evals_after or more after the floor, the last is not above the first and
    ends within max_end_over_best of the best (`t` reads both as TP-TRAIN-RISE-EVAL-FELL declares
    them); None otherwise."""
    ev = run.get("eval_loss")
    if ev is None:
        return None
    ev = ev.finite_only()
    after = ev.values[ev.steps > floor_step]
    if after.size < t("min_evals_after") or after[-1] > after[0]:
        return None
    best = float(ev.values.min())
    if best <= 0 or after[-1] > t("max_end_over_best") * best:
        return None
    return EvalAfterFloor(float(after[0]), float(after[-1]), int(after.size), best)
