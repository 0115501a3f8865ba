"""TP-EVAL-NAN-TRANSIENT (issue #17, fresh11): a non-finite eval loss followed by finite
evaluations to the end, beside a training loss finite throughout, is the evaluation's
arithmetic (weights that went non-finite do not come back): a WARN, not TP-NAN's FAIL.
Everything else non-finite stays TP-NAN's. The public run is fresh11's YOLO segmentation run,
whose val losses are NaN at its first two epochs (its numbers, rebuilt as Ultralytics wrote
them); the boundaries are generated."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.parsers import read_run

from .test_public_runs import public_runs

ROOT = Path(__file__).resolve().parents[1]
NAN = float("nan")


def _levels(run) -> dict[str, str]:
    return {f.rule_id: f.level.value for f in judge_run(run).findings if f.level.value in ("WARN", "FAIL")}


def test_the_yolo_run_whose_first_validations_were_nan_is_a_warning():
    stem = "ai-studio-deployforce__training-pipeline__runs-segment-train-results"
    doc = json.loads((ROOT / "public_runs" / "fresh11" / f"{stem}.json").read_text())
    with tempfile.TemporaryDirectory() as d:
        run = read_run(public_runs.rebuild(doc, Path(d)))
    report = judge_run(run)
    found = {f.rule_id: f for f in report.findings}
    assert "TP-NAN" not in found and report.verdict.value == "WARN"
    f = found["TP-EVAL-NAN-TRANSIENT"]
    assert f.values["count"] == 2 and f.values["step"] == 1.0 and f.values["back"] == 3.0
    assert "all 20 training loss values are finite" in f.evidence


@pytest.mark.parametrize("eval_loss", [
    [NAN, 1.9, 1.8, 1.75, 1.7, 1.68],  # the first evaluation
    [2.0, 1.9, float("inf"), NAN, 1.7, 1.68],  # two in the middle
])
def test_a_non_finite_eval_loss_that_came_back_beside_a_finite_train_loss_is_a_warning(eval_loss):
    run = run_from({"loss": [2.0, 1.8, 1.7, 1.6, 1.5, 1.45], "eval_loss": eval_loss})
    assert _levels(run) == {"TP-EVAL-NAN-TRANSIENT": "WARN"}


@pytest.mark.parametrize("series", [
    {"loss": [2.0, 1.8, 1.7, 1.6, 1.5, 1.45], "eval_loss": [2.0, 1.9, 1.8, 1.75, 1.7, NAN]},  # ends NaN
    {"loss": [2.0, 1.8, NAN, 1.6, 1.5, 1.45], "eval_loss": [NAN, 1.9, 1.8, 1.75, 1.7, 1.68]},  # train NaN
    {"eval_loss": [NAN, 1.9, 1.8, 1.75, 1.7, 1.68]},  # no train loss to say the model stayed finite
])
def test_every_other_non_finite_loss_stays_tp_nan(series):
    assert _levels(run_from(series)).get("TP-NAN") == "FAIL"


# ---------------------------------------------------------------- TP-EVAL-NAN-TO-END

TO_END = {"fresh12": "aj-c22__courtvision__runs-detect-train4-results",
          "fresh15": "andresfmh__yolomodelo__runs-detect-train6-results"}


@pytest.mark.parametrize("half", sorted(TO_END))
def test_the_yolo_runs_whose_val_losses_are_nan_at_every_epoch_are_a_warning(half):
    """Two YOLO runs (fresh12's scored a false FAIL, then fresh15's, out of sample, the same):
    val losses NaN at all 200 / 140 epochs, train losses finite throughout, mAP climbing."""
    doc = json.loads((ROOT / "public_runs" / half / f"{TO_END[half]}.json").read_text())
    with tempfile.TemporaryDirectory() as d:
        run = read_run(public_runs.rebuild(doc, Path(d)))
    report = judge_run(run)
    found = {f.rule_id: f for f in report.findings}
    assert "TP-NAN" not in found and report.verdict.value == "WARN"
    f = found["TP-EVAL-NAN-TO-END"]
    assert f.values["count"] == f.values["n"] == len(run.get("eval_loss")) and f.values["step"] == 1.0
    assert f.values["writer"] == "ultralytics" and f.values["after"] == len(run.get("loss")) - 1


def _as(fmt: str, series: dict) -> object:
    from dataclasses import replace
    return replace(run_from(series), format=fmt)


ALWAYS_NAN = {"loss": [2.0, 1.8, 1.7, 1.6, 1.5, 1.45], "eval_loss": [NAN] * 6}


@pytest.mark.parametrize("fmt", ["ultralytics", "keras"])
def test_an_eval_loss_nan_to_the_end_beside_an_unfiltered_finite_train_loss_is_a_warning(fmt):
    assert _levels(_as(fmt, ALWAYS_NAN)) == {"TP-EVAL-NAN-TO-END": "WARN"}
    late = {"loss": ALWAYS_NAN["loss"], "eval_loss": [2.0, 1.9, 1.8, NAN, NAN, NAN]}
    assert _levels(_as(fmt, late)) == {"TP-EVAL-NAN-TO-END": "WARN"}


@pytest.mark.parametrize("fmt", ["hf", "jsonl", "csv", "example"])
def test_a_writer_that_may_filter_its_train_loss_leaves_it_to_tp_nan(fmt):
    """HF's logging_nan_inf_filter keeps a logged train loss finite after the weights went NaN;
    a generic CSV or JSONL says nothing of how its losses were reduced."""
    assert _levels(_as(fmt, ALWAYS_NAN)).get("TP-NAN") == "FAIL"


def test_without_a_train_loss_after_the_first_nan_evaluation_it_stays_tp_nan():
    """Only the last evaluation non-finite, nothing trained after it: no finite loss came from
    the evaluated weights."""
    series = {"loss": [2.0, 1.8, 1.7, 1.6, 1.5, 1.45], "eval_loss": [2.0, 1.9, 1.8, 1.75, 1.7, NAN]}
    assert _levels(_as("ultralytics", series)).get("TP-NAN") == "FAIL"
    poisoned = {"loss": [2.0, 1.8, 1.7, NAN, NAN, NAN], "eval_loss": [NAN] * 6}
    assert _levels(_as("ultralytics", poisoned)).get("TP-NAN") == "FAIL"
