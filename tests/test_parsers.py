"""Each log format on files the real libraries wrote (tests/fixtures/core, made by
scripts/fixtures/make_core_fixtures.py), plus the layouts those libraries produce
that a small fixture does not show."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import detect, read_run

from .conftest import FIXTURES


def test_hf_trainer_state_train_and_eval_points():
    run = read_run(FIXTURES / "hf_regression/trainer_state.json")
    state = json.loads((FIXTURES / "hf_regression/trainer_state.json").read_text())
    train = [e for e in state["log_history"] if "loss" in e]
    evals = [e for e in state["log_history"] if "eval_loss" in e]
    assert run.format == "hf"
    assert len(run.series["loss"]) == len(train)
    assert len(run.series["eval_loss"]) == len(evals)
    assert run.series["loss"].values[0] == pytest.approx(train[0]["loss"])
    assert list(run.series["eval_loss"].steps) == [e["step"] for e in evals]
    # the summary entry carries train_loss but is metadata, never a loss point
    assert "summary" in run.meta and run.meta["summary"]["train_loss"] > 0
    assert run.meta["max_steps"] == state["max_steps"]


def test_hf_bare_nan_tokens_are_evidence():
    run = read_run(FIXTURES / "hf_nonfinite/trainer_state.json")
    g = run.series["grad_norm"].values
    assert np.isnan(g).any()
    assert np.isnan(run.series["eval_loss"].values).any()


def test_hf_slices_agree_with_whole_document(tmp_path, monkeypatch):
    """The sliced decode gives the same columns as a one-piece decode."""
    from trainproof.parsers import hf

    src = FIXTURES / "hf_nonfinite/trainer_state.json"
    whole = read_run(src)
    monkeypatch.setattr(hf, "SLICE", 64)  # force many slices
    sliced = read_run(src)
    for name, s in whole.series.items():
        np.testing.assert_array_equal(s.steps, sliced.series[name].steps)
        np.testing.assert_array_equal(s.values, sliced.series[name].values)


def test_hf_irregular_layout_falls_back(tmp_path):
    doc = {"log_history": [{"step": 1, "loss": 2.0, "note": "a}, {b"}, {"step": 2, "loss": 1.5,
                                                                      "nested": {"x": [1, {"y": 2}]}}]}
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps(doc))
    run = read_run(p)
    assert list(run.series["loss"].values) == [2.0, 1.5]


def test_jsonl_banner_nested_and_half_written(tmp_path):
    lines = (FIXTURES / "jsonl/train_log.jsonl").read_text().splitlines()
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(lines) + '\n{"step": 41, "loss": 0.')  # killed mid-write
    run = read_run(p)
    assert len(run.series["loss"]) == 40
    assert any("banner" in n for n in run.notes)
    assert any("half-written" in n for n in run.notes)
    nested = read_run(FIXTURES / "jsonl/nested_metrics.jsonl")
    np.testing.assert_allclose(nested.series["loss"].values, run.series["loss"].values)


def test_jsonl_malformed_lines_are_counted_not_fatal(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 1, "loss": 3}\n{"step": 2, "loss": \n[1, 2]\n{"step": 3, "loss": 2}\n')
    run = read_run(p)
    assert list(run.series["loss"].values) == [3.0, 2.0]
    assert any("malformed" in n for n in run.notes) and any("non-object" in n for n in run.notes)


def test_lightning_metrics_csv_sparse_rows():
    run = read_run(FIXTURES / "lightning/metrics.csv")
    assert run.format == "csv"
    text = (FIXTURES / "lightning/metrics.csv").read_text().splitlines()
    header = text[0].split(",")
    col = header.index("train_loss_step")
    n_step_rows = sum(1 for row in text[1:] if row.split(",")[col])
    assert len(run.series["loss"]) == n_step_rows  # the per-step loss, not the epoch mean
    assert "eval_loss" in run.series and "lr" in run.series  # val_loss, lr-AdamW
    assert not any(np.isnan(s.values).any() for s in run.series.values())


def test_tsv_and_numbers_as_strings(tmp_path):
    p = tmp_path / "log.tsv"
    p.write_text("iteration\ttraining_loss\tlearning_rate\n1\t\"2.5\"\t1e-3\n2\t2.0\t1e-3\n3\tnan\t1e-3\n")
    run = read_run(p)
    assert run.series["loss"].values[:2].tolist() == [2.5, 2.0]
    assert math.isnan(run.series["loss"].values[2])
    assert run.series["lr"].steps.tolist() == [1, 2, 3]


def test_coqui_text_log(tmp_path):
    esc = "\x1b[1m"
    text = (f"{esc} > Training Environment:\n"
            f"   --> TIME: 2026-01-01 -- STEP: 0/10 -- GLOBAL_STEP: 0\x1b[0m\n"
            "     | > loss: 0.5  (0.5)\n     | > current_lr: 5e-06 \n"
            "   --> TIME: 2026-01-01 -- STEP: 1/10 -- GLOBAL_STEP: 50\n"
            "     | > loss: 0.4  (0.45)\n     | > step_time: 0.05  (0.05)\n"
            f"  {esc}--> EVAL PERFORMANCE\x1b[0m\n     | > avg_loss:\x1b[92m 2.5 \x1b[0m(+0)\n\n"
            " > BEST MODEL : C:\\runs\\x\\best_model_50.pth\n")
    p = tmp_path / "trainer_0_log.txt"
    p.write_text(text)
    run = read_run(p)
    assert run.format == "coqui"
    assert run.series["loss"].values.tolist() == [0.5, 0.4]
    assert run.series["eval_loss"].steps.tolist() == [50.0]
    assert run.meta["best_model"] == "best_model_50.pth"


def test_resumed_run_later_write_wins(tmp_path):
    p = tmp_path / "resumed.jsonl"
    rows = [{"step": s, "loss": 3.0 - 0.1 * s} for s in range(1, 11)]
    rows += [{"step": s, "loss": 9.0} for s in range(8, 13)]  # resumed from step 7
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = read_run(p)
    s = run.series["loss"]
    assert s.steps.tolist() == list(range(1, 13))
    assert s.values[7:].tolist() == [9.0] * 5
    assert any("repeated step" in n for n in run.notes)


@pytest.mark.parametrize("name,fmt", [
    ("hf_regression/trainer_state.json", "hf"), ("jsonl/train_log.jsonl", "jsonl"),
    ("lightning/metrics.csv", "csv"),
])
def test_sniffing(name, fmt):
    f = detect(FIXTURES / name)
    assert f is not None and f.name == fmt


def test_dataset_jsonl_is_not_a_log(tmp_path):
    p = tmp_path / "train.jsonl"
    p.write_text('{"text": "hello"}\n')
    assert detect(p) is None


@pytest.mark.parametrize("raw,canon", [
    ("train/loss", "loss"), ("Loss/train", "loss"), ("train_loss_step", "loss"), ("lm loss", "loss"),
    ("val_loss_epoch", "eval_loss"), ("validation_loss", "eval_loss"), ("lr-AdamW", "lr"),
    ("learning_rate", "lr"), ("gnorm", "grad_norm"), ("grad_norm/total", "grad_norm"),
    ("global_step", "step"), ("data_time", "loader_time"), ("seconds_per_step", "step_time"),
    # camelCase (Sacred `_run.log_scalar("trainLoss", ...)`, public run fresh9/catniplab), read with its words split
    ("trainLoss", "loss"), ("validLoss", "eval_loss"), ("testLoss", "eval_loss"), ("validAccuracy", "eval_accuracy"),
    ("learningRate", "lr"), ("gradNorm", "grad_norm"), ("globalStep", "step"),
    # names the table knows run together keep their meaning (Coqui's TensorBoard tags)
    ("TrainIterStats/loss", "loss"), ("EvalStats/avg_loss", "eval_loss"),
])
def test_column_aliases(raw, canon):
    from trainproof.parsers.columns import canonical

    assert canonical(raw)[0] == canon


@pytest.mark.parametrize("raw", ["trainLosses", "Loss2", "mAP", "lossG"])
def test_camel_case_splitting_invents_no_metric(raw):
    from trainproof.parsers.columns import canonical

    assert canonical(raw) is None


def test_fixture_script_is_kept():
    assert (Path(__file__).parents[1] / "scripts/fixtures/make_core_fixtures.py").exists()


def test_csv_missing_markers_are_not_bad_numbers(tmp_path):
    p = tmp_path / "training.csv"
    p.write_text("epoch,loss,val_loss\n0,2.0,NA\n1,1.5,1.8\n2,1.2,n/a\n3,1.1,\n4,1.0,nan\n")
    run = read_run(p)
    assert run.series["eval_loss"].steps.tolist() == [1.0, 4.0]
    assert math.isnan(run.series["eval_loss"].values[1])
    assert not any("non-numeric" in n for n in run.notes)
