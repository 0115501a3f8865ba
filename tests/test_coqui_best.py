"""TP-BEST-CKPT-GONE on real Coqui Trainer runs (evidence/coqui/, made by
scripts/make_evidence_coqui.py with coqui-tts-trainer 0.4.0, torch 2.13.0 CPU): the
eval losses read from trainer_0_log.txt are the ones the Trainer ranked (expected.json,
recorded by a callback), each best_model_N.pth / checkpoint_N.pth is matched to the
evaluation whose weights it holds, and the rule fires where save_best_after left the eval
minimum unsaved and stays silent on the twin that kept it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Level
from trainproof.parsers import read_run
from trainproof.parsers.beside import beside_coqui

EVIDENCE = Path(__file__).resolve().parents[1] / "evidence" / "coqui"
RULE = "TP-BEST-CKPT-GONE"


def log(run: str) -> Path:
    return EVIDENCE / run / "trainer_0_log.txt"


def expected(run: str) -> list[dict]:
    return json.loads((EVIDENCE / run / "expected.json").read_text())["epochs"]


@pytest.mark.parametrize("run", ["best_unsaved", "best_saved"])
def test_eval_losses_are_the_ones_coqui_ranked(run):
    r = read_run(log(run))
    got, want = r.get("eval_loss"), expected(run)
    assert got is not None and len(got) == len(want) == 40
    np.testing.assert_allclose(got.values, [e["eval_loss"] for e in want], rtol=1e-12)
    # an evaluation is logged at the last step printed before it (print_step 4); `STEP: i/n`
    # gives its epoch's last training step, one before Coqui's counter at the epoch's end
    evals = r.meta["coqui_evals"]
    assert [int(s) for s in got.steps] == [e["step"] - 4 for e in want] == [int(e[0]) for e in evals]
    assert [int(e[1]) + 1 for e in evals] == [e["step"] for e in want]


@pytest.mark.parametrize("run", ["best_unsaved", "best_saved"])
def test_each_weight_file_is_matched_to_the_evaluation_it_holds(run):
    ck = read_run(log(run)).meta["checkpoints"]
    # best_model_N.pth holds the evaluation at Coqui's step N, logged at N - 4; the
    # checkpoint_N.pth files (N = 280, 300) fall inside epochs: no evaluation's weights
    saved = expected(run)[-1]["best_files"]
    steps = sorted(int(name.removeprefix("best_model_").removesuffix(".pth")) - 4 for name in saved)
    assert ck["kind"] == "coqui" and ck["steps"] == steps
    assert all(ck["files"][str(s)].startswith("best_model") for s in steps)


def test_fires_where_save_best_after_left_the_minimum_unsaved():
    eps = expected("best_unsaved")
    best = min(eps, key=lambda e: e["eval_loss"])
    assert best["step"] == 48 and not best["best_files"]  # Coqui never saved it (save_best_after 100)
    rep = judge_run(read_run(log("best_unsaved")))
    (f,) = [f for f in rep.findings if f.rule_id == RULE]
    assert f.level is Level.WARN
    assert f.values["best_step"] == 44 and f.values["kept"] == "best_model_104.pth"
    assert f.values["kept_loss"] == pytest.approx(next(e["eval_loss"] for e in eps if e["step"] == 104))
    assert "best_model_104.pth" in f.evidence  # what Coqui's last BEST MODEL line named


def test_silent_where_coqui_kept_its_best():
    assert expected("best_saved")[-1]["best_files"] == ["best_model_48.pth"]
    rep = judge_run(read_run(log("best_saved")))
    assert RULE not in {f.rule_id for f in rep.findings}


def test_a_log_without_its_run_directory_is_not_judged(tmp_path):
    shutil.copy(log("best_unsaved"), tmp_path / "trainer_0_log.txt")
    run = read_run(tmp_path / "trainer_0_log.txt")
    assert "checkpoints" not in run.meta
    rep = judge_run(run)
    assert RULE not in {f.rule_id for f in rep.findings}
    assert "checkpoints" in str(rep.skipped.get("best-checkpoint", ""))


def test_a_copied_best_model_file_silences_the_finding(tmp_path):
    # the same log beside the files of best_unsaved plus the missing best_model_48.pth
    for p in (EVIDENCE / "best_unsaved").iterdir():
        shutil.copy(p, tmp_path / p.name)
    (tmp_path / "best_model_48.pth").touch()
    rep = judge_run(read_run(tmp_path / "trainer_0_log.txt"))
    assert RULE not in {f.rule_id for f in rep.findings}


def test_best_model_pth_is_the_last_best_model_line(tmp_path):
    # a log without `STEP: i/n`: an eval's weights lie between its step and the next one logged
    evals = [[7.0, None, 8.0], [15.0, None, 16.0], [23.0, None, None]]
    (tmp_path / "best_model.pth").touch()
    (tmp_path / "checkpoint_23.pth").touch()  # saved after the last step: the last eval's weights
    (tmp_path / "notes.pth").touch()  # not a Coqui name: ignored
    got = beside_coqui(tmp_path / "trainer_0_log.txt",
                       {"coqui_evals": evals, "best_model": "best_model_16.pth"})["checkpoints"]
    assert got["steps"] == [15, 23] and got["files"]["15"] == "best_model.pth"
    assert beside_coqui(tmp_path / "x.txt", {"coqui_evals": []}) == {}
    exact = [[4.0, 7.0, 8.0], [12.0, 15.0, 16.0]]
    (tmp_path / "checkpoint_12.pth").touch()  # mid-epoch: not the weights the eval at 12 judged
    (tmp_path / "checkpoint_15.pth").touch()
    got = beside_coqui(tmp_path / "trainer_0_log.txt", {"coqui_evals": exact, "best_model": "best_model_8.pth"})
    assert got["checkpoints"]["files"] == {"4": "best_model.pth", "12": "checkpoint_15.pth"}


def test_a_clipped_gradient_norm_is_read_from_its_tensor_repr(tmp_path):
    # coqui-tts-trainer 0.4.0 logs clip_grad_norm_'s tensor as it prints: tensor(3.3801)
    g = read_run(log("best_unsaved")).get("grad_norm")
    assert g is not None and len(g) == 80 and g.values[0] == pytest.approx(3.3801)
    f = tmp_path / "trainer_0_log.txt"
    f.write_text("   --> TIME: x -- STEP: 0/7 -- GLOBAL_STEP: 0\n"
                 "     | > loss: 1.5  (1.5)\n"
                 "     | > grad_norm: tensor(2.5000, device='cuda:0')  (tensor(2.5000, device='cuda:0'))\n")
    assert read_run(f).get("grad_norm").values.tolist() == [2.5]


def test_a_hostile_step_index_is_read_without_overflow(tmp_path):
    f = tmp_path / "trainer_0_log.txt"
    huge = "9" * 5000
    f.write_text(f"   --> TIME: x -- STEP: 0/{huge} -- GLOBAL_STEP: {huge}\n     | > loss: 1.5  (1.5)\n"
                 "  --> EVAL PERFORMANCE\n     | > avg_loss: 1.2  (+0.0)\n"
                 " > BEST MODEL : /x/best_model_9.pth\n")
    (tmp_path / "best_model_9.pth").touch()
    run = read_run(f)
    assert run.meta["checkpoints"]["steps"] == []
    judge_run(run)
