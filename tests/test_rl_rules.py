"""The RL rules (rules/rl.py) on real GRPO runs they were not designed on, and on the
cases of their design rationale.

The committed runs are evidence/trl/<run>/trainer_state.json, written by TRL 1.16.0's
GRPOTrainer on CPU (scripts/make_evidence_trl.py; versions in each run_meta.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.parsers import read_run
from trainproof.rules.rl import reward_progress

TRL = Path(__file__).resolve().parents[1] / "evidence" / "trl"
RL_RULES = {"TP-RL-REWARD-FLAT", "TP-RL-NO-SIGNAL"}

# run -> (verdict, RL rules that fire, every rule at WARN or FAIL), stated before judging.
EXPECTED = {
    "grpo_healthy": ("PASS", set(), set()),
    "grpo_healthy_slow": ("PASS", set(), set()),
    "grpo_no_signal": ("FAIL", {"TP-RL-NO-SIGNAL"},
                       # every group uniform: the surrogate loss and its gradient are exactly 0;
                       # TP-ZERO-LOSS leaves a loss that is 0 by construction to the reward rules
                       {"TP-RL-NO-SIGNAL", "TP-ZERO-GRAD"}),
    "grpo_lr_zero": ("FAIL", {"TP-RL-REWARD-FLAT"}, {"TP-RL-REWARD-FLAT", "TP-ZERO-LR"}),
    # a learning rate no lr rule calls broken: the reward is the only sign
    "grpo_lr_tiny": ("WARN", {"TP-RL-REWARD-FLAT"}, {"TP-RL-REWARD-FLAT"}),
    # a task too hard for the policy: a few mixed groups keep the loss off 0, so only the
    # zero-variance share says nothing is learned
    "grpo_echo": ("FAIL", {"TP-RL-NO-SIGNAL"}, {"TP-RL-NO-SIGNAL"}),
    # a sparse reward learned to its maximum: the last half's groups are all uniform (median
    # frac_reward_zero_std 1.0), but the reward rose, so it is not a no-signal run
    "grpo_sparse_saturates": ("PASS", set(), set()),
    # most groups uniform (median 0.83 in the last half) while the reward climbs slowly
    "grpo_sparse_slow": ("PASS", set(), set()),
}


def _logged(name: str, key: str) -> tuple[list[float], list[float]]:
    """(steps, values) of `key` as the Trainer wrote them into log_history."""
    state = json.loads((TRL / name / "trainer_state.json").read_text())
    rows = [e for e in state["log_history"] if key in e]
    return [float(e["step"]) for e in rows], [float(e[key]) for e in rows]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_grpo_runs_are_read_as_logged(name):
    run = read_run(TRL / name / "trainer_state.json")
    for canonical in ("reward", "frac_reward_zero_std"):
        steps, values = _logged(name, canonical)
        series = run.get(canonical)
        assert series is not None and len(steps) >= 20, canonical
        np.testing.assert_array_equal(series.steps, steps)
        np.testing.assert_array_equal(series.values, values)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_grpo_runs_get_the_expected_verdicts(name):
    verdict, rl, flagged = EXPECTED[name]
    report = judge_run(read_run(TRL / name / "trainer_state.json"))
    ids = {f.rule_id for f in report.findings}
    loud = {f.rule_id for f in report.findings if f.level.value in ("WARN", "FAIL")}
    assert (report.verdict.value, ids & RL_RULES, loud) == (verdict, rl, flagged)


def _run(reward: list[float], zero_std: list[float] | None = None) -> Run:
    steps = np.arange(1, len(reward) + 1, dtype=float)
    series = {"loss": Series("loss", steps, np.zeros(len(reward))),
              "reward": Series("reward", steps, np.asarray(reward, dtype=float))}
    if zero_std is not None:
        series["frac_reward_zero_std"] = Series("frac_reward_zero_std", steps,
                                                np.asarray(zero_std, dtype=float))
    return Run("mem.json", "hf", series, records=len(reward))


def _wiggle(i: int) -> float:
    return 0.03 if i % 2 else -0.03


def test_a_reward_that_rose_then_saturated_with_zero_std_is_not_flagged():
    # climbs 0.2 -> 1.0 over 24 steps, then every completion scores the maximum
    reward = [min(1.0, 0.2 + 0.035 * i + _wiggle(i)) for i in range(24)] + [1.0] * 24
    zero_std = [0.1] * 24 + [1.0] * 24
    assert reward_progress(_run(reward, zero_std)) == []


def test_a_negative_reward_that_rises_is_not_flagged():
    reward = [-2.0 + 0.04 * i + _wiggle(i) for i in range(40)]
    assert reward_progress(_run(reward, [0.2] * 40)) == []


def test_a_negative_reward_that_stays_flat_is_flagged():
    reward = [-1.5 + _wiggle(i) + 0.01 * (i % 3) for i in range(40)]
    [finding] = reward_progress(_run(reward))
    assert finding.rule_id == "TP-RL-REWARD-FLAT"


def test_a_reward_that_saturated_from_the_start_is_no_signal():
    # every completion earns the maximum from step 1: the prompts are too easy
    [finding] = reward_progress(_run([1.0] * 40, [1.0] * 40))
    assert finding.rule_id == "TP-RL-NO-SIGNAL"


def test_fewer_than_20_reward_points_are_skipped_with_the_reason():
    skip = reward_progress(_run([0.1 * i for i in range(19)], [1.0] * 19))
    assert isinstance(skip, Skip) and skip.kind is SkipKind.TOO_FEW
    assert "19 finite reward points < 20" in skip.detail


def test_a_run_without_a_reward_is_not_judged_by_these_rules():
    steps = np.arange(1.0, 41.0)
    run = Run("mem.json", "hf", {"loss": Series("loss", steps, 3.0 - steps / 40)}, records=40)
    skip = reward_progress(run)
    assert isinstance(skip, Skip) and skip.kind is SkipKind.NO_DATA
