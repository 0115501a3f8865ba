"""TP-TRAIN-RISE-EVAL-FELL (declared beside TP-DIVERGE in rules/run.py, measured by
rules/train_rise.py): a training loss far
above its floor to the end, beside an eval loss that ended at or below its first evaluation after
that floor, is training batches that changed, not a diverged model - a WARN, not TP-DIVERGE's FAIL.
Raised by public run fresh39/vineet-sharma1927 (labelled a plateau before any tool ran, failed as
diverged at its first scoring)."""

from __future__ import annotations

import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Run, Skip
from trainproof.rules.evalcurve import OVERFIT
from trainproof.rules.run import DIVERGE, TRAIN_RISE_EVAL_FELL, loss_diverging
from trainproof.rules.train_rise import eval_fell_after

from .real_logs import local, public_run

RAISED_BY = "vineet-sharma1927__satya-check__results-checkpoint-6168-trainer_state"
# The public runs TP-DIVERGE fails that log an eval loss after the floor: it climbs there too.
DIVERGED_WITH_EVAL = ("podolskydavid__optiver-nomidnightsnack__classification-results-checkpoint-2500-trainer_state",
                      "dparra2399__learnedcowsip__tb_logs-my_model-version_0-metrics")
_CLIMB = [0.65, 0.55, 0.5, 0.42, 0.33, 0.3, 0.29, 0.3, 0.31, 0.4, 0.47, 0.48, 0.49, 0.48]


def _ids(run: Run) -> set[str]:
    out = loss_diverging(run)
    return set() if isinstance(out, Skip) else {f.rule_id for f in out}


def test_the_run_that_raised_it_is_a_warning_not_a_divergence() -> None:
    run = public_run(RAISED_BY)
    assert _ids(run) == {TRAIN_RISE_EVAL_FELL.id}
    rep = judge_run(run)
    assert rep.verdict.value == "WARN"  # FAIL (TP-DIVERGE) before this rule
    (f,) = [f for f in rep.findings if f.rule_id == TRAIN_RISE_EVAL_FELL.id]
    assert f.values["eval_n"] == 3 and f.values["eval_last"] < f.values["eval_first"]


@pytest.mark.parametrize("run_id", DIVERGED_WITH_EVAL)
def test_a_divergence_whose_eval_loss_climbs_too_still_fails(run_id: str) -> None:
    assert _ids(public_run(run_id)) == {DIVERGE.id}


def test_one_evaluation_after_the_floor_says_nothing_of_a_trend() -> None:
    evals = [0.7, 0.66, 0.62, 0.6, 0.58, 0.57, 0.56] + [float("nan")] * 6 + [0.5]
    run = run_from({"loss": _CLIMB, "eval_loss": evals})
    assert eval_fell_after(run, 7.0, TRAIN_RISE_EVAL_FELL.t) is None


def test_an_eval_loss_that_ends_above_its_first_after_the_floor_keeps_the_fail() -> None:
    evals = [0.7, 0.66, 0.62, 0.6, 0.58, 0.57, 0.56, 0.55, 0.54, 0.53, 0.55, 0.56, 0.57, 0.58]
    assert _ids(run_from({"loss": _CLIMB, "eval_loss": evals})) == {DIVERGE.id}


def test_it_needs_the_points_tp_diverge_needs_and_reads_tp_overfits_ratio() -> None:
    assert TRAIN_RISE_EVAL_FELL.t("min_points") == DIVERGE.t("min_points")
    assert TRAIN_RISE_EVAL_FELL.t("max_end_over_best") == OVERFIT.t("ratio")


def test_an_eval_collapse_right_after_the_floor_is_no_improvement() -> None:
    """The first evaluation after the floor is itself a collapse: the eval loss 'falls' from it
    but ends 3x its best - the model stays damaged, the FAIL stands."""
    evals = [0.7, 0.66, 0.62, 0.6, 0.58, 0.57, 0.56, 1.9, 1.8, 1.7, 1.75, 1.7, 1.72, 1.7]
    assert _ids(run_from({"loss": _CLIMB, "eval_loss": evals})) == {DIVERGE.id}


def test_no_local_real_log_moves() -> None:
    """The galleries, evidence/ and fixtures: no divergence there has an eval loss that improved
    after the floor (the gallery's lr_hot runs fail by TP-LOSS-ROSE / TP-DEAD-RUN, not here)."""
    runs = local()
    assert len(runs) >= 100
    assert [name for name, run in runs if TRAIN_RISE_EVAL_FELL.id in _ids(run)] == []
