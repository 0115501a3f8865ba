"""A training loss that climbed far above its floor while the held-out loss improved
(TP-TRAIN-RISE-EVAL-FELL). TP-DIVERGE's FAIL says the run diverged: the weights got worse.
A divergence damages the model, so its eval loss, where one is logged after the floor, climbs
too. An eval loss that ended at or below its first evaluation after the train floor says the
weights got better meanwhile: the climb is in what the training batches were (their order,
a curriculum, an augmentation that ramps up), not damage - a WARN that says so. Judged by
TP-DIVERGE's check (rules/run.py), on the runs that check would fail."""

from __future__ import annotations

from trainproof.frozen import NamedTuple
from trainproof.model import Level, Run
from trainproof.rules.base import Example, Threshold, rule
from trainproof.rules.gradients import G

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
        "min_evals_after": Threshold(
            2, "evaluations",
            "Evaluations after the training floor: a first and a last, so the eval loss's own "
            "direction over the climb can be read; one evaluation says nothing about a trend."),
        "max_end_over_best": Threshold(
            1.2, "x the eval loss's best",
            "...and the eval loss ends within TP-OVERFIT's ratio of its best evaluation: the model "
            "is as good on held-out data as it has been. Both are asked: an eval loss whose first "
            "evaluation after the floor is itself a collapse (16.9 against a best of 0.70) 'improves' "
            "from it while the model stays damaged (tests/test_train_rise.py holds the ratio equal "
            "to TP-OVERFIT's)."),
        "min_points": Threshold(
            5, "points",
            "TP-DIVERGE's min_points: the rule is judged by that check, on the runs it would fail "
            "(tests/test_train_rise.py holds the two equal)."),
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


class EvalAfterFloor(NamedTuple):
    first: float
    last: float
    n: int
    best: float


def eval_fell_after(run: Run, floor_step: float) -> EvalAfterFloor | None:
    """The eval loss's first and last finite evaluations after the training floor, and its best,
    when there are min_evals_after or more after the floor, the last is not above the first and
    ends within max_end_over_best of the best; None otherwise."""
    r = TRAIN_RISE_EVAL_FELL
    ev = run.get("eval_loss")
    if ev is None:
        return None
    ev = ev.finite_only()
    after = ev.values[ev.steps > floor_step]
    if after.size < r.t("min_evals_after") or after[-1] > after[0]:
        return None
    best = float(ev.values.min())
    if best <= 0 or after[-1] > r.t("max_end_over_best") * best:
        return None
    return EvalAfterFloor(float(after[0]), float(after[-1]), int(after.size), best)
