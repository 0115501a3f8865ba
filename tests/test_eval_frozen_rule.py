"""TP-EVAL-METRIC-FROZEN (rules/eval_frozen.py): a held-out accuracy, F1, mAP, IoU ... that
holds one value at every evaluation, from the first, while the eval loss moved - or held
still as well (the evaluated model never changed).

The real cases: a Lightning run whose normalisation bug leaves the model only its biases
(tests/fixtures/core/eval_frozen/one_class, made by
scripts/fixtures/make_eval_frozen_lightning_fixtures.py with lightning 2.6.6): val_acc
0.7075, the majority share, at all 8 epochs while val_loss falls 0.665 -> 0.606; and the
fresh half's token classifier shlomota (eval F1/precision/recall 0 at all 100
evaluations, labelled WARN by its reader before any tool ran); fresh5's macyrm (LR never out
of warm-up: eval accuracy, F1 and eval loss identical at all 5 epochs, labelled FAIL), and
the two runs that made the frozen eval loss count, fresh12's YOLO pose babymelvin and
fresh13's YOLO segmenter ceithernsw (scores and eval losses still for 10 epochs, both
labelled FAIL, both passed before). Every other real log -
public runs of the in-sample halves, galleries, evidence/, fixtures, ../shared/corpus -
stays silent, the same run without the bug among them."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from trainproof.examples import run_from
from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.parsers import read_run
from trainproof.parsers.columns import heldout_quality
from trainproof.rules.eval_frozen import EVAL_METRIC_FROZEN, eval_metric_frozen

from .conftest import ROOT
from .real_logs import DOCS, fires_on, local, public, public_runs

RULE = "TP-EVAL-METRIC-FROZEN"
FIX = Path(__file__).parent / "fixtures" / "core" / "eval_frozen"
TOKEN_CLASSIFIER = "shlomota__taami__checkpoint-5000-trainer_state"
NEVER_WARMED = "macyrm__buildanything__results-checkpoint-5-trainer_state"
STILL_EVALUATIONS = {"fresh12": "babymelvin__yolo_learn__runs-pose-train-results",
                     "fresh13": "ceithernsw__stableemotion__runs-segment-train3-results"}


def metrics_csv(name: str) -> Path:
    return FIX / name / "lightning_logs" / "version_0" / "metrics.csv"


def _fires(run: Run) -> bool:
    out = eval_metric_frozen(run)
    return not isinstance(out, Skip) and bool(out)


# ---------------------------------------------------------------- the real Lightning runs

@pytest.mark.parametrize("name", ["one_class", "healthy"])
def test_columns_equal_what_lightning_logged(name: str) -> None:
    want = json.loads((FIX / name / "expected.json").read_text())["validations"]
    run = read_run(metrics_csv(name))
    acc = run.meta["heldout_metrics"]["val_acc"]
    ev = run.series["eval_loss"]
    np.testing.assert_array_equal(acc.steps, [p["step"] for p in want])
    np.testing.assert_allclose(acc.values, [p["val_acc"] for p in want], rtol=1e-7)
    np.testing.assert_allclose(ev.values, [p["val_loss"] for p in want], rtol=1e-7)


def test_fires_on_the_real_run_that_predicts_one_class() -> None:
    out = eval_metric_frozen(read_run(metrics_csv("one_class")))
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    v = out[0].values
    assert v["metric"] == "val_acc" and v["n"] == 8 and v["value"] == pytest.approx(0.7075)
    assert "eval loss went 0.6649 -> 0.6064" in str(v["moved"])


def test_silent_on_the_same_run_without_the_bug() -> None:
    assert eval_metric_frozen(read_run(metrics_csv("healthy"))) == []


def test_fires_on_no_other_real_log() -> None:
    assert len(public()) >= 200 and len(local()) >= 100  # the logs were found
    assert fires_on(eval_metric_frozen, public()) == {TOKEN_CLASSIFIER, NEVER_WARMED}
    # The real Ultralytics fixtures (scripts/fixtures/make_ultralytics_fixtures.py) are runs
    # whose optimizer never stepped: batch 4 on 8 images is 12 batches in 6 epochs, and
    # Ultralytics accumulates gradients up to its nominal batch of 64 (16 batches) before
    # its first step - so their val losses repeat to the last printed digit and every score
    # with them: the evaluation stood still because the weights did.
    fired = {str(Path(p).relative_to(ROOT / "tests" / "fixtures")) for p in fires_on(eval_metric_frozen, local())}
    assert fired == {"core/eval_frozen/one_class/lightning_logs/version_0/metrics.csv",
                     *(f"ultralytics/{t}/runs/{t}/train/results.csv" for t in ("classify", "detect", "segment"))}


# ---------------------------------------------------------------- how writers spell it

@pytest.mark.parametrize("name", [
    "val_accuracy", "val_acc", "eval_accuracy", "eval_f1", "val/f1", "DEV_F1", "DEV_ACCURACY", "DEV_F-SCORE",
    "bbox/AP", "coco/bbox_mAP", "metrics/mAP50(B)", "metrics/mAP50-95(B)", "eval/accuracy", "val/iou",
    "validation/dice", "validAccuracy", "val_top_5_accuracy", "eval_exact_match", "val_auc", "eval_Macro F1",
    "eval_matthews_correlation", "metrics/accuracy_top1",
    # Ultralytics pose models: box (B) and keypoint (P) scores
    "metrics/mAP50(P)", "metrics/mAP50-95(P)", "metrics/precision(P)", "metrics/recall(P)"])
def test_held_out_scores_are_recognised(name: str) -> None:
    assert heldout_quality(name)


@pytest.mark.parametrize("name", [
    "accuracy", "train_acc", "Train.accuracy", "val_loss", "loss_dice", "eval_wer", "fast_rcnn/cls_accuracy",
    "eval/r2_score", "eval_T007_f1", "Validation.f1.OFF", "eval_accuracy_class_Viral", "bbox/AP-hazelnut",
    "eval_best_f1_thresh", "eval_NoAns_f1", "test/f1_B-ITEM"])
def test_training_scores_losses_and_per_class_columns_are_not(name: str) -> None:
    assert not heldout_quality(name)


# ---------------------------------------------------------------- generated evaluations

FALLING = [1.8, 1.5, 1.3, 1.15, 1.05, 0.98, 0.93, 0.9]


def _run(metric: list[float], name: str = "val_accuracy", eval_loss: list[float] | None = FALLING,
         loss: list[float] | None = None) -> Run:
    n = len(metric)
    data: dict[str, list[float]] = {"steps": list(range(1, n + 1)), name: metric}
    data["loss"] = loss if loss is not None else list(np.geomspace(2.0, 1.0, n))
    if eval_loss is not None:
        data["val_loss"] = eval_loss[:n]
    return run_from(data)


def test_the_catalogue_examples() -> None:
    assert _fires(run_from({k: v for k, v in EVAL_METRIC_FROZEN.fires.data.items()}))
    assert not _fires(run_from({k: v for k, v in EVAL_METRIC_FROZEN.passes.data.items()}))


def test_a_flair_tagger_that_never_predicts_an_entity() -> None:
    run = _run([0.0] * 8, name="DEV_F1")
    out = eval_metric_frozen(run)
    assert isinstance(out, list) and out[0].values["metric"] == "DEV_F1" and out[0].values["value"] == 0.0


def test_too_few_evaluations_are_not_judged() -> None:
    assert not _fires(_run([0.6525] * 4))
    assert _fires(_run([0.6525] * 5))


def test_a_metric_that_moves_once_is_not_frozen() -> None:
    """A fine-tune at the majority class for its first evaluations that then breaks out."""
    assert not _fires(_run([0.6525] * 7 + [0.6600]))
    assert not _fires(_run([0.70, 0.70, 0.71, 0.70, 0.70, 0.70, 0.70, 0.70]))


def test_a_perfect_score_and_cocos_no_object_sentinel_are_not_judged() -> None:
    assert not _fires(_run([1.0] * 8))
    assert not _fires(_run([100.0] * 8))
    assert not _fires(_run([-1.0] * 8, name="coco/AP (M)"))


def test_a_frozen_eval_loss_beside_the_frozen_score_fires_whatever_the_train_loss() -> None:
    """The eval loss is a function of the weights on a fixed set: repeated, the evaluated
    model did not change, whether the noisy train loss fell, rose or stood still."""
    for loss in (None, [1.0, 1.01, 0.99, 1.0, 1.02, 0.99, 1.0, 0.98], [2.0, 2.2, 2.5, 2.4, 2.8, 3.0, 3.1, 3.3]):
        out = eval_metric_frozen(_run([0.5] * 8, eval_loss=[0.75] * 8, loss=loss))
        assert isinstance(out, list) and "held still too" in str(out[0].values["moved"])
    # within TP-FLAT's band (0.1 % of the median) is still; beyond it the eval loss moved
    assert _fires(_run([0.5] * 8, eval_loss=[0.75, 0.7502, 0.7504, 0.7501, 0.7503, 0.7505, 0.7504, 0.7506]))
    moved = eval_metric_frozen(_run([0.5] * 8, eval_loss=[0.75, 0.752, 0.754, 0.751, 0.753, 0.755, 0.754, 0.756]))
    assert isinstance(moved, list) and "went" in str(moved[0].values["moved"])


@pytest.mark.parametrize("half", sorted(STILL_EVALUATIONS))
def test_fires_on_the_yolo_runs_whose_evaluations_stood_still(half: str) -> None:
    doc = next(d for d in DOCS if d["id"] == STILL_EVALUATIONS[half])
    with tempfile.TemporaryDirectory() as tmp:
        out = eval_metric_frozen(read_run(public_runs.rebuild(doc, Path(tmp))))
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    assert out[0].values["value"] == 0.0 and out[0].values["n"] == 10
    assert "held still too" in str(out[0].values["moved"])


def test_without_an_eval_loss_the_train_loss_trend_decides() -> None:
    assert _fires(_run([0.2] * 8, eval_loss=None))  # train loss 2.0 -> 1.0
    assert not _fires(_run([0.2] * 8, eval_loss=None, loss=[1.0, 1.01, 0.99, 1.0, 1.02, 0.99, 1.0, 0.98]))


def test_a_per_class_column_beside_its_aggregate_is_not_judged() -> None:
    data = {"steps": list(range(1, 9)), "loss": list(np.geomspace(2.0, 1.0, 8)), "val_loss": FALLING,
            "bbox/AP": [10.0, 20, 25, 30, 33, 35, 36, 37], "bbox/AP-4": [0.0] * 8}
    assert not _fires(run_from(data))


def test_no_held_out_metric_and_an_appended_log_are_skips() -> None:
    out = eval_metric_frozen(run_from({"loss": [1.0, 0.9, 0.8]}))
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA
    run = _run([0.2] * 8)
    out = eval_metric_frozen(replace(run, meta={**run.meta, "appended": {"runs": 2}}))
    assert isinstance(out, Skip) and out.kind is SkipKind.DEGENERATE


# ---------------------------------------------------------------- how the run was logged

def _scaled(run: Run, factor: float) -> Run:
    m = {k: Series(s.name, s.steps, s.values * factor) for k, s in run.meta["heldout_metrics"].items()}
    return replace(run, meta={**run.meta, "heldout_metrics": m})


def _thinned(run: Run, offset: float = 0.0) -> Run:
    """Every other evaluation (and every other point of every curve), steps shifted."""
    def half(s: Series) -> Series:
        return Series(s.name, s.steps[::2] + offset, s.values[::2])
    m = {k: half(s) for k, s in run.meta["heldout_metrics"].items()}
    return replace(run, series={k: half(s) for k, s in run.series.items()},
                   meta={**run.meta, "heldout_metrics": m})


def test_units_do_not_matter() -> None:
    real = read_run(metrics_csv("one_class"))
    assert _fires(_scaled(real, 100.0))  # 70.75 %
    assert not _fires(_scaled(read_run(metrics_csv("healthy")), 100.0))


def test_half_the_evaluations_stays_or_is_too_few() -> None:
    real = read_run(metrics_csv("one_class"))  # 8 evaluations -> 4: too few, not judged
    out = eval_metric_frozen(_thinned(real))
    assert out == []
    long = _run([0.2] * 12, eval_loss=list(np.geomspace(3.9, 1.7, 12)))  # 12 -> 6: still fires
    assert _fires(long) and _fires(_thinned(long, offset=1000.0))


def test_a_pose_model_whose_keypoint_scores_never_left_zero_is_reported():
    """fresh12's donidodni (Ultralytics pose, 60 epochs, rebuilt as Ultralytics wrote it): box
    mAP50 0.08 -> 0.40 while every keypoint score - metrics/*(P) - is exactly 0 at every epoch.
    The (P) columns were not recognised as held-out scores until this was seen."""
    import tempfile

    from .test_public_runs import DOCS, public_runs

    doc = next(d for d in DOCS if d["id"] == "donidodni__tensorflow_project__runs-pose-train-results")
    with tempfile.TemporaryDirectory() as tmp:
        run = read_run(public_runs.rebuild(doc, Path(tmp)))
    out = eval_metric_frozen(run)
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    assert out[0].values["metric"].endswith("(P)") and out[0].values["value"] == 0 and out[0].values["n"] == 60
