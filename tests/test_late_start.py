"""TP-LATE-START-PLATEAU (declared beside TP-DEAD-RUN in rules/rise.py, measured by
rules/late_start.py): a loss that did not
improve over a log whose epoch counter starts a whole epoch or more past its first logging interval
is a plateau of the stretch logged, a WARN, not TP-DEAD-RUN's "never improved". Raised by public run
fresh29/ytes-k (epochs 60-74 of a resumed forecaster, labelled a plateau before any tool ran, failed
as dead at its first scoring)."""

from __future__ import annotations

import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Run, Skip
from trainproof.rules.late_start import late_start as _late_start
from trainproof.rules.rise import DEAD_RUN, LATE_START_PLATEAU, loss_not_improving

from .real_logs import local, public_run
from .test_invariance import PERTURBATIONS


def late_start(run: Run) -> tuple[float, float] | None:
    """Where the log starts, read with the thresholds the rule declares."""
    return _late_start(run, LATE_START_PLATEAU.t)


RAISED_BY = "ytes-k__llm-based-models-for-pv-generation__lightning_logs-version_21-metrics"
_FLAT = [6.73, 6.69, 6.65, 7.02, 6.86, 6.65, 6.6, 6.59, 7.2, 6.67, 6.71, 6.61, 6.85, 6.86, 6.61]


def _ids(run: Run) -> set[str]:
    out = loss_not_improving(run)
    return set() if isinstance(out, Skip) else {f.rule_id for f in out}


def test_the_run_that_raised_it_is_a_plateau_not_a_dead_run() -> None:
    run = public_run(RAISED_BY)
    assert late_start(run) == (60.0, 61.0)
    assert _ids(run) == {LATE_START_PLATEAU.id}
    assert judge_run(run).verdict.value == "WARN"  # FAIL (TP-DEAD-RUN) before this rule


@pytest.mark.parametrize("name", ["cut1", "cut2", "cut3", "steps+1000", "steps-37", "x2", "x0.5", "nats_to_bits"])
def test_it_holds_however_the_run_was_logged(name: str) -> None:
    """Halvings leave 7-8 of its 15 points, under TP-DEAD-RUN's ten: not judged at all."""
    assert _ids(PERTURBATIONS[name](public_run(RAISED_BY))) == {LATE_START_PLATEAU.id}


def test_the_same_flat_loss_from_epoch_zero_is_still_dead() -> None:
    run = run_from({"epoch": list(range(15)), "loss": _FLAT})
    assert late_start(run) is None and _ids(run) == {"TP-DEAD-RUN"}


@pytest.mark.parametrize("epochs", [
    [round(0.27 * k, 4) for k in range(1, 16)],  # HF: the epoch reached, from one interval in
    list(range(1, 16)),                          # Ultralytics: 1-based epochs
    [k // 3 for k in range(15)],                 # Lightning per-step rows: 0, 0, 0, 1, ...
])
def test_writers_that_start_at_the_beginning_are_not_late(epochs: list[float]) -> None:
    assert late_start(run_from({"epoch": epochs, "loss": _FLAT})) is None


def test_a_frozen_eval_loss_keeps_the_fail() -> None:
    """Weights that never changed are dead whenever the log started."""
    run = run_from({"epoch": list(range(60, 75)), "loss": _FLAT, "eval_loss": [2.5] * 15})
    assert "TP-DEAD-RUN" in _ids(run)


def test_no_local_real_log_starts_late() -> None:
    """The galleries, evidence/ and fixtures all log their runs from the start: the rule cannot
    touch their verdicts (lr_zero stays a dead run)."""
    runs = local()
    assert len(runs) >= 100
    assert [name for name, run in runs if late_start(run) is not None] == []


def test_it_needs_the_points_tp_dead_run_needs() -> None:
    """Judged by TP-DEAD-RUN's check: the points it declares are that check's."""
    assert LATE_START_PLATEAU.t("min_points") == DEAD_RUN.t("min_points")
