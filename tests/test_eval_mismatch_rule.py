"""TP-EVAL-MISMATCH (rules/eval_mismatch.py): the eval loss far above a train loss that is
itself still held-out (first epoch), at every first-epoch evaluation.

The real case is fresh2's norm-free (DyT) DistilGPT2 (public_runs/fresh2/mrrobot401__...):
train 2.0-2.2 from the first log, eval 8.5 -> 8.26 at all 37 evaluations of its one epoch,
labelled broken by its reader before any tool ran. Every other real log stays silent; the
generated curves pin the bars (3x, 4 noise units, three evaluations) and show the verdict
does not depend on how the run was logged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.rules.eval_mismatch import EVAL_MISMATCH, eval_mismatch

from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS, assert_invariant, thin

RULE = "TP-EVAL-MISMATCH"
DYT = "mrrobot401__dyt-nonorm-llms-rewild__results-checkpoint-18991-trainer_state"
# fresh3 (read here since its first scoring): a classifier labelled broken, FAIL there by
# TP-DIVERGE, with this WARN beside it in that scoring.
PODOLSKY = "podolskydavid__optiver-nomidnightsnack__classification-results-checkpoint-2500-trainer_state"


def _dyt() -> Run:
    return dict(public())[DYT]


def test_fires_on_the_norm_free_model_whose_eval_measured_something_else() -> None:
    out = eval_mismatch(_dyt())
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    v = out[0].values
    assert v["n"] == 37 and 3.8 < v["low_ratio"] <= v["mid_ratio"] < 4.1
    assert v["end_epoch"] < 1.0 and v["low_noise"] > 50


def test_silent_on_every_other_real_log() -> None:
    assert len(public()) >= 200 and len(local()) >= 100  # the logs were found
    assert fires_on(eval_mismatch, public()) == {DYT, PODOLSKY}
    assert fires_on(eval_mismatch, local()) == set()


def test_the_finding_survives_how_the_real_run_was_logged() -> None:
    """The rule's own finding at every perturbation and thinning. (The whole verdict is not
    asserted: halved, this flat train log is TP-DEAD-RUN's FAIL, which is that rule's reading.)"""
    perturbed = {name: p(_dyt()) for name, p in PERTURBATIONS.items()}
    perturbed.update({f"thin{k}": thin(k)(_dyt()) for k in (2, 5)})
    assert {name for name, run in perturbed.items() if not _fires(run)} == set()


# ---------------------------------------------------------------- generated curves

def _run(ratio: float | list[float], sigma: float = 0.02, n_evals: int = 8, seed: int = 0,
         epochs: float = 0.99) -> Run:
    """200 train points every 10 steps falling 3.0 -> ~2.0 with per-point noise `sigma` (log
    space), the epoch counter reaching `epochs` at the end, and evaluations spread over the
    run at `ratio` x the noiseless train curve at their step."""
    rng = np.random.default_rng(seed)
    steps = 10.0 * np.arange(1, 201)
    curve = 2.0 + np.exp(-steps / 400)
    loss = curve * np.exp(rng.normal(0, sigma, steps.size))
    at = np.linspace(0, steps.size - 1, n_evals + 1)[1:].astype(int)
    ev = np.asarray(ratio, dtype=np.float64) * curve[at]
    series = {"loss": Series("loss", steps, loss),
              "epoch": Series("epoch", steps, epochs * steps / steps[-1]),
              "eval_loss": Series("eval_loss", steps[at], ev)}
    return Run("generated.json", "example", series, steps.size, tuple(series))


def _fires(run: Run) -> bool:
    out = eval_mismatch(run)
    return not isinstance(out, Skip) and bool(out)


@pytest.mark.parametrize(("ratio", "fires"), [(2.9, False), (3.1, True), (1.2, False), (8.0, True)])
def test_the_ratio_bar(ratio: float, fires: bool) -> None:
    assert _fires(_run(ratio)) is fires


def test_every_first_epoch_evaluation_must_clear_it() -> None:
    assert not _fires(_run([4.0, 4.0, 4.0, 2.5, 4.0, 4.0, 4.0, 4.0]))


def test_a_noisy_train_log_needs_a_larger_gap() -> None:
    """At 0.5 per point in log space, four noise units are 2 in log space: 7.4x."""
    assert not _fires(_run(5.0, sigma=0.5, seed=1))
    assert _fires(_run(12.0, sigma=0.5, seed=1))


def test_three_first_epoch_evaluations_at_least() -> None:
    assert not _fires(_run(4.0, n_evals=2))
    out = eval_mismatch(_run(4.0, n_evals=2))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW
    assert _fires(_run(4.0, n_evals=3))


def test_evaluations_after_the_first_epoch_are_not_judged() -> None:
    """Epoch 4 at the end: only the first quarter of the run is held-out; two evaluations
    fall in it, too few, whatever the later ones show."""
    out = eval_mismatch(_run(4.0, epochs=4.0))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW


def test_without_an_epoch_column_it_is_not_judged() -> None:
    run = _run(4.0)
    run = replace(run, series={k: v for k, v in run.series.items() if k != "epoch"})
    out = eval_mismatch(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA


def test_a_non_finite_eval_is_an_unstable_run_not_a_mismatch() -> None:
    run = _run(4.0)
    ev = run.series["eval_loss"]
    bad = Series("eval_loss", ev.steps, np.where(np.arange(len(ev)) == 5, np.nan, ev.values))
    out = eval_mismatch(replace(run, series={**run.series, "eval_loss": bad}))
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED


def test_a_preference_objective_is_not_judged() -> None:
    run = _run(4.0)
    out = eval_mismatch(replace(run, columns=(*run.columns, "rewards/chosen")))
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED


@pytest.mark.parametrize("seed", range(6))
def test_a_generated_verdict_survives_how_it_was_logged(seed: int) -> None:
    assert assert_invariant(_run(4.0, seed=seed), f"mismatch seed={seed}") == ("WARN", frozenset())
    assert assert_invariant(_run(1.3, seed=seed), f"healthy seed={seed}") == ("PASS", frozenset())


def test_units_do_not_move_it() -> None:
    for name in ("x0.5", "x2", "nats_to_bits"):
        assert _fires(PERTURBATIONS[name](_run(3.1)))
        assert not _fires(PERTURBATIONS[name](_run(2.9)))


def test_declared_thresholds_are_the_ones_used() -> None:
    assert EVAL_MISMATCH.t("ratio") == 3.0 and EVAL_MISMATCH.t("min_points") == 3
