"""TP-LOSS-REPEATS (rules/repeats.py): a loss that repeats one sequence of values, point for point,
period after period, to the end of the log - a model that no longer changed, fed the same batches in
the same order. Raised by public run fresh20/maximpopov11 (labelled broken by its reader before any
tool ran: the same five losses every epoch for 275 epochs, a PASS at first scoring); fresh18's
elizaveta-terek and fresh9's monashaim, labelled broken for the same reason, fire too. No other
public run and no local real log does."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Run, Skip
from trainproof.rules.repeats import REPEATS, loss_repeats

from .real_logs import fires_on, labelled_runs, local, public_run
from .test_invariance import PERTURBATIONS

FIRES_PUBLIC = {"maximpopov11__dancevision__lightning_logs-version_12-metrics",
                "elizaveta-terek__eeg-fmri-decoding__lightning_logs-version_9-metrics",
                "monashaim__harmonic-dense-network__dvclive"}


def _findings(run: Run) -> list:
    out = loss_repeats(run)
    return [] if isinstance(out, Skip) else list(out)


def test_fires_on_the_public_runs_labelled_for_it_and_on_no_other() -> None:
    fired = {doc["id"]: doc["label"]["broken"] for doc, run in labelled_runs() if _findings(run)}
    assert set(fired) == FIRES_PUBLIC and all(fired.values()), fired


def test_the_run_that_raised_it_says_what_repeats() -> None:
    run = public_run("maximpopov11__dancevision__lightning_logs-version_12-metrics")
    (f,) = _findings(run)
    assert f.values["period"] == 5 and f.values["periods"] >= 275
    assert judge_run(run).verdict.value == "WARN"  # it passed before this rule


def test_silent_on_every_local_real_log() -> None:
    assert len(local()) >= 100
    assert fires_on(loss_repeats, local()) == set()


_EPOCH = [2.89137, 2.61274, 2.35419, 2.12365, 1.98182]


def _run(loss: list[float]) -> Run:
    return run_from({"loss": loss})


def test_a_model_that_learns_on_the_same_batches_is_silent() -> None:
    """Same batches, same order, each a little lower every epoch: learning, not a repeat."""
    loss = [v * 0.999 ** k for k in range(20) for v in _EPOCH]
    assert not _findings(_run(loss))


def test_one_value_held_is_frozen_not_repeated() -> None:
    """A period of one point is TP-LOSS-FROZEN's: one finding per failure."""
    loss = [3.0, 2.5, 2.0, *([0.25] * 30)]
    assert not _findings(_run(loss))


def test_two_periods_are_not_enough() -> None:
    """The sequence and one repeat could be a log written twice; three periods are asked."""
    assert not _findings(_run([3.6, 3.3, 3.1, 2.95, *(_EPOCH * 2)]))
    (f,) = _findings(_run([3.6, 3.3, 3.1, 2.95, *(_EPOCH * 3)]))
    assert f.values["period"] == 5 and f.values["periods"] == 3
    assert REPEATS.t("min_periods") == 3


def test_a_coarse_log_is_not_judged() -> None:
    """Printed to one decimal, a loss near 1 repeats by rounding: the log cannot say."""
    loss = [1.3, 1.2, 1.1, *([1.0, 0.9, 1.1] * 8)]
    assert not _findings(_run(loss))


@pytest.mark.parametrize("k", [1e-3, 1.0, 1e6])
def test_units_do_not_matter(k: float) -> None:
    loss = np.asarray([3.6, 3.3, 3.1, 2.95, 2.9, *(_EPOCH * 6)]) * k
    (f,) = _findings(_run(loss.tolist()))
    assert f.values["period"] == 5


@pytest.mark.parametrize("name", ["cut1", "cut2", "cut3", "steps+1000", "x2"])
def test_the_public_run_fires_however_it_was_logged(name: str) -> None:
    run = public_run("maximpopov11__dancevision__lightning_logs-version_12-metrics")
    assert _findings(PERTURBATIONS[name](run))


def test_a_long_noisy_log_costs_a_window() -> None:
    """A 2M-point log whose last value happens to recur: the match breaks within the last points."""
    rng = np.random.default_rng(0)
    loss = 2.0 * np.exp(rng.normal(0.0, 0.1, 2_000_000))
    loss[-1] = loss[-100]
    assert not _findings(_run(loss.tolist()))


def test_a_shorter_partial_period_does_not_hide_the_real_one() -> None:
    """Each epoch ends with two batches repeated (..., 3.3, 4.4, 3.3, 4.4): a period of two
    matches the last four points, too few to judge; the real period, six, repeats five times."""
    epoch = [1.10417, 2.20833, 3.31249, 4.41666, 3.31249, 4.41666]
    (f,) = _findings(_run([5.0, 4.8, 4.6, 4.5, *(epoch * 5)]))
    assert f.values["period"] == 6 and f.values["periods"] == 5
