"""`trainproof preflight DATASET`: is this fine-tuning dataset safe to start on.
One streaming pass over the data (and, with --tokenizer, its token counts), then
the preflight rules; the report's outcome statement says what ran and what not."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from trainproof import engine
from trainproof.model import InputError, Report, ReportSet
from trainproof.probes.dataset import Progress, measure_dataset
from trainproof.probes.dataset_tokens import TokenVisitor
from trainproof.probes.tokenizer_load import TokenizerLoadError, load_tokenizer
from trainproof.rules.preflight import OVERSIZED, Preflight

NAME = "preflight"
HELP = "is this fine-tuning dataset safe to start on (JSONL, JSON array, Parquet, a shard directory)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DATASET", help="a .jsonl/.json/.parquet file or a directory of shards")
    p.add_argument("--tokenizer", metavar="PATH_OR_NAME",
                   help="tokenizer.json, a saved tokenizer directory, a SentencePiece .model, or a "
                   "name already in the local HuggingFace cache (never downloaded)")
    p.add_argument("--max-len", type=int, metavar="N", help="context window in tokens (needs --tokenizer)")
    p.add_argument("--text-field", metavar="FIELD", help="the field to check, overriding shape detection")


def _progress() -> Progress:
    last = [0.0]

    def show(records: int, nbytes: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.25:
            last[0] = now
            sys.stderr.write(f"\rpreflight: {records:,} records, {nbytes / 1e6:,.0f} MB read")
            sys.stderr.flush()

    return show


def judge_preflight(s: Preflight) -> Report:
    m = s.data
    kinds = "+".join(sorted(set(m.kinds)))
    notes = [f"shape: {m.shape.describe()}"] if m.shape and m.records else []
    if m.read.blank_lines:
        notes.append(f"{m.read.blank_lines} blank line(s) skipped")
    if len(m.files) > 1:
        notes.append(f"{len(m.files)} files")
    return engine.report("preflight", s, subject=m.path, format=kinds, records=m.records, kind="dataset",
                         notes=tuple(notes))


def run(args: argparse.Namespace) -> ReportSet:
    if args.max_len is not None and args.max_len <= 0:
        raise InputError(f"--max-len must be a positive number of tokens, got {args.max_len}")
    if args.max_len is not None and not args.tokenizer:
        raise InputError("--max-len needs --tokenizer: token counts come from the tokenizer")
    tok = None
    if args.tokenizer:
        try:
            tok = load_tokenizer(args.tokenizer)
        except TokenizerLoadError as exc:
            raise InputError(f"--tokenizer {exc}") from None
    visitor = TokenVisitor(tok, args.max_len or tok.special.model_max_length) if tok else None
    progress = _progress() if sys.stderr.isatty() else None
    try:
        m = measure_dataset(Path(args.dataset), args.text_field, int(OVERSIZED.t("max_bytes")),
                            visitor, progress)
    except TokenizerLoadError as exc:
        raise InputError(f"--tokenizer {exc}") from None
    finally:
        if progress is not None:
            sys.stderr.write("\r\033[K")
    subject = Preflight(m, tok.special if tok else None, visitor.counts if visitor else None,
                        args.tokenizer or "")
    return ReportSet(NAME, (judge_preflight(subject),))
