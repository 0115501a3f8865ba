"""A log that starts in the middle of its run, and what TP-DEAD-RUN may say about it
(TP-LATE-START-PLATEAU). TP-DEAD-RUN's FAIL says the run never improved, which the log
can show only when it holds the run's beginning. A log whose epoch counter starts a whole
epoch or more past its first logging interval (a resumed run whose logger started a new
file, a Keras fit() continued from initial_epoch, a CSV kept from the middle) holds the
run's later stretch only: a loss flat over it is a plateau of what was logged - the run
may have learned everything before - so it is a WARN that says so, not a FAIL. The rule,
declared beside TP-DEAD-RUN in rules/rise.py, is judged by its check on the runs it would fail;
this module measures where a log starts."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trainproof.model import Run
from trainproof.rules.base import Threshold

MIN_EPOCHS_BEFORE = Threshold(
    1.0, "epochs",
    "The log starts late when its first epoch value exceeds one logging interval's "
    "worth of epochs (the step to its next distinct value) by a whole epoch or more: "
    "writers that count epochs from 0 (Lightning, Keras) start at 0; those that log the "
    "epoch reached (HF, Ultralytics) start within one interval of 0 - both stay under "
    "this, whatever the logging rate.")


def late_start(run: Run, t: Callable[[str], float]) -> tuple[float, float] | None:
    """(first epoch, next epoch) of a log whose epoch counter starts min_epochs_before or more
    past its first logging interval (`t` reads it as TP-LATE-START-PLATEAU declares it); None
    for a log that starts at its run's beginning, or that has no epoch column to say."""
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
    if first - step < t("min_epochs_before") or not np.isfinite(first):
        return None
    return first, float(later[0])
