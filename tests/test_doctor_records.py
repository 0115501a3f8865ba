"""Two records of one run in one directory (Lightning's CSVLogger and TensorBoardLogger
share `lightning_logs/version_N/` when given the same save_dir, name and version) are one
run in doctor, checked to agree; records that hold different curves stay two runs.

The files are the real Lightning evidence runs (scripts/make_evidence_lightning.py),
laid out the way Lightning lays them out when both loggers share a version directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from tests.conftest import ROOT
from trainproof.model import Run, Series
from trainproof.records import AGREE_REL_TOL, loss_disagreement, merge_records, primary_first

LIGHTNING = ROOT / "evidence" / "lightning"


def _version_dir(tmp_path: Path, events_of: str, csv_of: str) -> Path:
    run = tmp_path / "lightning_logs" / "version_0"
    run.mkdir(parents=True)
    for f in (LIGHTNING / events_of / "tb").iterdir():
        shutil.copy(f, run / f.name)
    shutil.copy(LIGHTNING / csv_of / "csv" / "metrics.csv", run / "metrics.csv")
    return run


def _doctor(run_cli, path: Path) -> tuple[int, dict]:
    code, out, _ = run_cli("doctor", path, "--json")
    return code, json.loads(out)


def test_csv_and_event_file_of_one_run_are_one_report(run_cli, tmp_path):
    _version_dir(tmp_path, "healthy", "healthy")
    code, doc = _doctor(run_cli, tmp_path)
    [report] = doc["reports"]
    assert code == 0 and report["verdict"] == "PASS"
    assert report["file"].endswith("version_0") and report["format"] == "tfevents"
    assert any("one run, 2 records that hold the same 60 loss values" in n for n in report["notes"])


def test_a_broken_run_recorded_twice_fails_once(run_cli, tmp_path):
    _version_dir(tmp_path, "diverging", "diverging")
    code, doc = _doctor(run_cli, tmp_path)
    [report] = doc["reports"]
    assert code == 1 and report["verdict"] == "FAIL"


def test_records_of_different_runs_are_judged_apart_and_say_why(run_cli, tmp_path):
    _version_dir(tmp_path, "diverging", "healthy")
    code, doc = _doctor(run_cli, tmp_path)
    by_format = {r["format"]: r for r in doc["reports"]}
    assert code == 1 and sorted(by_format) == ["csv", "tfevents"]
    assert by_format["tfevents"]["verdict"] == "FAIL" and by_format["csv"]["verdict"] == "PASS"
    assert any("not the same run as" in n and "loss point 1" in n for n in by_format["csv"]["notes"])


def _run(path: str, loss: list[float], **extra: list[float]) -> Run:
    steps = np.arange(1, len(loss) + 1, dtype=float)
    series = {"loss": Series("loss", steps, np.array(loss))}
    series.update({k: Series(k, steps[: len(v)], np.array(v)) for k, v in extra.items()})
    return Run(path=path, format="csv", series=series, records=len(loss), columns=tuple(series))


def test_float32_copies_agree_and_other_numbers_do_not():
    loss = [2.5, 2.1, float("nan"), 1.7]
    as_float32 = [float(np.float32(x)) for x in loss]
    assert loss_disagreement(_run("a", loss), _run("b", as_float32)) is None
    nudged = [2.5, 2.1 * (1 + 10 * AGREE_REL_TOL), float("nan"), 1.7]
    assert "loss point 2" in loss_disagreement(_run("a", loss), _run("b", nudged))
    assert "loss point 3" in loss_disagreement(_run("a", loss), _run("b", [2.5, 2.1, 1.9, 1.7]))  # NaN vs 1.9
    assert loss_disagreement(_run("a", loss), _run("b", loss[:3])) == "4 vs 3 loss points"


def test_the_richer_record_leads_and_lends_its_extra_series():
    csv = _run("m.csv", [3.0, 2.0, 1.0], eval_loss=[2.5, 1.5])
    events = _run("events", [3.0, 2.0, 1.0], lr=[1e-3, 1e-3, 5e-4], grad_norm=[1.0, 0.9, 0.8])
    primary, other = primary_first([csv, events])
    assert primary is events
    merged = merge_records(primary, [other], "run_dir")
    assert merged.path == "run_dir" and set(merged.series) == {"loss", "lr", "grad_norm", "eval_loss"}
    assert merged.series["eval_loss"] is csv.series["eval_loss"]
    assert any("eval_loss read from m.csv" in n for n in merged.notes)


def test_a_wandb_run_that_synced_tensorboard_is_one_run(run_cli):
    """Written by wandb 0.31.0 with sync_tensorboard=True (scripts/fixtures/make_records_fixtures.py):
    the .wandb log and the event files wandb keeps inside its run directory are one run."""
    code, doc = _doctor(run_cli, ROOT / "tests" / "fixtures" / "records" / "wandb_tb_sync")
    [report] = doc["reports"]
    assert code == 0 and report["verdict"] == "PASS" and report["format"] == "wandb"
    [note] = [n for n in report["notes"] if n.startswith("one run")]
    assert "same 40 loss values" in note and note.count("files/tb") >= 1
