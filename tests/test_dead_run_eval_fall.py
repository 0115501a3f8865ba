"""TP-DEAD-RUN below min_improvement: an eval loss that fell beyond its noise by
witness_min_fall of its first evaluation clears the run (rules/eval_witness.py, issue #17:
fresh4's marthinsurya, a slowly learning LoRA); a near-dead run's smooth drift of parts per
thousand, a frozen eval loss and a wrecked start do not."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Run, Series
from trainproof.rules.base import overridden_thresholds
from trainproof.rules.rise import DEAD_RUN

from .real_logs import public
from .test_invariance import PERTURBATIONS

MARTHINSURYA = "marthinsurya__lab2-id2223__outputs-checkpoint-600-trainer_state"


def dead(run: Run) -> bool:
    return any(f.rule_id == "TP-DEAD-RUN" for f in judge_run(run).findings)


def _run(eval_fall: float, seed: int = 0, wreck: bool = False) -> Run:
    """A train loss flat within 1 % batch noise over 60 logs and
    ten evaluations falling smoothly by `eval_fall` of the first."""
    rng = np.random.default_rng(seed)
    steps = np.arange(10.0, 610.0, 10.0)
    loss = 0.76 * np.exp(rng.normal(0, 0.01, steps.size))
    if wreck:
        loss[3:8] *= 1.3  # the first steps wreck the model, the rest learns part of it back
    ev_steps = np.arange(60.0, 660.0, 60.0)
    ev = 0.75 * (1.0 - eval_fall * np.linspace(0, 1, ev_steps.size) ** 0.7)
    series = {"loss": Series("loss", steps, loss), "eval_loss": Series("eval_loss", ev_steps, ev)}
    return Run("generated.jsonl", "example", series, steps.size, tuple(series))


def test_the_fresh4_run_that_raised_it():
    (run,) = [r for name, r in public() if name == MARTHINSURYA]
    ev = run.series["eval_loss"].values
    assert ev.size == 10 and ev[0] == pytest.approx(0.7508, abs=1e-4) and ev[-1] == pytest.approx(0.7182, abs=1e-4)
    assert not dead(run)
    with overridden_thresholds({"TP-DEAD-RUN": {"witness_min_fall": 0.05}}):
        assert dead(run)  # it is the eval fall (4.3 %) that clears it, not another waiver


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_it_stays_cleared_under_every_perturbation(name):
    (run,) = [r for n, r in public() if n == MARTHINSURYA]
    assert not dead(PERTURBATIONS[name](run))


@pytest.mark.parametrize("seed", range(5))
def test_the_boundary_is_the_declared_share(seed):
    bar = DEAD_RUN.t("witness_min_fall")
    assert dead(_run(0.0, seed))  # no eval fall at all: dead
    assert dead(_run(0.005, seed))  # a near-dead run's smooth drift, beyond its (zero) noise: dead
    assert dead(_run(bar * 0.8, seed))
    assert not dead(_run(bar * 1.25, seed))
    assert not dead(_run(0.04, seed))


@pytest.mark.parametrize("seed", range(3))
def test_a_wrecked_start_keeps_it_dead(seed):
    assert not dead(_run(0.04, seed))
    assert dead(_run(0.04, seed, wreck=True))


def test_a_frozen_eval_loss_keeps_it_dead():
    run = _run(0.0)
    assert dead(run)
    ev = run.series["eval_loss"]
    run = Run(run.path, run.format, {**run.series, "eval_loss": Series("eval_loss", ev.steps, ev.values * 0 + 0.75)},
              run.records, run.columns)
    assert dead(run)


def test_a_wreck_is_a_climb_near_the_start_not_one_spike_late_in_the_run():
    """eval_witness._climbed reads the first third of the log: a lr x100 wreck peaks in the first
    steps; the largest of a hundred noisy points anywhere is a spike (fresh18's erlingdevold: one
    batch at point 79 of 100, 3.2 standard errors above a low first point, made a flat noisy run a
    resolved FAIL instead of TP-NO-PROGRESS)."""
    from trainproof.rules import eval_witness as ew

    rng = np.random.default_rng(7)
    flat = 0.22 * np.exp(rng.normal(0, 0.3, 100))
    flat[0] = 0.2
    late, early = flat.copy(), flat.copy()
    late[79] = 0.2 * np.exp(5.0 * 0.3 * np.sqrt(2))  # five standard errors up, late in the run
    early[2] = late[79]  # the same climb in the first steps
    steps = np.arange(1.0, 101.0)
    assert not ew.wrecked(Series("loss", steps, late), DEAD_RUN.t)
    assert ew.wrecked(Series("loss", steps, early), DEAD_RUN.t)
