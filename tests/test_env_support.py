"""Shared helpers for the env tests: run `trainproof env ... --json` through the real
CLI and pick reports and findings out of the JSON document."""

from __future__ import annotations

import json
from pathlib import Path

from trainproof.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "env"


def run_env(capsys, *args: str) -> tuple[int, dict]:
    code = main(["env", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def report(doc: dict, kind: str, file: str | None = None) -> dict:
    found = [r for r in doc["reports"] if r["kind"] == kind and (file is None or r["file"] == str(file))]
    assert len(found) == 1, [(r["kind"], r["file"]) for r in doc["reports"]]
    return found[0]


def ids(rep: dict) -> set[str]:
    return {f["id"] for f in rep["findings"]}


def finding(rep: dict, rule_id: str) -> dict:
    hits = [f for f in rep["findings"] if f["id"] == rule_id]
    assert hits, f"{rule_id} not in {ids(rep)}"
    return hits[0]
