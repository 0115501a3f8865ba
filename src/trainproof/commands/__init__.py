"""The command registry. A command module exposes NAME, HELP, ALIASES, LOG_INPUT
(whether --format/--map apply), add_arguments(parser) and run(args) -> ReportSet
(or str for documentation commands). The CLI is built from this list alone."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from trainproof.model import ReportSet

_MODULES = ("epoch", "doctor", "compare", "watch", "preflight", "tokenizer", "data", "env",
            "rules_cmd")


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    aliases: tuple[str, ...]
    log_input: bool
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], ReportSet | str]


def _command(mod: ModuleType) -> Command:
    return Command(mod.NAME, mod.HELP, tuple(getattr(mod, "ALIASES", ())),
                   bool(getattr(mod, "LOG_INPUT", False)), mod.add_arguments, mod.run)


def registry() -> list[Command]:
    out = []
    for name in _MODULES:
        try:
            mod = importlib.import_module(f"trainproof.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"trainproof.commands.{name}":
                continue  # command not built into this version
            raise
        out.append(_command(mod))
    return out
