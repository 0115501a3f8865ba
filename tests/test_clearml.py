"""ClearML offline sessions written by the real SDK (tests/fixtures/clearml,
scripts/fixtures/make_clearml_fixtures.py): the series read equal what was reported,
from the session folder, its zip and metrics.jsonl alike; NaN/Inf kept or replaced
as ClearML wrote them; the sniff claims ClearML's event arrays and nothing else."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import clearml, detect

FIX = Path(__file__).parent / "fixtures" / "clearml"
EXPECTED = json.loads((FIX / "expected.json").read_text())
SESSIONS = ("healthy", "nonfinite", "nonfinite_default")


def assert_logged(columns: dict, session: str) -> None:
    assert set(columns) == set(EXPECTED[session])
    for key, (steps, values) in columns.items():
        pts = EXPECTED[session][key]
        np.testing.assert_array_equal(steps, [p[0] for p in pts], err_msg=key)
        np.testing.assert_array_equal(values, [float(p[1]) for p in pts], err_msg=key)


@pytest.mark.parametrize("session", SESSIONS)
def test_series_equal_what_the_script_reported(session):
    raw = clearml.read(FIX / session)
    assert_logged(raw.columns, session)
    assert raw.notes[0] == f"ClearML task '{session}'"
    assert_logged(clearml.read(FIX / session / "metrics.jsonl").columns, session)


def test_the_zip_clearml_wrote_reads_as_its_folder():
    raw = clearml.read(FIX / "nonfinite.zip")
    assert_logged(raw.columns, "nonfinite")
    assert raw.notes == clearml.read(FIX / "nonfinite").notes


def test_nan_and_inf_kept_when_clearml_writes_them():
    steps, loss = clearml.read(FIX / "nonfinite").columns["loss/train"]
    assert np.isnan(loss[steps == 20]).all() and np.isfinite(loss[steps != 20]).all()
    steps, gn = clearml.read(FIX / "nonfinite").columns["grad_norm"]
    assert np.isposinf(gn[steps == 25]).all()


def test_clearml_default_zeros_are_named_in_notes():
    raw = clearml.read(FIX / "nonfinite_default")
    steps, loss = raw.columns["loss/train"]
    assert loss[steps == 20].tolist() == [0.0]
    assert any("NaN values were written as 0.0" in n for n in raw.notes)
    assert any("inf values were written as 0.0" in n for n in raw.notes)


def test_summary_values_and_plots_are_not_points():
    raw = clearml.read(FIX / "healthy")
    assert "final_loss" not in raw.columns and "Summary/final_loss" not in raw.columns
    assert "1 single value(s) (report_single_value) are a summary, not points" in raw.notes
    assert raw.records == sum(len(v) for v in EXPECTED["healthy"].values())


@pytest.mark.parametrize(("session", "code", "verdict"), [("healthy", 0, "PASS"), ("nonfinite", 1, "FAIL"),
                                                          ("nonfinite.zip", 1, "FAIL")])
def test_epoch(run_cli, session, code, verdict):
    got, out, _ = run_cli("epoch", FIX / session, "--json")
    report = json.loads(out)["reports"][0]
    assert got == code and report["verdict"] == verdict and report["format"] == "clearml"
    if verdict == "FAIL":
        # one isolated inf norm while the loss falls: the scaler's skip (INFO, #17)
        assert {"TP-NAN", "TP-NAN-GRAD-SKIPPED"} <= {f["id"] for f in report["findings"]}


def test_loss_variants_map_to_loss_and_eval_loss(run_cli):
    _, out, _ = run_cli("epoch", FIX / "healthy", "--json")
    ran = json.loads(out)["reports"][0]["checks"]["ran"]
    assert "overfit" in ran  # needs eval_loss: loss/validation was recognised


def test_doctor_judges_each_session_once(run_cli, tmp_path):
    for s in SESSIONS:
        shutil.copytree(FIX / s, tmp_path / "offline" / s)
    shutil.copy(FIX / "nonfinite.zip", tmp_path / "offline")
    code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    got = {r["file"].removeprefix(str(tmp_path) + "/"): r["verdict"] for r in doc["reports"]}
    assert got == {"offline/healthy": "PASS", "offline/nonfinite": "FAIL", "offline/nonfinite_default": "PASS"}
    assert doc["not_judged"] == [] and code == 1


def test_sniff_claims_event_arrays_and_nothing_else():
    head = (FIX / "healthy" / "metrics.jsonl").read_bytes()[:8192]
    assert clearml.sniff("metrics.jsonl", head)  # a first line longer than the head
    assert detect(FIX / "healthy" / "metrics.jsonl").name == "clearml"
    assert detect(FIX / "healthy" / "log.jsonl") is None  # console lines, not metrics
    core = Path(__file__).parent / "fixtures" / "core" / "jsonl"
    for log in core.glob("*.jsonl"):
        assert detect(log).name == "jsonl"
    assert detect(FIX / "healthy" / "task.json") is None


def test_one_event_object_a_line(tmp_path):
    """An export that writes one event per line instead of one batch per line."""
    events = [ev for line in (FIX / "healthy" / "metrics.jsonl").read_text().splitlines()
              for ev in json.loads(line)]
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(ev) + "\n" for ev in events))
    assert detect(log).name == "clearml"
    assert_logged(clearml.read(log).columns, "healthy")


def test_malformed_and_half_written_lines_are_notes(run_cli, tmp_path):
    log = tmp_path / "metrics.jsonl"
    body = (FIX / "healthy" / "metrics.jsonl").read_bytes()
    log.write_bytes(body + b'[{"broken\n[{"timestamp": 1, "type": "training_stats_scalar", "iter"')
    raw = clearml.read(log)
    assert_logged(raw.columns, "healthy")
    assert "1 malformed line(s) skipped" in raw.notes
    assert any("half-written last line" in n for n in raw.notes)
    code, out, _ = run_cli("epoch", log, "--json")
    assert code == 0 and json.loads(out)["reports"][0]["verdict"] == "PASS"


def test_bad_zips_are_exit_2(run_cli, tmp_path):
    cut = tmp_path / "offline-cut.zip"
    cut.write_bytes((FIX / "nonfinite.zip").read_bytes()[:600])
    flipped = tmp_path / "offline-flipped.zip"
    data = bytearray((FIX / "nonfinite.zip").read_bytes())
    for i in range(200, 1200, 7):
        data[i] ^= 0x5A  # inside the deflated metrics.jsonl
    flipped.write_bytes(bytes(data))
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("metrics.jsonl.txt", "x")
    for path in (cut, flipped, other):
        code, _, err = run_cli("epoch", path, "--format", "clearml")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
