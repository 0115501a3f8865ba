"""Outcome rules: the statements a report makes about itself rather than about a
curve - passed (and what that covered), or could not be judged (and why)."""

from __future__ import annotations

from typing import Any

from trainproof.model import Finding, Level, Location, Run
from trainproof.rules.base import rule, statement

PASS = rule(
    id="TP-PASS", level=Level.PASS, group="single_run",
    title="No mechanical failures detected.",
    evidence="{n} loss points analysed. Ran: {ran}. Skipped: {skipped}.",
    summary="The PASS statement: every check that ran is listed, and every check that did not, with its reason.",
    why="A PASS that does not say what it covered invites reading it as covering everything.",
    fix="Nothing to fix. Skipped checks are not passed checks: log what they need (eval "
    "loss, grad norm, step time) to have them run.",
    limits="Loss curves cannot see a model learning the wrong thing: a run on corrupted "
    "labels can look healthy. Compare against a known-good baseline for that.",
)

NO_RECORDS = rule(
    id="TP-NO-RECORDS", level=Level.NOT_CHECKED, group="single_run",
    title="The log holds no data records.",
    evidence="{detail}",
    summary="Nothing numeric could be read from the log; exit 2.",
    why="An empty or foreign file says nothing about a run; calling it PASS would be a lie "
    "and calling it FAIL would blame the run for a tooling problem.",
    fix="Point trainproof at the file the trainer writes (trainer_state.json, an event file, "
    "a metrics CSV/JSONL), or pass --format.",
)

NO_LOSS = rule(
    id="TP-NO-LOSS", level=Level.NOT_CHECKED, group="single_run",
    title="No loss column was recognised.",
    evidence="columns found: {columns}. Name the loss with --map loss=COLUMN.",
    summary="The log has records but none of its columns is a known spelling of the train or "
    "eval loss; exit 2. An eval-only log is judged on its eval loss.",
    why="Every curve rule needs the loss; guessing which column it is could judge the wrong metric.",
    fix="Pass --map loss=COLUMN (and eval_loss=, lr=, grad_norm= as needed).",
)

NOT_CHECKED = rule(
    id="TP-NOT-CHECKED", level=Level.NOT_CHECKED, group="single_run",
    title="Too little of the loss curve to judge.",
    evidence="{n} finite loss point(s); no loss-curve check could run. Skipped: {skipped}.",
    summary="A loss exists but no check of the loss curve could run on it (each declares the "
    "points it needs as min_points); exit 2 unless a NaN check FAILed.",
    why="A verdict that checked nothing is not a PASS: one point is not a run that rose, "
    "fell or stayed flat.",
    fix="Judge a longer log, or log more often.",
    limits="Until 0.18.0 any log of fewer than 5 finite loss points was NOT-CHECKED; a 4-epoch "
    "Keras or fastai CSVLogger file is now judged by the checks that need few points.",
)

CMP_PASS = rule(
    id="TP-CMP-PASS", level=Level.PASS, group="compare",
    title="Run is in line with the baseline.",
    evidence="Ran: {ran}. Skipped: {skipped}.",
    summary="The comparison statement: no ratio rule fired; lists what ran and what was skipped.",
    why="Says what was compared, so a PASS is not read as covering more.",
    fix="Nothing to fix.",
)

CMP_UNCOMPARABLE = rule(
    id="TP-CMP-UNCOMPARABLE", level=Level.NOT_CHECKED, group="compare",
    title="The runs cannot be compared.",
    evidence="{detail}",
    summary="One side has no usable loss scale (no loss, too few points, non-positive loss); exit 2.",
    why="A ratio against nothing is not evidence about either run.",
    fix="Compare logs that both record a positive training loss over several points.",
)

CMP_ERROR = rule(
    id="TP-CMP-ERROR", level=Level.NOT_CHECKED, group="compare",
    title="The comparison could not run.",
    evidence="{detail}",
    summary="The baseline or a run could not be read; exit 2 unless a FAIL stands.",
    why="An unreadable input is a tooling problem, not a verdict about the run.",
    fix="Fix the path or format named in the message.",
)


def _run_unjudgeable(run: Run) -> Finding | None:
    """Nothing to judge before any check runs: no records, or no loss column."""
    loc = Location(run.path)
    if run.records == 0 or not run.columns:
        detail = "no numeric records could be read" + (f" ({run.notes[0]})" if run.notes else "")
        return NO_RECORDS.finding(loc, detail=detail)
    if run.get("loss") is None and run.get("eval_loss") is None:
        return NO_LOSS.finding(loc, columns=", ".join(run.columns) or "none")
    return None


def _finite_loss(run: Run) -> dict[str, Any]:
    """The points the PASS stands on: the train loss, or the eval loss of an eval-only log."""
    loss = run.get("loss") or run.get("eval_loss")
    return {"n": int(loss.finite.sum()) if loss is not None else 0}


statement("single_run", PASS, lambda run: Location(run.path), nothing_checked=NOT_CHECKED,
          loss_curve_only=True, values=_finite_loss, precheck=_run_unjudgeable)
statement("compare", CMP_PASS, lambda pair: Location(pair.run.path))
