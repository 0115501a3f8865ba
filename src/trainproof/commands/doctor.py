"""`trainproof doctor [PATH]`: zero-config autopsy. Discover every training log under
PATH, judge each, triage FAIL > WARN > NOT-CHECKED > PASS; with --baseline, add the
compare findings of each log against it."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from trainproof.commands.common import add_vocab_argument, load, vocabulary, with_vocabulary
from trainproof.discover import discover
from trainproof.engine import amend, judge_run, pair_outcome
from trainproof.model import InputError, Location, Report, ReportSet, Run
from trainproof.parsers import read_run
from trainproof.records import loss_disagreement, merge_records, primary_first
from trainproof.rules import status as S
from trainproof.rules.compare import Pair

NAME = "doctor"
ALIASES = ("diagnose",)
HELP = "find every training log under PATH and judge each"
LOG_INPUT = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", nargs="?", default=".", help="file or directory (default .)")
    p.add_argument("--baseline", metavar="FILE", help="also compare every log against this known-good run")
    p.add_argument("--max-logs", type=int, default=500, metavar="N",
                   help="judge at most N logs; the rest are listed as not judged (default 500)")
    add_vocab_argument(p)


def _display(p: Path, root: Path, given: str) -> str:
    if p == root:
        return given
    rel = p.relative_to(root)
    return str(Path(given) / rel)


def _unreadable(path: str, fmt: str, why: str) -> Report:
    return Report(subject=path, format=fmt, required=False,
                  findings=(S.NO_RECORDS.finding(Location(path), detail=why),))


def _with_baseline(single: Report, run: Run, baseline: Run, base_report: Report) -> Report:
    """The single-run report with the compare findings added; the engine states the
    outcome once over both, so a compare FAIL and a single-run PASS never stand together."""
    return amend(single, "single_run", pair_outcome(Pair(baseline, run), base_report), prefix="compare:")


def _one_per_run(runs: list[Run], shown: str) -> list[Run]:
    """Records of one run directory that hold the same loss curve are one run, judged
    once; a record that disagrees is judged on its own, saying with which it disagrees."""
    if len(runs) < 2:
        return runs
    primary, *others = primary_first(runs)
    same = [o for o in others if loss_disagreement(primary, o) is None]
    apart = [o for o in others if o not in same]
    out = [merge_records(primary, same, shown) if same else primary]
    for o in apart:
        why = f"not the same run as {primary.path}: {loss_disagreement(primary, o)}"
        out.append(replace(o, notes=(why, *o.notes)))
    if apart:
        out[0] = replace(out[0], notes=(*out[0].notes, *(f"{o.path} holds another curve; judged on its own"
                                                         for o in apart)))
    return out


def run(args: argparse.Namespace) -> ReportSet:
    root = Path(args.path)
    if not root.exists():
        raise InputError(f"{args.path}: no such file or directory")
    if args.max_logs < 1:
        raise InputError("--max-logs must be at least 1")
    baseline = load(args.baseline, args) if args.baseline else None
    base_report = judge_run(baseline) if baseline is not None else None
    records: dict[Path, list[tuple[Path, str]]] = {}
    if root.is_file():
        found_logs: list[tuple[Path, str | None]] = [(root, None)]
        not_judged: list[tuple[Path, str]] = []
    else:
        found = discover(root, args.max_logs)
        found_logs = [(p, f.name) for p, f in found.logs]
        not_judged = found.not_judged
        records = {d: [(p, f.name) for p, f in rs] for d, rs in found.records.items()}
    base_path = Path(args.baseline).resolve() if args.baseline else None
    reports = []
    for p, fmt in found_logs:
        shown = _display(p, root, args.path)
        if base_path is not None and p.resolve() == base_path:
            not_judged.append((p, "the baseline itself"))
            continue
        group = [(p, fmt), *records.get(p, [])]
        runs = []
        for q, qfmt in group:
            q_shown = _display(q, root, args.path)
            try:
                runs.append(read_run(q, qfmt or getattr(args, "format", "auto"), args.map, display=q_shown))
            except InputError as exc:
                if q == p:
                    reports.append(_unreadable(shown, qfmt or "?", str(exc)))
                else:
                    not_judged.append((q, f"another record of the run {shown}, unreadable: {exc}"))
        found = vocabulary(p, args) if runs else (None, [])
        for r in _one_per_run(runs, shown):
            single = judge_run(with_vocabulary(r, found), required=False)
            if baseline is not None and base_report is not None:
                single = _with_baseline(single, r, baseline, base_report)
            reports.append(single)
    if not reports and not not_judged:
        raise InputError(f"{args.path}: no training logs found (looked for: "
                         "trainer_state.json, Coqui logs, TensorBoard event files, JSONL/CSV metrics)")
    skipped = [{"file": _display(p, root, args.path), "reason": why} for p, why in not_judged]
    return ReportSet(NAME, tuple(reports), tables={"not_judged": skipped})
