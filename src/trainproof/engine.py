"""Applies a rule group's checks to a subject and accounts for every check: it ran,
or it was skipped with a typed reason. Also turns a judged run into a Report with
its outcome statement (TP-PASS / TP-NO-LOSS / ...)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainproof.model import Finding, Level, Location, Report, Run, Skip, SkipKind
from trainproof.rules import checks
from trainproof.rules import status as S
from trainproof.rules.compare import BAD_BASELINE, Pair, comparable


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    curves_ran: list[str] = field(default_factory=list)  # the loss-curve checks among `ran`


def apply(group: str, subject: Any, only: Iterable[str] | None = None) -> Outcome:
    """Run every check of `group` on `subject`. A check that raises is recorded as
    skipped (checker failed) rather than taking the whole report down."""
    wanted = set(only) if only is not None else None
    out = Outcome()
    for c in checks(group):
        if wanted is not None and c.name not in wanted:
            out.skipped[c.name] = str(Skip(SkipKind.NOT_REQUESTED, "not requested"))
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
            out.findings.extend(result)
    return out


def _joined(names: Iterable[str]) -> str:
    return ", ".join(names) or "none"


def _skipped_text(skipped: dict[str, str]) -> str:
    return "; ".join(f"{k} ({v})" for k, v in sorted(skipped.items())) or "none"


CURVE_POINTS = 400  # enough for a chart in a report; never a judging input


def curves(run: Run) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
    """Finite loss/eval_loss points, evenly thinned, for renderers that draw charts."""
    out = {}
    for name in ("loss", "eval_loss"):
        s = run.get(name)
        if s is None:
            continue
        f = s.finite_only()
        idx = np.unique(np.linspace(0, len(f) - 1, min(len(f), CURVE_POINTS)).astype(int)) if len(f) else []
        out[name] = (tuple(f.steps[idx].tolist()), tuple(f.values[idx].tolist()))
    return out


def judge_run(run: Run, required: bool = True) -> Report:
    """The single-run verdict on one parsed log."""
    base = dict(subject=run.path, format=run.format, records=run.records,
                span=run.step_span, notes=run.notes, required=required)
    loc = Location(run.path)
    if run.records == 0 or not run.columns:
        detail = "no numeric records could be read" + (f" ({run.notes[0]})" if run.notes else "")
        return Report(findings=(S.NO_RECORDS.finding(loc, detail=detail),), **base)
    if run.get("loss") is None:
        cols = ", ".join(run.columns) or "none"
        return Report(findings=(S.NO_LOSS.finding(loc, columns=cols),), **base)
    out = apply("single_run", run)
    findings = list(out.findings)
    finite = int(run.series["loss"].finite.sum())
    if not any(f.level in (Level.FAIL, Level.WARN) for f in findings):
        # Each check declares the points it needs and skips with a typed reason below
        # that; a verdict is only given when at least one loss-curve check could run.
        if not out.curves_ran:
            findings.append(S.NOT_CHECKED.finding(loc, n=finite, skipped=_skipped_text(out.skipped)))
        else:
            findings.append(S.PASS.finding(loc, n=finite, ran=_joined(sorted(out.ran)),
                                           skipped=_skipped_text(out.skipped)))
    return Report(findings=tuple(findings), ran=tuple(sorted(out.ran)),
                  skipped=dict(sorted(out.skipped.items())), curves=curves(run), **base)


def judge_pair(pair: Pair, baseline_report: Report | Sequence[Report] | None = None) -> Report:
    """Compare findings for one run against the baseline (or each of several baselines)."""
    loc = Location(pair.run.path)
    base = dict(subject=pair.run.path, format=pair.run.format, records=pair.run.records,
                span=pair.run.step_span, kind="compare")
    out = apply("compare", pair)
    findings = list(out.findings)
    why = comparable(pair)
    if why is not None and not any(f.level is Level.FAIL for f in findings):
        return Report(findings=(S.CMP_UNCOMPARABLE.finding(loc, detail=why),), **base)
    reports = [baseline_report] if isinstance(baseline_report, Report) else list(baseline_report or ())
    for rep in reports:
        if rep.verdict.value not in ("FAIL", "WARN"):
            continue
        ids = sorted({f.rule_id for f in rep.findings if f.level in (Level.FAIL, Level.WARN)})
        findings.append(BAD_BASELINE.finding(Location(rep.subject), path=rep.subject,
                                             verdict=rep.verdict.value, ids=", ".join(ids)))
    if not any(f.level in (Level.FAIL, Level.WARN) for f in findings):
        findings.append(S.CMP_PASS.finding(loc, ran=_joined(out.ran),
                                           skipped=_skipped_text(out.skipped)))
    return Report(findings=tuple(findings), ran=tuple(out.ran), skipped=out.skipped, **base)
