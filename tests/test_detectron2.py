"""Detectron2 metrics.json, a SYNTHETIC file in JSONWriter's exact write format
(tests/fixtures/detectron2, scripts/fixtures/make_detectron2_fixtures.py; detectron2
does not install here): every column equals the lines written, at `iteration`; `time`
(seconds per iteration) read as step_time, never as a clock; evaluation lines written
out of order (an evaluation between two writes) kept at their own iteration; the sniff
claims these lines and no other fixture; doctor finds metrics.json in an output dir."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from trainproof.parsers import detect, detectron2, read_run

FIX = Path(__file__).parent / "fixtures" / "detectron2"
LOG = FIX / "SYNTHETIC_metrics.json"
LINES = json.loads((FIX / "expected.json").read_text())["lines"]


def test_columns_equal_the_lines_written():
    raw = detectron2.read(LOG)
    keys = {k for line in LINES for k in line} - {"iteration"}
    assert set(raw.columns) == (keys - {"time"}) | {"step_time"}
    for key in keys:
        rows = [line for line in LINES if key in line]
        steps, values = raw.columns["step_time" if key == "time" else key]
        np.testing.assert_array_equal(steps, [r["iteration"] for r in rows], err_msg=key)
        np.testing.assert_array_equal(values, [r[key] for r in rows], err_msg=key)
    assert raw.step_column == "iteration"


def test_time_is_seconds_per_iteration_not_a_clock():
    run = read_run(LOG)
    assert run.format == "detectron2"
    assert "time" not in run.series and "step_time" in run.series
    assert 0.2 < float(np.median(run.series["step_time"].values)) < 0.3
    assert "loader_time" in run.series  # data_time: with step_time, the loader-share rule can run
    assert any("seconds per iteration" in n for n in run.notes)
    np.testing.assert_array_equal(run.series["loss"].values, [r["total_loss"] for r in LINES if "total_loss" in r])


def test_an_evaluation_written_after_a_later_iteration_stays_at_its_own():
    order = [line["iteration"] for line in LINES]
    assert order.index(49) == order.index(59) + 1  # what JSONWriter wrote
    run = read_run(LOG)
    ap = [r for r in LINES if "bbox/AP" in r]
    raw = detectron2.read(LOG)
    assert raw.columns["bbox/AP"][0].tolist() == [r["iteration"] for r in ap] == [49, 99, 149, 199]
    assert "resumes" not in run.meta  # no column went back: nothing looks resumed


def test_sniff_claims_detectron2_lines_and_nothing_else(tmp_path):
    assert detect(LOG).name == "detectron2"
    named = tmp_path / "metrics.json"
    shutil.copy(LOG, named)
    assert detect(named).name == "detectron2"
    fixtures = Path(__file__).parent / "fixtures"
    for log in fixtures.rglob("*.json*"):
        if "detectron2" not in log.parts and log.is_file():
            fmt = detect(log)
            assert fmt is None or fmt.name != "detectron2", log


def test_doctor_finds_metrics_json(run_cli, tmp_path):
    out_dir = tmp_path / "output"
    out_dir.mkdir()
    shutil.copy(LOG, out_dir / "metrics.json")
    code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    assert [(Path(r["file"]).name, r["format"]) for r in doc["reports"]] == [("metrics.json", "detectron2")]
    assert code == 0


def test_bad_input_is_exit_2(run_cli, tmp_path):
    log = tmp_path / "metrics.json"
    log.write_bytes(b'{"iteration": 19, "total_loss": \n\x00\x00garbage\n')
    code, out, err = run_cli("epoch", log, "--format", "detectron2", "--json")
    assert code == 2 and "Traceback" not in out + err
