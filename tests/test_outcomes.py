"""Every report states its outcome once, and the statement agrees with its findings:
PASS only beside no FAIL/WARN/NOT-CHECKED, with the ran/skipped lists the report
carries; NOT-CHECKED only when nothing that counts ran. Checked through the CLI for
every rule group (single_run, compare, doctor --baseline, preflight, tokenizer, data,
env) and for watch's stall amendment."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import ROOT
from trainproof.engine import Outcome, amend, judge_run
from trainproof.examples import run_from
from trainproof.rules.base import statements
from trainproof.rules.live import STALL

GALLERY = ROOT / "examples" / "gallery"
PASS_IDS = {s.passed.id for s in statements().values() if s.passed is not None}
NO_STATEMENT = {s.scope.split(":")[1] for s in statements().values() if s.passed is None and ":" in s.scope}
UNCHECKED_IDS = {s.nothing_checked.id for s in statements().values() if s.nothing_checked is not None}


def one_statement(report: dict) -> None:
    """The invariant this module is about, on one JSON report."""
    findings = report["findings"]
    passed = [f for f in findings if f["id"] in PASS_IDS]
    unchecked = [f for f in findings if f["level"] == "NOT-CHECKED"]
    verdict = report["verdict"]
    if report["kind"] in NO_STATEMENT:  # each check's own PASS finding says what was measured
        assert not passed and len(unchecked) <= sum(1 for f in findings if f["id"].startswith("TP-ENV-"))
    elif verdict == "PASS":
        assert len(passed) == 1 and not unchecked, [f["id"] for f in findings]
        stated = passed[0]["values"]
        assert sorted(stated["ran"].split(", ")) == sorted(report["checks"]["ran"])
        skipped = report["checks"]["skipped"]
        assert stated["skipped"] == ("; ".join(f"{k} ({v})" for k, v in sorted(skipped.items())) or "none")
    elif verdict in ("FAIL", "WARN"):
        assert not passed and not any(f["id"] in UNCHECKED_IDS for f in findings), [f["id"] for f in findings]
    else:
        assert not passed and len(unchecked) == 1, [f["id"] for f in findings]


def cli_json(run_cli, *argv) -> dict:
    _code, out, _err = run_cli(*argv, "--json")
    doc = json.loads(out)
    for r in doc["reports"]:
        one_statement(r)
    return doc


def ids(doc: dict) -> list[str]:
    return [f["id"] for r in doc["reports"] for f in r["findings"]]


def test_doctor_baseline_never_prints_pass_beside_a_fail(run_cli):
    doc = cli_json(run_cli, "doctor", GALLERY / "bad_labels" / "trainer_state.json",
                   "--baseline", GALLERY / "healthy" / "trainer_state.json")
    (rep,) = doc["reports"]
    assert rep["verdict"] == "FAIL" and "TP-END-EXCESS" in ids(doc)
    assert "TP-PASS" not in ids(doc)
    _code, text, _ = run_cli("doctor", GALLERY / "bad_labels" / "trainer_state.json",
                             "--baseline", GALLERY / "healthy" / "trainer_state.json")
    assert "[PASS]" not in text


def test_doctor_baseline_pass_states_single_run_and_compare_checks_once(run_cli):
    doc = cli_json(run_cli, "doctor", GALLERY / "healthy" / "seed43" / "trainer_state.json",
                   "--baseline", GALLERY / "healthy" / "trainer_state.json")
    (rep,) = doc["reports"]
    assert rep["verdict"] == "PASS"
    assert ids(doc).count("TP-PASS") == 1 and "TP-CMP-PASS" not in ids(doc)
    ran = next(f for f in rep["findings"] if f["id"] == "TP-PASS")["values"]["ran"]
    assert "compare:end-ratio" in ran and "divergence" in ran


@pytest.mark.parametrize("config", ["healthy", "nan", "lr_hot", "overfit"])
def test_epoch_states_once(run_cli, config):
    cli_json(run_cli, "epoch", GALLERY / config / "trainer_state.json")


def test_epoch_not_checked_and_no_loss_state_once(run_cli, tmp_path):
    short = tmp_path / "short.jsonl"
    short.write_text('{"step": 1, "loss": 2.0}\n')
    assert cli_json(run_cli, "epoch", short)["reports"][0]["verdict"] == "NOT-CHECKED"
    other = tmp_path / "other.jsonl"
    other.write_text('{"step": 1, "acc": 0.5}\n{"step": 2, "acc": 0.6}\n')
    assert ids(cli_json(run_cli, "epoch", other)) == ["TP-NO-LOSS"]


def test_compare_states_once(run_cli):
    doc = cli_json(run_cli, "compare", GALLERY / "healthy" / "trainer_state.json",
                   GALLERY / "healthy" / "seed43" / "trainer_state.json",
                   GALLERY / "lr_hot" / "trainer_state.json")
    assert ids(doc).count("TP-CMP-PASS") <= 1


@pytest.mark.parametrize("name", ["sharegpt.jsonl", "alpaca.json", "preference.jsonl"])
def test_preflight_states_once(run_cli, name):
    cli_json(run_cli, "preflight", ROOT / "tests" / "fixtures" / "preflight" / name)


def test_preflight_empty_dataset_states_once(run_cli, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert ids(cli_json(run_cli, "preflight", empty)) == ["TP-PRE-NO-RECORDS"]


def test_tokenizer_states_once(run_cli, tmp_path):
    pytest.importorskip("tokenizers")
    from tests.test_tokenizer import corpus, train_bpe, transcripts

    tok = train_bpe(tmp_path / "tokenizer.json")
    tr = transcripts(tmp_path / "t.jsonl", [(t, None) for t in corpus(40)])
    assert "TP-TOK-PASS" in ids(cli_json(run_cli, "tokenizer", tok, tr))
    blank = transcripts(tmp_path / "blank.jsonl", [("   ", None)])
    cli_json(run_cli, "tokenizer", tok, blank)


def test_data_states_once(run_cli):
    if importlib.util.find_spec("soundfile") is None:
        pytest.skip("soundfile is not installed")
    cli_json(run_cli, "data", ROOT / "tests" / "fixtures" / "data" / "espeak" / "manifest.jsonl")


def test_env_checkpoint_states_once(run_cli):
    doc = cli_json(run_cli, "env", "--checkpoint", ROOT / "tests" / "fixtures" / "env" / "hf" / "checkpoint-2")
    (ckpt,) = [r for r in doc["reports"] if r["kind"] == "checkpoint"]
    assert ckpt["verdict"] != "PASS" or [f["id"] for f in ckpt["findings"]].count("TP-ENV-CKPT-OK") == 1


def _as_json(rep) -> dict:
    from trainproof.render.jsonout import report_dict

    return report_dict(rep)


def test_watch_stall_replaces_the_pass_statement():
    run = run_from({"loss": [3.0 - 0.02 * i for i in range(40)]})
    judged = judge_run(run)
    assert judged.verdict.value == "PASS"
    stalled = STALL.finding(judged.findings[0].location, idle=400.0, timeout=300.0, step=40)
    rep = amend(judged, "single_run", Outcome(findings=[stalled], ran=["stall"]))
    assert rep.verdict.value == "WARN" and "TP-PASS" not in {f.rule_id for f in rep.findings}
    one_statement(_as_json(rep))
    calm = amend(judged, "single_run", Outcome(ran=["stall"]))
    one_statement(_as_json(calm))
    assert "stall" in next(f for f in calm.findings if f.rule_id == "TP-PASS").values["ran"]


def test_rules_never_import_the_engine():
    src = ROOT / "src" / "trainproof" / "rules"
    offenders = [p.name for p in Path(src).glob("*.py") if "trainproof.engine" in p.read_text()]
    assert offenders == []
