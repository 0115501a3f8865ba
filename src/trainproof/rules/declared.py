"""Declared versus actual: what a HuggingFace Trainer run was configured to do (its
TrainingArguments read from training_args.bin and its trainer_state.json's own fields,
put in the Run's meta by parsers/beside.py) against what its log shows. The logged LR
against the declared schedule, a run whose last state ends short of max_steps with no
stop request, and an evaluation cadence declared but no eval loss logged. Each rule is
declared once here; the judge below it is the only code that decides whether it fires.
Without a readable training_args.bin these checks say so as a skip and never guess."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules import evalcurve, resume, zeros  # noqa: F401  (registered first: these checks follow theirs)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.schedule import planned_steps, read_schedule

G = "single_run"

# The schedules whose LR multiplier transformers.get_scheduler computes from the plain
# fields alone (warm-up steps, training steps); the others take extra arguments or react
# to the eval metric, and the declared fields do not say what they will do.
SCHEDULES = ("linear", "cosine", "constant", "constant_with_warmup")

_DECLARED = {"learning_rate": 1e-3, "warmup_steps": 2, "lr_scheduler_type": "linear",
             "max_steps": 20, "eval_strategy": "steps", "eval_steps": 5}
_LR_OK = [1e-3 * m for m in [0.5, 1.0] + [(20 - s) / 18 for s in range(3, 21)]]
_LR_LONG = [1e-3 * m for m in [0.5, 1.0] + [(200 - s) / 198 for s in range(3, 21)]]

LR_OFF_PLAN = rule(
    id="TP-LR-NOT-AS-DECLARED", level=Level.WARN, group=G,
    title="The logged learning rate does not follow the schedule the run declared.",
    evidence="{what}; at step {step} the log has {logged:.3g} where the declaration gives "
    "{expected:.3g} ({ratio:.2g}x)",
    summary="With the run's TrainingArguments read from training_args.bin, the LR the Trainer "
    "logged at each step is compared with what the declared lr_scheduler_type, learning_rate, "
    "warm-up and max_steps give at that step; many points far off it is the finding. With only "
    "a learning rate declared (a Lightning hparams.yaml's `lr` or `learning_rate`), the logged "
    "peak LR is compared with it.",
    why="The Trainer logs the LR its scheduler produced, and a scheduler built from the "
    "declared settings reproduces it exactly. A log that departs from it was trained on another "
    "schedule: an optimizer and scheduler passed in by hand and built for the wrong number of "
    "training steps (the LR never decays, or decays ten times too fast), a warm-up of another "
    "length, a peak LR that is not the declared one. The run then trained at rates nobody chose, "
    "and no curve-shape rule can tell.",
    fix="Build the scheduler from the same numbers the Trainer uses (num_training_steps = "
    "max_steps, warm-up from warmup_steps), or let the Trainer create it from its arguments; "
    "check that learning_rate is the one the optimizer was built with.",
    thresholds={
        "factor": Threshold(1.5, "x the declared LR",
                            "A scheduler rebuilt from the declared fields matches the logged LR to "
                            "rounding; the only honest slack is which step's LR a version logs (the "
                            "step's own or the next), which moves a linear or cosine LR by far less "
                            "than half except in the first warm-up steps."),
        "floor": Threshold(0.1, "of the declared learning_rate",
                           "Points where the declared LR is below a tenth of its peak (the first "
                           "warm-up steps, the end of a decay to 0) are not compared: there a "
                           "one-step offset alone makes large ratios."),
        "share": Threshold(0.2, "of the compared points",
                           "One stretch of the run (a fifth) trained at a rate off by the factor is "
                           "a different schedule, not an odd logged point."),
        "min_points": Threshold(5, "compared LR points",
                                "Fewer points than a warm-up, a peak and a decay can show say "
                                "nothing about a schedule's shape."),
    },
    fires=Example({"loss": [3.0 - 0.05 * i for i in range(20)], "lr": _LR_LONG,
                   "meta": {"max_steps": 20, "declared": _DECLARED}},
                  note="declared linear decay over 20 steps; the logged LR decays as if over 200"),
    passes=Example({"loss": [3.0 - 0.05 * i for i in range(20)], "lr": _LR_OK,
                    "meta": {"max_steps": 20, "declared": _DECLARED}}),
    limits="Only runs with a readable training_args.bin beside (or one folder above) the "
    "trainer_state.json, or a Lightning hparams.yaml in the log's version directory (its peak "
    "only: the module's hyperparameters do not say the schedule), and the linear, cosine, "
    "constant and constant_with_warmup schedules "
    "without lr_scheduler_kwargs; a DeepSpeed configuration may bring its own scheduler and is "
    "not judged. The log's step is taken as the optimizer step the scheduler counted.",
)


def declared(run: Run) -> Mapping[str, Any] | Skip:
    """The run's declared TrainingArguments, or the skip that says why there are none."""
    unread = run.meta.get("declared_unread")
    if unread:
        return Skip(SkipKind.NO_DATA, f"training_args.bin not read, declared settings not checked: {unread}")
    d = run.meta.get("declared")
    if not isinstance(d, Mapping):
        return Skip(SkipKind.NO_DATA, "no training_args.bin beside the log")
    return d


def _num(v: object) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _warmup(d: Mapping[str, Any], total: float) -> float:
    """Warm-up steps as transformers computes them: warmup_steps >= 1 is a count, a value
    in (0, 1) a share of the training steps (5.x); else warmup_ratio (4.x)."""
    w = _num(d.get("warmup_steps")) or 0.0
    if w >= 1:
        return float(int(w))
    if w > 0:
        return float(math.ceil(total * w))
    ratio = _num(d.get("warmup_ratio")) or 0.0
    return float(math.ceil(total * ratio)) if ratio > 0 else 0.0


def multiplier(kind: str, s: np.ndarray, warm: float, total: float) -> np.ndarray:
    """The LR multiplier transformers' named schedule gives after `s` scheduler steps."""
    if kind == "constant":
        return np.ones_like(s)
    up = s / max(1.0, warm)
    if kind == "constant_with_warmup":
        after = np.ones_like(s)
    elif kind == "linear":
        after = np.maximum(0.0, (total - s) / max(1.0, total - warm))
    else:  # cosine, half a cycle
        after = np.maximum(0.0, 0.5 * (1.0 + np.cos(np.pi * (s - warm) / max(1.0, total - warm))))
    return np.where(s < warm, up, after)


def _plan(run: Run, d: Mapping[str, Any]) -> tuple[str, float, float, float] | Skip:
    kind = str(d.get("lr_scheduler_type") or "")
    lr = _num(d.get("learning_rate"))
    total = planned_steps(run.meta) or planned_steps({"max_steps": d.get("max_steps")})
    if kind not in SCHEDULES:
        return Skip(SkipKind.NOT_REQUESTED, f"declared scheduler {kind or 'unknown'!r} is not one "
                    "the declared fields alone describe")
    if d.get("lr_scheduler_kwargs_set") or d.get("deepspeed_set"):
        return Skip(SkipKind.NOT_REQUESTED, "lr_scheduler_kwargs or a DeepSpeed configuration "
                    "may change the declared schedule")
    if lr is None or lr <= 0 or total is None:
        return Skip(SkipKind.NO_DATA, "no declared learning_rate or planned steps")
    return kind, lr, _warmup(d, total), total


@check("lr-declared", LR_OFF_PLAN, after="lr")
def lr_not_as_declared(run: Run) -> list[Finding] | Skip:
    d = declared(run)
    if isinstance(d, Skip):
        return d
    s = run.get("lr")
    if s is None:
        return Skip(SkipKind.NO_DATA, "no lr column in the log")
    s = s.finite_only()
    if d.get("kind") == "hparams":
        return _peak_off(run, d, s)
    plan = _plan(run, d)
    if isinstance(plan, Skip):
        return plan
    kind, lr, warm, total = plan
    keep = s.steps <= total
    steps, logged = s.steps[keep], s.values[keep]
    # Which step's LR a version logs differs by one (the step's own, or the one after
    # the scheduler stepped): the nearer of the two is taken.
    before, after = lr * multiplier(kind, steps - 1, warm, total), lr * multiplier(kind, steps, warm, total)
    compared = np.minimum(before, after) >= LR_OFF_PLAN.t("floor") * lr
    if int(compared.sum()) < LR_OFF_PLAN.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{int(compared.sum())} logged LR points where the declared "
                    "schedule is above its floor")
    steps, logged, before, after = steps[compared], logged[compared], before[compared], after[compared]
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = np.where(logged > 0, np.minimum(np.abs(np.log(logged / before)), np.abs(np.log(logged / after))),
                       np.inf)
    off = dev > math.log(LR_OFF_PLAN.t("factor"))
    if off.mean() < LR_OFF_PLAN.t("share"):
        return []
    i = int(np.argmax(dev))
    expected = before[i] if abs(logged[i] - before[i]) <= abs(logged[i] - after[i]) else after[i]
    what = (f"{int(off.sum())} of {off.size} logged LR points are more than "
            f"{LR_OFF_PLAN.t('factor'):g}x off the declared {kind} schedule (learning_rate {lr:g}, "
            f"{int(warm)} warm-up steps, {int(total)} steps)")
    return [LR_OFF_PLAN.finding(Location(run.path, float(steps[i])), what=what, off=int(off.sum()),
                                compared=int(off.size), scheduler=kind, lr=lr, warmup=int(warm),
                                total=int(total), step=float(steps[i]), logged=float(logged[i]),
                                expected=float(expected), ratio=float(logged[i] / expected))]


def _peak_off(run: Run, d: Mapping[str, Any], s: Series) -> list[Finding] | Skip:
    """Only a learning rate declared: the logged peak against it. A log still inside its
    warm-up has not reached its peak yet and is not judged."""
    lr = _num(d.get("learning_rate"))
    if lr is None or lr <= 0:
        return Skip(SkipKind.NO_DATA, "no positive learning rate declared")
    if len(s) < LR_OFF_PLAN.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(s)} logged LR points")
    if read_schedule(run).warming_up:
        return Skip(SkipKind.TOO_FEW, "the LR is still rising at the end of the log")
    i = int(np.argmax(s.values))
    ratio = float(s.values[i]) / lr
    if 1.0 / LR_OFF_PLAN.t("factor") <= ratio <= LR_OFF_PLAN.t("factor"):
        return []
    what = (f"the logged peak LR is more than {LR_OFF_PLAN.t('factor'):g}x off the learning rate "
            f"{lr:g} declared in {d.get('source')} (no schedule declared: the peak is compared)")
    return [LR_OFF_PLAN.finding(Location(run.path, float(s.steps[i])), what=what, off=1, compared=1,
                                scheduler="none", lr=lr, warmup=0, total=0, step=float(s.steps[i]),
                                logged=float(s.values[i]), expected=lr, ratio=ratio)]


# ---------------------------------------------------------------- stopped short

STOPPED_SHORT = rule(
    id="TP-STOPPED-SHORT", level=Level.WARN, group=G,
    title="The run stopped before its planned max_steps, and nothing asked it to stop.",
    evidence="the last state on disk is at step {step} of max_steps {planned} ({share:.0%}); "
    "{where}; {request}",
    summary="The trainer_state.json judged is the run's last on disk (the latest checkpoint-N/ "
    "of its output directory, with no later one) and its global_step is short of max_steps, "
    "while the Trainer had not been asked to stop (TrainerControl.should_training_stop false).",
    why="The Trainer stops at max_steps on its own, and a callback that ends training early "
    "(EarlyStoppingCallback, a time budget) sets should_training_stop, which the saved state "
    "records. A last state short of the plan without that request is a run that died: out of "
    "memory, a pre-empted node, an exception, a killed job. Its curves look healthy up to the "
    "end, so every curve rule passes it.",
    fix="Find why the process ended (the job's stderr, the scheduler's log) and resume from "
    "the last checkpoint with resume_from_checkpoint; if the run is still going, judge it again "
    "when it has finished.",
    thresholds={"missing": Threshold(0.01, "of max_steps",
                                     "The Trainer stops exactly at max_steps; anything short of it "
                                     "by more than rounding (1 %) was not the plan."),
                "min_points": Threshold(1, "logged points",
                                        "The state's own global_step is the reading; a state with "
                                        "no logged point at all is no run to judge.")},
    fires=Example({"loss": [3.0 - 0.05 * i for i in range(8)],
                   "meta": {"max_steps": 20, "global_step": 8, "should_training_stop": False,
                            "checkpoints": {"dir": "out", "steps": [4, 8], "judged": 8, "own_state": False}}},
                  note="checkpoint-8 of 20 planned steps is the last on disk"),
    passes=Example({"loss": [3.0 - 0.05 * i for i in range(8)],
                    "meta": {"max_steps": 20, "global_step": 8, "should_training_stop": True,
                             "checkpoints": {"dir": "out", "steps": [4, 8], "judged": 8, "own_state": False}}},
                   note="the same, stopped by EarlyStoppingCallback"),
    limits="Needs the output directory: a trainer_state.json copied out of it is not judged "
    "(it may be any snapshot of a run that went on). `watch` does not judge it; otherwise a "
    "run still training reads the same as one that died, and states older than transformers "
    "4.38 record no stop request, so an early stop there reads as a crash; the finding says "
    "which it saw.",
)


def _last_on_disk(run: Run) -> str | None:
    """Where the judged state sits when it is the run's last one on disk, else None."""
    ck = run.meta.get("checkpoints")
    if not isinstance(ck, Mapping) or not ck.get("steps"):
        return None
    latest = max(ck["steps"])
    if ck.get("judged") is not None:
        return None if ck["judged"] != latest else f"checkpoint-{latest} is the latest checkpoint in {ck['dir']}"
    return f"the output directory's own state, beside checkpoints up to {latest}" if ck.get("own_state") else None


@check("stopped-short", STOPPED_SHORT, after="resume")
def stopped_short(run: Run) -> list[Finding] | Skip:
    # The same words for every log without that output directory (an event file or a W&B
    # record of the same run reports the same checks as its trainer_state.json)
    where = _last_on_disk(run)
    if where is None:
        return Skip(SkipKind.NO_DATA, "not the last state of an output directory on disk")
    if run.meta.get("live"):
        return Skip(SkipKind.NOT_REQUESTED, "the run is being watched while it trains")
    planned = planned_steps(run.meta)
    step = _num(run.meta.get("global_step"))
    if planned is None or step is None:
        return Skip(SkipKind.NO_DATA, "no max_steps and global_step in the log's state")
    if run.records < STOPPED_SHORT.t("min_points"):
        return Skip(SkipKind.TOO_FEW, "no logged point in the state")
    stop = run.meta.get("should_training_stop")
    if stop is True or step >= planned * (1.0 - STOPPED_SHORT.t("missing")):
        return []
    request = ("the Trainer had not been asked to stop (should_training_stop false): a crash or a "
               "kill, or a run still training") if stop is False else \
        "this state records no stop request (transformers < 4.38): a crash, or an early stop"
    return [STOPPED_SHORT.finding(Location(run.path, step), step=step, planned=planned,
                                  share=step / planned, where=where, request=request)]


# ---------------------------------------------------------------- evaluation cadence

EVAL_NOT_LOGGED = rule(
    id="TP-EVAL-NOT-LOGGED", level=Level.WARN, group=G,
    title="Evaluation was declared every N steps, but the log holds (almost) no eval loss.",
    evidence="eval_strategy steps, eval_steps {every}: {expected} evaluations due by step {last}, "
    "{logged} eval_loss point(s) logged{ran}",
    summary="With eval_strategy 'steps' declared in training_args.bin, the evaluations due by the "
    "last logged step are counted and compared with the eval_loss points in the log.",
    why="Without an eval loss nothing can say the run overfits, load_best_model_at_end and "
    "early stopping have nothing to go on, and the 'best' checkpoint is just the last one. The "
    "common cause is silent: an evaluation set without a `labels` column (or a model whose "
    "forward does not return a loss for it) is still evaluated - eval_runtime is logged - but "
    "yields no eval_loss.",
    fix="Give the evaluation examples labels (or set label_names to the model's label "
    "argument), and check eval_steps and eval_delay against max_steps.",
    thresholds={"share": Threshold(0.5, "of the evaluations due",
                                   "The Trainer evaluates at every multiple of eval_steps after "
                                   "eval_delay; fewer than half of them logged is not a log that "
                                   "lost a line or two."),
                "min_points": Threshold(2, "evaluations due",
                                     "One missing evaluation is not a cadence.")},
    fires=Example({"loss": [3.0 - 0.05 * i for i in range(20)], "meta": {"declared": _DECLARED}},
                  note="eval every 5 steps declared, 4 due, none logged"),
    passes=Example({"loss": [3.0 - 0.05 * i for i in range(20)],
                    "eval_loss": [3.1 - 0.04 * i for i in range(20)],
                    "meta": {"declared": _DECLARED}}),
    limits="The 'steps' strategy only: 'epoch' evaluation depends on the epoch length, which "
    "the declared fields do not give.",
)


def _eval_every(d: Mapping[str, Any], run: Run) -> float | None:
    strategy = d.get("eval_strategy", d.get("evaluation_strategy"))
    every = _num(d.get("eval_steps"))
    if strategy != "steps" or every is None or every <= 0:
        return None
    if every < 1:  # a share of max_steps (transformers 4.31+)
        total = planned_steps(run.meta)
        return float(math.ceil(total * every)) if total is not None else None
    return every


@check("eval-declared", EVAL_NOT_LOGGED, after="eval-curve")
def eval_not_logged(run: Run) -> list[Finding] | Skip:
    d = declared(run)
    if isinstance(d, Skip):
        return d
    every = _eval_every(d, run)
    span = run.step_span
    if every is None or span is None:
        return Skip(SkipKind.NOT_REQUESTED, "no step-based evaluation declared")
    last = span[1]
    delay = _num(d.get("eval_delay")) or 0.0
    due = len([k for k in range(1, int(last // every) + 1) if k * every >= delay])
    ev = run.get("eval_loss")
    logged = 0 if ev is None else int(ev.finite.sum())
    if due < EVAL_NOT_LOGGED.t("min_points") or logged >= EVAL_NOT_LOGGED.t("share") * due:
        return []
    ran = ", though eval_runtime was logged: the evaluations ran and measured no loss (no labels?)" \
        if "eval_runtime" in run.columns else ""
    return [EVAL_NOT_LOGGED.finding(Location(run.path, every), every=every, expected=due, last=last,
                                    logged=logged, ran=ran)]
