"""`trainproof epoch LOG [LOG ...]`: the single-run verdict on each log, run directory or
store run, one report per log (the exit code is the worst). With one LOG an unreadable
log is the command's error, as it always was; with several, it is that log's NOT-CHECKED
report, so the others are still judged and the exit code still says 2 (or 1 on a FAIL)."""

from __future__ import annotations

import argparse

from trainproof.commands.common import LogOptions, add_vocab_argument, load, vocabulary, with_vocabulary
from trainproof.engine import judge_run
from trainproof.model import InputError, Location, Report, ReportSet
from trainproof.rules import status as S

NAME = "epoch"
HELP = "judge one or more training logs (single-run rules), one report each"
LOG_INPUT = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", metavar="LOG", nargs="+", help="a log file, a run directory, or PATH::RUN_ID for one "
                   "run of a multi-run store (mlflow.db); several give one report each")
    p.add_argument("--exclude", metavar="GLOB", action="append", default=[],
                   help="skip the LOGs whose path, file name or a folder name matches GLOB (repeatable)")
    add_vocab_argument(p)


def judge(path: str, opts: LogOptions) -> Report:
    """The work behind `trainproof.judge_log`."""
    return judge_run(with_vocabulary(load(path, opts), vocabulary(path, opts)))


def run(args: argparse.Namespace) -> ReportSet:
    from trainproof import api

    def one(log: str) -> Report:
        return api.judge_log(log, format=args.format, mapping=args.map, vocab_size=args.vocab_size)

    logs = list(dict.fromkeys(args.logs))
    if args.exclude:
        from trainproof.discover import excluded  # the folder walker: only for --exclude

        logs = [log for log in logs if excluded(log, args.exclude) is None]
    if not logs:
        raise InputError(f"every LOG given was excluded by --exclude ({', '.join(args.exclude)})")
    if len(logs) == 1:
        return ReportSet(NAME, (one(logs[0]),))
    reports = []
    for log in logs:
        try:
            reports.append(one(log))
        except InputError as exc:
            reports.append(Report(subject=log, format="?",
                                  findings=(S.NO_RECORDS.finding(Location(log), detail=str(exc)),)))
    return ReportSet(NAME, tuple(reports))
