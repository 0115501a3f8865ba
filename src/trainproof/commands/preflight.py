"""`trainproof preflight DATASET`: is this fine-tuning dataset safe to start on.
One streaming pass over the data (and, with --tokenizer, its token counts; with
--near-dup, MinHash signatures; with --eval, after indexing the eval sets' n-grams,
their overlap), then the preflight rules; the report's outcome statement says what
ran and what not."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from trainproof import engine
from trainproof.model import InputError, Report, ReportSet
from trainproof.probes.dataset import DatasetMeasurement, Progress, measure_dataset
from trainproof.probes.dataset_contamination import Contamination, ContaminationSketch, EvalIndex
from trainproof.probes.dataset_engines import open_engine
from trainproof.probes.dataset_near import NearDuplicates, NearDupSketch
from trainproof.probes.dataset_tokens import TokenVisitor
from trainproof.probes.tokenizer_load import TokenizerLoadError, load_tokenizer
from trainproof.rules.preflight import OVERSIZED, Preflight
from trainproof.rules.preflight_overlap import near_params, new_eval_index

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
    p.add_argument("--near-dup", action="store_true",
                   help="also find near-duplicate records (MinHash + LSH; about 10x the CPU time of the plain pass)")
    p.add_argument("--eval", nargs="+", metavar="EVAL", default=[],
                   help="evaluation set(s) (files or shard directories): report their records found in DATASET")


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
    notes.extend(s.eval_notes)
    return engine.report("preflight", s, subject=m.path, format=kinds, records=m.records, kind="dataset",
                         notes=tuple(notes))


def run(args: argparse.Namespace) -> ReportSet:
    from trainproof import api

    return ReportSet(NAME, (api.preflight(args.dataset, tokenizer=args.tokenizer, max_len=args.max_len,
                                          text_field=args.text_field, progress=sys.stderr.isatty(),
                                          workers=args.workers, engine=args.engine, address=args.address,
                                          near_dup=args.near_dup, eval_sets=args.eval),))


def eval_index(evals: Sequence[str], text_field: str | None) -> tuple[EvalIndex, tuple[str, ...], tuple[str, ...]]:
    """Every --eval record's n-grams, built in this process before the training data is
    read (eval sets are small; the index's size is capped). Also a note per eval set with
    records that could not be read into it: a leak there cannot be seen, and the share of
    the eval set leaked is of the records read."""
    index: EvalIndex | None = None
    files: list[str] = []
    notes: list[str] = []
    for e in evals:
        m = measure_dataset(Path(e), text_field, int(OVERSIZED.t("max_bytes")),
                            sketches=(new_eval_index(offset=len(files)),))
        if m.shape is None and m.fields:
            raise InputError(f"--eval {e}: no known text field (fields seen: {', '.join(m.fields)})")
        part = _sketch(m, EvalIndex)
        index = part if index is None else index.merge(part)
        files.extend(m.files)
        left = [f"{n} {what}" for n, what in ((m.read.malformed_count, "unreadable line(s)"),
                                              (m.read.oversized_count, "record(s) over the size cap"),
                                              (m.records - m.judged, "record(s) without the text field"))
                if n]
        if left:
            notes.append(f"--eval {e}: {', '.join(left)} left out of the eval set")
    assert index is not None
    return index.freeze(), tuple(files), tuple(notes)


T = TypeVar("T")


def _sketch(m: DatasetMeasurement, kind: type[T]) -> T:
    found = [s for s in m.sketches if isinstance(s, kind)]
    if not found:
        raise InputError(f"internal: the dataset pass returned no {kind.__name__}")
    return found[0]


def overlap_subject(path: Path, text_field: str | None, near_dup: bool, evals: Sequence[str],
                    visitor: Any = None, progress: Any = None, runner: Any = None
                    ) -> tuple[DatasetMeasurement, NearDuplicates | None, Contamination | None, tuple[str, ...],
                               tuple[str, ...]]:
    """The pass over the training data, with the sketches the options ask for: the eval
    index is built first and travels inside the contamination sketch to every piece."""
    index, eval_files, eval_notes = eval_index(evals, text_field) if evals else (None, (), ())
    sketches: list[Any] = [NearDupSketch(near_params())] if near_dup else []
    if index is not None:
        sketches.append(ContaminationSketch(index))
    m = measure_dataset(path, text_field, int(OVERSIZED.t("max_bytes")), visitor, progress, engine=runner,
                        sketches=sketches)
    if m.shape is None:  # unknown shape: nothing was measured, the statement says so
        return m, None, None, eval_files, eval_notes
    near = _sketch(m, NearDupSketch).result() if near_dup else None
    contam = _sketch(m, ContaminationSketch).result(index) if index is not None else None
    return m, near, contam, eval_files, eval_notes


def check_dataset(dataset: str, *, tokenizer: str | None, max_len: int | None, text_field: str | None,
                  progress: bool, workers: int | None = None, engine: str | None = None,
                  address: str | None = None, near_dup: bool = False, evals: Sequence[str] = ()) -> Report:
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
        m, near, contam, eval_files, eval_notes = overlap_subject(Path(dataset), text_field, near_dup, evals,
                                                                  visitor, show, runner)
    except TokenizerLoadError as exc:
        raise InputError(f"--tokenizer {exc}") from None
    finally:
        if runner is not None:
            runner.close()
        if show is not None:
            sys.stderr.write("\r\033[K")
    subject = Preflight(m, tok.special if tok else None, visitor.counts if visitor else None, tokenizer or "",
                        near, contam, eval_files, eval_notes)
    return judge_preflight(subject)
