"""A log that starts in the middle of its run, and what TP-DEAD-RUN may say about it
(TP-LATE-START-PLATEAU). TP-DEAD-RUN's FAIL says the run never improved, which the log
can show only when it holds the run's beginning. A log whose epoch counter starts a whole
epoch or more past its first logging interval (a resumed run whose logger started a new
file, a Keras fit() continued from initial_epoch, a CSV kept from the middle) holds the
run's later stretch only: a loss flat over it is a plateau of what was logged - the run
may have learned everything before - so it is a WARN that says so, not a FAIL. The rule is
judged by TP-DEAD-RUN's check (rules/rise.py), on the runs that check would fail."""

from __future__ import annotations

import numpy as np

from trainproof.model import Level, Run
from trainproof.rules.base import Example, Threshold, rule
from trainproof.rules.gradients import G

LATE_START_PLATEAU = rule(
    id="TP-LATE-START-PLATEAU", level=Level.WARN, group=G,
    title="No progress over a log that starts in the middle of its run.",
    evidence="start {start} ({start_is}) vs end {end} (median of the last {m}, steps "
    "{end_from}-{end_to}): {improvement:.1%} improvement, {gain_se:.1f} standard errors of the "
    "log's noise; but the log starts at epoch {epoch:g} (the next logged epoch is {next_epoch:g}): "
    "the run's first {late:g} epochs or more are not in it, so this is a plateau of the stretch "
    "logged, not evidence that the run never learned{seen}",
    summary="The loss did not improve over what was logged, and the log begins a whole epoch or "
    "more into the run: a plateau of its later stretch.",
    why="TP-DEAD-RUN's FAIL says a run never learned, which needs the run's start: a model's "
    "loss falls fastest in its first steps. A log whose epoch counter begins past its first "
    "logging interval (a resumed run logging to a new file, fit() continued from an initial "
    "epoch) holds only a later stretch, where a converged model's loss is flat by design. "
    "Public run fresh29/ytes-k (epochs 60-74 of a forecaster, flat) was labelled a plateau by "
    "its reader and failed as dead.",
    fix="Read the earlier part of the run (the log of the run it resumed from): if the loss fell "
    "there, the run converged and more epochs buy nothing (stop it, or lower the learning rate "
    "for a last gain); if it never fell, treat it as TP-DEAD-RUN.",
    thresholds={
        "min_epochs_before": Threshold(
            1.0, "epochs",
            "The log starts late when its first epoch value exceeds one logging interval's "
            "worth of epochs (the step to its next distinct value) by a whole epoch or more: "
            "writers that count epochs from 0 (Lightning, Keras) start at 0; those that log the "
            "epoch reached (HF, Ultralytics) start within one interval of 0 - both stay under "
            "this, whatever the logging rate."),
        "min_points": Threshold(
            10, "points",
            "TP-DEAD-RUN's min_points: the rule is judged by that check, on the runs it would fail "
            "(tests/test_late_start.py holds the two equal)."),
    },
    fires=Example({"epoch": list(range(60, 75)),
                   "loss": [6.73, 6.69, 6.65, 7.02, 6.86, 6.65, 6.6, 6.59, 7.2, 6.67, 6.71, 6.61,
                            6.85, 6.86, 6.61]},
                  note="epochs 60-74 of a resumed run, flat"),
    passes=Example({"epoch": list(range(0, 15)),
                    "loss": [6.73, 6.69, 6.65, 7.02, 6.86, 6.65, 6.6, 6.59, 7.2, 6.67, 6.71, 6.61,
                             6.85, 6.86, 6.61]},
                   note="the same flat loss from epoch 0: TP-DEAD-RUN's FAIL"),
    limits="Read from an `epoch` column; a log without one (Keras History JSON, DVCLive) is taken "
    "to start at its beginning. Judged only on the runs TP-DEAD-RUN would fail, and not when "
    "an eval loss frozen to the bit says the weights never changed (that stays a FAIL).",
)


def late_start(run: Run) -> tuple[float, float] | None:
    """(first epoch, next epoch) of a log whose epoch counter starts min_epochs_before or more
    past its first logging interval; None for a log that starts at its run's beginning, or
    that has no epoch column to say."""
    s = run.get("epoch")
    if s is None:
        return None
    v = s.finite_only().values
    if v.size < 2:
        return None
    first = float(v[0])
    later = v[v != v[0]]
    if later.size == 0 or later[0] <= first:
        return None  # one epoch value, or a counter that goes back: nothing to read
    step = float(later[0]) - first
    if first - step < LATE_START_PLATEAU.t("min_epochs_before") or not np.isfinite(first):
        return None
    return first, float(later[0])
