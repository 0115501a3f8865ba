"""TP-SECOND-PASS-FLAT (rules/second_pass.py): with two passes or more in the log, the train
loss over the second half of the last complete pass is within 1 % of the same stretch of the
first pass, on a log that resolves a 2 % fall, after a first drop: the weights stopped
moving. WARN.

The real case is fresh4's charlene-chenn, labelled broken before any tool ran: a VLA PEFT
fine-tune, 28.4 -> 16.8 in its first 100 steps, then 16.3-16.7 for the remaining 2.9
epochs. Every other real log stays silent. fresh2's atulav7, the same shape, is not
judged: its log ends at epoch 0.52, one pass. Generated curves pin each bar and skip."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.rules.base import overridden_thresholds
from trainproof.rules.second_pass import SECOND_PASS_FLAT, second_pass_flat

from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS

CHARLENE = "charlene-chenn__vla-peft__checkpoints-checkpoint-1494-trainer_state"
ATULAV7 = "atulav7__webcane__models-trainer_state"


def _real(name: str) -> Run:
    return dict(public())[name]


def _fires(run: Run) -> bool:
    out = second_pass_flat(run)
    return not isinstance(out, Skip) and bool(out)


def _run(fall: float, epochs: float = 3.0, noise: float = 0.003, level: float = 16.6, seed: int = 0,
         drop: bool = True) -> Run:
    """A first drop (5x the level down to it), then passes at one level each, the later passes
    `fall` below the first - per pass, evenly; 100 logs a pass, `noise` per point."""
    rng = np.random.default_rng(seed)
    n = round(epochs * 100)
    steps = np.arange(1.0, n + 1.0) * 10.0
    ep = np.arange(1.0, n + 1.0) / 100.0
    passes = np.floor(np.minimum(ep - 1e-9, epochs - 1e-9))
    y = level * (1.0 - fall / max(1.0, np.floor(epochs - 0.05)) * passes)
    if drop:
        y = y * (1.0 + 4.0 * np.exp(-ep / 0.03))
    y = y * np.exp(rng.normal(0.0, noise, n))
    series = {"loss": Series("loss", steps, y), "epoch": Series("epoch", steps, ep)}
    return Run("generated.jsonl", "example", series, n, tuple(series))


def test_warns_on_the_run_that_stalled_after_its_first_drop() -> None:
    (f,) = second_pass_flat(_real(CHARLENE))
    assert f.rule_id == "TP-SECOND-PASS-FLAT" and f.level.value == "WARN"
    assert f.values["k"] == 3 and abs(f.values["fall"]) < 0.001 and f.values["start"] > 28
    assert f.values["a"] == pytest.approx(16.62, abs=0.01) and f.values["b"] == pytest.approx(16.61, abs=0.01)


def test_one_pass_is_not_judged() -> None:
    out = second_pass_flat(_real(ATULAV7))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW and "epoch 0.52" in out.detail


def test_silent_on_every_other_real_log() -> None:
    assert len(public()) >= 300 and len(local()) >= 100  # the logs were found
    assert fires_on(second_pass_flat, public()) == {CHARLENE}
    assert fires_on(second_pass_flat, local()) == set()


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_the_real_finding_survives_how_it_was_logged(name: str) -> None:
    assert _fires(PERTURBATIONS[name](_real(CHARLENE)))


@pytest.mark.parametrize("seed", range(4))
def test_the_bars(seed: int) -> None:
    assert _fires(_run(0.0, seed=seed))
    assert _fires(_run(0.0055, seed=seed))  # the broken run's second pass
    assert _fires(_run(-0.0055, seed=seed))  # flat either way
    assert not _fires(_run(0.012, seed=seed))  # past max_fall
    assert not _fires(_run(0.015, seed=seed))  # the smallest fall a healthy log showed
    assert not _fires(_run(-0.03, seed=seed))  # a rise: the weights moved
    assert _fires(_run(0.0, epochs=2.0, seed=seed)) and _fires(_run(0.0, epochs=1.99, seed=seed))
    assert _fires(_run(0.0, epochs=5.0, seed=seed))


@pytest.mark.parametrize("seed", range(4))
def test_a_log_too_noisy_to_resolve_two_percent_is_silent(seed: int) -> None:
    """At 10 % per point, 50 points a stretch: the standard error of the difference is
    ~2.5 %, so a 2 % fall cannot be told from none."""
    assert not _fires(_run(0.0, noise=0.10, seed=seed))
    with overridden_thresholds({"TP-SECOND-PASS-FLAT": {"min_se": 0.0}}):
        assert _fires(_run(0.0, noise=0.10, seed=1)) or _fires(_run(0.0, noise=0.10, seed=2))


def test_no_drop_is_dead_run_s_and_a_fitted_loss_is_not_judged() -> None:
    assert not _fires(_run(0.0, drop=False))
    assert not _fires(_run(0.0, level=0.05))
    assert _fires(_run(0.0, level=SECOND_PASS_FLAT.t("min_level") * 2))


def test_skips() -> None:
    out = second_pass_flat(_run(0.0, epochs=1.9))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW
    r = _run(0.0)
    out = second_pass_flat(Run(r.path, r.format, {"loss": r.series["loss"]}, r.records, ("loss",)))
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA
