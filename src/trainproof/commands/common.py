"""What the log commands share: reading a log the way the options say."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainproof.model import Run
from trainproof.parsers import read_run


def load(path: str, args: argparse.Namespace) -> Run:
    return read_run(Path(path), getattr(args, "format", "auto"), getattr(args, "map", {}) or {},
                    display=path)
