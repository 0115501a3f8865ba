"""When the progress rules may judge a run: after warm-up, and once enough of the run
has been seen. The progress rules (TP-DEAD-RUN, TP-FLAT, TP-LOSS-ROSE, TP-DIVERGE and
the eval-curve rule) judge how a whole run has gone; on a log that ends inside warm-up,
or only a sliver past it, they would judge a run that has not started learning at full
rate yet (a DPO run at ln 2 with its LR still at 2e-7). On such a log they are "not
checked yet": each records a typed skip saying so (the report's statement lists it, as
it lists every skip), and TP-TOO-EARLY (INFO) says it once among the findings - never
PASS by silence, and never dead.

Declared here with its thresholds; `progress_gate` is the only code that decides, and
every progress rule asks it. `seen_text` is how their findings say how much of the run
they saw."""

from __future__ import annotations

import weakref

import numpy as np

from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.schedule import Schedule, read_schedule
from trainproof.stats import count_where

G = "single_run"

EPOCH_SLACK = Threshold(
    0.01, "of num_train_epochs",
    "A log without max_steps finished when its last epoch is within this share of "
    "num_train_epochs: HF logs the end of a 5-epoch run as 4.99 or 5.0, while a checkpoint "
    "cut mid-run stops a whole logging interval or more before it.")


TOO_EARLY = rule(
    id="TP-TOO-EARLY", level=Level.INFO, group=G,
    title="Too early to judge the run's progress.",
    evidence="{reason}; the progress checks (dead-run, flat-loss, rise, divergence, eval-curve) "
    "wait for >= {limit_min_points} loss points after warm-up and, when the plan is known, "
    ">= {limit_min_fraction:.0%} of it past warm-up",
    summary="The log ends inside warm-up, or too little past it, for the progress rules to "
    "judge; they are not checked yet and say so as skips (the other checks still run).",
    why="Warm-up is the part of a run where the learning rate is still far below the one "
    "the run is planned at, so a loss that barely moves there is what every healthy run "
    "does (a DPO or GRPO loss sits at ln 2 until the LR arrives). Calling that dead, flat "
    "or diverged is a false alarm; saying nothing would let a PASS claim checks that did "
    "not happen.",
    fix="Judge the log again later in the run, or judge the finished log.",
    thresholds={
        "min_points": Threshold(
            5, "loss points after warm-up",
            "TP-DIVERGE's minimum (a start, a floor and an end) counted after the LR reached "
            "its peak: fewer points at full rate show nothing about how the run is going."),
        "min_fraction": Threshold(
            0.05, "of the planned steps, after warm-up",
            "A run that learns shows it within a few percent of its planned steps at full LR "
            "(fine-tunes drop fastest in their first tenth); warm-up alone is commonly 3-10 % "
            "of the plan. Measured from the end of warm-up (or the first logged step) to the "
            "last, so a resumed log's step offset does not count as progress."),
        # When a log reached its planned end: a finished run is never "too early".
        "epoch_slack": EPOCH_SLACK,
    },
    fires=Example({"loss": [0.6931, 0.6932, 0.6931, 0.6930, 0.6931, 0.6932],
                   "lr": [1e-8, 2e-8, 3e-8, 4e-8, 5e-8, 6e-8]},
                  note="a DPO loss at ln 2 while the LR is still rising"),
    passes=Example({"loss": [0.6931, 0.69, 0.68, 0.66, 0.62, 0.55, 0.5, 0.46, 0.43, 0.41],
                    "lr": [1e-7, 2e-7, 3e-7] + [3e-7] * 7}),
    limits="Warm-up is read from the logged LR (schedule.py); a log without an LR column, or "
    "whose first logged LR is already the peak, is judged from its first point. The planned "
    "length comes from max_steps (HF trainer_state.json) or total_steps (LLaMA-Factory); "
    "without one only the points after warm-up are counted. A finished run whose LR rose "
    "to its last step (warm-up as long as the run; max_steps reached, or num_train_epochs) is "
    "not judged for progress either: it never trained at its planned rate; when its loss also "
    "made no clear gain it is TP-WARMUP-NEVER-ENDED's (WARN) instead of this INFO.",
)


def finished(run: Run, sched: Schedule, slack: float) -> str:
    """How the log shows the run reached its planned end, or "" when it does not: its last
    step at max_steps (total_steps), or, with no plan in steps, its epoch column at
    num_train_epochs (within `slack` of it, epoch_slack as the asking rule declares it). A
    checkpoint cut mid-run is in progress."""
    gs = run.meta.get("global_step") if hasattr(run.meta, "get") else None
    if sched.planned_steps is not None and isinstance(gs, (int, float)) and not isinstance(gs, bool):
        # The trainer's own step counter (HF trainer_state.json): what the log's steps say
        # cannot move it, so a checkpoint cut mid-run stays in progress.
        if gs >= sched.planned_steps:
            return f"global_step {gs:g} of max_steps {sched.planned_steps:g}"
        return ""
    if sched.planned_steps is not None and sched.last_step is not None:
        if sched.last_step >= sched.planned_steps:
            return f"step {sched.last_step:g} of max_steps {sched.planned_steps:g}"
        return ""  # a plan in steps the log has not reached: in progress
    epochs = run.meta.get("num_train_epochs") if hasattr(run.meta, "get") else None
    ep = run.get("epoch")
    if not (isinstance(epochs, (int, float)) and not isinstance(epochs, bool) and epochs > 0):
        return ""
    if ep is None or not ep.values.size or not np.isfinite(ep.values[-1]):
        return ""
    last = float(ep.values[-1])
    if last >= float(epochs) * (1.0 - slack):
        return f"epoch {last:g} of num_train_epochs {float(epochs):g}"
    return ""


def epoch_at(run: Run, steps: np.ndarray, min_points: int = 1) -> np.ndarray | None:
    """The log's epoch counter read at `steps` (interpolated: it rises with the step); None
    without an epoch column or with fewer than `min_points` finite values in it."""
    e = run.get("epoch")
    f = e.finite_only() if e is not None else None
    if f is None or len(f) < min_points:
        return None
    return interp_at(steps, f)


# (steps, epoch steps, epoch values) of the last calls, as weak references, and the answer
_AT_KEPT = 2  # the train loss points' epochs and the eval points'
_at_memo: list[tuple[weakref.ref[np.ndarray], weakref.ref[np.ndarray], weakref.ref[np.ndarray], np.ndarray]] = []


def _forget(_gone: object) -> None:
    """An array asked about is gone: drop the answers that were about it."""
    _at_memo[:] = [m for m in _at_memo if all(r() is not None for r in m[:3])]


def interp_at(steps: np.ndarray, f: Series) -> np.ndarray:
    """np.interp(steps, f.steps, f.values), answered again from memory when asked about the
    very same arrays (the objects: Series are frozen values, as memo.py relies on) as one
    of the last _AT_KEPT calls. epoch-sawtooth, eval-mismatch and second-pass each read the
    epoch at every train loss point: three interpolations of the same 1M points, ~8 ms
    each, where one does (#14). The answer is shared, so it is read-only; it is dropped
    with the arrays it was about."""
    for mem_steps, mem_at, mem_values, out in _at_memo:
        if mem_steps() is steps and mem_at() is f.steps and mem_values() is f.values:
            return out
    out = np.interp(steps, f.steps, f.values)
    out.flags.writeable = False
    refs = (weakref.ref(steps, _forget), weakref.ref(f.steps, _forget), weakref.ref(f.values, _forget))
    _at_memo[:] = [(*refs, out), *_at_memo[: _AT_KEPT - 1]]
    return out


class Gate(NamedTuple):
    """Whether the progress rules may judge `series`, and the words that say how much of
    the run they saw."""

    open: bool
    reason: str  # why not, when closed
    seen: str  # "judged to step 200 of a planned 5,000 (4 %)" or ""
    start: float | None  # the first step the progress rules count as at full LR
    finished_in_warmup: bool = False  # closed because the run ended with its LR still rising


def seen_text(sched: Schedule) -> str:
    """How much of the planned run the log covers, as findings say it; "" if unknown."""
    frac = sched.seen_fraction
    if frac is None or sched.last_step is None or sched.planned_steps is None:
        return ""
    return f"judged to step {sched.last_step:,.0f}: {frac:.0%} of a planned {sched.planned_steps:,.0f} steps"


def progress_gate(run: Run, s: Series) -> Gate:
    """May the progress rules judge the loss-like series `s` of `run` yet?"""
    sched = read_schedule(run)
    seen = seen_text(sched)
    tail = f" ({seen})" if seen else ""
    start = sched.warmup_end if sched.warmup_end is not None else (float(s.steps[0]) if len(s) else None)
    if sched.warming_up:
        # Finished or not, a run whose LR rose to its last step never trained at its planned
        # rate, and its progress at a fraction of that rate says nothing about the run that
        # was meant (a finished one's warm-up slip is TP-WARMUP-NEVER-ENDED's, when it cost
        # the run its progress): the progress checks do not judge it.
        ended = bool(finished(run, sched, TOO_EARLY.t("epoch_slack")))
        what = "the run ended with its LR still rising (warm-up as long as the run)" if ended else \
            f"the LR is still rising at its last logged step {sched.last_step:g} (warm-up)"
        return Gate(False, f"{what}{tail}", seen, None, ended)
    if sched.warmup_end is not None:
        end = sched.warmup_end
        after = count_where(s.steps, lambda x: x > end)  # chunked: no 5M-point mask (#14)
        if after < TOO_EARLY.t("min_points"):
            return Gate(False, f"{after} {s.name} point(s) after warm-up ended at step "
                        f"{sched.warmup_end:g}{tail}", seen, start)
    if sched.planned_steps is not None and sched.last_step is not None and start is not None:
        past = (sched.last_step - start) / sched.planned_steps
        if past < TOO_EARLY.t("min_fraction"):
            return Gate(False, f"{past:.1%} of a planned {sched.planned_steps:,.0f} steps past "
                        f"{'warm-up' if sched.warmup_end is not None else 'the first logged step'}"
                        f"{tail}", seen, start)
    return Gate(True, "", seen, start)


def not_yet(gate: Gate) -> Skip:
    """The skip a progress check records when the gate is closed."""
    return Skip(SkipKind.TOO_FEW, f"not checked yet: {gate.reason}")


def judged_series(run: Run) -> Series | None:
    """The series the gate is asked about for a report: the train loss, else the eval loss."""
    return run.get("loss") or run.get("eval_loss")


@check("progress", TOO_EARLY)
def too_early(run: Run) -> list[Finding] | Skip:
    s = judged_series(run)
    if s is None:
        return Skip(SkipKind.NO_DATA, "no loss column in the log")
    s = s.finite_only()
    if len(s) < TOO_EARLY.t("min_points"):
        # Fewer points than the gate asks for after warm-up: no progress rule could run on
        # them anyway, and their own skips say why.
        return Skip(SkipKind.TOO_FEW, f"{len(s)} finite {s.name} points, needs {int(TOO_EARLY.t('min_points'))}")
    gate = progress_gate(run, s)
    if gate.open:
        return []
    if gate.finished_in_warmup:
        from trainproof.rules.warmup_end import never_ended  # imports this module: import late
        if never_ended(run) is not None:
            return []  # the run is over, not early: TP-WARMUP-NEVER-ENDED says it
    return [TOO_EARLY.finding(Location(run.path, read_schedule(run).last_step), reason=gate.reason)]
