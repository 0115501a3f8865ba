"""TP-DEAD-RUN's steady-fall witness (rules/steady_fall.py) and the two statistics it rests
on (stats.mann_kendall, stats.theil_sen). The generated curves that hold it to account at
every thinning and perturbation are in tests/test_invariance.py."""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from trainproof import stats
from trainproof.engine import judge_run
from trainproof.model import Run, Series
from trainproof.parsers import read_run
from trainproof.rules.base import overridden_thresholds
from trainproof.rules.rise import DEAD_RUN
from trainproof.rules.steady_fall import steady_fall

ROOT = Path(__file__).resolve().parents[1]


def test_mann_kendall_by_hand():
    # 10 rising values: S = 45 pairs, variance 10*9*25/18 = 125, continuity: (45 - 1) / sqrt 125
    assert stats.mann_kendall(np.arange(10.0)) == pytest.approx(44 / np.sqrt(125))
    assert stats.mann_kendall(-np.arange(10.0)) == pytest.approx(-44 / np.sqrt(125))
    # ties: [1, 1, 2]: S = 0 + 1 + 1 = 2; variance (3*2*11 - 2*1*9) / 18 = 48 / 18
    assert stats.mann_kendall(np.array([1.0, 1.0, 2.0])) == pytest.approx(1 / np.sqrt(48 / 18))
    assert stats.mann_kendall(np.full(20, 2.3)) == 0.0
    assert stats.mann_kendall(np.array([1.0, 2.0])) == 0.0


def test_mann_kendall_is_standard_normal_without_a_trend():
    rng = np.random.default_rng(0)
    z = np.array([stats.mann_kendall(rng.normal(size=50)) for _ in range(2000)])
    assert abs(z.mean()) < 0.1 and 0.9 < z.std() < 1.1
    assert (z >= 3.5).sum() <= 2  # the trend_z bar: about 2 in 10,000


def test_mann_kendall_ignores_units():
    x = np.exp(np.random.default_rng(1).normal(size=40))
    assert stats.mann_kendall(x) == stats.mann_kendall(np.log(x)) == stats.mann_kendall(3.0 * x)


def test_theil_sen_by_hand():
    assert stats.theil_sen(2.0 * np.arange(10.0) + 1.0) == pytest.approx(2.0)
    wild = 2.0 * np.arange(20.0)
    wild[[3, 11]] = 1e6  # a minority of wild points does not move it
    assert stats.theil_sen(wild) == pytest.approx(2.0)
    step = np.r_[np.full(3, 5.0), np.zeros(27)]  # a step confined to the start: most pairs are flat
    assert stats.theil_sen(step) == 0.0
    assert stats.theil_sen(np.array([1.0])) == 0.0


def _series(values: np.ndarray) -> Series:
    return Series("loss", 10.0 * np.arange(values.size), values)


def test_no_trend_is_measured_on_a_loss_that_is_not_positive():
    assert steady_fall(_series(np.r_[1.0, 0.5, 0.0, 0.2] * np.ones(4)), 1.0, 1.0, DEAD_RUN.t) is None


def test_a_noiseless_steady_fall_is_learning():
    t = steady_fall(_series(np.linspace(2.2, 2.15, 300)), 2.2, 1.0, DEAD_RUN.t)
    assert t is not None and t.learned and t.fall == pytest.approx(0.05 / 2.2, rel=0.05)
    flat = steady_fall(_series(np.full(300, 2.2)), 2.2, 1.0, DEAD_RUN.t)
    assert flat is not None and not flat.learned and flat.z == 0.0


def test_the_thresholds_are_the_rules():
    """A configuration that raises trend_z past what a run shows brings the FAIL back."""
    rng = np.random.default_rng(4)
    values = 2.2 * (1 - 0.02 * np.arange(2000) / 1999) * np.exp(rng.normal(0, 0.01, 2000))
    t = steady_fall(_series(values), float(values[0]), 1.0, DEAD_RUN.t)
    assert t is not None and t.learned
    with overridden_thresholds({"TP-DEAD-RUN": {"trend_z": t.z + 1}}):
        again = steady_fall(_series(values), float(values[0]), 1.0, DEAD_RUN.t)
    assert again is not None and not again.learned


def _public_runs():
    spec = importlib.util.spec_from_file_location("public_runs", ROOT / "scripts" / "public_runs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("public_runs", mod)
    spec.loader.exec_module(mod)
    return mod


def _fresh(stem: str):
    pr = _public_runs()
    doc = json.loads((ROOT / "public_runs" / "fresh" / f"{stem}.json").read_text())
    with tempfile.TemporaryDirectory() as d:
        return judge_run(read_run(pr.rebuild(doc, Path(d))))


def test_the_fresh_runs_that_moved_it():
    """The fresh half is in-sample for TP-DEAD-RUN since this change (public_runs/
    dead_run_before_after.txt): arbordreams, continued training falling 2.23 -> 2.12 over
    2,500 steps, learned; artaccann's 60-step demo, wandering 0.46-1.32 with no trend, was
    dead (labelled WARN: arguable) until TP-DEAD-RUN's resolve_se needed two standard errors:
    the line through its 20 blocks leaves room for a 16 % gain, so it is TP-NO-PROGRESS."""
    arbor = _fresh("arbordreams__tokalign-baseline__model-trainer_state")
    assert "TP-DEAD-RUN" not in {f.rule_id for f in arbor.findings}
    demo = _fresh("artaccann__osol_backend__outputs-trainer_state")
    assert "TP-DEAD-RUN" not in {f.rule_id for f in demo.findings}
    (f,) = [f for f in demo.findings if f.rule_id == "TP-NO-PROGRESS"]
    assert "up to 16% (the line through the block medians, at 2 standard errors)" in f.evidence


def test_a_drift_of_a_few_tenths_of_a_per_cent_is_not_learning_at_any_thinning():
    """fresh11's christianjzb: a loss at 1.00 (its targets' variance) for 50 epochs, 1,200
    points; the line through its blocks falls 0.2 %, 3.6 standard errors. Under trend_min_fall
    (1 %) that is no learning, full or halved (halved, Mann-Kendall passes 3.5 too)."""
    from tests.perturbations import PERTURBATIONS

    pr = _public_runs()
    stem = "christianjzb__projects__lightning_logs-version_3-metrics"
    doc = json.loads((ROOT / "public_runs" / "fresh11" / f"{stem}.json").read_text())
    with tempfile.TemporaryDirectory() as d:
        run = read_run(pr.rebuild(doc, Path(d)))
    for r in (run, PERTURBATIONS["halve"](run)):
        assert "TP-DEAD-RUN" in {f.rule_id for f in judge_run(r).findings if f.level.value == "FAIL"}


def test_a_gallery_dead_run_says_it_has_no_trend():
    """With its frozen eval loss the lr=0 run is dead whatever its train loss does (no trend
    is asked for); without it, the train loss shows no steady fall."""
    run = read_run(ROOT / "examples/gallery/lr_zero/trainer_state.json")
    (f,) = [f for f in judge_run(run).findings if f.rule_id == "TP-DEAD-RUN"]
    assert "no steady fall" not in f.evidence and f.values["trend_z"] is None
    alone = Run(run.path, run.format, {k: s for k, s in run.series.items() if k != "eval_loss"}, run.records,
                run.columns, run.notes, run.meta)
    (f,) = [f for f in judge_run(alone).findings if f.rule_id == "TP-DEAD-RUN"]
    assert "no steady fall across the run" in f.evidence
