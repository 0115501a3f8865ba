"""Measures a fine-tuning dataset in one streaming pass: records read, records that
would not parse, the shape's problems, and exact duplicates.

Duplicates are found from a 64-bit digest per record, never from the texts:
memory is 16 bytes per record (digest + position) whatever the text length.
The digest is Python's own string hash (SipHash-1-3, 64 bits on 64-bit builds),
computed in C over the decoded text with no re-encoding - about twice as fast as
UTF-8 encoding plus SHA-1 or BLAKE2b, which dominated the whole pass. Equal texts
always get equal digests; two different texts share one with probability about
n^2 / 2^65 (3e-8 for a million records). Python keys the hash per process, so
such a collision, if it ever happened, would not repeat on the next run."""

from __future__ import annotations

import ctypes
import gc
import itertools
import operator
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from trainproof.files import require_regular
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
from trainproof.probes.dataset_shape import CHAT, Inspector, Shape, Tally, Unit, detect_shape, fields_seen

SAMPLE = 64  # records read up front to detect the shape


@dataclass(frozen=True)
class Duplicates:
    records: int = 0  # records whose key equals an earlier record's (blank ones included)
    blank: int = 0  # of those, records whose key is blank
    distinct: int = 0  # distinct keys that occur more than once (blank ones included)
    distinct_blank: int = 0  # of those, blank keys
    examples: tuple[tuple[int, int], ...] = ()  # (where, where of its first occurrence)


class DigestTable:
    """Digest and position per record, appended a block at a time as numpy arrays."""

    def __init__(self, keep: int = 5) -> None:
        self._digests: list[np.ndarray] = []
        self._wheres: list[np.ndarray] = []
        self._blank: list[int] = []
        self.keep = keep

    def add(self, keys: list[str], wheres: Sequence[int]) -> list[int]:
        """Hash a block of keys (C calls only, no Python per record); returns the
        indices of the blank keys (empty, or only whitespace as str.strip sees it)."""
        digests = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys))
        self._digests.append(digests)
        if isinstance(wheres, range):
            self._wheres.append(np.arange(wheres.start, wheres.stop, dtype=np.int64))
        else:
            self._wheres.append(np.asarray(wheres, dtype=np.int64))
        blank = list(itertools.compress(range(len(keys)), map(str.isspace, keys)))
        if "" in keys:  # isspace("") is False; empties are found by a second C-level pass
            blank = sorted(blank + list(itertools.compress(range(len(keys)), map(operator.not_, keys))))
        self._blank.extend(int(digests[i]) for i in blank)
        return blank

    def duplicates(self) -> Duplicates:
        if not self._digests:
            return Duplicates()
        d = np.concatenate(self._digests)
        self._digests.clear()
        order = np.argsort(d, kind="stable")  # stable: a group starts at its first occurrence
        ds = d[order]
        del d
        same = ds[1:] == ds[:-1]
        del ds
        n_dup = int(np.count_nonzero(same))
        if n_dup == 0:
            return Duplicates()
        distinct = int(np.count_nonzero(same & ~np.concatenate(([False], same[:-1]))))
        w = np.concatenate(self._wheres)
        self._wheres.clear()
        pos = np.flatnonzero(same) + 1
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        first = starts[np.searchsorted(starts, pos, side="right") - 1]
        later, earlier = w[order[pos]], w[order[first]]
        pick = np.argsort(later, kind="stable")[: self.keep]
        _, counts = np.unique(np.asarray(self._blank, dtype=np.int64), return_counts=True)
        return Duplicates(n_dup, int((counts - 1).sum()), distinct, int(np.count_nonzero(counts > 1)),
                          tuple((int(later[i]), int(earlier[i])) for i in pick))


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
    duplicates: Duplicates = Duplicates()
    seconds: float = 0.0


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


class BlockSketch(Protocol):
    def add(self, file_index: int, rows: Sequence[int], texts: Sequence[str]) -> None: ...


_ROLE_TAG = re.compile("(?:^|\x1f)[^\x1e\x1f]*\x1e")  # a chat key's "role\x1e" before each turn


def _feed(sketches: Sequence[BlockSketch], file_index: int, kept: Sequence[int], keys: list[str],
          shape: Shape) -> None:
    """Hand a block to the sketches as (file index, rows within the file, texts). A chat
    record's text is its turns' contents: the role names are not part of what was said."""
    base = file_index << WHERE_BITS
    rows: Sequence[int] = (range(kept.start - base, kept.stop - base) if isinstance(kept, range)
                           else [w - base for w in kept])
    texts = [_ROLE_TAG.sub(" ", k) for k in keys] if shape.kind == CHAT else keys
    for s in sketches:
        s.add(file_index, rows, texts)
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


def _batches(path: Path, kind: str, index: int, shape: Shape, tally: ReadTally,
             max_record: int) -> Iterator[Batch]:
    if kind == "parquet":
        return read_parquet(path, index, list(shape.fields), tally)
    if kind == "json-array":
        return read_json_array(path, index, tally, max_record)
    if kind == "arrow":
        return read_arrow(path, index, list(shape.fields), tally)
    return read_jsonl(path, index, shape.single_text_field, tally, max_record)


def measure_dataset(path: Path, text_field: str | None, max_record: int,
                    visitor: Visitor | None = None, progress: Progress | None = None,
                    sketches: Sequence[BlockSketch] = ()) -> DatasetMeasurement:
    """One pass over every shard; `visitor` sees each block's units (for tokenizer checks)
    and every sketch each block's texts (near-duplicates, contamination: `add(file index,
    rows, texts)`, probes/dataset_summary's Sketch protocol). Records over `max_record`
    bytes are counted, not read (TP-PRE-OVERSIZED-RECORD declares the cap)."""
    t0 = time.perf_counter()
    _keep_freed_blocks()
    collecting = gc.isenabled()
    gc.disable()  # records hold no cycles; collections would rescan every live block for nothing
    try:
        return _measure(path, text_field, max_record, visitor, progress, t0, sketches)
    finally:
        if collecting:
            gc.enable()


def _measure(path: Path, text_field: str | None, max_record: int, visitor: Visitor | None,
             progress: Progress | None, t0: float, sketches: Sequence[BlockSketch] = ()) -> DatasetMeasurement:
    files = shard_files(path)
    for f in files:
        require_regular(f)
    kinds = [file_kind(f) for f in files]
    sample: list[dict[str, Any]] = []
    for f, k in zip(files, kinds, strict=False):
        sample = _sample(f, k, max_record)
        if sample:
            break
    if kinds[0] == "parquet" and not sample:
        sample = [dict.fromkeys(parquet_columns(files[0]))]
    shape = detect_shape(sample, text_field)
    base = dict(path=str(path), files=tuple(map(str, files)), kinds=tuple(kinds),
                shape=shape, fields=tuple(fields_seen(sample)))
    tally = ReadTally()
    if shape is None and sample:
        return DatasetMeasurement(records=0, judged=0, read=tally, **base)  # type: ignore[arg-type]
    # No record decoded at all: still read everything, so the report can say what the lines are.
    shape = shape or Shape("text", ("text",))
    inspector = Inspector(shape, want_units=visitor is not None)
    table = DigestTable()
    records = judged = 0
    for i, (f, k) in enumerate(zip(files, kinds, strict=False)):
        for batch in _batches(f, k, i, shape, tally, max_record):
            records += len(batch.wheres)
            if batch.texts is not None:
                keys, kept = batch.texts, batch.wheres
                units = [Unit(target=t) for t in keys] if visitor is not None else []
            else:
                keys, kept, units = inspector.records(batch.dicts or [], batch.wheres)
            blank = table.add(keys, kept)
            if batch.texts is not None:
                for j in blank:
                    inspector.tallies["empty"].add(kept[j])
            judged += len(keys)
            if sketches and keys:
                _feed(sketches, i, kept, keys, shape)
            if visitor is not None and units:
                visitor(units, kept)
            if progress is not None:
                progress(records, tally.bytes_read)
    return DatasetMeasurement(records=records, judged=judged, read=tally, tallies=inspector.tallies,
                              duplicates=table.duplicates(), seconds=time.perf_counter() - t0,
                              **base)  # type: ignore[arg-type]
