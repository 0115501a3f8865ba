"""Sacred FileStorageObserver runs written by the real library (tests/fixtures/sacred,
scripts/fixtures/make_sacred_fixtures.py): metrics.json's series equal what the script
logged, run.json's status a note, doctor finds each run's metrics.json (and not its
run.json or config.json), bad or torn files are one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.discover import discover
from trainproof.model import InputError
from trainproof.parsers import detect, read_run, sacred

FIX = Path(__file__).parent / "fixtures" / "sacred"
RUNS = FIX / "runs"
EXPECTED = json.loads((FIX / "expected.json").read_text())


@pytest.mark.parametrize("run_id", ["1", "2"])
def test_series_equal_what_the_script_logged(run_id):
    raw = sacred.read(RUNS / run_id / "metrics.json")
    logged = EXPECTED[run_id]["metrics"]
    assert set(raw.columns) == set(logged)
    for key, pts in logged.items():
        steps, values = raw.columns[key]
        np.testing.assert_array_equal(steps, [p[0] for p in pts], err_msg=key)
        np.testing.assert_array_equal(values, [float(p[1]) for p in pts], err_msg=key)
    assert raw.meta["status"] == EXPECTED[run_id]["status"]


def test_canonical_series_and_status_notes():
    healthy = read_run(RUNS / "1" / "metrics.json")
    assert healthy.format == "sacred"
    assert {"loss", "eval_loss", "lr", "grad_norm"} <= set(healthy.series)
    np.testing.assert_array_equal(healthy.series["eval_loss"].steps, [9, 19, 29, 39])
    assert healthy.notes[0] == "Sacred run of experiment 'toy_regression' (COMPLETED)"
    failed = read_run(RUNS / "2" / "metrics.json")
    assert failed.notes[:2] == ("Sacred run of experiment 'toy_regression' (FAILED)",
                                "the run failed with: FloatingPointError: loss is inf at step 6")
    assert np.isposinf(failed.series["loss"].values[-1])


def test_sniff_claims_metrics_json_only():
    assert detect(RUNS / "1" / "metrics.json").name == "sacred"
    for other in ("run.json", "config.json", "cout.txt"):
        f = detect(RUNS / "1" / other)
        assert f is None or f.name != "sacred", other


def test_doctor_finds_each_run(tmp_path):
    shutil.copytree(RUNS, tmp_path / "runs")
    found = discover(tmp_path, 50)
    assert [(p.relative_to(tmp_path).as_posix(), f.name) for p, f in found.logs] == [
        ("runs/1/metrics.json", "sacred"), ("runs/2/metrics.json", "sacred")]


def test_torn_and_odd_files(tmp_path):
    whole = (RUNS / "1" / "metrics.json").read_bytes()
    torn = tmp_path / "metrics.json"
    torn.write_bytes(whole[: len(whole) // 2])
    assert detect(torn).name == "sacred"
    with pytest.raises(InputError, match="truncated or corrupt Sacred"):
        sacred.read(torn)
    torn.write_text('{"loss": {"steps": [0, 1, 2], "values": [1.0, "x", 0.5]}, '
                    '"odd": {"steps": [0], "values": [1, 2]}, "text": 3}')
    raw = sacred.read(torn)  # no run.json beside: no status note
    np.testing.assert_array_equal(raw.columns["loss"][1], [1.0, 0.5])
    assert raw.notes == ["2 metric(s) without equal-length steps and values lists skipped: 'odd', 'text'",
                         "1 non-numeric value(s) in column 'loss' ignored"]
    torn.write_text('{"a": {"steps": [0], "values": [1], "x": 1}, "b": 2}'.replace('"values": [1]', '"values": 3'))
    with pytest.raises(InputError, match="no metric holds steps and values"):
        sacred.read(torn)
