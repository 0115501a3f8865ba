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
