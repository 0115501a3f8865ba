"""TP-LOSS-FROZEN (rules/frozen.py, issue #17): a loss whose tail repeats one value to the
digits the log prints. Real Lightning runs (tests/fixtures/core/frozen/, made by
scripts/fixtures/make_frozen_lightning_fixtures.py with lightning 2.6.6, torch 2.13.0):
a ReLU head that died, logging 0.5 on every batch, fires; the same run converging with
batch scatter stays silent. The public run that raised it (fresh7/diogoferreira7) fires
under every way of logging it; HF's 4-decimal 0.0001 repeated, a loss flat from its first
point (TP-FLAT's) and a tail at exactly 0 (TP-ZERO-LOSS-ONSET's) do not."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Level, Run, Series
from trainproof.parsers import read_run
from trainproof.rules.frozen import FROZEN, loss_frozen

from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS
from .test_public_runs import DOCS, public_runs

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "core" / "frozen"
DIOGO = "diogoferreira7__lstm-implementation__lightning_logs-version_6-metrics"


def _csv(name: str) -> Path:
    return FIXTURES / name / "lightning_logs" / "version_0" / "metrics.csv"


def _ids(run: Run) -> dict[str, Level]:
    return {f.rule_id: f.level for f in judge_run(run).findings}


def _generated(loss: list[float] | np.ndarray) -> Run:
    steps = np.arange(1.0, len(loss) + 1.0) * 10
    series = {"loss": Series("loss", steps, np.asarray(loss, dtype=float))}
    return Run("generated.jsonl", "example", series, steps.size, tuple(series))


@pytest.mark.parametrize("name", ["collapsed", "healthy"])
def test_the_fixture_reads_what_lightning_logged(name):
    expected = json.loads((FIXTURES / name / "expected.json").read_text())["train_loss"]
    s = read_run(_csv(name)).series["loss"]
    assert s.steps.tolist() == [float(p[0]) for p in expected]
    np.testing.assert_allclose(s.values, [p[1] for p in expected], rtol=1e-7)


def test_a_real_dead_relu_head_fires():
    run = read_run(_csv("collapsed"))
    (f,) = [f for f in judge_run(run).findings if f.rule_id == "TP-LOSS-FROZEN"]
    assert f.level is Level.WARN
    assert f.values["tail"] == 100 and f.values["level"] == 0.5 and f.location.step == 509
    # the loss rose 8x from its floor as the head died: TP-DIVERGE says it got worse,
    # TP-LOSS-FROZEN what it became; TP-FLAT (frozen from the first point) does not fire
    assert "TP-DIVERGE" in _ids(run) and "TP-FLAT" not in _ids(run)


def test_a_real_healthy_minibatch_run_stays_silent():
    run = read_run(_csv("healthy"))
    assert judge_run(run).verdict.value == "PASS"
    assert "TP-LOSS-FROZEN" not in _ids(run)


def _diogo() -> Run:
    (doc,) = [d for d in DOCS if d["id"] == DIOGO]
    with tempfile.TemporaryDirectory() as tmp:
        return read_run(public_runs.rebuild(doc, Path(tmp)))


def test_the_public_run_that_raised_it():
    run = _diogo()
    v = run.series["loss"].values
    assert v[0] == pytest.approx(1.7496, abs=1e-4) and abs(v[-180:] - 0.25).max() < 1e-5
    assert _ids(run) == {"TP-LOSS-FROZEN": Level.WARN}


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_it_fires_however_the_run_was_logged(name):
    assert "TP-LOSS-FROZEN" in _ids(PERTURBATIONS[name](_diogo()))


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_the_dead_head_fires_however_it_was_logged(name):
    assert "TP-LOSS-FROZEN" in _ids(PERTURBATIONS[name](read_run(_csv("collapsed"))))


def test_hf_four_decimals_at_0_0001_is_rounding_not_a_freeze():
    loss = [0.9, 0.3, 0.05, 0.004, 0.0008, 0.0002] + [0.0001] * 60
    assert "TP-LOSS-FROZEN" not in _ids(_generated(loss))
    # a log that prints its loss at full precision, repeating 0.25 to the digit, is a freeze
    moved = [1.749620795249939, 1.3251056671142578, 0.9784456491470337, 0.6746228337287903]
    assert "TP-LOSS-FROZEN" in _ids(_generated(moved + [0.25] * 60))
    # ...and the same values printed at 2 decimals say nothing finer than 0.01
    assert "TP-LOSS-FROZEN" not in _ids(_generated([1.75, 1.33, 0.98, 0.67] + [0.25] * 60))


def test_four_decimals_resolve_a_freeze_where_they_can():
    # 2.0413 repeated: HF's 4 decimals resolve 5e-5 of it, and a language model's loss
    # scatters by tenths of a percent from one logging interval to the next
    loss = list(np.round(np.linspace(3.5, 2.1, 40), 4)) + [2.0413] * 40
    assert _ids(_generated(loss)).get("TP-LOSS-FROZEN") is Level.WARN


def test_one_finding_per_failure():
    # frozen from the first point: TP-FLAT's
    assert "TP-LOSS-FROZEN" not in _ids(_generated([0.6931] * 80))
    # a tail at exactly 0: TP-ZERO-LOSS-ONSET's
    ids = _ids(_generated([2.0, 1.5, 1.2, 1.0] + [0.0] * 40))
    assert "TP-ZERO-LOSS-ONSET" in ids and "TP-LOSS-FROZEN" not in ids


def test_a_fall_that_freezes_is_one_finding_not_a_stuck_batch_too():
    # 230x down, then 0.01 to the digit: no scatter because nothing changes any more
    loss = np.r_[2.3 * np.exp(-np.arange(40) / 7.77), 0.01 + 1e-9 * (np.arange(40) % 3)]
    ids = _ids(_generated(loss))
    assert ids == {"TP-LOSS-FROZEN": Level.WARN}


def test_its_points_follow_its_tail():
    assert FROZEN.t("min_points") == FROZEN.t("min_tail") + 1


def test_a_short_or_noisy_tail_is_not_a_freeze():
    rng = np.random.default_rng(0)
    converged = 0.25 * np.exp(rng.normal(0, 0.002, 80))  # a fifth of a percent of scatter
    assert "TP-LOSS-FROZEN" not in _ids(_generated([1.0, 0.6, 0.4, *converged]))
    falling = list(0.25 + np.exp(-np.arange(100) / 17.3))  # full precision
    frozen = [0.25 + 1e-7 * (i % 3) for i in range(40)]
    assert "TP-LOSS-FROZEN" in _ids(_generated(falling[:60] + frozen[:20]))
    assert "TP-LOSS-FROZEN" not in _ids(_generated(falling[:40] + frozen[:19]))  # < min_tail
    assert "TP-LOSS-FROZEN" not in _ids(_generated(falling + frozen[:30]))  # < tail_share


def test_silent_on_every_real_log_but_the_dead_head():
    assert fires_on(loss_frozen, public()) == set()
    assert {Path(p).parent.parent.parent.name for p in fires_on(loss_frozen, local())} == {"collapsed"}
