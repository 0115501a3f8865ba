"""The CLI as users and CI call it: the installed console script, `python -m`, exit
codes, and every output option on every command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from trainproof import __version__

from .conftest import FIXTURES

HEALTHY = FIXTURES / "hf_regression/trainer_state.json"
NONFINITE = FIXTURES / "hf_nonfinite/trainer_state.json"


def _console(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("trainproof")
    if exe is None:
        pytest.skip("the trainproof console script is not installed (pip install -e .)")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path,code", [(HEALTHY, 0), (NONFINITE, 1), (FIXTURES / "missing.json", 2)])
def test_exit_codes_through_console_script(path, code):
    proc = _console("epoch", str(path))
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr


def test_python_dash_m_and_version():
    proc = subprocess.run([sys.executable, "-m", "trainproof", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"trainproof {__version__}"
    proc = subprocess.run([sys.executable, "-m", "trainproof", "epoch", str(NONFINITE)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "TP-NAN-GRAD" in proc.stdout


def test_diagnose_alias_and_rule_docs(run_cli):
    code, out, _ = run_cli("diagnose", FIXTURES / "hf_regression")
    assert code == 0 and "hf_regression/trainer_state.json" in out
    code, out, _ = run_cli("rule", "TP-DIVERGE")
    assert code == 0 and "TP-DIVERGE" in out and "1.5" in out
    code, out, err = run_cli("rule", "TP-NOPE")
    assert code == 2 and "unknown rule" in err
    code, out, _ = run_cli("rules")
    assert "TP-GRAD-SPIKE" in out and "TP-CMP-PASS" in out


def test_text_output_is_ascii(run_cli):
    code, out, _ = run_cli("epoch", NONFINITE)
    assert code == 1
    out.encode("ascii")
    assert "VERDICT: FAIL" in out and "[FAIL] TP-NAN-GRAD" in out


def test_json_schema_v3_envelope(run_cli):
    code, out, _ = run_cli("epoch", NONFINITE, "--json")
    doc = json.loads(out)
    assert doc["schema_version"] == 3 and doc["trainproof_version"] == __version__
    assert doc["worst_verdict"] == "FAIL" and doc["error"] is None
    rep = doc["reports"][0]
    assert set(rep) >= {"file", "format", "verdict", "findings", "checks"}
    for f in rep["findings"]:
        assert set(f) >= {"id", "level", "message", "evidence", "source"}
        assert f["source"] == "single_run"
    assert set(rep["checks"]) == {"ran", "skipped"}


@pytest.mark.parametrize("command", [["epoch", str(HEALTHY)], ["doctor", str(FIXTURES)],
                                     ["compare", str(HEALTHY), str(FIXTURES / "jsonl/train_log.jsonl")]])
def test_every_output_option_on_every_log_command(run_cli, tmp_path, command):
    sarif, html, junit = tmp_path / "r.sarif", tmp_path / "r.html", tmp_path / "r.xml"
    code, out, _ = run_cli(*command, "--sarif", sarif, "--html", html, "--junit", junit, "--github")
    assert code in (0, 1)
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script src" not in page and "http" not in page
    assert junit.read_text().startswith("<testsuites")
