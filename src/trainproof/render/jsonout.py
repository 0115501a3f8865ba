"""`--json`: the schema_version 3 envelope of CONTRACTS.md. Keys are only ever
added within a schema version, never removed or retyped."""

from __future__ import annotations

import json
import math
from typing import Any

from trainproof import __version__
from trainproof.model import Finding, Report, ReportSet

SCHEMA_VERSION = 3


def _safe(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def finding_dict(f: Finding) -> dict[str, Any]:
    loc: dict[str, Any] = {"file": f.location.file}
    if f.location.step is not None:
        loc["step"] = _safe(f.location.step)
    if f.location.line is not None:
        loc["line"] = f.location.line
    return {"id": f.rule_id, "level": f.level.value, "message": f.message,
            "evidence": f.evidence, "source": f.source,
            "values": {k: _safe(v) for k, v in f.values.items()}, "location": loc}


def report_dict(r: Report) -> dict[str, Any]:
    return {
        "file": r.subject, "format": r.format, "verdict": r.verdict.value,
        "findings": [finding_dict(f) for f in r.findings],
        "checks": {"ran": list(r.ran), "skipped": dict(r.skipped)},
        "kind": r.kind, "records": r.records,
        "steps": None if r.span is None else [_safe(r.span[0]), _safe(r.span[1])],
        "notes": list(r.notes), "required": r.required,
        "ignored": [{"id": rid, "why": why} for rid, why in r.ignored],
    }


def document(rs: ReportSet) -> dict[str, Any]:
    worst = rs.worst_verdict
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "trainproof_version": __version__,
        "command": rs.command,
        "reports": [] if rs.error else [report_dict(r) for r in rs.triaged()],
        "worst_verdict": None if worst is None else worst.value,
        "error": rs.error, "exit_code": int(rs.exit_code),
        "config": dict(rs.config) if rs.config else None,
    }
    for k, v in rs.tables.items():
        doc[k] = v
    return doc


def render(rs: ReportSet) -> str:
    """One indented document; one compact line when progress was streamed as JSON lines,
    so a line-by-line consumer can read the final verdict like every other line."""
    if rs.streamed:
        return json.dumps(document(rs), ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
    return json.dumps(document(rs), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_lines(rs: ReportSet) -> str:
    """`--output-format json-lines`: one compact object per finding, in triage order, each
    `{"type": "finding", "command", "file", "verdict", ...finding_dict}` (`verdict` is
    its report's), then one `{"type": "summary", "command", "reports", "worst_verdict",
    "error", "exit_code"}` line, so an empty or cut-short stream is never read as clean."""
    def line(obj: dict[str, Any]) -> str:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"

    out = []
    for r in ([] if rs.error else rs.triaged()):
        for f in r.findings:
            out.append(line({"type": "finding", "schema_version": SCHEMA_VERSION, "command": rs.command,
                             "file": r.subject, "verdict": r.verdict.value, **finding_dict(f)}))
    worst = rs.worst_verdict
    out.append(line({"type": "summary", "schema_version": SCHEMA_VERSION, "command": rs.command,
                     "reports": 0 if rs.error else len(rs.reports),
                     "worst_verdict": None if worst is None else worst.value,
                     "error": rs.error, "exit_code": int(rs.exit_code)}))
    return "".join(out)
