"""TP-LOSS-UNBOUNDED (rules/unbounded.py): a loss negative from its start whose size grew a
hundredfold or more and is still growing at the end - an objective with no floor. Raised by the
public runs fresh12/agusbs98 (-3.4e4 -> -6.5e7) and fresh26/villrv (-221 -> -2.7e5), both
labelled broken by their readers before any tool ran and both PASS at their first scoring (every
level-comparing rule asks for a positive loss). No other public run and no local real log fires;
the healthy negative losses of the public runs grow 1.4-4.8x."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Run, Skip
from trainproof.rules.unbounded import UNBOUNDED, loss_unbounded

from .real_logs import fires_on, labelled_runs, local, public_run
from .test_invariance import PERTURBATIONS

FIRES_PUBLIC = {"agusbs98__interface_of_automatic-ecg-diagnosis__training",
                "villrv__ppae__lightning_logs-version_16-metrics"}
# Healthy or merely odd negative losses, by their readers' labels: none may fire.
NEGATIVE_NOT_BROKEN = ("niklaskappel__dvc_studio_test__dvclive",
                       "karelveldkamp__information-vae__lightning_logs-version_5-metrics")


def _findings(run: Run) -> list:
    out = loss_unbounded(run)
    return [] if isinstance(out, Skip) else list(out)


def test_fires_on_the_public_runs_labelled_for_it_and_on_no_other() -> None:
    fired = {doc["id"]: doc["label"]["broken"] for doc, run in labelled_runs() if _findings(run)}
    assert set(fired) == FIRES_PUBLIC and all(fired.values()), fired


@pytest.mark.parametrize("run_id", sorted(FIRES_PUBLIC))
def test_the_runs_that_raised_it_fail_with_their_growth(run_id: str) -> None:
    run = public_run(run_id)
    (f,) = _findings(run)
    assert f.values["growth"] >= 100 and f.values["late"] >= 1.1
    assert f.values["start"] < 0 and f.values["end"] < 0
    assert judge_run(run).verdict.value == "FAIL"  # both passed before this rule


@pytest.mark.parametrize("run_id", NEGATIVE_NOT_BROKEN)
def test_healthy_negative_losses_are_far_below_the_bar(run_id: str) -> None:
    run = public_run(run_id)
    assert not _findings(run)
    v = run.get("loss").finite_only().values
    assert v[-3:].mean() / v[:3].mean() < UNBOUNDED.t("min_growth") / 10  # a wide margin, not a near miss


def test_silent_on_every_local_real_log() -> None:
    assert len(local()) >= 100
    assert fires_on(loss_unbounded, local()) == set()


def _run(loss: list[float]) -> Run:
    return run_from({"loss": loss})


def test_a_likelihood_that_settles_is_silent_however_far_it_came() -> None:
    """200x its start, but flat over its last quarter: a fit that reached its bound."""
    loss = [-0.05 * 200 ** min(1.0, k / 30) for k in range(60)]
    assert loss[-1] / loss[0] > 100
    assert not _findings(_run(loss))


def test_a_loss_that_crosses_zero_is_not_judged() -> None:
    """From +3 to -500: the starting size says nothing about the loss's scale."""
    loss = [3.0 - 503.0 * (k / 39) ** 2 for k in range(40)]
    assert not _findings(_run(loss))


def test_a_positive_loss_is_left_to_divergence() -> None:
    assert not _findings(_run([0.01 * 1.5 ** k for k in range(20)]))


def test_a_reward_logging_runs_surrogate_is_not_judged() -> None:
    run = run_from({"loss": [-1.0 * 1.5 ** k for k in range(20)], "reward": [0.1 * k for k in range(20)]})
    assert isinstance(loss_unbounded(run), Skip)


@pytest.mark.parametrize("k", [1e-3, 1.0, 1e6])
def test_units_do_not_matter(k: float) -> None:
    loss = np.asarray([-3.0 * 1.3 ** i for i in range(30)]) * k
    (f,) = _findings(_run(loss.tolist()))
    assert f.values["growth"] == pytest.approx(1.3 ** 27, rel=0.01)


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
@pytest.mark.parametrize("run_id", sorted(FIRES_PUBLIC))
def test_the_public_runs_fail_however_they_were_logged(name: str, run_id: str) -> None:
    assert _findings(PERTURBATIONS[name](public_run(run_id)))
