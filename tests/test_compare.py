"""compare's could-not-judge paths and its single read of every file."""

from __future__ import annotations

import json

from .conftest import FIXTURES

BASE = FIXTURES / "hf_regression/trainer_state.json"
RUN = FIXTURES / "jsonl/train_log.jsonl"


def test_missing_run_is_cmp_error_exit_2(run_cli, tmp_path):
    code, out, _ = run_cli("compare", BASE, tmp_path / "gone.jsonl", "--json")
    rep = json.loads(out)["reports"][0]
    assert code == 2 and rep["findings"][0]["id"] == "TP-CMP-ERROR"


def test_fail_stands_beside_an_unreadable_run(run_cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps({"step": i, "loss": 50.0 + i}) for i in range(30)))
    code, out, _ = run_cli("compare", BASE, bad, tmp_path / "gone.jsonl", "--json")
    verdicts = {r["verdict"] for r in json.loads(out)["reports"]}
    assert code == 1 and verdicts == {"FAIL", "NOT-CHECKED"}


def test_run_ending_in_the_nan_filters_zeros_fails(run_cli):
    code, out, _ = run_cli("compare", BASE, FIXTURES / "hf_nonfinite/trainer_state.json", "--json")
    rep = json.loads(out)["reports"][0]
    f = next(f for f in rep["findings"] if f["id"] == "TP-END-NONFINITE")
    assert code == 1 and "NaN filter" in f["evidence"]


def test_negative_losses_are_uncomparable(run_cli, tmp_path):
    elbo = tmp_path / "elbo.jsonl"
    elbo.write_text("\n".join(json.dumps({"step": i, "loss": -100.0 - i}) for i in range(30)))
    code, out, _ = run_cli("compare", BASE, elbo, "--json")
    rep = json.loads(out)["reports"][0]
    assert code == 2 and rep["findings"][0]["id"] == "TP-CMP-UNCOMPARABLE"


def test_missing_baseline_is_exit_2(run_cli, tmp_path):
    code, out, err = run_cli("compare", tmp_path / "nope.json", RUN)
    assert code == 2 and "no such file" in err


def test_bad_baseline_is_flagged(run_cli, tmp_path):
    flat = tmp_path / "flat.jsonl"
    flat.write_text("\n".join(json.dumps({"step": i, "loss": 2.0}) for i in range(30)))
    code, out, _ = run_cli("compare", flat, RUN, "--json")
    ids = {f["id"] for f in json.loads(out)["reports"][0]["findings"]}
    assert "TP-BAD-BASELINE" in ids


def test_each_file_is_read_once(run_cli, monkeypatch):
    from trainproof import parsers

    seen = []
    real = parsers.read_run

    def counting(path, *a, **k):
        seen.append(str(path))
        return real(path, *a, **k)

    monkeypatch.setattr("trainproof.commands.common.read_run", counting)
    run_cli("compare", BASE, RUN, RUN)
    assert seen.count(str(BASE)) == 1
