"""Keras 3 History saved as JSON, written by the real library (tests/fixtures/keras_history,
scripts/fixtures/make_keras_history_fixtures.py): the series read equal what Keras logged,
from json.dump's lists, the {"history": ...} wrapper and pandas' to_json alike; step =
epoch number; val_* read as eval columns; the sniff claims these documents and nothing
else; bad input is one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import detect, keras_history, read_run

FIX = Path(__file__).parent / "fixtures" / "keras_history"


def expected(run: str) -> dict[str, list[float]]:
    doc = json.loads((FIX / run / "expected.json").read_text())
    return {k: [float(v) for v in vs] for k, vs in doc["history"].items()}


@pytest.mark.parametrize(("run", "name"), [("healthy", "history.json"), ("healthy", "wrapped.json"),
                                           ("hot", "history.json")])
def test_series_equal_what_keras_logged(run, name):
    raw = keras_history.read(FIX / run / name)
    want = expected(run)
    assert set(raw.columns) == set(want)
    for key, (steps, values) in raw.columns.items():
        np.testing.assert_array_equal(steps, np.arange(1, len(want[key]) + 1), err_msg=key)
        np.testing.assert_array_equal(values, want[key], err_msg=key)
    assert any("step = epoch number" in n for n in raw.notes)


def test_pandas_to_json_reads_as_the_history():
    """pandas writes 10 decimal places by default: equal to that precision."""
    raw = keras_history.read(FIX / "healthy" / "pandas.json")
    want = expected("healthy")
    assert set(raw.columns) == set(want)
    for key, (steps, values) in raw.columns.items():
        np.testing.assert_array_equal(steps, np.arange(1, 11), err_msg=key)
        np.testing.assert_allclose(values, want[key], rtol=0, atol=1e-10, err_msg=key)


def test_canonical_columns():
    run = read_run(FIX / "healthy" / "history.json")
    assert run.format == "keras"
    assert {"loss", "eval_loss", "lr", "eval_accuracy"} <= set(run.series)
    np.testing.assert_array_equal(run.series["eval_loss"].values, expected("healthy")["val_loss"])
    np.testing.assert_array_equal(run.series["lr"].values, expected("healthy")["learning_rate"])


def test_verdicts(run_cli):
    code, out, _ = run_cli("epoch", FIX / "healthy" / "history.json", "--json")
    assert code == 0 and json.loads(out)["reports"][0]["verdict"] == "PASS"
    code, out, _ = run_cli("epoch", FIX / "hot" / "history.json", "--json")
    ids = {f["id"] for f in json.loads(out)["reports"][0]["findings"]}
    assert code == 1 and "TP-NAN" in ids


def test_validation_freq_places_val_columns_at_their_epochs(tmp_path):
    log = tmp_path / "history.json"
    log.write_text(json.dumps({"loss": [4.0, 3.0, 2.5, 2.0, 1.8, 1.6], "val_loss": [2.9, 2.1]}))
    raw = keras_history.read(log)
    assert raw.columns["val_loss"][0].tolist() == [3.0, 6.0]
    assert any("validation_freq=3" in n for n in raw.notes)
    log.write_text(json.dumps({"loss": [4.0, 3.0, 2.5, 2.0, 1.8, 1.6], "val_loss": [2.9, 2.1, 2.0, 1.9]}))
    raw = keras_history.read(log)
    assert "val_loss" not in raw.columns and any("fit no validation_freq" in n for n in raw.notes)


def test_sniff_claims_histories_and_nothing_else():
    for run, name in (("healthy", "history.json"), ("healthy", "wrapped.json"), ("healthy", "pandas.json"),
                      ("hot", "history.json")):
        assert detect(FIX / run / name).name == "keras", name
    assert detect(FIX / "healthy" / "pandas.csv").name == "csv"
    assert detect(FIX / "healthy" / "expected.json") is None  # an object, but no column opens it
    fixtures = Path(__file__).parent / "fixtures"
    for log in fixtures.rglob("*.json*"):
        if "keras_history" not in log.parts and log.is_file():
            fmt = detect(log)
            assert fmt is None or fmt.name != "keras", log


def test_doctor_finds_the_history(run_cli, tmp_path):
    shutil.copy(FIX / "hot" / "history.json", tmp_path / "history.json")
    code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    assert [(Path(r["file"]).name, r["verdict"]) for r in doc["reports"]] == [("history.json", "FAIL")]
    assert code == 1


@pytest.mark.parametrize("body", [b'{"loss": [1.0, 0.9, 0.8', b'{"loss": "high", "val_loss": "low"}',
                                  b'{"loss": {"first": 1.0}}', b"[1, 2, 3]", b'{"history": []}'])
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, body):
    log = tmp_path / "history.json"
    log.write_bytes(body)
    code, out, err = run_cli("epoch", log, "--format", "keras")
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
