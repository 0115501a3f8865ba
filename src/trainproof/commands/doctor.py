"""`trainproof doctor [PATH ...]`: zero-config autopsy. Discover every training log under
each PATH (less those --exclude names), judge each, triage FAIL > WARN > NOT-CHECKED > PASS; with --baseline, add the
compare findings of each log against it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from trainproof.address import join_address, split_address
from trainproof.commands.common import LogOptions, add_vocab_argument, load, vocabulary, with_vocabulary
from trainproof.discover import discover, excluded
from trainproof.engine import amend, judge_run, pair_curves, pair_outcome
from trainproof.model import InputError, Location, Report, ReportSet, Run
from trainproof.parsers import read_run, resolve
from trainproof.records import loss_disagreement, merge_records, primary_first
from trainproof.rules import status as S
from trainproof.rules.compare import Pair
from trainproof.tty_progress import Progress

NAME = "doctor"
ALIASES = ("diagnose",)
HELP = "find every training log under PATH and judge each"
LOG_INPUT = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", metavar="PATH", nargs="*", default=["."],
                   help="files or directories (default .); each is searched and judged, one report set")
    p.add_argument("--exclude", metavar="GLOB", action="append", default=[],
                   help="skip logs whose path, file name or a folder name matches GLOB (repeatable); "
                   "they are listed as not judged")
    p.add_argument("--baseline", metavar="FILE", action="append", default=[],
                   help="also compare every log against this known-good run; repeat it for "
                   "several seeds of the recipe (they form the envelope a log is judged against)")
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


def _with_baseline(single: Report, run: Run, baselines: list[Run], base_reports: list[Report]) -> Report:
    """The single-run report with the compare findings added; the engine states the
    outcome once over both, so a compare FAIL and a single-run PASS never stand together."""
    pair = Pair(baselines[0], run, tuple(baselines[1:]))
    rep = amend(single, "single_run", pair_outcome(pair, base_reports), prefix="compare:")
    return replace(rep, curves=pair_curves(pair, rep.findings)) if rep.curves else rep


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


def _runs_in(p: Path, fmt_name: str, root: Path, given: str) -> list[tuple[Path, str | None, str]]:
    """(path, run id, display) of each run a found log holds: itself, or every run of a
    multi-run store, each named by its own directory or by a PATH::RUN_ID address."""
    shown = _display(p, root, given)
    store = resolve(p, fmt_name).store
    if store is None:
        return [(p, None, shown)]
    return [(ref.path, None, _display(ref.path, root, given)) if ref.path is not None
            else (p, ref.id, shown) for ref in store.runs(p)]


def _read_records(p: Path, fmt: str | None, records: list[tuple[Path, str]], shown: str, given: str,
                  opts: LogOptions, not_judged: list[tuple[Path, str]]) -> list[Run] | str:
    """The runs one found log makes with the other records of its run directory, or why
    the log itself could not be read."""
    runs = []
    for q, qfmt in [(p, fmt), *records]:
        q_shown = _display(q, Path(given), given)
        try:
            runs.append(read_run(q, qfmt or opts.format, opts.map, display=q_shown))
        except InputError as exc:
            if q == p:
                return str(exc)
            not_judged.append((q, f"another record of the run {shown}, unreadable: {exc}"))
    return _one_per_run(runs, shown)


def run(args: argparse.Namespace) -> ReportSet:
    """Every PATH in turn, as one report set; a PATH that does not exist stops it before
    any work (a typo must not pass as "nothing wrong here"). One PATH is `trainproof.doctor`."""
    paths = list(dict.fromkeys(args.paths or ["."]))
    if len(paths) == 1 and not args.exclude:
        from trainproof import api

        return api.doctor(paths[0], baseline=args.baseline, max_logs=args.max_logs, format=args.format,
                          mapping=args.map, vocab_size=args.vocab_size)
    for path in paths:
        if not Path(path).exists():
            raise InputError(f"{path}: no such file or directory")
    opts = LogOptions.of(args)
    sets = [diagnose(p, args.baseline, args.max_logs, opts, exclude=args.exclude, alone=len(paths) == 1)
            for p in paths]
    if len(sets) == 1:
        return sets[0]
    reports = tuple(r for rs in sets for r in rs.reports)
    skipped = [item for rs in sets for item in rs.tables.get("not_judged", [])]  # type: ignore[attr-defined]
    if not reports and not skipped:
        raise InputError(f"{', '.join(paths)}: no training logs found")
    return ReportSet(NAME, reports, tables={"not_judged": skipped})


def _not_excluded(found: list[tuple[Path, str | None]], root: Path, given: str, exclude: Sequence[str],
                  not_judged: list[tuple[Path, str]]) -> list[tuple[Path, str | None]]:
    """The found logs --exclude keeps; the others are listed as not judged, with the GLOB."""
    kept = []
    for p, fmt in found:
        glob = excluded(_display(p, root, given), list(exclude))
        if glob is None:
            kept.append((p, fmt))
        else:
            not_judged.append((p, f"excluded by --exclude {glob}"))
    return kept


def diagnose(given: str, baseline_paths: list[str], max_logs: int, opts: LogOptions,
             exclude: Sequence[str] = (), alone: bool = True) -> ReportSet:
    """The work behind `trainproof.doctor`; `given` is the path as the user wrote it.
    `exclude` drops found logs by GLOB; `alone` False (one PATH of several) lets a PATH
    with no log in it pass without an error, the others may hold some."""
    root = Path(given)
    if not root.exists():
        raise InputError(f"{given}: no such file or directory")
    if isinstance(max_logs, bool) or not isinstance(max_logs, int) or max_logs < 1:
        raise InputError("--max-logs must be at least 1")
    baselines = [load(b, opts) for b in baseline_paths]
    base_reports = [judge_run(b) for b in baselines]
    records: dict[Path, list[tuple[Path, str]]] = {}
    if root.is_file():
        found_logs: list[tuple[Path, str | None]] = [(root, None)]
        not_judged: list[tuple[Path, str]] = []
    else:
        found = discover(root, max_logs)
        found_logs = [(p, f.name) for p, f in found.logs]
        not_judged = found.not_judged
        records = {d: [(p, f.name) for p, f in rs] for d, rs in found.records.items()}
    found_logs = _not_excluded(found_logs, root, given, exclude, not_judged)
    # each baseline as (where, run id): a log path, or one run of a multi-run store
    base_at = {(Path(w).resolve(), r) for w, r in (split_address(b.path) for b in baselines)}
    reports = []
    baseline_runs = []  # baselines that are runs of a store doctor walks

    def judged(r: Run, where: Path) -> Report:
        single = judge_run(with_vocabulary(r, vocabulary(where, opts)), required=False)
        if baselines:
            single = _with_baseline(single, r, baselines, base_reports)
        return single

    progress = Progress(len(found_logs))
    for i, (p, fmt) in enumerate(found_logs, 1):
        shown = _display(p, root, given)
        progress.step(i, shown)
        if (p.resolve(), None) in base_at:
            not_judged.append((p, "the baseline itself"))
            continue
        fmt_name = fmt or opts.format
        try:
            targets = _runs_in(p, fmt_name, root, given)
        except InputError as exc:
            reports.append(_unreadable(shown, fmt or "?", str(exc)))
            continue
        if targets == [(p, None, shown)]:  # one log, perhaps with more records of its run
            runs = _read_records(p, fmt, records.get(p, []), shown, given, opts, not_judged)
            if isinstance(runs, str):
                reports.append(_unreadable(shown, fmt or "?", runs))
            else:
                reports.extend(judged(r, p) for r in runs)
            continue
        for where, run_id, display in targets:  # every run of a multi-run store
            named = display if run_id is None else join_address(display, run_id)
            if (where.resolve(), run_id) in base_at:
                baseline_runs.append({"file": named, "reason": "the baseline itself"})
                continue
            try:
                r = read_run(where, fmt_name, opts.map, display=display, run=run_id)
            except InputError as exc:
                reports.append(_unreadable(named, fmt or "?", str(exc)))
                continue
            reports.append(judged(r, where))
    progress.done()
    if alone and not reports and not not_judged and not baseline_runs:
        raise InputError(f"{given}: no training logs found (looked for: "
                         "trainer_state.json, Coqui logs, TensorBoard event files, MLflow stores, "
                         "ClearML sessions, JSONL/CSV metrics)")
    skipped = [{"file": _display(p, root, given), "reason": why} for p, why in not_judged]
    skipped += baseline_runs
    return ReportSet(NAME, tuple(reports), tables={"not_judged": skipped})
