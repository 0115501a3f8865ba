"""`--gitlab PATH` / `--output-format gitlab`: a GitLab Code Quality report (the JSON
array `artifacts:reports:codequality` reads). One entry per FAIL, WARN and INFO finding:

- `severity`: FAIL -> critical, WARN -> minor, INFO -> info (GitLab's scale is info,
  minor, major, critical, blocker; a FAIL fails the job, so it ranks high).
- `location.path` relative to `$CI_PROJECT_DIR` (else the working directory), '/'-
  separated; `lines.begin` the log's line when known, else 1 (GitLab requires it).
- `fingerprint`: rule, path, run and metric - never the step a finding points at, which
  moves as a log grows, so an issue is the same issue in the next pipeline. Two findings
  with the same key (a rule firing twice on one curve) are told apart by their order."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from trainproof.address import split_address
from trainproof.model import Finding, InputError, Level, ReportSet
from trainproof.render.relpath import checkout, relative

SEVERITY = {Level.FAIL: "critical", Level.WARN: "minor", Level.INFO: "info"}


def _run(f: Finding) -> str:
    try:
        return split_address(f.location.file)[1] or ""
    except InputError:
        return ""


def _entry(f: Finding, path: str, seen: dict[str, int]) -> dict[str, Any]:
    key = "\0".join((f.rule_id, path, _run(f), str(f.values.get("metric", ""))))
    seen[key] = seen.get(key, 0) + 1
    if seen[key] > 1:
        key += f"\0{seen[key]}"
    step = "" if f.location.step is None else f" (step {f.location.step:g})"
    return {"description": f"{f.rule_id}: {f.message}{step} {f.evidence}",
            "check_name": f.rule_id,
            "fingerprint": hashlib.sha256(key.encode("utf-8", "backslashreplace")).hexdigest()[:32],
            "severity": SEVERITY[f.level],
            "location": {"path": path, "lines": {"begin": max(1, f.location.line or 1)}}}


def document(rs: ReportSet) -> list[dict[str, Any]]:
    base = checkout("CI_PROJECT_DIR")
    seen: dict[str, int] = {}
    return [_entry(f, relative(f.location.file, base), seen)
            for r in rs.triaged() for f in r.findings if f.level in SEVERITY]


def render(rs: ReportSet) -> str:
    return json.dumps(document(rs), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
