"""`--github`: GitHub Actions workflow commands, one annotation per FAIL/WARN finding."""

from __future__ import annotations

from trainproof.model import Level, ReportSet

_KIND = {Level.FAIL: "error", Level.WARN: "warning"}


def _escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return s.replace(":", "%3A").replace(",", "%2C") if prop else s


def render(rs: ReportSet) -> str:
    lines = []
    for r in rs.triaged():
        for f in r.findings:
            kind = _KIND.get(f.level)
            if kind:
                lines.append(f"::{kind} file={_escape(f.location.file, True)},line={f.location.line or 1},"
                             f"title={_escape(f.rule_id, True)}::{_escape(f.message + ' ' + f.evidence)}")
    if rs.error:
        lines.append(f"::error title=trainproof::{_escape(rs.error)}")
    return "\n".join(lines) + ("\n" if lines else "")
