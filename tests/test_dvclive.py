"""DVCLive run directories written by the real library (tests/fixtures/dvclive,
scripts/fixtures/make_dvclive_fixtures.py): the series read equal what the script
logged, `inf` text read as infinity, the directory judged once by doctor (never its
metrics.json or TSVs on their own), bad rows counted and never fatal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.discover import discover
from trainproof.model import InputError
from trainproof.parsers import detect, dvclive, read_run

FIX = Path(__file__).parent / "fixtures" / "dvclive"
EXPECTED = json.loads((FIX / "expected.json").read_text())
RUNS = ("healthy", "diverging", "hf")


@pytest.mark.parametrize("run", RUNS)
def test_series_equal_what_the_script_logged(run):
    raw = dvclive.read(FIX / run)
    logged = EXPECTED[run]
    assert set(raw.columns) == {*logged, "timestamp"} if run != "hf" else set(logged)
    for key, pts in logged.items():
        steps, values = raw.columns[key]
        np.testing.assert_array_equal(steps, [p[0] for p in pts], err_msg=key)
        np.testing.assert_array_equal(values, [float(p[1]) for p in pts], err_msg=key)
    assert raw.records == sum(map(len, logged.values()))


def test_canonical_series_and_clock():
    run = read_run(FIX / "healthy")
    assert run.format == "dvclive"
    assert {"loss", "eval_loss", "lr", "grad_norm", "time"} <= set(run.series)
    np.testing.assert_array_equal(run.series["eval_loss"].steps, [9, 19, 29, 39])
    clock = run.series["time"].values
    assert 1.7e9 < clock[0] < 2.2e9 and np.all(np.diff(clock) >= 0)  # seconds, not ms


def test_hf_callback_directory():
    """transformers' DVCLiveCallback: `loss` per logging step, not the end-of-training mean
    it also writes as train/loss; steps count the callback's log calls."""
    run = read_run(FIX / "hf")
    assert {"loss", "eval_loss", "lr", "grad_norm", "epoch"} <= set(run.series)
    np.testing.assert_array_equal(run.series["loss"].steps, [p[0] for p in EXPECTED["hf"]["loss"]])
    np.testing.assert_array_equal(run.series["eval_loss"].steps, [2, 5, 8])
    assert "time" not in run.series  # the callback logs no timestamps


def test_diverging_run_fails_on_the_inf_dvclive_wrote():
    run = read_run(FIX / "diverging")
    loss = run.series["loss"].values
    assert np.isfinite(loss[:6]).all() and np.isposinf(loss[6:]).all()


def test_detect_claims_the_directory_only():
    assert detect(FIX / "healthy").name == "dvclive"
    assert detect(FIX / "healthy" / "plots") is None
    assert detect(FIX / "healthy" / "plots" / "metrics" / "train" / "loss.tsv").name == "csv"
    assert detect(FIX) is None  # the folder of runs is not itself a run


def test_doctor_judges_the_directory_once(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(FIX / "healthy", proj / "dvclive")
    (proj / "train.py").write_text("print('hi')\n")
    found = discover(proj, 50)
    assert [(p.name, f.name) for p, f in found.logs] == [("dvclive", "dvclive")]
    assert found.records == {} and found.not_judged == []


def test_bad_rows_counted_not_fatal(tmp_path):
    run = shutil.copytree(FIX / "healthy", tmp_path / "run")
    loss = run / "plots" / "metrics" / "train" / "loss.tsv"
    with open(loss, "ab") as fh:
        fh.write(b"1796322015999\tforty\t1.0\n" + b"x" * 10_000 + b"\n1796322016")  # torn last row
    (run / "plots" / "metrics" / "odd.tsv").write_bytes(b"a\tb\n1\t2\n")
    raw = dvclive.read(run)
    assert len(raw.columns["train/loss"][0]) == len(EXPECTED["healthy"]["train/loss"])
    assert "3 malformed row(s) in plots/metrics/train/loss.tsv skipped" in raw.notes
    assert "plots/metrics/odd.tsv: no `step` column in its header; not read" in raw.notes


def test_not_a_dvclive_directory_is_one_line(tmp_path):
    with pytest.raises(InputError, match="not a DVCLive directory"):
        dvclive.read(tmp_path)
    (tmp_path / "plots" / "metrics").mkdir(parents=True)
    with pytest.raises(InputError, match="no metric files"):
        dvclive.read(tmp_path)
    assert not dvclive.sniff_dir(tmp_path)
