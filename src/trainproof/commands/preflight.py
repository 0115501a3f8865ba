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
from trainproof.probes.dataset_engines import open_engine
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
    p.add_argument("--workers", type=int, metavar="N",
                   help="measure the shards (and byte ranges of large JSONL files) in N local processes; "
                   "with --engine, the size of the local cluster it starts (same findings either way)")
    p.add_argument("--engine", choices=("dask", "ray"),
                   help="measure on a Dask or Ray cluster (the 'dask' or 'ray' extra); workers read the "
                   "shards by path, so they must see the dataset at the same path")
    p.add_argument("--address", metavar="ADDR",
                   help="the cluster to use with --engine (a Dask scheduler tcp://host:8786, a Ray "
                   "address host:6379 or 'auto'); without it a local cluster is started")


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
    from trainproof import api

    return ReportSet(NAME, (api.preflight(args.dataset, tokenizer=args.tokenizer, max_len=args.max_len,
                                          text_field=args.text_field, progress=sys.stderr.isatty(),
                                          workers=args.workers, engine=args.engine, address=args.address),))


def check_dataset(dataset: str, *, tokenizer: str | None, max_len: int | None, text_field: str | None,
                  progress: bool, workers: int | None = None, engine: str | None = None,
                  address: str | None = None) -> Report:
    """The work behind `trainproof.preflight`."""
    if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int) or max_len <= 0):
        raise InputError(f"--max-len must be a positive number of tokens, got {max_len}")
    if max_len is not None and not tokenizer:
        raise InputError("--max-len needs --tokenizer: token counts come from the tokenizer")
    tok = None
    if tokenizer:
        try:
            tok = load_tokenizer(tokenizer)
        except TokenizerLoadError as exc:
            raise InputError(f"--tokenizer {exc}") from None
    if tok and (engine or (workers or 1) > 1):
        raise InputError("--tokenizer counts tokens in one process: drop --workers/--engine to use it")
    visitor = TokenVisitor(tok, max_len or tok.special.model_max_length) if tok else None
    show = _progress() if progress and not (engine or (workers or 1) > 1) else None
    runner = open_engine(engine, workers, address)
    try:
        m = measure_dataset(Path(dataset), text_field, int(OVERSIZED.t("max_bytes")), visitor, show,
                            engine=runner)
    except TokenizerLoadError as exc:
        raise InputError(f"--tokenizer {exc}") from None
    finally:
        if runner is not None:
            runner.close()
        if show is not None:
            sys.stderr.write("\r\033[K")
    subject = Preflight(m, tok.special if tok else None, visitor.counts if visitor else None, tokenizer or "")
    return judge_preflight(subject)
