"""TP-DEAD-RUN's resolve_se (issue #17, fresh5): a gain inside the noise is dead only when
the log can tell it from a clear one - its upper bound (the measured log-gain plus
resolve_se standard errors) below clear_improvement - or when the log is long enough for
the steady-fall test to have shown learning. A short log that can do neither has no
verdict on progress: a skip that says so, never a FAIL and never a silent PASS. Real
public-run series (fresh5's rokibol smoke run; the dead runs of every half) and generated
boundaries; the perturbations are tests/test_invariance.py's."""

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
from trainproof.rules import steady_fall as sf
from trainproof.rules.rise import DEAD_RUN

from .test_public_runs import DOCS, public_runs


def _public(prefix: str) -> Run:
    doc = next(d for d in DOCS if d["id"].startswith(prefix))
    with tempfile.TemporaryDirectory() as tmp:
        return read_run(public_runs.rebuild(doc, Path(tmp)))


def test_the_ten_step_smoke_run_is_not_judged_dead_and_says_why():
    run = _public("rokibol__py-blog__results-checkpoint-10")
    out = rise.loss_not_improving(run)
    assert isinstance(out, Skip)
    assert "not judged: a 9.9% gain at 1.6 standard errors" in out.detail
    report = judge_run(run)
    assert "TP-DEAD-RUN" not in {f.rule_id for f in report.findings}


@pytest.mark.parametrize("prefix", [
    "aloshdenny__kevin-token-compressor",  # design: 7.6 % at 1.6 se, but 33 blocks and no steady fall
    "merkulovsvt__nlp__outputs-checkpoint-200",  # fresh4: 200 per-step points, no steady fall
    "kashishpadhiar11",  # fresh4's dead run
    "tradingwithme",  # fresh5's dead run
    "surely-zoe",  # fresh's dead run
])
def test_dead_runs_of_the_public_halves_stay_dead(prefix):
    out = rise.loss_not_improving(_public(prefix))
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-DEAD-RUN"]


def test_the_trend_test_has_power_from_nine_blocks():
    # The most a Mann-Kendall z can be on n blocks all falling: 8 give 3.34, 9 give 3.65.
    assert not sf.can_show_fall(8, DEAD_RUN.t)
    assert sf.can_show_fall(9, DEAD_RUN.t)


def _smoke(noise: float, gain: float, n: int, seed: int = 0) -> Run:
    rng = np.random.default_rng(seed)
    loss = 4.0 * np.exp(rng.normal(0, noise, n))
    loss[0] = 4.0
    loss[-max(3, n // 5):] = 4.0 * (1 - gain) * np.exp(rng.normal(0, noise / 10, max(3, n // 5)))
    return run_from({"loss": loss.tolist()})


def test_a_short_quiet_log_with_a_small_gain_is_still_dead():
    # 4 % per point, a 5.7 % gain at 1.8 standard errors: its upper bound stays below 10 %
    out = rise.loss_not_improving(_smoke(0.04, 0.055, 10))
    assert not isinstance(out, Skip) and out


def test_a_short_noisy_log_near_the_clear_band_is_not_judged():
    out = rise.loss_not_improving(_smoke(0.06, 0.09, 10))
    assert isinstance(out, Skip) and out.detail.startswith("not judged")


def test_a_long_noisy_log_near_the_clear_band_is_judged_by_its_trend():
    # 60 points (20 blocks): the trend test had its chance to show learning, so the FAIL stands
    out = rise.loss_not_improving(_smoke(0.06, 0.09, 60))
    assert not isinstance(out, Skip) and out


def test_below_min_improvement_is_dead_however_noisy_a_short_log():
    out = rise.loss_not_improving(_smoke(0.15, 0.02, 10))
    assert not isinstance(out, Skip) and out
