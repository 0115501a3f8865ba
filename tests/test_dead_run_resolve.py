"""TP-DEAD-RUN's resolve_se (issue #17): a run is dead only when the log can tell its gain
from a clear one - the gain's upper bound (the measured log-gain plus resolve_se standard
errors, by end-vs-start or by the Theil-Sen line through the block medians, whichever is
tighter) below clear_improvement - or when something else witnesses it (a frozen eval loss,
a wrecked start). A log that cannot has no FAIL on progress: a gain below min_improvement
is TP-NO-PROGRESS (WARN: no visible progress, too noisy to call dead), one between the bands
a skip that says so; never a silent PASS of a run that showed nothing. Real public-run series
(fresh5's rokibol smoke run; the dead runs of every half; the noisy LoRA demos labelled WARN)
and generated boundaries; the perturbations are tests/test_invariance.py's."""

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


def test_the_ten_step_smoke_run_is_not_called_dead_and_says_why():
    # fresh5's rokibol: 9.9 % at 1.6 standard errors over ten one-batch points - no clear
    # gain, and no evidence of a dead run either: a WARN that says so, not a FAIL
    run = _public("rokibol__py-blog__results-checkpoint-10")
    out = rise.loss_not_improving(run)
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-NO-PROGRESS"]
    assert "9.9% improvement, 1.6 standard errors" in out[0].evidence
    report = judge_run(run)
    assert "TP-DEAD-RUN" not in {f.rule_id for f in report.findings} and report.verdict.value == "WARN"


@pytest.mark.parametrize("prefix", [
    "aloshdenny__kevin-token-compressor",  # design: 7.6 % at 1.6 se; the line over 33 blocks resolves it
    "kashishpadhiar11",  # fresh4's dead run
    "tradingwithme",  # fresh5's dead run
    "surely-zoe",  # fresh's dead run
    "jmglendenning", "yuanhuanghuang", "danyash759", "manojlovska", "monashaim", "10wins13", "annakompan",
])
def test_dead_runs_of_the_public_halves_stay_dead(prefix):
    out = rise.loss_not_improving(_public(prefix))
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-DEAD-RUN"]


@pytest.mark.parametrize("prefix", [
    "artaccann__osol_backend",  # fresh: 60-step unsloth demo, 20 % per point, first point low
    "melissasssss__turngpt",  # fresh7: 50 points at 20 % per point, no trend
])
def test_a_noisy_log_that_shows_nothing_is_a_warning_not_a_dead_run(prefix):
    out = rise.loss_not_improving(_public(prefix))
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-NO-PROGRESS"]
    assert out[0].level.value == "WARN" and "cannot rule out one of 10% either" in out[0].evidence
    assert out[0].values["upper"] > DEAD_RUN.t("clear_improvement")


def test_a_noisy_small_gain_the_log_cannot_place_is_a_warning():
    # fresh4's merkulovsvt: 7.6 % at 0.6 standard errors of 12.4 % per-point noise over 200
    # points; the line's bound (14 %) does not place it below the clear band either
    out = rise.loss_not_improving(_public("merkulovsvt__nlp__outputs-checkpoint-200"))
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-NO-PROGRESS"]
    assert "7.6% improvement" in out[0].evidence and "the line through the block medians" in out[0].evidence


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


def test_a_quiet_log_with_a_small_gain_inside_its_noise_is_resolved_by_its_line():
    # 5 % per point over 120 points, a 6 % step in the last fifth: where that is under 2.5
    # standard errors of one first point (inside the noise), the end against the start cannot
    # place it below 10 % at two standard errors, the line through 40 blocks can - a dead run
    # with a lucky end
    inside = 0
    for seed in range(10):
        out = rise.loss_not_improving(_smoke(0.05, 0.06, 120, seed))
        if out == []:
            continue  # the step came out beyond the noise: a gain, not this test's case
        inside += 1
        assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-DEAD-RUN"], seed
        assert out[0].values["gain_se"] < DEAD_RUN.t("min_gain_se")
    assert inside >= 3


def test_a_short_noisy_log_near_the_clear_band_is_a_warning():
    out = rise.loss_not_improving(_smoke(0.06, 0.09, 10))
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-NO-PROGRESS"]


def test_a_long_noisy_log_near_the_clear_band_is_judged_by_its_trend():
    # 60 points at 6 % (20 blocks): judged by the line through the blocks, not by one point
    out = rise.loss_not_improving(_smoke(0.06, 0.02, 60))
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-DEAD-RUN"]


def test_below_min_improvement_on_a_noisy_short_log_is_a_warning():
    # 15 % per point, ten points: a 2 % gain may hide a 30 % one - no visible progress, not dead
    out = rise.loss_not_improving(_smoke(0.15, 0.02, 10))
    assert not isinstance(out, Skip) and [f.rule_id for f in out] == ["TP-NO-PROGRESS"]


@pytest.mark.parametrize("noise", [0.005, 0.02, 0.05, 0.1, 0.2, 0.3])
@pytest.mark.parametrize("n", [12, 30, 60, 200])
def test_a_run_that_never_moved_passes_only_on_a_visible_chance_gain(noise, n):
    """A constant loss under batch noise (five seeds each): TP-DEAD-RUN fails it wherever the
    log is quiet and long enough to resolve it, TP-NO-PROGRESS warns where it cannot; it passes only
    when chance handed it a clear gain (past clear_improvement or min_gain_se)."""
    for seed in range(5):
        rng = np.random.default_rng(seed)
        run = run_from({"loss": (3.0 * np.exp(rng.normal(0, noise, n))).tolist()})
        found = {f.rule_id for f in judge_run(run).findings if f.level.value in ("WARN", "FAIL")}
        if noise <= 0.02 and n >= 30:  # nine blocks or more at 2 % per point: resolved
            assert found & {"TP-DEAD-RUN", "TP-LOSS-ROSE"}, (noise, n, seed, found)
        if found & {"TP-DEAD-RUN", "TP-NO-PROGRESS", "TP-LOSS-ROSE"}:
            continue
        out = rise.loss_not_improving(run)
        s = run.series["loss"]
        gain = 1 - float(np.median(s.values[-rise.end_points(s):])) / float(s.values[0])
        assert out == [] and gain >= DEAD_RUN.t("min_improvement"), (noise, n, seed, gain, out)
