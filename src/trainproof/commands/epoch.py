"""`trainproof epoch LOG`: the single-run verdict on one log, run directory or store run."""

from __future__ import annotations

import argparse

from trainproof.commands.common import add_vocab_argument, load, vocabulary, with_vocabulary
from trainproof.engine import judge_run
from trainproof.model import ReportSet

NAME = "epoch"
HELP = "judge one training log (single-run rules)"
LOG_INPUT = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", metavar="LOG", help="a log file, a run directory, or PATH::RUN_ID for one run of a "
                   "multi-run store (mlflow.db)")
    add_vocab_argument(p)


def run(args: argparse.Namespace) -> ReportSet:
    run = with_vocabulary(load(args.log, args), vocabulary(args.log, args))
    return ReportSet(NAME, (judge_run(run),))
