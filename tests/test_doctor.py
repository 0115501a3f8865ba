"""doctor's discovery: what it enters, what it skips, and that nothing vanishes."""

from __future__ import annotations

import json
import shutil

from .conftest import FIXTURES


def _tree(tmp_path):
    run = tmp_path / "outputs" / "run1"
    shutil.copytree(FIXTURES / "hf_regression", run)  # trainer_state.json + checkpoint-*/
    for hidden in (".git/logs", ".venv/lib", "node_modules/x", "env/lib/python3.11/site-packages/pkg"):
        d = tmp_path / hidden
        d.mkdir(parents=True)
        shutil.copy(FIXTURES / "jsonl/train_log.jsonl", d / "log.jsonl")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    shutil.copy(FIXTURES / "jsonl/train_log.jsonl", tmp_path / "log.jsonl")
    (tmp_path / "data.jsonl").write_text('{"text": "a dataset, not a log"}\n')
    (tmp_path / "short.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    return tmp_path


def test_doctor_walk_skips_code_and_folds_checkpoints(run_cli, tmp_path):
    root = _tree(tmp_path)
    code, out, _ = run_cli("doctor", root, "--json")
    doc = json.loads(out)
    files = sorted(r["file"].removeprefix(str(root) + "/") for r in doc["reports"])
    assert files == ["log.jsonl", "outputs/run1/trainer_state.json", "short.jsonl"]
    skipped = {r["file"].removeprefix(str(root) + "/"): r["reason"] for r in doc["not_judged"]}
    assert set(skipped) == {"outputs/run1/checkpoint-30/trainer_state.json",
                            "outputs/run1/checkpoint-60/trainer_state.json"}
    assert all("prefix" in why for why in skipped.values())
    short = next(r for r in doc["reports"] if r["file"].endswith("short.jsonl"))
    assert short["verdict"] == "NOT-CHECKED"
    assert code == 0  # discovered-but-too-short files are listed, not fatal


def test_doctor_cap_names_the_skipped(run_cli, tmp_path):
    root = _tree(tmp_path)
    code, out, _ = run_cli("doctor", root, "--max-logs", "1", "--json")
    doc = json.loads(out)
    assert len(doc["reports"]) == 1
    assert sum("cap reached" in r["reason"] for r in doc["not_judged"]) == 2


def test_doctor_latest_checkpoint_when_run_has_no_state(run_cli, tmp_path):
    run = tmp_path / "crashed"
    shutil.copytree(FIXTURES / "hf_regression", run)
    (run / "trainer_state.json").unlink()
    code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    assert [r["file"].split("/")[-2] for r in doc["reports"]] == ["checkpoint-60"]


def test_doctor_with_baseline_adds_compare_findings(run_cli, tmp_path):
    root = _tree(tmp_path)
    base = FIXTURES / "hf_nonfinite/trainer_state.json"
    code, out, _ = run_cli("doctor", root, "--baseline", base, "--json")
    doc = json.loads(out)
    sources = {f["source"] for r in doc["reports"] for f in r["findings"]}
    assert sources == {"single_run", "compare"}


def test_doctor_nothing_found_is_exit_2(run_cli, tmp_path):
    (tmp_path / "README.md").write_text("no logs here")
    code, _, err = run_cli("doctor", tmp_path)
    assert code == 2 and "no training logs found" in err


def test_logs_beside_event_files_are_judged_too(run_cli, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES.parent / "tfevents" / "torch_default", run)
    shutil.copy(FIXTURES / "jsonl/train_log.jsonl", run / "train_log.jsonl")
    _code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    assert sorted(r["format"] for r in doc["reports"]) == ["jsonl", "tfevents"]
