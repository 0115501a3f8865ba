"""SARIF that GitHub code scanning accepts, checked by the offline checker in
../shared/tools (the official schema plus GitHub's ingestion rules)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import FIXTURES, SHARED, need_shared


def _check(path) -> str:
    tool = need_shared(SHARED / "tools/check_sarif.py")
    schema = need_shared(SHARED / "schemas/sarif-schema-2.1.0.json")
    proc = subprocess.run([sys.executable, str(tool), str(path), str(schema)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("target", ["corpus", "fixtures"])
def test_doctor_sarif_passes_the_checker(run_cli, tmp_path, corpus, target):
    root = corpus if target == "corpus" else FIXTURES
    out = tmp_path / "doctor.sarif"
    run_cli("doctor", root, "--sarif", out)
    assert _check(out).strip().endswith("OK")
    doc = json.loads(out.read_text())
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "TP-DIVERGE" in ids and len(ids) == len(set(ids))
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        assert res["partialFingerprints"]["primaryLocationLineHash"]
        uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert not uri.startswith("/") and ".." not in uri.split("/")
    levels = {res["ruleId"]: res["level"] for res in run["results"]}
    if target == "corpus":
        assert levels["TP-DIVERGE"] == "error" and levels["TP-GRAD-SPIKE-ISOLATED"] == "note"


def test_relative_paths_inside_cwd_map_to_the_repo(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES.parents[2])
    out = tmp_path / "x.sarif"
    run_cli("epoch", "tests/fixtures/core/hf_nonfinite/trainer_state.json", "--sarif", out)
    run = json.loads(out.read_text())["runs"][0]
    loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "tests/fixtures/core/hf_nonfinite/trainer_state.json"}
    assert "originalUriBaseIds" not in run
    _check(out)


def test_could_not_judge_is_a_notification_not_a_result(run_cli, tmp_path):
    log = tmp_path / "short.jsonl"
    log.write_text('{"step": 1, "loss": 1.0}\n')
    out = tmp_path / "nc.sarif"
    code, _, _ = run_cli("epoch", log, "--sarif", out)
    run = json.loads(out.read_text())["runs"][0]
    assert code == 2 and run["results"] == []
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes and "TP-NOT-CHECKED" in notes[0]["message"]["text"]
    _check(out)
