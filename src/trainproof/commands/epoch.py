"""`trainproof epoch LOG`: the single-run verdict on one log, run directory or store run."""

from __future__ import annotations

import argparse

from trainproof.commands.common import LogOptions, add_vocab_argument, load, vocabulary, with_vocabulary
from trainproof.engine import judge_run
from trainproof.model import Report, ReportSet

NAME = "epoch"
HELP = "judge one training log (single-run rules)"
LOG_INPUT = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", metavar="LOG", help="a log file, a run directory, or PATH::RUN_ID for one run of a "
                   "multi-run store (mlflow.db)")
    add_vocab_argument(p)


def judge(path: str, opts: LogOptions) -> Report:
    """The work behind `trainproof.judge_log`."""
    return judge_run(with_vocabulary(load(path, opts), vocabulary(path, opts)))


def run(args: argparse.Namespace) -> ReportSet:
    from trainproof import api

    return ReportSet(NAME, (api.judge_log(args.log, format=args.format, mapping=args.map,
                                          vocab_size=args.vocab_size),))
