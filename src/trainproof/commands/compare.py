"""`trainproof compare BASELINE RUN...`: ratio rules of each run against a known-good
baseline, and an N-way ranking. Every file is read exactly once."""

from __future__ import annotations

import argparse
from typing import Any

from trainproof.commands.common import load
from trainproof.engine import judge_pair, judge_run
from trainproof.model import InputError, Location, Report, ReportSet, Run
from trainproof.rules import status as S
from trainproof.rules.compare import Pair, ranking_row

NAME = "compare"
HELP = "compare one or more runs against a known-good baseline"
LOG_INPUT = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("baseline", metavar="BASELINE", help="the known-good run's log")
    p.add_argument("runs", metavar="RUN", nargs="+", help="logs to judge against the baseline")


def compare_all(baseline: Run, runs: list[tuple[str, Run | InputError]],
                ) -> tuple[list[Report], list[dict[str, Any]]]:
    base_report = judge_run(baseline)
    reports, rows = [], []
    for path, item in runs:
        if isinstance(item, InputError):
            reports.append(Report(subject=path, format="?", kind="compare",
                                  findings=(S.CMP_ERROR.finding(Location(path), detail=str(item)),)))
            continue
        pair = Pair(baseline, item)
        report = judge_pair(pair, base_report)
        reports.append(report)
        rows.append({**ranking_row(pair), "verdict": report.verdict.value})
    rows.sort(key=lambda r: (_rank(r["verdict"]), r.get("end_ratio") or 0.0))
    return reports, rows


def _rank(verdict: str) -> int:
    return {"PASS": 0, "WARN": 1, "NOT-CHECKED": 2, "FAIL": 3}[verdict]


def run(args: argparse.Namespace) -> ReportSet:
    baseline = load(args.baseline, args)
    runs: list[tuple[str, Run | InputError]] = []
    for path in args.runs:
        try:
            runs.append((path, load(path, args)))
        except InputError as exc:
            runs.append((path, exc))
    reports, rows = compare_all(baseline, runs)
    return ReportSet(NAME, tuple(reports), tables={"baseline": baseline.path, "ranking": rows})
