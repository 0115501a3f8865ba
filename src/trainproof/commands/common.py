"""What the log commands share: reading a log the way the options say."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainproof.address import split_address
from trainproof.model import Run
from trainproof.parsers import read_run


def load(path: str, args: argparse.Namespace) -> Run:
    """`path` may be a `PATH::RUN_ID` address naming one run of a multi-run store."""
    where, run = split_address(path)
    return read_run(Path(where), getattr(args, "format", "auto"), getattr(args, "map", {}) or {},
                    display=where, run=run)
