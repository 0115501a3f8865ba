"""Bad input gets one clear line on stderr and the honest exit code: 2 when nothing
could be judged, never a traceback, never a FAIL blamed on the user's run."""

from __future__ import annotations

import json
import os

import pytest


def _assert_clean_error(code, out, err, expect=2):
    assert code == expect
    assert "Traceback" not in out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("trainproof: error:")


def test_missing_file(run_cli, tmp_path):
    code, out, err = run_cli("epoch", tmp_path / "nope.json")
    _assert_clean_error(code, out, err)
    assert "no such file" in err


def test_directory_given_as_log(run_cli, tmp_path):
    code, out, err = run_cli("epoch", tmp_path)
    _assert_clean_error(code, out, err)


def test_empty_file(run_cli, tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_bytes(b"")
    code, out, err = run_cli("epoch", p)
    _assert_clean_error(code, out, err)


def test_binary_garbage(run_cli, tmp_path):
    p = tmp_path / "events.bin"
    p.write_bytes(os.urandom(4096))
    code, out, err = run_cli("epoch", p)
    _assert_clean_error(code, out, err)
    code, out, err = run_cli("epoch", p, "--format", "jsonl")
    assert code == 2 and "Traceback" not in err


def test_truncated_trainer_state(run_cli, tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_text('{"log_history": [{"step": 1, "loss": 2.0}, {"step": 2, "lo')
    code, out, err = run_cli("epoch", p)
    _assert_clean_error(code, out, err)
    assert "trainer_state" in err


def test_no_loss_column_is_exit_2_naming_columns(run_cli, tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps({"step": i, "lr": 1e-3, "accuracy": 0.5}) for i in range(20)))
    code, out, _err = run_cli("epoch", p, "--json")
    doc = json.loads(out)
    assert code == 2
    f = doc["reports"][0]["findings"][0]
    assert f["id"] == "TP-NO-LOSS" and "accuracy" in f["evidence"]
    assert doc["reports"][0]["verdict"] == "NOT-CHECKED"


def test_map_names_the_loss(run_cli, tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps({"it": i, "objective": 3 - 0.1 * i}) for i in range(20)))
    code, out, _ = run_cli("epoch", p, "--map", "loss=objective", "--map", "step=it", "--json")
    assert code == 0 and json.loads(out)["reports"][0]["verdict"] == "PASS"
    code, out, err = run_cli("epoch", p, "--map", "loss=nothere")
    _assert_clean_error(code, out, err)
    code, out, err = run_cli("epoch", p, "--map", "loss")
    _assert_clean_error(code, out, err)


def test_booleans_and_strings_are_not_numbers(run_cli, tmp_path):
    p = tmp_path / "log.jsonl"
    rows = [{"step": i, "loss": 2.0 - 0.05 * i} for i in range(12)]
    rows[3]["loss"] = True
    rows[4]["loss"] = "n/a"
    rows[5]["loss"] = None
    p.write_text("\n".join(json.dumps(r) for r in rows))
    code, out, _ = run_cli("epoch", p, "--json")
    rep = json.loads(out)["reports"][0]
    assert code == 0 and rep["verdict"] == "PASS"
    assert any("non-numeric" in n and "'loss'" in n for n in rep["notes"])


def test_single_point_is_not_a_flat_run(run_cli, tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"step": 1, "loss": 2.0}\n')
    code, out, _ = run_cli("epoch", p, "--json")
    rep = json.loads(out)["reports"][0]
    assert code == 2 and rep["verdict"] == "NOT-CHECKED"
    assert "TP-FLAT" not in {f["id"] for f in rep["findings"]}


def test_enormous_values(run_cli, tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(json.dumps({"step": i, "loss": 1e300 / (i + 1)}) for i in range(20)))
    code, out, err = run_cli("epoch", p, "--json")
    assert code in (0, 1) and "Traceback" not in err
    json.loads(out)  # still valid JSON (no bare Infinity)


def test_nan_and_infinity_tokens_in_jsonl(run_cli, tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": NaN}\n{"step": 3, "loss": Infinity}\n'
                 '{"step": 4, "loss": 1.5}\n{"step": 5, "loss": 1.4}\n')
    code, out, _ = run_cli("epoch", p, "--json")
    ids = {f["id"] for f in json.loads(out)["reports"][0]["findings"]}
    assert code == 1 and "TP-NAN" in ids


def test_unknown_format_and_usage_errors(run_cli, tmp_path):
    code, out, err = run_cli("epoch")
    _assert_clean_error(code, out, err)
    code, out, err = run_cli("nosuchcommand")
    _assert_clean_error(code, out, err)
    code, out, err = run_cli("epoch", tmp_path / "x", "--format", "parquet")
    _assert_clean_error(code, out, err)


def test_error_envelope_in_json(run_cli, tmp_path):
    code, out, _ = run_cli("epoch", tmp_path / "missing.jsonl", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["error"] and doc["reports"] == [] and doc["worst_verdict"] is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_fifo_does_not_hang(run_cli, tmp_path):
    p = tmp_path / "log.jsonl"
    os.mkfifo(p)
    code, out, err = run_cli("epoch", p)
    _assert_clean_error(code, out, err)
