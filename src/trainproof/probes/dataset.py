"""Measures a fine-tuning dataset: records read, records that would not parse, the
shape's problems, and exact duplicates. The dataset is cut into pieces (its shards;
with several workers, also byte ranges of large JSONL files and runs of a Parquet
file's row groups); each piece is measured in one streaming pass into a
`DatasetSummary`, and the summaries are merged. One process, `--workers N` and a Dask
or Ray cluster run this same code and merge the same summaries, so they judge the same
numbers.

Duplicates are found from a 64-bit digest per record, never from the texts:
memory is 16 bytes per record (digest + position) whatever the text length. In one
process the digest is Python's own string hash (SipHash-1-3, computed in C over the
decoded text with no re-encoding - the pass's largest cost otherwise); it is keyed
per process, so summaries bound for another process use a stable digest instead
(`dataset_summary.stable_digests`). Equal texts always get equal digests; two
different texts share one with probability about n^2 / 2^65 (3e-8 for a million
records) - in one process keyed afresh each run, so such a collision would not repeat."""

from __future__ import annotations

import ctypes
import gc
import itertools
import operator
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trainproof import __version__
from trainproof.files import require_regular
from trainproof.model import InputError
from trainproof.probes.dataset_read import (
    WHERE_BITS,
    Batch,
    ReadTally,
    decode_line,
    file_kind,
    line_blocks,
    parquet_columns,
    read_arrow,
    read_json_array,
    read_jsonl,
    read_parquet,
    shard_files,
)
from trainproof.probes.dataset_shape import Inspector, Shape, Tally, Unit, detect_shape, fields_seen
from trainproof.probes.dataset_summary import (
    LOCAL_HASH,
    DatasetSummary,
    Duplicates,
    Sketch,
    digester,
    register,
    sketch_from_ref,
    sketch_ref,
    stable_hash_name,
)

if TYPE_CHECKING:
    from trainproof.probes.dataset_engines import Engine

SAMPLE = 64  # records read up front to detect the shape


@dataclass(frozen=True)
class DatasetMeasurement:
    path: str
    files: tuple[str, ...]
    kinds: tuple[str, ...]
    shape: Shape | None
    fields: tuple[str, ...]  # fields seen in the first records (for the unknown-shape message)
    records: int  # records decoded as JSON objects (rows, for Parquet)
    judged: int  # records that had the shape's fields
    read: ReadTally
    tallies: dict[str, Tally] = field(default_factory=dict)
    duplicates: Duplicates = field(default_factory=Duplicates)
    seconds: float = 0.0
    sketches: tuple[Sketch, ...] = ()  # merged, for the checks that judge them
    timing: dict[str, float] = field(default_factory=dict)  # wall seconds: plan, measure, merge, duplicates


def _keep_freed_blocks() -> None:
    """Each block allocates and frees a few multi-MB buffers. glibc serves those with
    mmap and returns them to the kernel at once, so every block pays page faults for
    fresh zeroed pages - a quarter of the pass in system time. Raising the mmap and
    trim thresholds keeps freed blocks in the heap for reuse; peak RSS is unchanged.
    Anything but glibc (musl, macOS) has no mallopt and keeps its defaults."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 128 << 20)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers


Visitor = Callable[[list[Unit], list[int]], None]
Progress = Callable[[int, int], None]


def _sample(path: Path, kind: str, max_record: int) -> list[dict[str, Any]]:
    """The first records of a file that decode as objects (bad lines skipped), read
    through the same bounded block reader as the main pass."""
    out: list[dict[str, Any]] = []
    if kind == "parquet":
        for b in read_parquet(path, 0, None, ReadTally(), batch=SAMPLE):
            return list(b.dicts or [])
        return out
    if kind == "json-array":
        for b in read_json_array(path, 0, ReadTally(), max_record, batch=SAMPLE):
            return list(b.dicts or [])
        return out
    if kind == "arrow":
        for b in read_arrow(path, 0, None, ReadTally()):
            return list(b.dicts or [])[:SAMPLE]
        return out
    with open(path, "rb") as f:
        for _, body, _ in line_blocks(f, 0, ReadTally(), max_record):
            for line in body.split(b"\n"):
                try:
                    rec = decode_line(line)
                except ValueError:
                    continue
                if type(rec) is dict:
                    out.append(rec)
                if len(out) >= SAMPLE:
                    return out
    return out


def _batches(piece: Piece, shape: Shape, tally: ReadTally, max_record: int) -> Iterator[Batch]:
    path, i = Path(piece.path), piece.file_index
    if piece.kind == "parquet":
        return read_parquet(path, i, list(shape.fields), tally, span=piece.span)
    if piece.kind == "json-array":
        return read_json_array(path, i, tally, max_record)
    if piece.kind == "arrow":
        return read_arrow(path, i, list(shape.fields), tally)
    return read_jsonl(path, i, shape.single_text_field, tally, max_record, piece.span)


@dataclass(frozen=True)
class Piece:
    """One task: a whole shard, a JSONL file's byte range [start, end) that begins at
    line `first`, or a Parquet file's row groups [start, end) that begin at row `first`.
    Plain values only, so any engine can ship it."""

    file_index: int
    path: str
    kind: str
    span: tuple[int, int, int] | None = None  # (start, end, first); None: the whole file
    nbytes: int = 0  # its size, for balancing work between workers (0: the file's size)


@dataclass(frozen=True)
class PieceSpec:
    """What every piece is measured with, decided once by the driver so all agree: the
    shape (from the first shard's sample), the record cap, the digest, and the empty
    sketches (class reference and bytes: a sketch may carry data every worker needs,
    e.g. the eval set's n-grams)."""

    shape: Shape
    max_record: int
    hash_name: str
    sketches: tuple[tuple[str, bytes], ...] = ()
    version: str = __version__  # the driver's: a worker on another version refuses the piece


def _fresh_sketches(spec: PieceSpec) -> list[Sketch]:
    return [sketch_from_ref(ref, b) for ref, b in spec.sketches]


def measure_piece(piece: Piece, spec: PieceSpec, visitor: Visitor | None = None,
                  progress: Progress | None = None) -> DatasetSummary:
    """One streaming pass over one piece; `visitor` sees each block's units (for
    tokenizer checks, one process only)."""
    t0 = time.process_time()
    if spec.version != __version__:
        raise InputError(f"a worker runs trainproof {__version__}, the driver {spec.version}: "
                         "install the same version everywhere")
    digest = digester(spec.hash_name)
    inspector = Inspector(spec.shape, want_units=visitor is not None)
    out = DatasetSummary(spec.hash_name, tallies=inspector.tallies, sketches=_fresh_sketches(spec))
    tally, blank = out.read, out.blank
    for batch in _batches(piece, spec.shape, tally, spec.max_record):
        out.records += len(batch.wheres)
        if batch.texts is not None:
            keys, kept = batch.texts, batch.wheres
            units = [Unit(target=t) for t in keys] if visitor is not None else []
        else:
            keys, kept, units = inspector.records(batch.dicts or [], batch.wheres)
        digests = digest(keys)
        out.chunks.append((digests, _positions(kept)))
        for j in _blank(keys):
            blank[int(digests[j])] = blank.get(int(digests[j]), 0) + 1
            if batch.texts is not None:
                inspector.tallies["empty"].add(kept[j])
        out.judged += len(keys)
        if out.sketches and keys:
            rows = range(kept.start & _ROW, kept.stop - kept.start + (kept.start & _ROW)) \
                if isinstance(kept, range) else [w & _ROW for w in kept]
            for sk in out.sketches:
                sk.add(piece.file_index, rows, keys)
        if visitor is not None and units:
            visitor(units, kept)
        if progress is not None:
            progress(len(batch.wheres), tally.bytes_read)
    out.seconds = time.process_time() - t0
    return out


_ROW = (1 << WHERE_BITS) - 1


def _positions(kept: Sequence[int]) -> np.ndarray:
    if isinstance(kept, range):
        return np.arange(kept.start, kept.stop, dtype=np.int64)
    return np.asarray(kept, dtype=np.int64)


def _blank(keys: list[str]) -> list[int]:
    """Indices of the blank keys (empty, or only whitespace as str.strip sees it), by C
    calls only - no Python per record."""
    blank = list(itertools.compress(range(len(keys)), map(str.isspace, keys)))
    if "" in keys:  # isspace("") is False; empties are found by a second C-level pass
        blank = sorted(blank + list(itertools.compress(range(len(keys)), map(operator.not_, keys))))
    return blank


def measure_dataset(path: Path, text_field: str | None, max_record: int,
                    visitor: Visitor | None = None, progress: Progress | None = None, *,
                    engine: Engine | None = None, sketches: Sequence[Sketch] = ()) -> DatasetMeasurement:
    """Every piece measured and merged; `visitor` sees each block's units (tokenizer
    checks: one process only). `engine` runs the pieces elsewhere (local processes, a
    Dask or Ray cluster); without one they run here, one after another. `sketches` are
    empty (possibly primed) sketches every piece starts from. Records over `max_record`
    bytes are counted, not read (TP-PRE-OVERSIZED-RECORD declares the cap)."""
    t0 = time.perf_counter()
    _keep_freed_blocks()
    collecting = gc.isenabled()
    gc.disable()  # records hold no cycles; collections would rescan every live block for nothing
    try:
        return _measure(path, text_field, max_record, visitor, progress, engine, sketches, t0)
    finally:
        if collecting:
            gc.enable()


def _detect(files: list[Path], kinds: list[str], text_field: str | None,
            max_record: int) -> tuple[Shape | None, list[dict[str, Any]]]:
    """The shape, decided once from the first shard that has records."""
    sample: list[dict[str, Any]] = []
    for f, k in zip(files, kinds, strict=False):
        sample = _sample(f, k, max_record)
        if sample:
            break
    if kinds[0] == "parquet" and not sample:
        sample = [dict.fromkeys(parquet_columns(files[0]))]
    return detect_shape(sample, text_field), sample


def _measure(path: Path, text_field: str | None, max_record: int, visitor: Visitor | None,
             progress: Progress | None, engine: Engine | None, sketches: Sequence[Sketch],
             t0: float) -> DatasetMeasurement:
    files = shard_files(path)
    for f in files:
        require_regular(f)
    kinds = [file_kind(f) for f in files]
    shape, sample = _detect(files, kinds, text_field, max_record)
    base = dict(path=str(path), files=tuple(map(str, files)), kinds=tuple(kinds),
                shape=shape, fields=tuple(fields_seen(sample)))
    if shape is None and sample:
        return DatasetMeasurement(records=0, judged=0, read=ReadTally(), **base)  # type: ignore[arg-type]
    # No record decoded at all: still read everything, so the report can say what the lines are.
    shape = shape or Shape("text", ("text",))
    for sk in sketches:
        register(sk)
    protos = tuple((sketch_ref(sk), sk.to_bytes()) for sk in sketches)
    timing = {"plan": time.perf_counter() - t0}
    if engine is None:
        spec = PieceSpec(shape, max_record, LOCAL_HASH, protos)
        dups = None
        summary = _here([Piece(i, str(f), k) for i, (f, k) in enumerate(zip(files, kinds, strict=True))],
                        spec, visitor, progress)
        timing["measure"] = time.perf_counter() - t0 - timing["plan"]
    else:
        spec = PieceSpec(shape, max_record, stable_hash_name(), protos)
        summary, dups = engine.run(files, kinds, spec, timing)
    t1 = time.perf_counter()
    if dups is None:
        dups = summary.duplicates()
    timing["duplicates"] = time.perf_counter() - t1
    return DatasetMeasurement(records=summary.records, judged=summary.judged, read=summary.read,
                              tallies=summary.tallies, duplicates=dups, seconds=time.perf_counter() - t0,
                              sketches=tuple(summary.sketches), timing=timing, **base)  # type: ignore[arg-type]


def _here(pieces: list[Piece], spec: PieceSpec, visitor: Visitor | None,
          progress: Progress | None) -> DatasetSummary:
    """The pieces measured in this process, in order, merged as they finish."""
    done = [0, 0]  # records and bytes of the finished pieces, for a running total

    def step(records: int, nbytes: int) -> None:
        done[0] += records
        if progress is not None:
            progress(done[0], done[1] + nbytes)

    summary = DatasetSummary(spec.hash_name, sketches=[])
    for piece in pieces:
        part = measure_piece(piece, spec, visitor, step)
        done[1] += part.read.bytes_read
        summary.absorb(part)
    return summary
