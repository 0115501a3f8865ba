"""The configuration options every judging command takes. Kept apart from config.py,
which reads and validates files, so building the parser (for `--help`, `rule`, `rules`)
imports nothing more than argparse."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("configuration", "Read from [tool.trainproof] in pyproject.toml or a "
                             "trainproof.toml, found upward from the working directory.")
    g.add_argument("--config", metavar="PATH", help="read this configuration file instead of searching")
    g.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    g.add_argument("--select", metavar="IDS", help="comma-separated rule IDs or prefixes; replaces select")
    g.add_argument("--extend-select", metavar="IDS", help="comma-separated rule IDs or prefixes to add")
    g.add_argument("--ignore", metavar="IDS", help="comma-separated rule IDs or prefixes to leave out")
