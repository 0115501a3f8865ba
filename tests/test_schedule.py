"""schedule.read_schedule on LR series written by real libraries: transformers' Trainer
under cosine, cosine-with-hard-restarts, torch's CosineAnnealingWarmRestarts and a log
stopped inside warm-up (tests/fixtures/schedule, scripts/fixtures/make_schedule_fixtures.py),
the galleries' linear warm-up + decay, constant LRs (TRL, the evidence runs) and a linear
decay without warm-up; minimal series for the cases no fixture shows (zero touches, odd data)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.examples import run_from
from trainproof.parsers import read_run
from trainproof.schedule import read_schedule

ROOT = Path(__file__).resolve().parents[1]
SCHEDULE = ROOT / "tests" / "fixtures" / "schedule"
LOGGING_STEPS = 2  # every schedule fixture logs every 2 steps


def _fixture(name: str):
    folder = SCHEDULE / name
    return read_run(folder / "trainer_state.json"), json.loads((folder / "expected.json").read_text())


@pytest.mark.parametrize("name", ["cosine", "hard_restarts", "warm_restarts", "in_warmup"])
def test_the_lr_read_is_the_lr_the_trainer_logged(name):
    run, exp = _fixture(name)
    lr = run.series["lr"]
    assert lr.steps.tolist() == exp["steps"] and lr.values.tolist() == exp["learning_rate"]
    assert run.meta["max_steps"] == exp["max_steps"]


def test_cosine_with_warmup():
    run, exp = _fixture("cosine")
    s = read_schedule(run)
    # The first logged point at the peak: the warm-up ends within one logging interval of it.
    assert 0 <= s.warmup_end - exp["warmup_steps"] <= LOGGING_STEPS
    assert s.peak_lr == max(exp["learning_rate"])
    assert s.restarts == () and s.zero_touches == () and not s.warming_up
    assert s.planned_steps == 60 and s.last_step == 60 and s.seen_fraction == 1.0


def test_cosine_with_hard_restarts():
    run, exp = _fixture("hard_restarts")
    s = read_schedule(run)
    assert 0 <= s.warmup_end - exp["warmup_steps"] <= LOGGING_STEPS
    cycle = (exp["max_steps"] - exp["warmup_steps"]) / exp["num_cycles"]
    boundaries = [exp["warmup_steps"] + k * cycle for k in range(1, exp["num_cycles"])]
    assert len(s.restarts) == len(boundaries) == 2
    for got, at in zip(s.restarts, boundaries, strict=True):
        assert 0 < got - at <= LOGGING_STEPS  # the first logged point after the jump


def test_torch_cosine_annealing_warm_restarts():
    run, exp = _fixture("warm_restarts")
    s = read_schedule(run)
    assert s.warmup_end is None  # starts at its peak
    boundaries = [exp["T_0"], 2 * exp["T_0"]]
    assert len(s.restarts) == 2
    for got, at in zip(s.restarts, boundaries, strict=True):
        assert 0 < got - at <= LOGGING_STEPS


def test_a_log_that_ends_inside_warm_up():
    run, exp = _fixture("in_warmup")
    s = read_schedule(run)
    assert s.warming_up and s.warmup_end == exp["stopped_at"] == s.last_step
    assert s.planned_steps == 2000 and s.seen_fraction == pytest.approx(0.02)
    assert s.restarts == ()


@pytest.mark.parametrize("path, warmup_end", [
    ("examples/gallery/healthy/trainer_state.json", 12.0),  # 10 warm-up steps, logged every 4
    ("examples/gallery2/healthy/trainer_state.json", 15.0),  # warm-up to step 15, logged every 5
    ("tests/fixtures/tfevents/hf/trainer_state.json", 6.0),
])
def test_linear_warmup_then_decay(path, warmup_end):
    s = read_schedule(read_run(ROOT / path))
    assert s.warmup_end == warmup_end and s.restarts == () and not s.warming_up
    assert s.seen_fraction == 1.0


def test_warmup_from_zero_touches_zero_once():
    s = read_schedule(read_run(ROOT / "tests/fixtures/tfevents/hf/trainer_state.json"))
    assert s.zero_touches == (1.0,)  # HF logs lr 0 at step 1 of a warm-up from 0


@pytest.mark.parametrize("path", [
    "tests/fixtures/core/short/trl_healthy/trainer_state.json",  # TRL, constant 1e-3
    "evidence/pytorch/healthy/metrics.jsonl",  # plain PyTorch loop, constant 3e-3
    "evidence/lightning/healthy/csv/metrics.csv",  # Lightning LearningRateMonitor, constant
    "tests/fixtures/vocab/scratch_w64/trainer_state.json",  # linear decay, no warm-up
])
def test_no_warmup_no_restarts(path):
    s = read_schedule(read_run(ROOT / path))
    assert s.warmup_end is None and s.restarts == () and s.zero_touches == () and not s.warming_up
    assert s.peak_lr is not None and s.peak_lr > 0


def test_no_lr_column_still_knows_the_plan():
    s = read_schedule(read_run(ROOT / "evidence/keras/healthy/training.csv"))
    assert s.peak_lr is None and s.warmup_end is None and s.last_step == 59.0
    assert s.planned_steps is None and s.seen_fraction is None


def test_lr_all_zero_has_no_schedule():
    s = read_schedule(read_run(ROOT / "examples/gallery/lr_zero/trainer_state.json"))
    assert s.peak_lr is None and s.zero_touches == () and s.planned_steps == 200


def test_cyclic_schedule_touching_zero_at_logging_steps():
    tri = [0.0, 5e-4, 1e-3, 5e-4, 0.0, 5e-4, 1e-3, 5e-4, 0.0, 5e-4, 1e-3]
    s = read_schedule(run_from({"loss": [1.0] * len(tri), "lr": tri}))
    assert s.warmup_end == 3.0 and s.peak_lr == 1e-3
    assert s.restarts == (6.0, 10.0)  # the first point of each new rise
    assert s.zero_touches == (1.0, 5.0, 9.0)


def test_a_stretch_at_zero_is_not_a_touch():
    s = read_schedule(run_from({"loss": [1.0] * 8, "lr": [1e-3, 1e-3, 0, 0, 0, 1e-3, 1e-3, 0]}))
    assert s.zero_touches == (8.0,)


def test_rounded_lr_is_not_a_wobble():
    """A text log prints the peak LR with few digits; rounding noise is neither rise nor restart."""
    lr = [1e-5, 2e-5, 2e-5, 1.9999e-5, 2e-5, 1.9e-5, 1.8e-5]
    s = read_schedule(run_from({"loss": [1.0] * len(lr), "lr": lr}))
    assert s.warmup_end == 2.0 and s.restarts == ()


@pytest.mark.parametrize("lr", [[], [float("nan")] * 4, [1e-3], [-1e-3, -2e-3, -1e-3], [float("inf"), 1e-3]])
def test_odd_lr_never_raises(lr):
    data = {"loss": [1.0] * max(1, len(lr))}
    if lr:
        data["lr"] = lr
    s = read_schedule(run_from(data))
    assert s.restarts == () or all(isinstance(x, float) for x in s.restarts)


def test_planned_steps_from_llamafactory_total_steps():
    run = read_run(ROOT / "tests/fixtures/core/progress/llamafactory/SYNTHETIC_trainer_log.jsonl")
    s = read_schedule(run)
    assert s.planned_steps == 100 and s.last_step == run.step_span[1]


def test_a_long_warm_up_logged_every_step_is_still_rising_at_its_end():
    """Near the top of a 10,000-step linear warm-up each step adds < 0.1 % (SAME_LR); the
    log still ends inside warm-up."""
    lr = (np.arange(1, 9001) * 1e-7).tolist()  # steps 1..9,000 of a warm-up to 1e-3
    s = read_schedule(run_from({"loss": [0.69] * len(lr), "lr": lr}))
    assert s.warming_up and s.warmup_end == 9000.0


def test_a_constant_lr_after_warm_up_is_not_rising():
    lr = [1e-5, 2e-5, 3e-5] + [3e-5] * 20
    s = read_schedule(run_from({"loss": [1.0] * len(lr), "lr": lr}))
    assert not s.warming_up and s.warmup_end == 3.0
