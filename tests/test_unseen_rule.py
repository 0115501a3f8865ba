"""TP-UNSEEN-NEAR-ZERO (rules/unseen.py): a cross-entropy near 0 on first-epoch batches,
which the model has not seen yet, with no eval loss to vouch for it.

The real case is the design half's BERT2BERT summariser (public_runs/runs/zanuura__...):
9.2 -> ~0.002 nats per token inside its first epoch, no eval loss, labelled broken by
its reader before any tool ran. The other cases are the rule's stated limits."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.parsers import read_run
from trainproof.rules.unseen import UNSEEN_NEAR_ZERO, unseen_near_zero

from .test_public_runs import public_runs

ROOT = Path(__file__).resolve().parents[1]
RULE = "TP-UNSEEN-NEAR-ZERO"


def _public(run_id: str, tmp_path: Path) -> Run:
    doc = json.loads((ROOT / "public_runs" / "runs" / f"{run_id}.json").read_text(encoding="utf-8"))
    return read_run(public_runs.rebuild(doc, tmp_path))


def _run(loss: list[float], epoch: list[float], **extra: list[float]) -> Run:
    steps = np.arange(1, len(loss) + 1, dtype=np.float64)
    series = {"loss": Series("loss", steps, np.asarray(loss, dtype=np.float64)),
              "epoch": Series("epoch", steps, np.asarray(epoch, dtype=np.float64))}
    for name, values in extra.items():
        series[name] = Series(name, steps[: len(values)], np.asarray(values, dtype=np.float64))
    return Run("t.json", "test", series, len(loss), columns=tuple(series))


def test_fires_on_the_summariser_that_passed(tmp_path: Path) -> None:
    run = _public("zanuura__bert2bert_summarization_liputan6__model-trainer_state", tmp_path)
    out = unseen_near_zero(run)
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    values = out[0].values
    assert values["median"] < 0.003 and values["n"] > 1000
    assert 0.5 <= values["start_epoch"] < values["end_epoch"] < 1.0


def test_an_eval_loss_vouches_for_the_number(tmp_path: Path) -> None:
    run = _public("zanuura__bert2bert_summarization_liputan6__model-trainer_state", tmp_path)
    loss = run.get("loss")
    assert loss is not None
    ev = Series("eval_loss", loss.steps[::500], np.full(loss.steps[::500].size, 0.002))
    assert unseen_near_zero(replace(run, series={**run.series, "eval_loss": ev})) == []


def test_no_epoch_column_is_not_judged(tmp_path: Path) -> None:
    run = _public("zanuura__bert2bert_summarization_liputan6__model-trainer_state", tmp_path)
    run = replace(run, series={k: v for k, v in run.series.items() if k != "epoch"})
    out = unseen_near_zero(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA


def test_a_policy_gradient_surrogate_is_not_a_cross_entropy() -> None:
    run = read_run(ROOT / "evidence" / "trl" / "grpo_healthy" / "trainer_state.json")
    out = unseen_near_zero(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED


def test_preference_columns_mark_a_surrogate() -> None:
    run = _run([0.69, 0.3, 0.01, 0.004, 0.003, 0.002, 0.002, 0.001],
               [0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    run = replace(run, columns=(*run.columns, "rewards/chosen", "logps/rejected"))
    out = unseen_near_zero(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED


def test_memorising_after_the_first_epoch_is_not_judged() -> None:
    """A small set driven to 0.001 over many epochs: the loss is high while batches are new."""
    loss = [4.2, 2.5, 1.6, 1.2, 1.0, 0.9, 0.85, 0.5, 0.1, 0.01, 0.003, 0.001]
    epoch = [0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 3, 10, 30, 60, 100]
    assert unseen_near_zero(_run(loss, epoch)) == []


def test_a_healthy_fine_tune_is_not_judged() -> None:
    loss = [3.1, 2.2, 1.8, 1.6, 1.5, 1.45, 1.42, 1.40, 1.39, 1.38]
    assert unseen_near_zero(_run(loss, [i / 10 for i in range(1, 11)])) == []


def test_exact_zeros_are_the_zero_rules_to_judge() -> None:
    loss = [2.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert unseen_near_zero(_run(loss, [i / 10 for i in range(10)])) == []


def test_too_few_points_in_the_half_epoch() -> None:
    loss = [9.0, 2.0, 0.002, 0.001]
    out = unseen_near_zero(_run(loss, [0.2, 0.4, 0.6, 0.8]))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW


@pytest.mark.parametrize("level", [0.0099, 0.0101])
def test_the_declared_threshold_is_the_line(level: float) -> None:
    assert UNSEEN_NEAR_ZERO.t("near_zero") == 0.01
    loss = [5.0, 2.0, 0.5, *([level] * 6)]
    out = unseen_near_zero(_run(loss, [0.1, 0.3, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]))
    assert bool(out) == (level < 0.01)
