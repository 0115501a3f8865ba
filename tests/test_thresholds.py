"""Every number that can change a verdict is a declared threshold, and the limits a
finding was compared with travel in its JSON `values` (limit_<name>), not only in
its evidence text."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from trainproof.cli import build_parser
from trainproof.commands import registry
from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.rules import catalogue
from trainproof.rules.evalcurve import OVERFIT
from trainproof.rules.live import STALL
from trainproof.rules.timing import STEP_CLIFF

GALLERY = ROOT / "examples" / "gallery"


def _limits_travel(finding: dict) -> None:
    rule = catalogue()[finding["id"]]
    for name, t in rule.thresholds.items():
        assert finding["values"][f"limit_{name}"] == pytest.approx(t.value), (finding["id"], name)


@pytest.mark.parametrize("config", sorted(p.name for p in GALLERY.iterdir() if p.is_dir()))
def test_gallery_findings_carry_their_limits_in_json(run_cli, config):
    _code, out, _ = run_cli("epoch", GALLERY / config / "trainer_state.json", "--json")
    findings = [f for r in json.loads(out)["reports"] for f in r["findings"]]
    assert findings
    for f in findings:
        _limits_travel(f)


def test_compare_findings_carry_their_limits_in_json(run_cli):
    _code, out, _ = run_cli("compare", GALLERY / "healthy" / "trainer_state.json",
                            GALLERY / "bad_labels" / "trainer_state.json", "--json")
    findings = [f for r in json.loads(out)["reports"] for f in r["findings"]]
    assert any(catalogue()[f["id"]].thresholds for f in findings)
    for f in findings:
        _limits_travel(f)


def test_overfit_train_end_window_is_declared():
    assert OVERFIT.t("train_end_share") == 0.1 and OVERFIT.t("train_end_max") == 5
    (f,) = [f for f in judge_run(run_from(OVERFIT.fires.data)).findings if f.rule_id == "TP-OVERFIT"]
    assert f.values["limit_train_end_max"] == 5 and f.values["limit_ratio"] == OVERFIT.t("ratio")


def test_step_cliff_window_is_declared_and_reported():
    (f,) = [f for f in judge_run(run_from(STEP_CLIFF.fires.data)).findings if f.rule_id == "TP-STEP-CLIFF"]
    assert f.values["window"] == max(STEP_CLIFF.t("min_window"), int(12 * STEP_CLIFF.t("window_share")))
    assert f.values["limit_window_share"] == 0.25
    assert f"last {f.values['window']} points" in f.evidence


def test_watch_default_stall_timeout_is_the_declared_threshold():
    args = build_parser(registry()).parse_args(["watch", "some.log"])
    assert args.stall_timeout == STALL.t("timeout")


def test_probe_caps_are_declared():
    from trainproof.rules.env_checkpoint import CKPT_UNREADABLE, read_caps
    from trainproof.rules.tokenizer import NO_TRANSCRIPTS

    caps = read_caps()
    assert caps.pickle_bytes == CKPT_UNREADABLE.t("max_pickle_bytes")
    assert caps.index_bytes == CKPT_UNREADABLE.t("max_index_bytes")
    assert caps.inflate_ratio == CKPT_UNREADABLE.t("max_inflate_ratio")
    assert NO_TRANSCRIPTS.t("max_line_bytes") == 1 << 20


def test_oversized_index_is_unreadable_at_the_declared_cap(run_cli, tmp_path, monkeypatch):
    from trainproof.rules import env_checkpoint as env

    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "model-00001.safetensors"}}))
    small = env.Threshold(index.stat().st_size - 1, "bytes", "test")
    monkeypatch.setitem(env.CKPT_UNREADABLE.thresholds, "max_index_bytes", small)  # type: ignore[index]
    _code, out, _ = run_cli("env", "--checkpoint", index, "--json")
    found = {f["id"] for r in json.loads(out)["reports"] for f in r["findings"]}
    assert "TP-ENV-CKPT-UNREADABLE" in found
