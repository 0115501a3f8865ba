"""`trainproof compare BASELINE RUN...` (or `compare --baseline B [--baseline B2 ...] RUN...`):
each run judged against the known-good baseline(s) at the steps it reached, and an
N-way ranking. Several baselines (seeds of one recipe) form the envelope a run is
measured against. Every file is read exactly once."""

from __future__ import annotations

import argparse
from typing import Any

from trainproof.commands.common import LogOptions, load
from trainproof.engine import judge_pair, judge_run
from trainproof.model import InputError, Location, Report, ReportSet, Run
from trainproof.rules import status as S
from trainproof.rules.compare import Pair, ranking_row

NAME = "compare"
HELP = "compare one or more runs against a known-good baseline (or several seeds of it)"
LOG_INPUT = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("baseline", metavar="BASELINE", nargs="?",
                   help="the known-good run's log (omit when --baseline is given)")
    p.add_argument("runs", metavar="RUN", nargs="+", help="logs to judge against the baseline")
    p.add_argument("--baseline", dest="baselines", metavar="FILE", action="append", default=[],
                   help="a known-good run's log; repeat it for several seeds of the recipe, which "
                   "form the envelope a run is judged against (then every positional is a run)")


def split_inputs(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(baseline paths, run paths): `--baseline` makes every positional a run; without
    it the first positional is the baseline, as since 0.17.0."""
    positional = ([args.baseline] if args.baseline else []) + list(args.runs)
    if args.baselines:
        return list(args.baselines), positional
    if len(positional) < 2:
        raise InputError("compare needs a baseline and at least one run: compare BASELINE RUN... "
                         "or compare --baseline FILE RUN...")
    return positional[:1], positional[1:]


def compare_all(baseline: Run | list[Run], runs: list[tuple[str, Run | InputError]],
                ) -> tuple[list[Report], list[dict[str, Any]]]:
    """Judge each run against the baseline(s); the first baseline names the pair."""
    bases = baseline if isinstance(baseline, list) else [baseline]
    base_reports = [judge_run(b) for b in bases]
    reports, rows = [], []
    for path, item in runs:
        if isinstance(item, InputError):
            reports.append(Report(subject=path, format="?", kind="compare",
                                  findings=(S.CMP_ERROR.finding(Location(path), detail=str(item)),)))
            continue
        pair = Pair(bases[0], item, tuple(bases[1:]))
        report = judge_pair(pair, base_reports)
        reports.append(report)
        rows.append({**ranking_row(pair), "verdict": report.verdict.value})
    rows.sort(key=lambda r: (_rank(r["verdict"]), _key_ratio(r)))
    return reports, rows


def _key_ratio(row: dict[str, Any]) -> float:
    """Eval loss ranks where both sides log it (the train loss ranks an overfit run first)."""
    v = row.get("eval_end_ratio", row.get("end_ratio"))
    return float(v) if isinstance(v, (int, float)) else 0.0


def _rank(verdict: str) -> int:
    return {"PASS": 0, "WARN": 1, "NOT-CHECKED": 2, "FAIL": 3}[verdict]


def judge(base_paths: list[str], run_paths: list[str], opts: LogOptions) -> ReportSet:
    """The work behind `trainproof.compare_runs`: every file is read once."""
    if not base_paths:
        raise InputError("compare needs at least one baseline")
    if not run_paths:
        raise InputError("compare needs at least one run to judge against the baseline")
    bases = [load(p, opts) for p in base_paths]
    runs: list[tuple[str, Run | InputError]] = []
    for path in run_paths:
        try:
            runs.append((path, load(path, opts)))
        except InputError as exc:
            runs.append((path, exc))
    reports, rows = compare_all(bases, runs)
    return ReportSet(NAME, tuple(reports), tables={"baseline": bases[0].path,
                                                   "baselines": [b.path for b in bases], "ranking": rows})


def run(args: argparse.Namespace) -> ReportSet:
    from trainproof import api

    base_paths, run_paths = split_inputs(args)
    return api.compare_runs(run_paths, base_paths, format=args.format, mapping=args.map)
