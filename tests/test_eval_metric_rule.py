"""TP-EVAL-METRIC-CONFLICT (rules/eval_metric.py): an eval loss that says perfect beside a
word or character error rate that says useless, on the same evaluations.

The real case is the fresh half's Whisper LoRA (public_runs/fresh/chaykoon__...): eval loss
0.0054 -> 0.0011 -> 0.0006 while eval_wer is 98.9 -> 99.6 -> 99.7 %, labelled broken by its
reader before any tool ran. Every other real log stays silent - among them the public
classifiers whose eval loss reaches 2e-5 with an accuracy that agrees, and an ASR run whose
eval loss touches 0.009 at a WER of 8-36 %."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.rules.eval_metric import EVAL_METRIC_CONFLICT, eval_metric_conflict

from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS, assert_invariant, thin

RULE = "TP-EVAL-METRIC-CONFLICT"
WHISPER = "chaykoon__whisper-th-medium__checkpoint-300-trainer_state"


def _whisper() -> Run:
    return dict(public())[WHISPER]


def _fires(run: Run) -> bool:
    out = eval_metric_conflict(run)
    return not isinstance(out, Skip) and bool(out)


def test_fires_on_the_whisper_run_whose_loss_and_wer_disagree() -> None:
    out = eval_metric_conflict(_whisper())
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    v = out[0].values
    assert v["metric"] == "eval_wer" and v["n"] == 3 and v["wer_low"] > 98.8 and v["loss_high"] < 0.006


def test_silent_on_every_other_real_log() -> None:
    assert len(public()) >= 200 and len(local()) >= 100  # the logs were found
    assert fires_on(eval_metric_conflict, public()) == {WHISPER}
    assert fires_on(eval_metric_conflict, local()) == set()


def test_the_verdict_survives_how_the_real_run_was_logged() -> None:
    """Its only finding, so the whole verdict: the unit perturbations move the first
    evaluation (0.0054 x 2 = 0.011) over the bar and leave two, the last included."""
    assert assert_invariant(_whisper(), WHISPER) == ("FAIL", frozenset({RULE}))
    assert all(_fires(thin(k)(_whisper())) for k in (2, 5))


# ---------------------------------------------------------------- generated evaluations

def _run(eval_loss: list[float], **metrics: list[float]) -> Run:
    steps = 100.0 * np.arange(1, 13)
    at = steps[3::4][: len(eval_loss)]
    series = {"loss": Series("loss", steps, np.geomspace(0.8, 0.006, steps.size)),
              "eval_loss": Series("eval_loss", at, np.asarray(eval_loss, dtype=np.float64))}
    series.update({k: Series(k, at, np.asarray(v, dtype=np.float64)) for k, v in metrics.items()})
    return Run("generated.json", "example", series, steps.size, tuple(series))


@pytest.mark.parametrize(("loss", "wer", "fires"), [
    ([0.005, 0.001, 0.0006], [98.9, 99.6, 99.7], True),
    ([0.005, 0.001, 0.0006], [89.0, 89.5, 89.9], False),  # under 90 %
    ([0.005, 0.0101, 0.0102], [98.9, 99.6, 99.7], False),  # the loss is not near zero at the last two
    ([0.005, 0.001, 0.0006], [99.0, 99.5, 40.0], False),  # the last evaluation agrees
    ([0.5, 0.001, 0.0006], [99.0, 99.5, 99.7], True),  # two evaluations, the last included
    ([0.5, 0.3, 0.0006], [99.0, 99.5, 99.7], False),  # one point is not enough
    ([0.005, 0.001, 0.0006], [4.1, 2.2, 1.9], False),  # a near-perfect recogniser
])
def test_the_bars(loss: list[float], wer: list[float], fires: bool) -> None:
    assert _fires(_run(loss, eval_wer=wer)) is fires


def test_a_character_error_rate_counts_too() -> None:
    assert _fires(_run([0.005, 0.001, 0.0006], eval_cer=[95.0, 97.0, 99.0]))


def test_a_fraction_that_could_be_a_percentage_is_not_judged() -> None:
    """0.99 is 99 % as a fraction or 0.99 % as a percentage; the near-zero loss agrees with
    the second reading, so the rule stays silent rather than guess."""
    assert not _fires(_run([0.005, 0.001, 0.0006], eval_wer=[0.989, 0.996, 0.997]))
    # above 1.5 the series is a percentage: 1.6-1.9 % is a good model
    assert not _fires(_run([0.005, 0.001, 0.0006], eval_wer=[1.9, 1.7, 1.6]))


def test_a_metric_alone_makes_no_finding() -> None:
    assert not _fires(_run([0.9, 0.8, 0.7], eval_wer=[99.0, 99.5, 99.7]))
    out = eval_metric_conflict(_run([0.005, 0.001, 0.0006]))
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA


@pytest.mark.parametrize("name", ["x0.5", "x2", "nats_to_bits", "steps+1000", "steps-37", "halve"])
def test_a_generated_conflict_survives_how_it_was_logged(name: str) -> None:
    assert _fires(PERTURBATIONS[name](_run([0.004, 0.001, 0.0006], eval_wer=[98.9, 99.6, 99.7])))


def test_declared_thresholds_are_the_ones_used() -> None:
    assert EVAL_METRIC_CONFLICT.t("near_zero") == 0.01 and EVAL_METRIC_CONFLICT.t("useless") == 0.9
