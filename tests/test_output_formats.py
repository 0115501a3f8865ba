"""`--output-format` (one format on standard output, the old flags as aliases),
json-lines, and the GitLab Code Quality report (`--gitlab PATH`), run as a CI job runs
them on the shipped gallery."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from .conftest import ROOT

GALLERY = ROOT / "examples/gallery"
NAN = GALLERY / "nan/trainer_state.json"
LR_HOT = GALLERY / "lr_hot/trainer_state.json"
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_"))}


def tp(*args, cwd=ROOT, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *map(str, args)], capture_output=True, text=True,
                          timeout=180, cwd=cwd, env={**BASE_ENV, "PYTHONPATH": str(ROOT / "src"), **env})


def test_output_format_json_is_the_json_flag():
    a, b = tp("epoch", NAN, "--output-format", "json"), tp("epoch", NAN, "--json")
    assert a.returncode == b.returncode == 1
    strip = lambda d: {k: v for k, v in d.items() if k != "trainproof_version"}  # noqa: E731
    assert strip(json.loads(a.stdout)) == strip(json.loads(b.stdout))
    assert tp("epoch", NAN, "--output-format", "json", "--json").returncode == 1  # one claim, said twice


@pytest.mark.parametrize(("fmt", "check"), [
    ("sarif", lambda out: json.loads(out)["version"] == "2.1.0"),
    ("junit", lambda out: ET.fromstring(out).tag == "testsuites"),
    ("html", lambda out: out.startswith("<!DOCTYPE html>")),
    ("gitlab", lambda out: isinstance(json.loads(out), list)),
    ("text", lambda out: "VERDICT: FAIL" in out),
])
def test_each_format_holds_standard_output_alone(fmt, check):
    r = tp("epoch", NAN, "--output-format", fmt)
    assert r.returncode == 1 and check(r.stdout) and r.stderr == ""


def test_two_formats_on_standard_output_are_refused():
    for extra in (["--json"], ["--junit", "-"], ["--gitlab", "-"]):
        r = tp("epoch", NAN, "--output-format", "sarif", *extra)
        assert r.returncode == 2 and r.stdout == "" and "standard output" in r.stderr


def test_json_lines_one_object_per_finding_then_a_summary():
    r = tp("doctor", "examples/gallery", "--output-format", "json-lines")
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    doc = json.loads(tp("doctor", "examples/gallery", "--json").stdout)
    findings = [f for rep in doc["reports"] for f in rep["findings"]]
    assert [o["type"] for o in objs] == ["finding"] * len(findings) + ["summary"]
    assert [o["id"] for o in objs[:-1]] == [f["id"] for f in findings]
    first = objs[0]
    assert set(first) >= {"schema_version", "command", "file", "verdict", "id", "level", "message",
                          "evidence", "values", "location"}
    assert objs[-1] == {"type": "summary", "schema_version": 3, "command": "doctor", "reports": 18,
                        "worst_verdict": "FAIL", "error": None, "exit_code": 1}


def test_json_lines_when_nothing_could_be_judged():
    r = tp("epoch", GALLERY / "missing.json", "--output-format", "json-lines")
    assert r.returncode == 2
    assert json.loads(r.stdout) == {"type": "summary", "schema_version": 3, "command": "epoch", "reports": 0,
                                    "worst_verdict": None, "error": json.loads(r.stdout)["error"], "exit_code": 2}


# --- GitLab Code Quality ------------------------------------------------------------------

def test_gitlab_report_shape_severity_and_relative_paths(tmp_path):
    out = tmp_path / "gl-code-quality.json"
    r = tp("doctor", GALLERY, "--gitlab", out, cwd=tmp_path, CI_PROJECT_DIR=str(ROOT))
    assert r.returncode == 1 and "VERDICT" in r.stdout  # a side output: the text report stays
    issues = json.loads(out.read_text())
    assert issues and all(set(i) == {"description", "check_name", "fingerprint", "severity", "location"}
                          for i in issues)
    assert {i["severity"] for i in issues} == {"critical", "minor"}  # FAIL and WARN in the gallery
    nan = [i for i in issues if i["check_name"] == "TP-NAN"]
    assert {i["location"]["path"] for i in nan} == {
        "examples/gallery/nan/trainer_state.json", "examples/gallery/nan/seed43/trainer_state.json",
        "examples/gallery/nan/seed44/trainer_state.json"}
    assert all(i["location"]["lines"]["begin"] >= 1 for i in issues)
    assert len({i["fingerprint"] for i in issues}) == len(issues)  # unique


def test_gitlab_fingerprint_survives_a_growing_log(tmp_path):
    """The log cut at step 160 and whole: TP-LOSS-ROSE points at a later step, same issue."""
    run = tmp_path / "run"
    run.mkdir()
    state = json.loads(LR_HOT.read_text())
    whole = list(state["log_history"])
    state["log_history"] = [e for e in whole if e["step"] <= 160 and "train_runtime" not in e]
    (run / "trainer_state.json").write_text(json.dumps(state))
    early = json.loads(tp("epoch", "run/trainer_state.json", "--output-format", "gitlab", cwd=tmp_path).stdout)
    shutil.copy(LR_HOT, run / "trainer_state.json")
    late = json.loads(tp("epoch", "run/trainer_state.json", "--output-format", "gitlab", cwd=tmp_path).stdout)
    assert [i["check_name"] for i in early] == [i["check_name"] for i in late] == ["TP-LOSS-ROSE"]
    assert "(step 160)" in early[0]["description"] and "(step 200)" in late[0]["description"]
    assert early[0]["fingerprint"] == late[0]["fingerprint"]
    assert early[0]["location"] == {"path": "run/trainer_state.json", "lines": {"begin": 1}}


def test_gitlab_refuses_to_overwrite_a_log(tmp_path):
    victim = tmp_path / "log.json"
    victim.write_text('{"log_history": []}')
    r = tp("epoch", NAN, "--gitlab", victim)
    assert r.returncode == 2 and victim.read_text() == '{"log_history": []}'
