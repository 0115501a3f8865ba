"""OpenNMT-py `onmt_train` output read by the text-log scanner (opennmt* patterns in
parsers/textlog_nlp.py).

opennmt/*.log are the real stdout+stderr of `onmt_train` (OpenNMT-py 3.0.4, 2.3.0 for
v2_train.log and 1.2.0 for v1_train.log; torch 2.13 CPU, a one-layer LSTM on a made-up reversal task), written by
scripts/fixtures/make_opennmt_fixtures.py with the statistics OpenNMT-py printed from
(`<name>.expected.json`, unrounded); the values read must be those, as printed."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from trainproof.discover import discover
from trainproof.parsers import detect, read_run, textlog

from .conftest import ROOT

ONMT = ROOT / "tests" / "fixtures" / "textlog" / "opennmt"


def _doc(name: str) -> dict:
    return json.loads((ONMT / f"{name}.expected.json").read_text())


def _col(raw, key: str) -> tuple[list[float], list[float]]:
    steps, values = raw.columns[key]
    return steps.tolist(), values.tolist()


def _f(v: float, spec: str) -> float:
    return float(format(v, spec))


@pytest.mark.parametrize("name", ["train", "hot", "v2_train", "v1_train"])
def test_step_lines_equal_what_opennmt_printed(name):
    doc, raw = _doc(name), textlog.read(ONMT / f"{name}.log")
    train = doc["train"]
    steps = [float(t["step"]) for t in train]
    # 3.x: `acc: %2.1f; ppl: %5.1f; xent: %2.1f; lr: %7.5f`; 1.x-2.x: `%6.2f; %5.2f; %4.2f; %7.5f`
    spec = ".2f" if doc["opennmt_py"].startswith(("1.", "2.")) else ".1f"
    assert _col(raw, "xent") == (steps, [_f(t["xent"], spec) for t in train])
    assert _col(raw, "ppl") == (steps, [_f(t["ppl"], spec) for t in train])
    assert _col(raw, "acc") == (steps, [_f(t["acc"], spec) for t in train])
    assert _col(raw, "lr") == (steps, [_f(t["lr"], ".5f") for t in train])
    assert _col(raw, "elapsed")[0] == steps and "tgt_tok/s" in raw.columns
    assert ("sents" in raw.columns) == (spec == ".1f")  # 3.x added sents and bsz
    assert "bsz" not in raw.columns  # `83/ 99/16` is three numbers, not one
    assert raw.meta["max_steps"] == 300
    assert detect(ONMT / f"{name}.log").name == "textlog"


@pytest.mark.parametrize("name", ["train", "hot", "v1_train"])
def test_validation_at_its_step_and_its_loss_is_ln_ppl(name):
    doc, raw = _doc(name), textlog.read(ONMT / f"{name}.log")
    valid = doc["valid"]
    vsteps = [float(v["step"]) for v in valid]
    printed = [float(f"{v['ppl']:g}") for v in valid]
    assert _col(raw, "Validation perplexity") == (vsteps, printed)
    assert _col(raw, "Validation accuracy") == (vsteps, [float(f"{v['acc']:g}") for v in valid])
    measured = [math.log(p) for p in printed if math.log(p) < 100 * (1 - 1e-5)]  # exp(100) is the cap
    if measured:
        np.testing.assert_allclose(raw.columns["valid_xent"][1], measured, rtol=1e-12)
    else:
        assert "valid_xent" not in raw.columns
    # 3.x also prints Train perplexity/accuracy (cumulative since the start: kept, not the loss); 1.x not
    train_too = not doc["opennmt_py"].startswith("1.")
    assert ("Train perplexity" in raw.columns) == train_too
    per_validation = 4 if train_too else 2
    assert raw.meta["patterns"] == {"opennmt": len(doc["train"]), "opennmt_valid": per_validation * len(valid)}


def test_canonical_series_and_the_cap():
    run = read_run(ONMT / "train.log")
    doc = _doc("train")
    assert run.series["loss"].values.tolist() == [_f(t["xent"], ".1f") for t in doc["train"]]
    assert run.series["eval_loss"].steps.tolist() == [50.0, 100.0, 150.0, 200.0, 250.0, 300.0]
    assert "lr" in run.series and "eval_accuracy" in run.series
    hot = textlog.read(ONMT / "hot.log")  # SGD at LR 60: ppl = exp(min(xent, 100)) saturates
    # a capped perplexity is censored, not measured: no eval loss, so no "eval loss that never
    # moved" for the dead-run rule to read as frozen weights; the note says why
    assert "valid_xent" not in hot.columns and len(hot.columns["Validation perplexity"][1]) == 6
    assert any("exp(100), its cap" in n and "not read as a value" in n for n in hot.notes)
    assert "eval_loss" not in read_run(ONMT / "hot.log").series


@pytest.mark.parametrize("name, code, rule", [("train", 0, "TP-PASS"), ("hot", 1, "TP-LOSS-ROSE")])
def test_judged_end_to_end_and_found_by_doctor(tmp_path, run_cli, name, code, rule):
    got, out, _ = run_cli("epoch", ONMT / f"{name}.log")
    assert got == code and rule in out, out
    if name == "train":  # the same run under 2.3.0 (no validation on a CPU there) and 1.2.0
        for old in ("v2_train.log", "v1_train.log"):
            got, out, _ = run_cli("epoch", ONMT / old)
            assert got == 0 and "TP-PASS" in out, (old, out)
    shutil.copy(ONMT / f"{name}.log", tmp_path / "train.log")
    shutil.copy(ONMT / f"{name}.log", tmp_path / "nohup.out")
    assert sorted(p.name for p, _ in discover(tmp_path, 10).logs) == ["nohup.out", "train.log"]
    got, out, _ = run_cli("doctor", tmp_path)
    assert got == code and "train.log" in out


def test_older_format_without_planned_steps_and_with_metrics(tmp_path):
    """1.x/2.x print `acc: %6.2f; ppl: %5.2f; xent: %4.2f` and no `/ M` without train_steps;
    3.x appends its train metrics after the last `;`."""
    p = tmp_path / "train.log"
    p.write_text(
        "[2021-03-21 00:29:15,279 INFO] Step 50; acc:   3.91; ppl: 147677.56; xent: 11.90; lr: 1.00000; "
        "2954/2927 tok/s;     24 sec\n"
        "[2021-03-21 00:29:39,102 INFO] Step 100; acc:  13.27; ppl: 3301.44; xent: 8.10; lr: 1.00000; "
        "3011/2999 tok/s;     48 sec\n"
        "[2021-03-21 00:29:40,000 INFO] Validation perplexity: 2981.3\n"
        "[2021-03-21 00:29:40,000 INFO] Validation accuracy: 14.5\n"
        "[2023-01-02 10:00:00,000 INFO] Step 150/ 1000; acc: 20.1; ppl: 500.2; xent: nan; lr: 0.00100; "
        "sents:     160; bsz:   83/  99/16; 11454/13657 tok/s;     72 sec; BLEU: 12.3 TER: 70.1\n")
    raw = textlog.read(p)
    assert _col(raw, "xent")[0] == [50.0, 100.0, 150.0]
    assert _col(raw, "xent")[1][:2] == [11.90, 8.10] and math.isnan(raw.columns["xent"][1][2])
    assert _col(raw, "elapsed") == ([50.0, 100.0, 150.0], [24.0, 48.0, 72.0])
    assert _col(raw, "BLEU") == ([150.0], [12.3]) and _col(raw, "TER") == ([150.0], [70.1])
    assert _col(raw, "valid_xent") == ([100.0], [math.log(2981.3)])
    assert raw.meta["max_steps"] == 1000


def test_validation_before_any_step_line_is_not_placed(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("[x INFO] Validation perplexity: 12.5\n[x INFO] Validation accuracy: 14.5\n"
                 "[x INFO] Step 10/  300; acc: 7.9; ppl: 23.8; xent: 3.2; lr: 0.00100; 30 sec;\n"
                 "[x INFO] Step 20/  300; acc: 7.9; ppl: 23.8; xent: 3.2; lr: 0.00100; 31 sec;\n")
    raw = textlog.read(p)
    assert "Validation perplexity" not in raw.columns and _col(raw, "xent")[0] == [10.0, 20.0]
