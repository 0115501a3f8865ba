"""Single-run rule on a held-out quality metric that never changed: accuracy, F1, mAP,
IoU, dice, AUC ... identical at every evaluation, from the first, while the loss moved or
the eval loss held still beside it (TP-EVAL-METRIC-FROZEN, WARN). Either the model's
weights changed and its decisions on the held-out set did not - it predicts one class (or
no entity, no box) whatever its input, or the evaluation does not look at the model being
trained - or the evaluated model itself never changed. Which columns are held-out
quality metrics is parsers/columns.py's (`heldout_quality`); the reader keeps them in the
Run's meta as "heldout_metrics". Declared once here; the judge below is the only code
that decides whether it fires.

What it leaves to its neighbours: a run with no eval loss whose train loss did not move is
the dead-run rules' (TP-FLAT, TP-DEAD-RUN, TP-LOSS-FROZEN); an error rate (WER, CER) is read by
TP-EVAL-METRIC-CONFLICT against a near-zero eval loss."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules import eval_metric  # noqa: F401  (registers eval-metric, which this check follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, finite_series, where
from trainproof.rules.run import FLAT
from trainproof.rules.zeros import printed_resolution

EVAL_METRIC_FROZEN = rule(
    id="TP-EVAL-METRIC-FROZEN", level=Level.WARN, group=G,
    title="A held-out quality metric never changed: the model's decisions on held-out data did "
    "not depend on its training.",
    evidence="{metric} = {value:.6g} at all {n} evaluations, steps {first:g}-{last:g}{others}; meanwhile "
    "{moved}",
    summary="An accuracy, F1, precision, recall, mAP/AP, IoU, dice, AUC, top-k or exact-match "
    "scored on held-out data is the same value at every evaluation, five or more from the "
    "first, while the eval loss moved (or, where none is logged, the train loss), or while "
    "the eval loss held still too: every number the evaluation reports stood still.",
    why="Training that changes the weights enough to move the loss moves the model's scores "
    "on held-out examples, and on an eval set of any real size some of them sit near a "
    "decision boundary: their predictions flip and the metric changes by at least one "
    "example's worth between some evaluations. A score that holds one value from the first "
    "evaluation to the last means the decisions never changed. Either the model outputs the "
    "same decision whatever its input (one class - accuracy at the majority share, or 1/k "
    "on k balanced classes; a tagger or detector that predicts nothing - F1 or mAP at 0), "
    "which its loss can still improve by calibrating that constant, or the evaluation does "
    "not score the model being trained (a fixed checkpoint loaded for eval, labels or "
    "predictions that do not match, a metric computed on the wrong tensor). When the eval "
    "loss holds still as well (within TP-FLAT's band of its median and the log's printed "
    "precision) every number the evaluation reports stood still, whatever the train loss "
    "does: the weights evaluated did not change - an LR too small to move them, frozen "
    "parameters, or an evaluation of a copy that training never updates. The dead-run rules "
    "read the train loss, a noisy mean over changing batches that can drift while the "
    "evaluated model stands still, and short logs escape them, so this rule says it.",
    fix="Print the predictions on a few held-out examples and their distribution over "
    "classes: one class everywhere is a collapse (check the class balance and loss "
    "weighting, the learning rate, that the inputs are normalised and reach the model, and "
    "that the labels are the targets the loss uses). Varied predictions with an unchanging "
    "score mean the evaluation is broken: check that it runs on the current weights and "
    "compares predictions with the right labels (their order, their id mapping).",
    thresholds={
        "min_points": Threshold(
            5, "evaluations",
            "Three identical evaluations happen in healthy runs: a fine-tune often sits at the "
            "majority class for its first epoch or two before it breaks out, and a run that "
            "evaluates three times can be all plateau. Five, from the first, are four intervals "
            "of training - each moving the loss - in which not one held-out decision flipped: on "
            "an eval set of a hundred examples or more a model that responds to its input flips "
            "some near the boundary in that time, so five in a row is a model, or an "
            "evaluation, that does not respond."),
        "min_train_move": Threshold(
            0.05, "of the train loss at the first evaluation",
            "Whether the weights moved is read from the eval loss where one is logged over the "
            "evaluations: on a fixed eval set it is a function of the weights, so it moved when "
            "its range exceeds TP-FLAT's band and the log's printed precision, and one that "
            "repeats itself means the evaluated weights did not change, whatever the train "
            "loss does (reported with the score, as the evaluation standing still). Without an "
            "eval loss, the train loss moved "
            "when the median of its points at the last evaluation's end of the span differs "
            "from that at the first by this share: a mean over a logging interval wobbles by a "
            "few percent, a 5 % shift between the two ends is a trend (TP-LOSS-ROSE's band)."),
        "train_window": Threshold(
            0.1, "of the train loss points between the first and last evaluation",
            "Each end of the train loss is the median of this share of its points (at least "
            "one), so one noisy batch does not decide whether it moved."),
    },
    fires=Example({"steps": [1, 2, 3, 4, 5, 6, 7, 8],
                   "loss": [2.02, 1.95, 1.9, 1.86, 1.83, 1.8, 1.78, 1.76],
                   "val_loss": [3.91, 2.9, 2.4, 2.1, 1.95, 1.83, 1.76, 1.70],
                   "val_accuracy": [0.2] * 8},
                  note="a 5-class Keras classifier that predicts one class: val_accuracy 0.2 at "
                  "every epoch while both losses fall"),
    passes=Example({"steps": [1, 2, 3, 4, 5, 6, 7, 8],
                    "loss": [2.02, 1.6, 1.2, 0.9, 0.7, 0.55, 0.45, 0.4],
                    "val_loss": [1.9, 1.5, 1.2, 1.0, 0.9, 0.85, 0.82, 0.8],
                    "val_accuracy": [0.31, 0.46, 0.58, 0.64, 0.69, 0.71, 0.71, 0.72]},
                   note="the same classifier learning: its accuracy moves with its loss"),
    limits="Reads the held-out columns parsers/columns.py recognises (a held-out word - eval, "
    "val, valid, validation, dev, test, or the evaluator's namespace coco, bbox, segm, "
    "Ultralytics' metrics - and a score word; never a loss, never a training-set score). A "
    "perfect score (1 or 100) repeated is a solved eval set, not judged. A tiny eval set "
    "quantises the score (10 examples: steps of 0.1), so a model that already got the same "
    "9 of 10 right at its first evaluation and keeps them is flagged: the log cannot tell "
    "it from a collapse, hence a WARN. A run whose evaluation stood still is reported "
    "whether or not a dead-run rule also fires on its train loss. A per-class column (Detectron2's `bbox/AP-<class>`, "
    "beside `bbox/AP`) is not judged: a class the model never finds is not the run's "
    "failure. A log holding several appended runs is not judged (its metric columns are not "
    "split by run). Fewer than five evaluations are not judged, so a three-epoch run stuck "
    "at the majority class is not reported.",
)


class _Frozen(NamedTuple):
    name: str
    series: Series


def _frozen(metrics: Mapping[str, Series], least: int) -> list[_Frozen]:
    """The held-out metrics identical at every one of at least `least` evaluations, not at
    a perfect score or a negative sentinel, not a per-class column beside its aggregate;
    most evaluations first."""
    out = []
    for name, s in metrics.items():
        v = s.values
        if len(v) < least or v.max() != v.min() or float(v[0]) in (1.0, 100.0) or v[0] < 0:
            continue  # moved; or a perfect score; or COCO's -1, "no object of this size"
        if "-" in name and name.rsplit("-", 1)[0] in metrics:
            continue  # Detectron2's per-class AP beside the aggregate
        out.append(_Frozen(name, s))
    return sorted(out, key=lambda f: (-len(f.series), f.name))


def _within(run: Run, name: str, lo: float, hi: float) -> np.ndarray | None:
    """The finite values of `name` logged between steps lo and hi, when there are two or more."""
    s = run.get(name)
    s = s.finite_only() if s is not None else None
    if s is None:
        return None
    v = s.values[(s.steps >= lo) & (s.steps <= hi)]
    return v if v.size >= 2 else None


def held_still(v: np.ndarray, rel_range: float) -> tuple[bool, float, float]:
    """(whether the eval loss `v` stayed within `rel_range` of its median (TP-FLAT's band, as
    each rule declares it) or the log's printed precision, its range, that band). One
    printed digit's step is still: 0.75 and 0.76 in a two-decimal log can be values a hair
    apart (the comparison allows for 0.76 - 0.75 landing a float's rounding above 0.01)."""
    spread = float(v.max() - v.min())
    band = max(rel_range * abs(float(stats.median(v))), printed_resolution(v))
    return spread <= band * (1.0 + 1e-9), spread, band


def _eval_loss_moved(v: np.ndarray) -> str:
    """How the eval loss `v` (its values within the evaluations' span) behaved: moved
    beyond TP-FLAT's band and the log's printed precision, or held still within it."""
    still, _, band = held_still(v, FLAT.t("rel_range"))
    if still:
        return (f"the eval loss held still too, {v.min():.6g}-{v.max():.6g} (within {band:.2g}): "
                "the evaluated model did not change")
    return f"the eval loss went {v[0]:.4g} -> {v[-1]:.4g} (range {v.min():.4g}-{v.max():.4g})"


def _train_loss_moved(run: Run, lo: float, hi: float) -> str | None:
    """'train loss A -> B' when the medians at both ends of the evaluations' span differ by
    min_train_move of the first, else None."""
    r = EVAL_METRIC_FROZEN
    v = _within(run, "loss", lo, hi)
    if v is None:
        return None
    k = max(1, int(r.t("train_window") * v.size))
    a, b = float(stats.median(v[:k])), float(stats.median(v[-k:]))
    if a == 0 or abs(b - a) < r.t("min_train_move") * abs(a):
        return None
    return f"the train loss went {a:.4g} -> {b:.4g} ({(b - a) / abs(a):+.0%})"


def _moved(run: Run, lo: float, hi: float) -> str | None:
    """What the loss did over the evaluations' span, or None when nothing can be said. An
    eval loss logged there decides alone: on a fixed eval set it is a function of the
    weights, so whether it moved (the model's decisions did not follow) or held still (the
    evaluated model did not change), the frozen score is a fault; the train loss, a noisy
    mean over changing batches, is not asked. Without one the train loss's trend decides."""
    ev = _within(run, "eval_loss", lo, hi)
    if ev is not None:
        return _eval_loss_moved(ev)
    return _train_loss_moved(run, lo, hi)


@check("eval-frozen", EVAL_METRIC_FROZEN, after="eval-metric")
def eval_metric_frozen(run: Run) -> list[Finding] | Skip:
    r = EVAL_METRIC_FROZEN
    metrics = run.meta.get("heldout_metrics")
    if not isinstance(metrics, Mapping) or not metrics:
        return Skip(SkipKind.NO_DATA, "no held-out accuracy, F1, mAP or other score column in the log")
    if isinstance(run.meta.get("appended"), dict):
        return Skip(SkipKind.DEGENERATE, "the log holds several appended runs; its held-out metric "
                    "columns are not split by run")
    frozen = _frozen(metrics, int(r.t("min_points")))
    for f in frozen:
        lo, hi = float(f.series.steps[0]), float(f.series.steps[-1])
        moved = _moved(run, lo, hi)
        if moved is None:
            continue  # no eval loss, and the train loss did not visibly move: the dead-run rules' case
        rest = len(frozen) - 1
        others = f"; {rest} other held-out metric(s) frozen too" if rest else ""
        return [r.finding(where(run, lo), metric=f.name, value=float(f.series.values[0]), n=len(f.series),
                          first=lo, last=hi, others=others, moved=moved)]
    return []



# ---------------------------------------------------------------- the eval loss alone

EVAL_LOSS_FROZEN = rule(
    id="TP-EVAL-LOSS-FROZEN", level=Level.WARN, group=G,
    title="The eval loss held still at every evaluation: the evaluated model's outputs on "
    "held-out data never changed.",
    evidence="eval loss {low:.6g}-{high:.6g} at all {n} evaluations, steps {first:g}-{last:g}: a range "
    "of {spread:.3g}, within {band:.3g} ({limit_rel_range:.1%} of its median, or the log's printed "
    "precision); train loss {train}",
    summary="The eval loss stays within TP-FLAT's band of its median (or the log's printed "
    "precision) at every one of five or more evaluations, from the first.",
    why="On a fixed eval set the eval loss is a function of the weights: training that changes "
    "them moves it, up or down, by more than a part in a thousand over four or more intervals of "
    "training. One that holds still says the model evaluated never changed what it outputs: an "
    "LR of 0 or too small to move the weights, an optimizer that never stepped (gradient "
    "accumulation longer than the run), frozen parameters, a model that outputs a constant "
    "whatever its input (a regressor predicting the mean, a classifier the prior), or an "
    "evaluation of a copy that training never updates. On the public runs every eval loss that "
    "held still this way belongs to a run its reader labelled broken (a dozen, of six writers) "
    "or one that barely learned, and on the galleries to the LR-0 runs.",
    fix="Check the learning rate and that the optimizer steps (gradient accumulation, a "
    "scheduler at 0, parameters with requires_grad); print a few held-out predictions: one "
    "value for every input is a collapsed model; check the eval loop runs on the current "
    "weights.",
    thresholds={
        "min_points": EVAL_METRIC_FROZEN.thresholds["min_points"],
        "rel_range": FLAT.thresholds["rel_range"],
    },
    fires=Example({"steps": [1, 2, 3, 4, 5, 6, 7, 8],
                   "loss": [0.01356, 0.01345, 0.01344, 0.01345, 0.01383, 0.01344, 0.01344, 0.01345],
                   "val_loss": [0.016369, 0.016370, 0.016370, 0.016371, 0.016370, 0.016369, 0.016370, 0.016370]},
                  note="a regressor that predicts a constant: its val loss the same to four digits"),
    passes=Example({"steps": [1, 2, 3, 4, 5, 6, 7, 8],
                    "loss": [0.0136, 0.0121, 0.0113, 0.0108, 0.0104, 0.0101, 0.0099, 0.0098],
                    "val_loss": [0.0164, 0.0150, 0.0143, 0.0139, 0.0137, 0.0136, 0.0136, 0.0137]},
                   note="the same regressor learning"),
    limits="Fewer than five evaluations are not judged, nor a log of several appended runs. "
    "Where a held-out score froze beside it, TP-EVAL-METRIC-FROZEN reports both. A run that "
    "converged before its first evaluation and trains on at an LR too small to move anything "
    "is reported: its evaluations are spent on a model that does not change.",
)


@check("eval-loss-frozen", EVAL_LOSS_FROZEN, after="eval-frozen")
def eval_loss_frozen(run: Run) -> list[Finding] | Skip:
    r = EVAL_LOSS_FROZEN
    e = finite_series(run, "eval_loss", r.t("min_points"))
    if isinstance(e, Skip):
        return e
    if isinstance(run.meta.get("appended"), dict):
        return Skip(SkipKind.DEGENERATE, "the log holds several appended runs")
    v = e.values
    still, spread, band = held_still(v, r.t("rel_range"))
    if not still:
        return []
    score = eval_metric_frozen(run)
    if not isinstance(score, Skip) and score:
        return Skip(SkipKind.COVERED, "TP-EVAL-METRIC-FROZEN reports the frozen score beside it")
    lo, hi = float(e.steps[0]), float(e.steps[-1])
    t = _within(run, "loss", lo, hi)
    train = f"{t[0]:.4g} -> {t[-1]:.4g} meanwhile" if t is not None else "not logged over those steps"
    return [r.finding(where(run, lo), low=float(v.min()), high=float(v.max()), n=len(e), first=lo, last=hi,
                      spread=spread, band=band, train=train)]
