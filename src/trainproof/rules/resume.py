"""Resume boundaries: where a log's step counter went back. The parser keeps log order
(parsers/__init__._ordered): an overlap a resumed run writes again is replaced by the
later write, a counter restarted at or below the log's first step is continued after
what came before. This rule reports what was found, so a reader knows the curve was
joined; it never changes a verdict. A counter back at the log's origin usually starts a
new run instead: the log is then cut to its last run (rules/appended.py) before any rule
sees it."""

from __future__ import annotations

from trainproof.model import Finding, Level, Location, Run, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.run import G

RESUMED = rule(
    id="TP-RESUMED", level=Level.INFO, group=G,
    title="The log's step counter went back: a resumed or restarted run, joined in log order.",
    evidence="{count} boundary(ies) in the {metric} log: {detail}",
    summary="A step at or below the one before it: a resume from a checkpoint (the overlap "
    "written again is replaced by the later write) or a restarted counter (the later points "
    "continue the count after the earlier ones).",
    why="Sorting such a log by step interleaves two stretches of training: a healthy resumed "
    "run then reads backwards, as a divergence. Log order is the order training happened in.",
    fix="Nothing to fix when the run was resumed on purpose; if two different runs share one "
    "log file, give each its own file.",
    thresholds={"min_points": Threshold(2, "points", "A step and a later one that goes back.")},
    fires=Example({"loss": [2.0, 1.8, 1.7, 1.75, 1.6], "steps": [1, 2, 3, 2, 3]},
                  note="resumed from a checkpoint at step 1: steps 2 and 3 written again"),
    passes=Example({"loss": [2.0, 1.8, 1.7, 1.6]}),
    limits="A counter back at the log's origin is a new run, not a resume: the last run is "
    "judged alone and TP-APPENDED-RUNS says so (rules/appended.py); only where the loss "
    "carried on and the schedule began again (TP-RESUME-REPLAY) does such a restart stay joined "
    "and show here.",
)

_SHOWN = 3  # boundaries spelled out in the evidence; the count says how many there were


def _describe(b: dict) -> str:
    if b["kind"] == "resume":
        return (f"step {b['from']:g} -> {b['to']:g}, resumed: {b['replaced']} earlier point(s) "
                "replaced by the later write")
    return f"step {b['from']:g} -> {b['to']:g}, counter restarted: continued after step {b['from']:g}"


@check("resume", RESUMED)
def step_counter_went_back(run: Run) -> list[Finding] | Skip:
    if run.get("loss") is None and run.get("eval_loss") is None:
        return Skip(SkipKind.NO_DATA, "no loss column in the log")
    found = run.meta.get("resumes")
    found = found if isinstance(found, dict) else {}
    # The loss curves are what the verdict reads; boundaries in other columns (epoch, lr)
    # were handled the same way and are not news on their own.
    metric = next((m for m in ("loss", "eval_loss") if found.get(m)), None)
    if metric is None:
        return []
    bounds = found[metric]
    counts = run.meta.get("resume_counts")
    count = int(counts.get(metric, len(bounds))) if isinstance(counts, dict) else len(bounds)
    detail = "; ".join(_describe(b) for b in bounds[:_SHOWN])
    if count > _SHOWN:
        detail += f"; and {count - _SHOWN} more"
    return [RESUMED.finding(Location(run.path, bounds[0]["to"]), count=count, metric=metric,
                            detail=detail, first_from=bounds[0]["from"], first_to=bounds[0]["to"])]
