"""SARIF 2.1.0 as GitHub code scanning ingests it: one run, the rule table from the
catalogue, one result per FAIL/WARN/INFO finding located in the real log file, and
"could not judge" as tool execution notifications rather than fake results.

Every artifact URI is a valid RFC 3986 reference: each path segment is percent-encoded
from its file-system bytes (spaces, `#`, `%`, non-ASCII, undecodable names), so a log
with any name yields a file the schema and GitHub accept. Fingerprints name what a
finding is about (rule, file, metric), never where on the curve it fired, so an alert
keeps its identity while the log grows."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes

from trainproof import __version__
from trainproof.address import split_address
from trainproof.config import judged_with
from trainproof.model import Finding, Level, ReportSet
from trainproof.rules import catalogue

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Level.FAIL: "error", Level.WARN: "warning", Level.INFO: "note"}
OUTSIDE = "LOGROOT"


def _rules() -> list[dict[str, Any]]:
    out = []
    for r in catalogue().values():
        full = f"{r.summary} {r.why}"
        help_md = f"**{r.id}** — {r.summary}\n\nWhy: {r.why}\n\nWhat to do: {r.fix}"
        out.append({
            "id": r.id, "name": r.id.removeprefix("TP-").title().replace("-", ""),
            "shortDescription": {"text": r.title},
            "fullDescription": {"text": full},
            "help": {"text": f"{r.summary} Why: {r.why} What to do: {r.fix}", "markdown": help_md},
            "defaultConfiguration": {"level": _LEVEL.get(r.level, "note")},
            "properties": {"tags": ["training", r.group]},
        })
    return out


def _resolved(file: str) -> Path:
    """The absolute path a finding's file names (a run in a store is located in the
    store); a path that cannot be resolved (a symlink loop) is made absolute as written."""
    where = Path(split_address(file)[0])
    try:
        return where.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(where))


class _Uris:
    """Log paths as URIs relative to the working directory; files outside it are
    made relative to their common parent under the LOGROOT base id."""

    def __init__(self, files: list[str]) -> None:
        self.cwd = Path.cwd().resolve()
        outside = [p for p in (_resolved(f) for f in files)
                   if not p.is_relative_to(self.cwd)]
        self.root = Path(os.path.commonpath(outside)) if outside else None
        if self.root is not None and self.root in outside:  # one subject: its parent is the base
            self.root = self.root.parent

    def location(self, file: str) -> dict[str, Any]:
        p = _resolved(file)
        if p.is_relative_to(self.cwd):
            return {"uri": relative_uri(p.relative_to(self.cwd))}
        assert self.root is not None
        return {"uri": relative_uri(p.relative_to(self.root)), "uriBaseId": OUTSIDE}

    def identity(self, file: str) -> str:
        """The file as a fingerprint names it: its path under the working directory when
        it is there (the same in every checkout), else its absolute path."""
        p = _resolved(file)
        return relative_uri(p.relative_to(self.cwd)) if p.is_relative_to(self.cwd) else p.as_posix()

    def bases(self) -> dict[str, Any]:
        if self.root is None:
            return {}
        uri = self.root.as_uri()  # percent-encoded by pathlib; a base URI ends in '/'
        return {OUTSIDE: {"uri": uri if uri.endswith("/") else uri + "/"}}


def relative_uri(rel: Path) -> str:
    """A relative path as a relative URI reference: '/'-joined segments, each
    percent-encoded from its bytes (os.fsencode keeps undecodable names exact); ':' is
    encoded as well, so a first segment never reads as a scheme. The directory itself
    is '.'."""
    return "/".join(quote_from_bytes(os.fsencode(part), safe="") for part in rel.parts) or "."


def _fingerprint(f: Finding, uris: _Uris) -> str:
    """Rule, file and metric (a rule judging loss and eval loss fires once for each):
    the step a finding points at moves as the log grows and is not part of it."""
    run = split_address(f.location.file)[1] or ""
    key = "\0".join((f.rule_id, uris.identity(f.location.file), run, str(f.values.get("metric", ""))))
    return hashlib.sha256(key.encode("utf-8", "backslashreplace")).hexdigest()[:32]


def _result(f: Finding, index: dict[str, int], uris: _Uris) -> dict[str, Any]:
    step = "" if f.location.step is None else f" (step {f.location.step:g})"
    run = split_address(f.location.file)[1]
    where = "" if run is None else f"Run {run}: "
    return {
        "ruleId": f.rule_id, "ruleIndex": index[f.rule_id], "level": _LEVEL[f.level],
        "message": {"text": f"{where}{f.message}{step} {f.evidence}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": uris.location(f.location.file),
            "region": {"startLine": max(1, f.location.line or 1)}}}],
        "partialFingerprints": {"primaryLocationLineHash": _fingerprint(f, uris)},
        "properties": {"source": f.source, "values": dict(f.values)},
    }


def document(rs: ReportSet) -> dict[str, Any]:
    rules = _rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    findings = [f for r in rs.reports for f in r.findings]
    uris = _Uris([f.location.file for f in findings if f.level in _LEVEL])
    results = [_result(f, index, uris) for f in findings if f.level in _LEVEL]
    notes = [{"level": "error", "message": {"text": rs.error}}] if rs.error else []
    notes += [{"level": "warning", "message": {"text": f"{f.location.file}: {f.rule_id}: {f.message} {f.evidence}"},
               "descriptor": {"id": f.rule_id}}
              for f in findings if f.level is Level.NOT_CHECKED]
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "trainproof", "version": __version__,
                            "semanticVersion": __version__,
                            "rules": rules}},
        "invocations": [{"executionSuccessful": rs.error is None,
                         "exitCode": int(rs.exit_code),
                         "toolExecutionNotifications": notes}],
        "results": results,
        "columnKind": "utf16CodeUnits",
    }
    if uris.bases():
        run["originalUriBaseIds"] = uris.bases()
    if judged_with(rs.config):  # judged against a non-default configuration: say which
        run["properties"] = {"trainproofConfig": dict(rs.config),
                             "ignored": [{"file": r.subject, "id": rid, "why": why}
                                         for r in rs.reports for rid, why in r.ignored]}
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def render(rs: ReportSet) -> str:
    return json.dumps(document(rs), indent=2, ensure_ascii=False, default=str) + "\n"
