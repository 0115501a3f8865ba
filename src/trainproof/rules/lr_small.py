"""Single-run rule on the size of the learning rate: a peak LR so small that the optimizer
cannot move the weights in any way that matters (TP-LR-TOO-SMALL, WARN) - typically a
units slip (1e-8 typed for 1e-5, a scale applied twice). Declared once here; the judge
below is the only code that decides whether it fires.

The arithmetic: Adam and its relatives divide the gradient by its own running RMS, so a
step moves each weight by about the LR (at most a few times it), whatever the gradient's
scale; SGD moves it by LR x gradient, less still. A weight stored in float32 keeps 24
significant bits, so an update below half its last place, |w| x 2^-25 ~ 3e-8 |w|, rounds to
no change; bfloat16 weights without a float32 master copy keep 8 bits and lose any update
below |w| x 2^-9."""

from __future__ import annotations

import numpy as np

from trainproof.model import Finding, Level, Run, Skip, SkipKind
from trainproof.rules import zeros  # noqa: F401  (registers lr, which this check follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, where
from trainproof.schedule import SAME_LR, read_schedule

LR_TOO_SMALL = rule(
    id="TP-LR-TOO-SMALL", level=Level.WARN, group=G,
    title="Learning rate is too small to move the weights.",
    evidence="peak lr {peak:.3g} (the largest of {n} logged values, steps {first:g}-{last:g}) "
    "<= {limit_max_peak:g}; an Adam-type step moves a weight by about the lr: at most "
    "{travel:.2g} in total over the logged steps",
    summary="The largest learning rate the log shows, after any warm-up, is 1e-8 or less.",
    why="An Adam-type optimizer moves each weight by about the LR per step. At 1e-8 a float32 "
    "weight larger than about 0.3 in magnitude (norm gains, many biases) does not move at all - "
    "the update is below half its last bit - a bfloat16 weight without a float32 master copy "
    "never moves, and a typical weight of 0.02 moves by a few parts in 10 000 over thousands of "
    "steps. Runs that want a small LR on purpose (DPO, KTO and RLHF fine-tunes at 5e-7 .. 1e-7, "
    "GRPO at 1e-6) stay a decade above it. What the loss does at such an LR is the order of the "
    "batches, not learning; the usual cause is a units slip in the LR or its scale.",
    fix="Check the learning-rate argument (1e-8 where 1e-5 was meant), any LR scaling by world "
    "size or batch size applied twice, and per-group LR multipliers.",
    thresholds={
        "max_peak": Threshold(1e-8, "learning rate",
                              "A decade below the smallest LR published runs use on purpose "
                              "(preference and RLHF fine-tunes: 1e-7 .. 5e-7), and below the "
                              "float32 resolution of every weight above 0.34 in magnitude "
                              "(2^-25 |w|). Compared to the logger's rounding (schedule.SAME_LR), "
                              "so a peak logged as 1e-8 counts."),
        "min_points": Threshold(3, "lr points",
                                "The shape of a schedule - rising, flat, falling - needs three "
                                "points: with fewer, a log cut early in warm-up cannot be told "
                                "from a run at its peak."),
    },
    fires=Example({"loss": [0.21, 0.2, 0.19, 0.2, 0.18, 0.19], "lr": [1e-8, 8e-9, 6e-9, 4e-9, 2e-9, 1e-11]},
                  note="a GEC fine-tune whose LR decays from 1e-8: a units slip"),
    passes=Example({"loss": [0.69, 0.68, 0.66, 0.65, 0.63, 0.62], "lr": [5e-7, 4e-7, 3e-7, 2e-7, 1e-7, 1e-9]},
                   note="a DPO run at 5e-7, decaying to 0"),
    limits="Judges the largest LR in the log once warm-up is over (schedule.py): a log that ends "
    "while the LR still rises has not shown its peak and is not judged. Reads the LR the log "
    "holds - Hugging Face logs the first parameter group's - so a layer-wise decay that gives "
    "that group a factor below 1/1000 of the base LR reads as the run's LR. A log that holds "
    "only the last percent of a schedule decaying to 0 reads as a run at that LR. An LR <= 0 "
    "throughout is TP-ZERO-LR's.",
)


@check("lr-size", LR_TOO_SMALL, after="lr")
def learning_rate_too_small(run: Run) -> list[Finding] | Skip:
    r = LR_TOO_SMALL
    lr = run.get("lr")
    if lr is None:
        return Skip(SkipKind.NO_DATA, "no lr column in the log")
    f = lr.finite_only()
    if len(f) < r.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(f)} finite lr point(s), needs {int(r.t('min_points'))}")
    sched = read_schedule(run)
    if sched.peak_lr is None:
        return []  # no positive LR: TP-ZERO-LR's to judge
    if sched.warming_up:
        return Skip(SkipKind.TOO_FEW, "the LR still rises at its last logged point: its peak is not in the log")
    if sched.peak_lr > r.t("max_peak") * (1.0 + SAME_LR):
        return []
    pos = np.clip(f.values, 0.0, None)
    travel = float(np.sum((pos[1:] + pos[:-1]) / 2 * np.diff(f.steps))) + float(pos[0])
    return [r.finding(where(run, f.steps[0]), peak=sched.peak_lr, n=len(f), first=float(f.steps[0]),
                      last=float(f.steps[-1]), travel=travel)]
