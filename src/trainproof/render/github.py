"""`--github` / `--output-format github`: GitHub Actions workflow commands, and the
job summary.

- One annotation per FAIL (error) and WARN (warning) finding, its file relative to
  `$GITHUB_WORKSPACE` (else the working directory), its line when the log has one and
  the step it points at in its title. GitHub shows 10 error and 10 warning annotations
  per step and drops the rest silently, so at most that many of each are printed, worst
  first (FAIL before WARN, reports in triage order), and one notice says how many were
  left out and where to read them.
- `summary` is Markdown for `$GITHUB_STEP_SUMMARY`: a verdict table per subject and the
  findings, capped well under GitHub's 1 MiB per step."""

from __future__ import annotations

from trainproof.model import Finding, Level, ReportSet
from trainproof.render.relpath import checkout, relative

_KIND = {Level.FAIL: "error", Level.WARN: "warning"}
SHOWN_PER_KIND = 10  # annotations of one kind GitHub displays per step
SUMMARY_FINDINGS = 200  # findings listed in the job summary before "and N more"
_WORKSPACE = "GITHUB_WORKSPACE"


def _escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return s.replace(":", "%3A").replace(",", "%2C") if prop else s


def _where(f: Finding) -> str:
    return "" if f.location.step is None else f" (step {f.location.step:g})"


def _annotation(f: Finding, kind: str, path: str) -> str:
    line = "" if f.location.line is None else f",line={f.location.line}"
    title = f"{f.rule_id}{_where(f)}"
    return (f"::{kind} file={_escape(path, True)}{line},title={_escape(title, True)}::"
            f"{_escape(f.message + ' ' + f.evidence)}")


def render(rs: ReportSet) -> str:
    base = checkout(_WORKSPACE)
    found = [f for r in rs.triaged() for f in r.findings if f.level in _KIND]
    found.sort(key=lambda f: f.level is not Level.FAIL)  # stable: triage order within a kind
    lines, left = [], {"error": 0, "warning": 0}
    if rs.error:
        lines.append(f"::error title=trainproof::{_escape(rs.error)}")
    shown = {"error": len(lines), "warning": 0}
    for f in found:
        kind = _KIND[f.level]
        if shown[kind] >= SHOWN_PER_KIND:
            left[kind] += 1
            continue
        shown[kind] += 1
        lines.append(_annotation(f, kind, relative(f.location.file, base)))
    if left["error"] or left["warning"]:
        lines.append(f"::notice title=trainproof::{left['error']} error and {left['warning']} warning "
                     f"annotations left out (GitHub shows {SHOWN_PER_KIND} of each per step); every "
                     "finding is in the report and the job summary")
    return "\n".join(lines) + ("\n" if lines else "")


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def summary(rs: ReportSet) -> str:
    """The job summary: a heading with the worst verdict, a table of subjects, the findings."""
    worst = rs.worst_verdict
    head = f"## trainproof {rs.command}: {'could not judge' if worst is None else worst.value}\n\n"
    if rs.error:
        return head + f"Error: {_cell(rs.error)}\n\n"
    base = checkout(_WORKSPACE)
    out = [head, "| verdict | subject | FAIL | WARN | worst finding |\n|---|---|---:|---:|---|\n"]
    for r in rs.triaged():
        n = {lv: sum(f.level is lv for f in r.findings) for lv in (Level.FAIL, Level.WARN)}
        top = next((f.rule_id for lv in (Level.FAIL, Level.WARN, Level.NOT_CHECKED)
                    for f in r.findings if f.level is lv), "")
        out.append(f"| {r.verdict.value} | `{_cell(relative(r.subject, base))}` | {n[Level.FAIL]} | "
                   f"{n[Level.WARN]} | {top} |\n")
    found = [(r, f) for r in rs.triaged() for f in r.findings if f.level in (*_KIND, Level.NOT_CHECKED)]
    if found:
        out.append("\n### Findings\n\n")
        for r, f in found[:SUMMARY_FINDINGS]:
            out.append(f"- **{f.level.value}** `{f.rule_id}` `{_cell(relative(r.subject, base))}`"
                       f"{_where(f)}: {_cell(f.message)} {_cell(f.evidence)}\n")
        if len(found) > SUMMARY_FINDINGS:
            out.append(f"- ... and {len(found) - SUMMARY_FINDINGS} more (see the job log)\n")
    return "".join(out) + "\n"
