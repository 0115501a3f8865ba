"""The command registry. A command module exposes NAME, HELP, ALIASES, LOG_INPUT
(whether --format/--map apply), add_arguments(parser) and run(args) -> ReportSet
(or str for documentation commands). The CLI is built from this list alone.

The names, aliases and help lines are declared here as well, so that the CLI can
list every command (`--help`, `--version`, a usage error) without importing any
command module: a module is imported only when its command runs or its own
`--help` is asked for. tests/test_startup.py checks both declarations agree."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType

from trainproof import TYPE_CHECKING

if TYPE_CHECKING:
    from trainproof.model import ReportSet

# module, name, aliases, log_input, help: in the order `--help` lists them
_SPECS: tuple[tuple[str, str, tuple[str, ...], bool, str], ...] = (
    ("epoch", "epoch", (), True, "judge one or more training logs (single-run rules), one report each"),
    ("doctor", "doctor", ("diagnose",), True, "find every training log under PATH and judge each"),
    ("compare", "compare", (), True,
     "compare one or more runs against a known-good baseline (or several seeds of it)"),
    ("watch", "watch", (), True, "judge a growing training log live, while the run writes it"),
    ("preflight", "preflight", (), False,
     "is this fine-tuning dataset safe to start on (JSONL, JSON array, Parquet, a shard directory)"),
    ("tokenizer", "tokenizer", (), False,
     "tokenizer coverage of transcripts: OOV by id, byte fallback, fertility, tokens/s of audio"),
    ("data", "data", (), False,
     "check a speech dataset: audio integrity, durations, clipping, silence, duplicates, transcripts"),
    ("env", "env", (), False, "can this machine start the run: import, checkpoints, RAM, disk, GPU"),
    ("rules_cmd", "rules", ("rule",), False, "print the documentation of every rule, or of one rule ID"),
    ("config_cmd", "config", (), False, "print the effective configuration and where each value came from"),
)


class Command:
    """One command: its declared name, aliases and help, and its module, imported on first use."""

    __slots__ = ("_mod", "aliases", "help", "log_input", "module_name", "name")

    def __init__(self, module_name: str, name: str, aliases: tuple[str, ...], log_input: bool,
                 help: str) -> None:
        self.module_name = f"{__name__}.{module_name}"
        self.name, self.aliases, self.log_input, self.help = name, aliases, log_input, help
        self._mod: ModuleType | None = None

    @property
    def module(self) -> ModuleType:
        if self._mod is None:
            self._mod = importlib.import_module(self.module_name)
        return self._mod

    @property
    def add_arguments(self) -> Callable[[argparse.ArgumentParser], None]:
        return self.module.add_arguments

    @property
    def run(self) -> Callable[[argparse.Namespace], ReportSet | str]:
        return self.module.run

    def __repr__(self) -> str:
        return f"Command({self.name!r})"


def registry() -> list[Command]:
    """Every command built into this version, without importing any command module."""
    return [Command(*spec) for spec in _SPECS
            if importlib.util.find_spec(f"{__name__}.{spec[0]}") is not None]
