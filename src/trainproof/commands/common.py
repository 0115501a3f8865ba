"""What the log commands share: reading a log the way the options say, and the
vocabulary (--vocab-size, or a config.json/tokenizer.json beside the log) that
TP-START-ABOVE-CHANCE judges a run's first losses against."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from trainproof.address import split_address
from trainproof.frozen import FACTORY, record
from trainproof.model import InputError, Run
from trainproof.parsers import read_run
from trainproof.probes.vocab import Vocabulary, find_vocabulary
from trainproof.rules.vocab import START_ABOVE_CHANCE
from trainproof.stdin_log import STDIN, stdin_log


@record()
class LogOptions:
    """How the log commands read a log: the CLI's --format, --map and --vocab-size, by
    the same names, so the helpers here take either this or the parsed arguments."""

    format: str = "auto"
    map: Mapping[str, str] = field(default_factory=dict)
    vocab_size: int | None = None

    def __init__(self, format: str = "auto", map: Mapping[str, str] = FACTORY, vocab_size: int | None = None) -> None:
        # written out, not generated (trainproof.frozen, #14)
        object.__setattr__(self, "format", format)
        object.__setattr__(self, "map", {} if map is FACTORY else map)
        object.__setattr__(self, "vocab_size", vocab_size)

    @classmethod
    def checked(cls, format: str = "auto", mapping: Mapping[str, str] | None = None,
                vocab_size: int | None = None) -> LogOptions:
        """The options, refused with InputError as the CLI refuses them (an unknown
        format is refused where it is resolved, as for --format)."""
        if vocab_size is not None and (isinstance(vocab_size, bool) or not isinstance(vocab_size, int)
                                       or vocab_size < 2):
            raise InputError(f"vocab_size: expected a whole number of classes >= 2, got {vocab_size!r}")
        return cls(format, dict(mapping or {}), vocab_size)

    @classmethod
    def of(cls, args: Any) -> LogOptions:
        """The options the CLI parsed."""
        return cls.checked(getattr(args, "format", "auto"), getattr(args, "map", None) or {},
                           getattr(args, "vocab_size", None))


def load(path: str, args: argparse.Namespace | LogOptions) -> Run:
    """`path` may be a `PATH::RUN_ID` address naming one run of a multi-run store, or `-`
    for standard input (trainproof.stdin_log)."""
    if path == STDIN:
        copy = stdin_log()
        try:
            return read_run(copy, getattr(args, "format", "auto"), getattr(args, "map", {}) or {}, display=STDIN)
        except InputError as exc:  # said of the temporary copy: say it of what the user gave
            raise InputError(str(exc).replace(str(copy), "standard input (-)")) from None
    where, run = split_address(path)
    return read_run(Path(where), getattr(args, "format", "auto"), getattr(args, "map", {}) or {},
                    display=where, run=run)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 2:
        raise argparse.ArgumentTypeError(f"expected a whole number of classes >= 2, got {text!r}")
    return int(text)


def add_vocab_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vocab-size", type=_count, metavar="N",
                   help="classes the loss is a cross-entropy over (vocabulary size, or class count): "
                   "a first loss far above ln N FAILs (TP-START-ABOVE-CHANCE). Default: read from "
                   "config.json or tokenizer.json beside the log or in its parent directory")


def vocabulary(path: str | Path, args: argparse.Namespace | LogOptions) -> tuple[Vocabulary | None, list[str]]:
    """The vocabulary for the log at `path` (a PATH::RUN_ID address looks beside PATH),
    and notes on files that could not be used."""
    if path == STDIN:  # nothing lies beside a pipe: only --vocab-size applies
        return find_vocabulary(stdin_log(), getattr(args, "vocab_size", None),
                               int(START_ABOVE_CHANCE.t("max_file_bytes")))
    where = Path(split_address(path)[0]) if isinstance(path, str) else path
    return find_vocabulary(where, getattr(args, "vocab_size", None), int(START_ABOVE_CHANCE.t("max_file_bytes")))


def with_vocabulary(run: Run, found: tuple[Vocabulary | None, list[str]]) -> Run:
    vocab, notes = found
    if vocab is None and not notes:
        return run
    said = [f"vocabulary: {vocab.size} {vocab.kind} from {vocab.source}"] if vocab else []
    meta = {**run.meta, "vocabulary": vocab} if vocab else run.meta
    return replace(run, meta=meta, notes=(*run.notes, *said, *notes))
