"""TP-LR-TOO-SMALL (rules/lr_small.py): a peak learning rate of 1e-8 or less, after warm-up.

The real case is fresh2's Vietnamese grammatical-error-correction fine-tune
(public_runs/fresh2/cognmal__...): LR 1e-8 decaying to 1e-11 over 3,034 steps, labelled
WARN by its reader before any tool ran. Every other real log stays silent, among them the
DPO/GRPO runs at 1e-7 .. 5e-7 (evidence/trl/grpo_lr_tiny at 1e-7, a design-half DPO run
peaking at 5e-7, a GRPO run still warming up at 2e-7)."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.rules.lr_small import LR_TOO_SMALL, learning_rate_too_small

from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS, assert_invariant, thin

RULE = "TP-LR-TOO-SMALL"
GEC = "cognmal__gec-vietnamese__models-trainer_state"


def _gec() -> Run:
    return dict(public())[GEC]


def _fires(run: Run) -> bool:
    out = learning_rate_too_small(run)
    return not isinstance(out, Skip) and bool(out)


def test_fires_on_the_run_at_1e_8() -> None:
    out = learning_rate_too_small(_gec())
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    v = out[0].values
    assert 9.9e-9 < v["peak"] <= 1e-8 and v["n"] == 303 and v["travel"] < 2e-5


def test_silent_on_every_other_real_log() -> None:
    assert len(public()) >= 200 and len(local()) >= 100  # the logs were found
    assert fires_on(learning_rate_too_small, public()) == {GEC}
    assert fires_on(learning_rate_too_small, local()) == set()


def test_the_verdict_survives_how_the_real_run_was_logged() -> None:
    assert assert_invariant(_gec(), GEC) == ("WARN", frozenset())
    assert all(_fires(thin(k)(_gec())) for k in (2, 5))


# ---------------------------------------------------------------- generated schedules

def _run(lr: np.ndarray) -> Run:
    steps = 10.0 * np.arange(1, lr.size + 1)
    rng = np.random.default_rng(0)
    loss = 0.2 * np.exp(rng.normal(0, 0.05, lr.size))
    series = {"loss": Series("loss", steps, loss), "lr": Series("lr", steps, lr)}
    return Run("generated.json", "example", series, lr.size, tuple(series))


def _schedule(peak: float, n: int = 100, warmup: int = 10) -> np.ndarray:
    """Linear warm-up to `peak`, then linear decay towards 0."""
    up = peak * np.arange(1, warmup + 1) / warmup
    down = peak * (1 - np.arange(1, n - warmup + 1) / (n - warmup + 1))
    return np.concatenate([up, down])


@pytest.mark.parametrize(("peak", "fires"), [
    (1e-8, True), (1.0005e-8, True),  # within the logger's rounding (schedule.SAME_LR)
    (1.02e-8, False), (3e-9, True), (1e-7, False), (5e-7, False), (2e-5, False)])
def test_the_bar(peak: float, fires: bool) -> None:
    assert _fires(_run(_schedule(peak))) is fires


def test_a_log_cut_in_warm_up_has_not_shown_its_peak() -> None:
    rising = 2e-5 * np.arange(1, 6) / 20_000  # the first 5 of 20,000 warm-up steps: 1e-9 .. 5e-9
    out = learning_rate_too_small(_run(rising))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW


def test_zero_throughout_is_the_zero_lr_rules_case() -> None:
    assert learning_rate_too_small(_run(np.zeros(50))) == []


def test_two_points_are_too_few() -> None:
    out = learning_rate_too_small(_run(np.array([1e-9, 1e-9])))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_a_generated_schedule_survives_how_it_was_logged(name: str) -> None:
    assert _fires(PERTURBATIONS[name](_run(_schedule(8e-9))))
    assert not _fires(PERTURBATIONS[name](_run(_schedule(5e-7))))


def test_declared_thresholds_are_the_ones_used() -> None:
    assert LR_TOO_SMALL.t("max_peak") == 1e-8
