"""TP-EVAL-NEVER-BETTER (rules/eval_no_gain.py): the eval loss never got materially below
its first evaluation and ended well above it, in its own noise and a declared share, while
the train loss fell.

A second arm needs no climb: the eval loss never materially better while the train loss fell
tenfold (fresh14's Keras crop classifier: val at ln 5 throughout, train 1.14 -> 0.028).

The real case is fresh3's medimind LM (shivamgoyal03, labelled broken by its reader: train
9.76 -> 7.40, eval 9.76 -> 9.705 -> 10.4-10.7), which TP-OVERFIT's 20 % ratio to the eval
minimum under-reads. It also finds fresh3's yongshuaiy (labelled WARN: eval 1.061 -> 1.052
-> 1.18 while train fell 36 %), fresh's anda-researchers (labelled WARN, overfits: eval 1.906
-> 1.881 -> 2.128 while train fell 29 %; found once the train loss at the first evaluation is a
median of five points, not one noisy batch) and the galleries' shuffled-label runs (bad_labels, every
seed: eval 7-13 % above its first evaluation, train down 13-25 %), all broken or worth a
look; no run labelled PASS in any half. Generated curves pin each bar."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.rules.eval_no_gain import EVAL_NEVER_BETTER, eval_never_better

from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS, assert_invariant

RULE = "TP-EVAL-NEVER-BETTER"
MEDIMIND = "shivamgoyal03__medimind__results-checkpoint-2300-trainer_state"
YONG = "yongshuaiy__llms-final__output-checkpoint-669-trainer_state"
ANDA = "anda-researchers__mcfed_drl__trainer_state"


def _fires(run: Run) -> bool:
    out = eval_never_better(run)
    return not isinstance(out, Skip) and bool(out)


def test_warns_on_the_lm_that_never_generalised() -> None:
    (f,) = eval_never_better(dict(public())[MEDIMIND])
    v = f.values
    assert f.rule_id == RULE and v["n"] == 23 and v["gain"] < 0.01
    # rise_se: 10 standard errors of the curve's noise at the scale of three evaluations (its
    # point-to-point noise alone made it 28; either is far past the bar of 3)
    assert 0.08 < v["rise"] < 0.1 and v["rise_se"] > 8 and v["train_fall"] > 0.2


def test_which_real_logs_it_finds() -> None:
    assert len(public()) >= 250 and len(local()) >= 100
    assert fires_on(eval_never_better, public()) == {MEDIMIND, YONG, ANDA}
    found = fires_on(eval_never_better, local())
    assert {p.split("/examples/")[-1].split("/")[1] for p in found if "/examples/" in p} == {"bad_labels"}
    assert len([p for p in found if "/examples/" in p]) == 6  # both galleries, three seeds each
    assert {p for p in found if "/examples/" not in p} == {
        p for p in found if p.endswith("evidence/curve/stuck_batch/metrics.jsonl")}


def test_the_real_finding_survives_how_it_was_logged() -> None:
    run = dict(public())[MEDIMIND]
    assert {name for name, p in PERTURBATIONS.items() if not _fires(p(run))} == set()


# ---------------------------------------------------------------- generated curves

def _run(ev: list[float], train_fall: float = 0.24, n: int = 200, seed: int = 0) -> Run:
    """200 train points every 10 steps falling by `train_fall` at 1 % noise, and the eval
    values spread over the run, the first at step 10."""
    rng = np.random.default_rng(seed)
    steps = 10.0 * np.arange(1, n + 1)
    loss = 9.76 * (1 - train_fall * (1 - np.exp(-steps / 600))) * np.exp(rng.normal(0, 0.01, n))
    at = np.linspace(0, n - 1, len(ev)).astype(int)
    series = {"loss": Series("loss", steps, loss), "eval_loss": Series("eval_loss", steps[at], np.asarray(ev))}
    return Run("generated.json", "example", series, n, tuple(series))


def _climb(rise: float, dip: float = 0.006, n: int = 12, seed: int = 1) -> list[float]:
    """Eval from 9.76, a best `dip` below it at the second evaluation, then rising to
    `rise` above the start, with 0.3 % noise."""
    rng = np.random.default_rng(seed)
    base = np.concatenate([[1.0, 1.0 - dip], 1.0 + rise * np.linspace(0.3, 1.0, n - 2)])
    return (9.76 * base * np.exp(np.r_[0.0, 0.0, rng.normal(0, 0.003, n - 2)])).tolist()


def test_the_generated_curve_warns() -> None:
    assert _fires(_run(_climb(0.09)))


@pytest.mark.parametrize(("rise", "fires"), [(0.04, False), (0.065, True)])
def test_the_rise_share(rise: float, fires: bool) -> None:
    assert _fires(_run(_climb(rise))) is fires


@pytest.mark.parametrize(("dip", "fires"), [(0.015, True), (0.03, False)])
def test_a_best_materially_below_the_start_is_not_this_rule(dip: float, fires: bool) -> None:
    assert _fires(_run(_climb(0.09, dip=dip))) is fires


def test_the_rise_must_clear_the_eval_noise() -> None:
    rng = np.random.default_rng(5)
    noisy = (9.76 * np.r_[1.0, 0.995, 1.07 * np.exp(rng.normal(0, 0.08, 10))]).tolist()
    assert not _fires(_run(noisy))


@pytest.mark.parametrize(("fall", "fires"), [(0.05, False), (0.2, True)])
def test_the_train_loss_must_have_fallen(fall: float, fires: bool) -> None:
    assert _fires(_run(_climb(0.09), train_fall=fall)) is fires


def test_five_evaluations_at_least() -> None:
    out = eval_never_better(_run(_climb(0.09, n=4)))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW
    assert _fires(_run(_climb(0.09, n=5)))


def test_a_climb_tp_overfit_reports_is_left_to_it() -> None:
    run = _run(_climb(0.4))
    out = eval_never_better(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED
    assert "TP-OVERFIT" in {f.rule_id for f in judge_run(run).findings}


def test_without_a_train_loss_it_is_not_judged() -> None:
    run = _run(_climb(0.09))
    out = eval_never_better(replace(run, series={"eval_loss": run.series["eval_loss"]}))
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA


@pytest.mark.parametrize("seed", range(4))
def test_a_generated_verdict_survives_how_it_was_logged(seed: int) -> None:
    run = _run(_climb(0.09, seed=seed), seed=seed)
    assert assert_invariant(run, f"seed={seed}") == ("WARN", frozenset())  # (FAIL IDs only)
    assert all(_fires(p(run)) for p in PERTURBATIONS.values())


def test_declared_thresholds_are_the_ones_used() -> None:
    r = EVAL_NEVER_BETTER
    assert (r.t("min_points"), r.t("max_gain"), r.t("min_rise"), r.t("min_rise_se"), r.t("min_train_fall"),
            r.t("tenfold_fall")) == (5, 0.02, 0.05, 3.0, 0.10, 0.90)


# ---------------------------------------------------------------- the tenfold arm

CROP = "abhishek07-web__cropdiseaseprediction__results-history"


def test_the_classifier_whose_val_loss_never_left_chance_warns() -> None:
    """fresh14's Keras crop classifier (labelled broken before any tool ran; passed at its first
    scoring): train 1.14 -> 0.028 while val sits at ln 5 (1.600 -> 1.584) and val accuracy at 1/5."""
    import tempfile
    from pathlib import Path

    from trainproof.parsers import read_run

    from .real_logs import DOCS, public_runs
    doc = next(d for d in DOCS if d["id"] == CROP)
    with tempfile.TemporaryDirectory() as tmp:
        (f,) = eval_never_better(read_run(public_runs.rebuild(doc, Path(tmp))))
    v = f.values
    assert v["gain"] < 0.02 and v["rise"] < 0 and v["train_fall"] > 0.95 and "tenfold" in v["arm"]
    assert "eval_accuracy 0.4 -> 0.2" in v["corroboration"]


def _flat(level: float = 1.6, n: int = 12, seed: int = 3) -> list[float]:
    rng = np.random.default_rng(seed)
    return (level * np.exp(np.r_[0.0, -0.004 * np.linspace(0.2, 1.0, n - 1) + rng.normal(0, 0.002, n - 1)])).tolist()


@pytest.mark.parametrize(("fall", "fires"), [(0.85, False), (0.95, True)])
def test_a_flat_eval_loss_beside_a_tenfold_train_fall(fall: float, fires: bool) -> None:
    assert _fires(_run(_flat(), train_fall=fall)) is fires


def test_a_flat_eval_loss_that_got_better_is_not_this_rule() -> None:
    better = (1.6 * np.r_[1.0, np.geomspace(0.97, 0.9, 11)]).tolist()
    assert not _fires(_run(better, train_fall=0.95))
