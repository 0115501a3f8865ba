"""Applies a rule group's checks to a subject and accounts for every check: it ran,
or it was skipped with a typed reason. Owns every report's outcome statement - the
PASS / OK / NOT-CHECKED finding and its ran/skipped text - for every scope
(`state`), as each scope's Statement declares it in rules/; nothing else makes one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from trainproof.curves import compare_curves, run_curves
from trainproof.model import Finding, Level, Location, Report, Run, Skip, SkipKind
from trainproof.rules import checks
from trainproof.rules.base import Statement, statement_for, statements
from trainproof.rules.status import CMP_UNCOMPARABLE
from trainproof.selection import screen

if TYPE_CHECKING:  # the compare rules are imported by the compare paths only
    from trainproof.rules.compare import Pair

# A PASS statement next to any of these would contradict the report's verdict.
_BLOCKS_PASS = (Level.FAIL, Level.WARN, Level.NOT_CHECKED)


class Outcome:
    """What applying one group's checks gave: findings, and which checks ran or were skipped.
    A plain slotted class, not a dataclass: creating one of those costs ~0.5 ms of every
    start-up (#14)."""

    __slots__ = ("curves_ran", "findings", "ignored", "ran", "skipped")

    def __init__(self, findings: list[Finding] | None = None, ran: list[str] | None = None,
                 skipped: dict[str, str] | None = None, curves_ran: list[str] | None = None,
                 ignored: list[tuple[str, str]] | None = None) -> None:
        self.findings: list[Finding] = [] if findings is None else findings
        self.ran: list[str] = [] if ran is None else ran
        self.skipped: dict[str, str] = {} if skipped is None else skipped
        self.curves_ran: list[str] = [] if curves_ran is None else curves_ran  # the loss-curve checks among `ran`
        self.ignored: list[tuple[str, str]] = [] if ignored is None else ignored  # (rule ID, why) dropped by the config


def apply(group: str, subject: Any, only: Iterable[str] | None = None) -> Outcome:
    """Run every check of `group` on `subject` (those in `only`, when given; the others
    are not part of this subject and are not listed). A check that raises is recorded
    as skipped (checker failed) rather than taking the whole report down. Findings pass
    through the active configuration (selection.screen) here, before any statement."""
    wanted = set(only) if only is not None else None
    out = Outcome()
    for c in checks(group):
        if wanted is not None and c.name not in wanted:
            continue
        try:
            with np.errstate(all="ignore"):  # inf/NaN ratios are evidence, not warnings
                result = c.judge(subject)
            result = result if isinstance(result, Skip) else list(result)
        except Exception as exc:  # a bug in one check must not hide the others
            result = Skip(SkipKind.FAILED, f"checker failed: {type(exc).__name__}: {exc}")
        if isinstance(result, Skip):
            out.skipped[c.name] = str(result)
        else:
            out.ran.append(c.name)
            if c.loss_curve:
                out.curves_ran.append(c.name)
            kept, ignored = screen(result)
            out.findings.extend(kept)
            out.ignored.extend(ignored)
    return out


def ran_text(ran: Iterable[str]) -> str:
    return ", ".join(sorted(ran)) or "none"


def skipped_text(skipped: Mapping[str, str]) -> str:
    return "; ".join(f"{k} ({v})" for k, v in sorted(skipped.items())) or "none"


def _is_statement(f: Finding) -> bool:
    return any(f.rule_id in (s.passed.id if s.passed else None, s.nothing_checked.id if s.nothing_checked else None)
               for s in statements().values())


def state(st: Statement, findings: list[Finding], ran: Iterable[str], skipped: Mapping[str, str],
          counted: bool, values: Mapping[str, Any] | None, loc: Location) -> Finding | None:
    """The one place an outcome statement is made. `counted`: a check that counts for
    this scope ran. PASS only when nothing FAILed, WARNed or went unjudged; NOT-CHECKED
    only when nothing counted ran and nothing FAILed or WARNed."""
    levels = {f.level for f in findings}
    text = dict(ran=ran_text(ran), skipped=skipped_text(skipped))
    if not counted:
        if st.nothing_checked is None or levels & {Level.FAIL, Level.WARN}:
            return None
        return st.nothing_checked.finding(loc, **(values or {}), **text,
                                          detail=f"every check was skipped: {text['skipped']}")
    if st.passed is None or values is None or levels & set(_BLOCKS_PASS):
        return None
    return st.passed.finding(loc, **values, **text)


def judge(scope: str, subject: Any) -> Outcome:
    """A subject of `scope` judged: its precheck, its checks, its outcome statement."""
    st = statement_for(scope)
    early = st.precheck(subject)
    if early is not None:
        return Outcome(findings=[early])
    out = apply(st.group, subject, only=st.checks)
    counted = bool(out.curves_ran if st.loss_curve_only else out.ran)
    said = state(st, out.findings, out.ran, out.skipped, counted, st.values(subject), st.where(subject))
    if said is not None:
        out.findings.append(said)
    return out


def report(scope: str, judged: Any, /, **base: Any) -> Report:
    """`judge`, as a Report with the given subject/format/kind/notes fields."""
    out = judge(scope, judged)
    return Report(findings=tuple(out.findings), ran=tuple(sorted(out.ran)),
                  skipped=dict(sorted(out.skipped.items())), ignored=tuple(out.ignored), **base)


def amend(rep: Report, scope: str, extra: Outcome, prefix: str = "") -> Report:
    """`rep` (a report of `scope`) with another group's outcome added - the compare of
    doctor --baseline, watch's stall check - and its outcome stated again over all the
    findings, so a PASS never stands beside a FAIL. Check names get `prefix`."""
    st = statement_for(scope)
    old = [f for f in rep.findings if _is_statement(f)]
    kept = [f for f in rep.findings if not _is_statement(f)] + list(extra.findings)
    ran = (*rep.ran, *(prefix + c for c in extra.ran))
    skipped = {**rep.skipped, **{prefix + k: v for k, v in extra.skipped.items()}}
    if old:
        counting = {c.name for c in checks(st.group) if c.loss_curve or not st.loss_curve_only}
        counted = any(c in counting for c in rep.ran)
        values = {k: v for k, v in old[0].values.items()
                  if k not in ("ran", "skipped", "detail") and not k.startswith("limit_")}
        said = state(st, kept, ran, skipped, counted, values, old[0].location)
        kept += [said] if said is not None else []
    return replace(rep, findings=tuple(kept), ran=tuple(ran), skipped=skipped,
                   ignored=(*rep.ignored, *extra.ignored))


def judge_run(run: Run, required: bool = True) -> Report:
    """The single-run verdict on one parsed log."""
    base = dict(subject=run.path, format=run.format, records=run.records,
                span=run.step_span, notes=run.notes, required=required)
    rep = report("single_run", run, **base)
    judged = statement_for("single_run").precheck(run) is None
    return replace(rep, curves=run_curves(run, rep.findings)) if judged else rep


def pair_outcome(pair: Pair, baseline_report: Report | Sequence[Report] | None = None) -> Outcome:
    """The compare findings for one run against the baseline (or each of several
    baselines), before any statement."""
    from trainproof.rules.compare import comparable
    from trainproof.rules.compare_health import BAD_BASELINE

    out = apply("compare", pair)
    why = comparable(pair)
    if why is not None and not any(f.level is Level.FAIL for f in out.findings):
        return Outcome(findings=[CMP_UNCOMPARABLE.finding(Location(pair.run.path), detail=why)])
    reports = [baseline_report] if isinstance(baseline_report, Report) else list(baseline_report or ())
    for rep in reports:
        if rep.verdict.value not in ("FAIL", "WARN"):
            continue
        ids = sorted({f.rule_id for f in rep.findings if f.level in (Level.FAIL, Level.WARN)})
        kept, ignored = screen([BAD_BASELINE.finding(Location(rep.subject), path=rep.subject,
                                                     verdict=rep.verdict.value, ids=", ".join(ids))])
        out.findings.extend(kept)
        out.ignored.extend(ignored)
    return out


def judge_pair(pair: Pair, baseline_report: Report | Sequence[Report] | None = None) -> Report:
    """Compare findings for one run against the baseline (or each of several), with the
    compare statement."""
    base = dict(subject=pair.run.path, format=pair.run.format, records=pair.run.records,
                span=pair.run.step_span, kind="compare", notes=_appended_notes(pair))
    out = pair_outcome(pair, baseline_report)
    st = statement_for("compare")
    said = state(st, out.findings, out.ran, out.skipped, bool(out.ran), st.values(pair), st.where(pair))
    findings = out.findings + ([said] if said is not None else [])
    return Report(findings=tuple(findings), ran=tuple(out.ran), skipped=out.skipped,
                  curves=pair_curves(pair, findings), ignored=tuple(out.ignored), **base)


def _appended_notes(pair: Pair) -> tuple[str, ...]:
    """A compare report says when a side was a log of several appended runs, of which its
    last was compared (rules/appended.py; the single-run report gives the finding)."""
    sides = [("run", pair.run), *(("baseline", b) for b in pair.baselines)]
    return tuple(f"{side} {r.path}: {n}" for side, r in sides for n in r.notes
                 if isinstance(r.meta.get("appended"), dict) and n.startswith("this log holds"))


def pair_curves(pair: Pair, findings: Sequence[Finding]) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
    """The run's curves drawn over its baseline, and the baselines' envelope as the compare
    rules aligned them (several baselines), keeping the steps `findings` cite."""
    track = pair.loss
    at_run = None if isinstance(track, str) else (track.steps, track.bases)
    return compare_curves(pair.run, pair.baselines, at_run, findings)
