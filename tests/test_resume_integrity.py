"""Resume integrity (TP-RESUME-WARMUP, TP-RESUME-REPLAY) on real HF Trainer runs that were
stopped at step 130 and started again (evidence/resume/, made by
scripts/make_evidence_resume.py with transformers 5.24.0, torch 2.13.0 CPU): each record a
user points trainproof at (the TensorBoard directory with one event file per job, a JSONL
log a callback appended to, the final trainer_state.json) gives the verdict the run
deserves, and the healthy twins stay silent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Level, Run, Series
from trainproof.parsers import read_run

ROOT = Path(__file__).resolve().parents[1]
EV = ROOT / "evidence" / "resume"
RECORDS = ("tb", "metrics.jsonl", "trainer_state.json")
NEW = {"TP-RESUME-WARMUP", "TP-RESUME-REPLAY"}


def ids(run: Run) -> dict[str, Level]:
    return {f.rule_id: f.level for f in judge_run(run).findings if f.rule_id in NEW}


@pytest.mark.parametrize("record", RECORDS)
@pytest.mark.parametrize("name", ["uninterrupted", "resume_sound", "constant_resume_sound"])
def test_a_sound_resume_and_its_uninterrupted_twin_are_left_alone(name, record):
    rep = judge_run(read_run(EV / name / record))
    assert not {f.rule_id for f in rep.findings} & NEW
    assert rep.verdict.value == "PASS"


def test_the_sound_resume_trained_what_the_uninterrupted_run_trained():
    """The evidence is what it claims: resumed with its optimizer and scheduler, the run
    logs the very numbers of the run that never stopped (same seed, one thread)."""
    a, b = read_run(EV / "uninterrupted" / "tb"), read_run(EV / "resume_sound" / "tb")
    for name in ("loss", "lr", "grad_norm"):
        np.testing.assert_array_equal(a.series[name].steps, b.series[name].steps)
        np.testing.assert_allclose(a.series[name].values, b.series[name].values, rtol=1e-6)
    assert b.meta["resumes"]["loss"] == [{"kind": "resume", "from": 130.0, "to": 102.0, "replaced": 15}]


@pytest.mark.parametrize("record", RECORDS)
def test_a_resume_without_optimizer_and_scheduler_state_fails(record):
    """HF found no optimizer.pt/scheduler.pt in checkpoint-100 and started both afresh: the
    LR went from 55 % of its peak back to the warm-up's first value. The final
    trainer_state.json shows no boundary at all; the LR curve alone says it."""
    run = read_run(EV / "resume_no_optimizer" / record)
    assert ids(run) == {"TP-RESUME-WARMUP": Level.FAIL}
    f = next(f for f in judge_run(run).findings if f.rule_id == "TP-RESUME-WARMUP")
    assert f.location.step == 102.0
    assert f.values["before"] == pytest.approx(0.00165, rel=0.01)
    assert f.values["trough"] == pytest.approx(0.00015, rel=0.01)


@pytest.mark.parametrize("record", ["tb", "metrics.jsonl"])
def test_a_new_trainer_on_the_checkpoints_weights_fails_and_replays(record):
    """from_pretrained(checkpoint-100) and a new Trainer: the counter, the schedule and the
    data order start over while the loss carries on from ~3.07, far below the 4.6 of the
    run's start."""
    run = read_run(EV / "restart_from_weights" / record)
    assert ids(run) == {"TP-RESUME-WARMUP": Level.FAIL, "TP-RESUME-REPLAY": Level.WARN}
    f = next(f for f in judge_run(run).findings if f.rule_id == "TP-RESUME-REPLAY")
    assert (f.values["from_step"], f.values["to_step"]) == (130.0, 2.0)
    assert f.values["carried"] > 0.9


@pytest.mark.parametrize("record", RECORDS)
def test_lost_adam_moments_alone_leave_nothing_to_judge(record):
    """At a constant LR a fresh scheduler is the old one, so only the Adam moments are lost.
    Measured on this run: the first loss after the boundary is 2.981 against the sound
    resume's 2.953 (0.3 of the loss's point noise), the first gradient norm 1.29 against
    0.42 - one point, where the sound resume itself logs 1.03 two points later. Nothing
    rises above the noise for a rule to stand on, so neither rule fires (a stated limit)."""
    run = read_run(EV / "constant_resume_no_optimizer" / record)
    assert not ids(run)
    sound = read_run(EV / "constant_resume_sound" / record)
    i = int(np.searchsorted(run.series["loss"].steps, 101))
    assert run.series["loss"].values[i] == pytest.approx(2.981, abs=2e-3)
    assert sound.series["loss"].values[i] == pytest.approx(2.953, abs=2e-3)


def test_the_new_trainers_own_state_file_shows_a_fresh_run():
    """The final trainer_state.json of that run is the new Trainer's alone (steps 2..200 from
    a trained start): nothing in it says a resume happened, and nothing fires."""
    run = read_run(EV / "restart_from_weights" / "trainer_state.json")
    assert not ids(run) and "resumes" not in run.meta


def test_the_earlier_restart_fixture_is_judged_the_same_way():
    """tests/fixtures/resume/restarted.jsonl (another real HF run, 1-layer GPT-2 on random
    motifs): its LR had decayed to 24 % of the peak when the new Trainer warmed up again to
    the full peak; the boundary in the log is what tells this from a cyclic schedule."""
    run = read_run(ROOT / "tests" / "fixtures" / "resume" / "restarted.jsonl")
    assert ids(run) == {"TP-RESUME-WARMUP": Level.FAIL, "TP-RESUME-REPLAY": Level.WARN}


def _lr_run(lr: np.ndarray, loss: np.ndarray | None = None) -> Run:
    steps = np.arange(1, lr.size + 1, dtype=np.float64)
    loss = 3.0 * np.exp(-steps / 200) if loss is None else loss
    return Run("x.jsonl", "example", {"lr": Series("lr", steps, lr), "loss": Series("loss", steps, loss)},
               lr.size, ("lr", "loss"))


def test_cyclic_and_restart_schedules_are_not_a_lost_scheduler():
    """Schedules that rise again by design: triangular cycles (the trough reached by their
    own decay), cosine with hard restarts (straight back to the peak), a warm-up then
    constant LR, and a second stage warmed up after a finished decay."""
    t = np.arange(400, dtype=np.float64)
    triangular = 1e-4 + 9e-4 * (1 - np.abs((t % 100) / 50 - 1))
    warm = np.minimum(1.0, (t + 1) / 20)
    hard = 1e-3 * warm * (0.5 * (1 + np.cos(np.pi * (t % 100) / 100)))
    hard[20:] = 1e-3 * 0.5 * (1 + np.cos(np.pi * ((t[20:] - 20) % 95) / 95))
    constant = 1e-3 * warm
    stage = np.concatenate([1e-3 * np.minimum(1.0, (t[:200] + 1) / 20) * np.clip((200 - t[:200]) / 180, 0, 1),
                            1e-3 * np.minimum(1.0, (t[:200] + 1) / 20)])
    for lr in (triangular, hard, constant, stage):
        assert not ids(_lr_run(lr))


def test_a_restarted_counter_whose_schedule_goes_on_is_not_a_replay():
    """A loop counting steps per process: the counter restarts, loss and LR carry on."""
    n = 60
    loss = list(3.0 * 0.97 ** np.arange(n))
    lr = list(1e-3 * (1 - np.arange(n) / n))
    run = run_from({"loss": loss, "lr": lr, "steps": list(range(1, 41)) + list(range(1, 21))})
    assert not ids(run)


def _thin(run: Run, k: int) -> Run:
    return Run(run.path, run.format, {n: Series(n, s.steps[::k], s.values[::k]) for n, s in run.series.items()},
               run.records, run.columns, run.notes, run.meta)


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("name,want", [("uninterrupted", set()), ("resume_sound", set()),
                                       ("resume_no_optimizer", {"TP-RESUME-WARMUP"})])
def test_the_verdict_survives_a_coarser_log(name, want, k):
    """The real trainer_state.json logged every 4 or 10 steps instead of 2."""
    assert set(ids(_thin(read_run(EV / name / "trainer_state.json"), k))) == want


def test_run_meta_says_what_was_pruned():
    for name in ("uninterrupted", "resume_sound", "resume_no_optimizer", "restart_from_weights",
                 "constant_resume_sound", "constant_resume_no_optimizer"):
        meta = json.loads((EV / name / "run_meta.json").read_text())
        assert meta["versions"]["transformers"] and "pruned" in meta
        assert not list((EV / name).rglob("*.safetensors")) and not list((EV / name).rglob("*.pt"))


@pytest.mark.parametrize("path,k", [("evidence/resume/restart_from_weights/tb", 2),
                                    ("evidence/resume/restart_from_weights/tb", 5),
                                    ("evidence/resume/restart_from_weights/metrics.jsonl", 2),
                                    ("evidence/resume/restart_from_weights/metrics.jsonl", 5),
                                    ("tests/fixtures/resume/restarted.jsonl", 2)])
def test_a_replay_survives_a_coarser_log(path, k):
    """Logged every 4 or 10 steps instead of 2. The older fixture's warm-up is 3 points long:
    thinned x5 no warm-up is left to recognise (the rules' stated need of a logged warm-up)."""
    got = ids(_thin(read_run(ROOT / path), k))
    assert got.get("TP-RESUME-REPLAY") is Level.WARN and got.get("TP-RESUME-WARMUP") is Level.FAIL


@pytest.mark.parametrize(("run_id", "trough"), [("parthtiwari02__fabric__runs-train-exp3-results", 0.000199),
                                                ("sarihcr123__gpnu__runs-train-exp-results", 0.000901)])
def test_a_warm_up_hump_whose_tail_holds_still_is_not_a_restart(run_id, trough):
    """Two real YOLOv5 runs (public runs fresh43, labelled WARN: the whole run inside warm-up)
    on datasets of a few batches: YOLOv5 warms up per batch over at least 100 iterations, times
    its decaying schedule, so x/lr0 climbs to a hump and falls to a tail that holds still
    (0.000199 x3; 0.000901 -> 0.000906). That tail lies within a tenth of the peak of the
    warm-up line laid over it, as any flat stretch does; it never climbs more than that tenth,
    so it is not a warm-up again. Both failed TP-RESUME-WARMUP at their first scoring."""
    from .real_logs import public_run
    run = public_run(run_id)
    lr = run.series["lr"].values
    assert abs(lr[-3:].min() - trough) < 1e-6 and lr[-3:].max() - lr[-3:].min() < 0.1 * lr.max()
    assert "TP-RESUME-WARMUP" not in ids(run)


def test_a_restart_must_climb_past_the_band_of_its_trough():
    """The same warm-up restarted: the rise after the trough climbs back to the peak (fires);
    cut to the trough and one point of the new warm-up that has not yet left the trough's band
    of a tenth of the peak, it cannot be told from a flat tail (silent)."""
    warm = np.linspace(0.01, 1.0, 20)
    decay = np.linspace(1.0, 0.4, 20)
    lr = np.r_[warm, decay, warm]
    assert ids(_lr_run(lr)) == {"TP-RESUME-WARMUP": Level.FAIL}
    assert "TP-RESUME-WARMUP" not in ids(_lr_run(np.r_[warm, decay, warm[:2]]))
