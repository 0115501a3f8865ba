"""TP-SMALL-GAIN (rules/rise.py, judged by TP-DEAD-RUN's check): a loss that fell by less than
TP-DEAD-RUN's 5 % band but far beyond its own noise barely learned - it did not fail to learn.
The runs that raised it are public runs read by engineers before any tool ran: fresh18's
diego-azenha (a Lightning VAE, 1.4 % in ten epochs) and fresh21's jofa974 (a DVCLive tabular
regressor, 4.4 % in ten epochs, its eval loss falling beside it), both labelled WARN and both
failed as dead before. A run whose held-out loss ended above its start stays dead (fresh10's
annakompan, labelled broken)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Run, Skip
from trainproof.parsers import read_run
from trainproof.rules import rise
from trainproof.rules.rise import DEAD_RUN, SMALL_GAIN

from .test_public_runs import DOCS, public_runs


def _public(prefix: str) -> Run:
    doc = next(d for d in DOCS if d["id"].startswith(prefix))
    with tempfile.TemporaryDirectory() as tmp:
        return read_run(public_runs.rebuild(doc, Path(tmp)))


def _ids(run: Run) -> list[str]:
    out = rise.loss_not_improving(run)
    return [] if isinstance(out, Skip) else [f.rule_id for f in out]


@pytest.mark.parametrize("prefix", ["diego-azenha__factorvae", "jofa974__playground"])
def test_the_public_runs_that_raised_it_barely_learned(prefix: str) -> None:
    run = _public(prefix)
    assert _ids(run) == ["TP-SMALL-GAIN"]
    report = judge_run(run)
    assert report.verdict.value == "WARN" and "TP-DEAD-RUN" not in {f.rule_id for f in report.findings}


def test_an_eval_loss_that_ended_above_its_start_keeps_the_run_dead() -> None:
    """annakompan: 4.1 % at 32 standard errors on the train loss, but val 2.19 -> 2.22 (median of
    its last three): nothing reached held-out data."""
    assert _ids(_public("annakompan")) == ["TP-DEAD-RUN"]


_FALL = [0.9872, 0.9527, 0.9483, 0.9469, 0.9459, 0.9449, 0.9444, 0.9439, 0.9433, 0.9425]


@pytest.mark.parametrize("scale", [1e-3, 1.0, 250.0])
def test_the_verdict_does_not_move_with_the_units(scale: float) -> None:
    assert _ids(run_from({"loss": [v * scale for v in _FALL]})) == ["TP-SMALL-GAIN"]


def test_a_drift_in_the_last_digits_is_not_learning() -> None:
    """A 0.5 % fall (under min_fall, TP-DEAD-RUN's trend_min_fall) on a finely printed log is
    hundreds of standard errors and still no gain: dead."""
    drift = [1.0 - 0.0005 * i for i in range(10)]
    assert _ids(run_from({"loss": drift})) == ["TP-DEAD-RUN"]
    assert SMALL_GAIN.t("min_fall") == DEAD_RUN.t("trend_min_fall") == 0.01


@pytest.mark.parametrize("seed", range(5))
def test_batch_noise_around_a_constant_never_reaches_it(seed: int) -> None:
    """A dead run logged every step at 4 % noise: its chance gain sits within a few standard
    errors, far under min_gain_se."""
    rng = np.random.default_rng(seed)
    loss = 1.5 * np.exp(rng.normal(0.0, 0.04, 60))
    assert "TP-SMALL-GAIN" not in _ids(run_from({"loss": loss.tolist()}))


def test_a_frozen_eval_loss_keeps_the_run_dead() -> None:
    """The same small, clean fall beside an eval loss identical at every evaluation: the weights
    never changed, the train loss moved with its data."""
    run = run_from({"loss": _FALL, "eval_loss": [0.95] * 10})
    assert _ids(run) == ["TP-DEAD-RUN"]
