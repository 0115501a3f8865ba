"""Live rules: what only a watcher of a growing log can see. Judged by `watch` on a
Progress record (how long the run's step has not advanced), never by `epoch`: a
finished log cannot stall."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainproof.model import Finding, Level, Location, Report, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, example_subject, rule, statement

G = "live"


@dataclass(frozen=True)
class Progress:
    """How far a watched run has got: the highest step read, and for how many seconds
    that step has not advanced (since the watch began if it never did)."""

    path: str
    last_step: float | None
    idle_s: float
    timeout_s: float


STALL = rule(
    id="TP-STALL", level=Level.WARN, group=G,
    title="The run stopped making step progress.",
    evidence="no new step for {idle:.0f} s (> --stall-timeout {timeout:.0f} s); last step {step}",
    summary="watch: the log's highest step has not advanced for longer than --stall-timeout.",
    why="A hung run (a dead rank waiting in a collective, a deadlocked dataloader, a full "
    "disk) keeps its GPUs reserved and burns money while writing nothing new. Progress is "
    "judged by the step, not by the file size: a log that keeps growing with banners or "
    "repeated evaluations but no new step is stalled too.",
    fix="Look at the training process: py-spy dump, nvidia-smi, free disk space, the last "
    "lines of stderr. Raise --stall-timeout for runs whose logging interval is longer.",
    thresholds={"timeout": Threshold(300, "s (default of --stall-timeout)",
                                     "Longer than the logging interval of almost every "
                                     "trainer at its default settings, short enough to "
                                     "notice a hang within minutes.")},
    fires=Example({"last_step": 120, "idle_s": 400}),
    passes=Example({"last_step": 120, "idle_s": 20}),
    limits="A run that logs less often than --stall-timeout looks stalled between logs; "
    "the finding is a WARN, never a FAIL, for that reason.",
)


@check("stall", STALL)
def step_stalled(p: Progress) -> list[Finding] | Skip:
    if p.timeout_s <= 0:
        return Skip(SkipKind.NOT_REQUESTED, "--stall-timeout 0 turns stall detection off")
    if p.idle_s > p.timeout_s:
        step = "none yet" if p.last_step is None else p.last_step
        where = Location(p.path, p.last_step)
        return [STALL.finding(where, idle=p.idle_s, timeout=p.timeout_s, step=step)]
    return []


# ---------------------------------------------------------------- the guardian's stop

# verdicts about the whole run's progress
PROGRESS_RULES = ("TP-DEAD-RUN", "TP-FLAT", "TP-LOSS-ROSE", "TP-RL-NO-SIGNAL")

STOPPED = rule(
    id="TP-LIVE-STOPPED", level=Level.INFO, group=G,
    title="The training callback stopped the run (policy stop_on_fail).",
    evidence="stopped at step {step} of {scheduled} scheduled; {saved:.0%} of the schedule never ran; "
    "stopped on: {ids}",
    summary="TrainproofCallback(policy=\"stop_on_fail\") ended training on a FAIL; records where and "
    "how much of the schedule that saved.",
    why="An irreversible action is recorded in the report it was taken on, with its evidence.",
    fix="Read the FAIL findings beside it; resume from the checkpoint nearest the loss floor once "
    "the cause is fixed.",
    thresholds={"patience": Threshold(
        0.5, "of the scheduled steps",
        "TP-DEAD-RUN, TP-FLAT, TP-LOSS-ROSE and TP-RL-NO-SIGNAL judge the progress of a whole run; "
        "on the first steps of a healthy run (warm-up, a slow start) they fire falsely - the tiny GPT-2 of "
        "tests/test_hf_callback.py improves 2.7 % over its first 10 of 40 steps and 8 % by step "
        "20. They stop a run only after half of a known schedule has run (never when the "
        "schedule is unknown); every other FAIL stops it at once.")},
    limits="The run is stopped after the step that was logged; a checkpoint is written only if "
    "the trainer's own save strategy says so.",
)


def stop_grounds(report: Report, step: float, scheduled: int | None) -> list[Finding]:
    """The FAIL findings that justify stopping at `step` of a `scheduled`-step run."""
    fails = [f for f in report.findings if f.level is Level.FAIL]
    ripe = bool(scheduled) and step >= STOPPED.t("patience") * float(scheduled or 0)
    return [f for f in fails if ripe or f.rule_id not in PROGRESS_RULES]


def stopped_finding(path: str, step: float, scheduled: int | None, grounds: list[Finding]) -> Finding:
    saved = max(0.0, 1.0 - step / scheduled) if scheduled else 0.0
    ids = ", ".join(sorted({f.rule_id for f in grounds}))
    return STOPPED.finding(Location(path, step), step=step, scheduled=scheduled or "unknown",
                           saved=saved, ids=ids)


# watch adds the stall check to a single-run report (engine.amend); judged alone, as the
# examples are, a Progress states no outcome of its own.
statement(G, None, lambda p: Location(p.path))


@example_subject(G)
def _live_example(data: Mapping[str, Any]) -> tuple[str, Progress]:
    return G, Progress("example.jsonl", data.get("last_step"), float(data["idle_s"]),
                       float(data.get("timeout_s", STALL.t("timeout"))))
