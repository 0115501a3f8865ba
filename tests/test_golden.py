"""Golden outputs: the exact text, JSON and SARIF for real fixtures. A renderer or
rule change shows up here as a diff to read; regenerate deliberately with
UPDATE_GOLDEN=1 pytest tests/test_golden.py and record user-visible changes in CHANGELOG.md."""

from __future__ import annotations

import json
import os

import pytest

from trainproof import __version__

from .conftest import ROOT

GOLDEN = ROOT / "tests" / "golden"
CASES = {
    "epoch_nonfinite": ["epoch", "tests/fixtures/core/hf_nonfinite/trainer_state.json"],
    "epoch_healthy": ["epoch", "tests/fixtures/core/hf_regression/trainer_state.json"],
    "compare_lightning": ["compare", "tests/fixtures/core/hf_regression/trainer_state.json",
                          "tests/fixtures/core/lightning/metrics.csv",
                          "tests/fixtures/core/jsonl/train_log.jsonl"],
}


def _normalise(s: str, ext: str) -> str:
    s = s.replace(__version__, "<version>")
    if ext == "sarif":  # the rule table is the whole catalogue: checked in test_sarif, not frozen here
        doc = json.loads(s)
        doc["runs"][0]["tool"]["driver"]["rules"] = "<catalogue>"
        for res in doc["runs"][0]["results"]:
            res.pop("ruleIndex")
        s = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return s


def _render(run_cli, tmp_path, argv):
    sarif = tmp_path / "out.sarif"
    _, text, _ = run_cli(*argv)
    _, js, _ = run_cli(*argv, "--json", "--sarif", sarif)
    return {"txt": text, "json": js, "sarif": sarif.read_text()}


@pytest.mark.parametrize("case", CASES)
def test_golden(run_cli, tmp_path, monkeypatch, case):
    monkeypatch.chdir(ROOT)
    outputs = {k: _normalise(v, k) for k, v in _render(run_cli, tmp_path, CASES[case]).items()}
    for ext, got in outputs.items():
        path = GOLDEN / f"{case}.{ext}"
        if os.environ.get("UPDATE_GOLDEN"):
            path.write_text(got, encoding="utf-8")
        want = path.read_text(encoding="utf-8")
        if ext != "txt":
            assert json.loads(got) == json.loads(want), f"{path.name} changed"
        assert got == want, f"{path.name} changed"
