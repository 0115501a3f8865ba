"""The mergeable summary of one piece of a dataset (a shard, or a byte range of one):
everything the TP-PRE-* rules need, in a form two processes can combine without
seeing each other's records. Single process, `--workers N` and a Dask or Ray cluster
all measure pieces into `DatasetSummary`s and merge them, so they judge the same
numbers.

Merging is associative and commutative: counts add; "first few" lists keep the
smallest record ids; digest chunks are kept per piece and ordered by the record ids
they start at when duplicates are counted, so the first occurrence of a text is the
same whatever order the pieces arrived in. Digests are stable (the same in every
process, see `stable_digests`), unlike Python's per-process `hash()`.

Summaries travel as bytes: a JSON header plus raw little-endian int64 arrays. Reading
them back parses JSON and copies numbers; nothing is unpickled, so a worker's output
cannot run code in the process that merges it. Sketches (checks that need more than
counters, such as near-duplicates) implement `Sketch`; the driver ships primed empty
sketches to workers by class reference (`sketch_from_ref`), and rebuilds the ones
that come back by name from its registry (`register_sketch`, or `register` for the
sketches it primed itself)."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from trainproof.model import InputError
from trainproof.probes.dataset_read import WHERE_BITS, ReadTally
from trainproof.probes.dataset_shape import PROBLEMS, Tally

RecordId = tuple[int, int]
"""(file index in the sorted shard list, the record's 1-based line - row, for Parquet
and Arrow - within that file, exactly as the readers number it). Never a global running
count, which a piece of the dataset cannot know. Packed into one int ("where") by
`dataset_read.where`: file << 40 | line."""

KEEP = 5  # first-few lists keep this many (the readers' and tallies' own `keep`)
_MAGIC = b"TPDSUM1\n"
_I64 = np.dtype("<i8")


def record_id(w: int) -> RecordId:
    return w >> WHERE_BITS, w & ((1 << WHERE_BITS) - 1)


def where_of(rid: RecordId) -> int:
    return (rid[0] << WHERE_BITS) | rid[1]


@runtime_checkable
class Sketch(Protocol):
    """One per check that needs more than counters. `add` sees every judged record of
    a piece, in file order, as (file index, rows, texts); rows are RecordId rows."""

    name: str

    def add(self, file_index: int, rows: Sequence[int], texts: Sequence[str]) -> None: ...

    def merge(self, other: Sketch) -> Sketch:  # associative and commutative
        ...

    def to_bytes(self) -> bytes: ...

    @classmethod
    def from_bytes(cls, b: bytes) -> Sketch: ...


_SKETCHES: dict[str, Callable[[bytes], Sketch]] = {}
S = TypeVar("S")


def register_sketch(name: str) -> Callable[[type[S]], type[S]]:
    """Class decorator: `from_bytes` of a summary rebuilds sketches named `name` with
    this class's `from_bytes`."""

    def deco(cls: type[S]) -> type[S]:
        _SKETCHES[name] = cls.from_bytes  # type: ignore[attr-defined]
        return cls

    return deco


def sketch_from_bytes(name: str, b: bytes) -> Sketch:
    """A registered sketch rebuilt from its bytes (InputError for an unknown name).
    Summaries coming back from workers are rebuilt only through this registry: their
    bytes never choose what code runs here."""
    if name not in _SKETCHES:
        raise InputError(f"unknown sketch {name!r}: the driver and its workers run different trainproof versions")
    return _SKETCHES[name](b)


def sketch_ref(sk: Sketch) -> str:
    """Where a sketch's class lives ("module:Class"), for a worker to import it."""
    return f"{type(sk).__module__}:{type(sk).__qualname__}"


def sketch_from_ref(ref: str, b: bytes) -> Sketch:
    """A sketch the driver primed, rebuilt on a worker: the driver names the class (it
    already decides what code workers run), the worker imports and registers it."""
    import importlib

    module, _, qual = ref.partition(":")
    cls = importlib.import_module(module)
    for part in qual.split("."):
        cls = getattr(cls, part)
    sk = cls.from_bytes(b)
    _SKETCHES.setdefault(sk.name, cls.from_bytes)
    return sk


def register(sk: Sketch) -> None:
    """Let summaries carrying `sk`'s kind be parsed in this process."""
    _SKETCHES.setdefault(sk.name, type(sk).from_bytes)


# ---------------------------------------------------------------- stable digests

Digester = Callable[[Sequence[str]], np.ndarray]


def _utf8(keys: Sequence[str]) -> Iterable[bytes]:
    try:
        return list(map(str.encode, keys))
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the JSON): still one digest per text
        return [k.encode("utf-8", "surrogatepass") for k in keys]


def _xxh3(keys: Sequence[str]) -> np.ndarray:
    import xxhash

    return np.fromiter(map(xxhash.xxh3_64_intdigest, _utf8(keys)), np.uint64, len(keys)).view(np.int64)


def _blake2b(keys: Sequence[str]) -> np.ndarray:
    from hashlib import blake2b

    return np.frombuffer(b"".join(blake2b(k, digest_size=8).digest() for k in _utf8(keys)), "<i8").copy()


def _local(keys: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(hash, keys), np.int64, len(keys))


LOCAL_HASH = f"python-hash:{os.getpid()}"  # keyed per process: never merged with another process's
_DIGESTERS: dict[str, Digester] = {"blake2b-64": _blake2b, "xxh3-64": _xxh3}
HASH_NAMES = tuple(_DIGESTERS)  # the stable digests; xxh3-64 needs the xxhash package


def stable_hash_name() -> str:
    """The stable digest this process would ask workers for: XXH3 (64-bit) of the
    UTF-8 text when the xxhash package is installed (the `dask`/`ray` extras bring it;
    ~0.2 us a record), else BLAKE2b-64 from the standard library (~2 us a record)."""
    try:
        import xxhash  # noqa: F401
    except ImportError:
        return "blake2b-64"
    return "xxh3-64"


def digester(name: str) -> Digester:
    """The function behind a hash name; InputError where this process cannot compute it."""
    if name == LOCAL_HASH:
        return _local
    if name == "xxh3-64":
        try:
            import xxhash  # noqa: F401
        except ImportError:
            raise InputError("a worker lacks the xxhash package the driver hashes with: install "
                             "trainproof[dask] or trainproof[ray] (or xxhash) on every worker") from None
    if name not in _DIGESTERS:
        raise InputError(f"unknown digest {name!r}: the driver and its workers run different trainproof versions")
    return _DIGESTERS[name]


def stable_digests(keys: Sequence[str], name: str | None = None) -> np.ndarray:
    """A 64-bit digest per key, equal in every process and on every machine (Python's
    `hash()` is keyed per process, so two workers would disagree)."""
    return digester(name or stable_hash_name())(keys)


# ---------------------------------------------------------------- first-few lists


def _first_few(items: Iterable[tuple[int, str]], keep: int = KEEP) -> list[tuple[int, str]]:
    """The `keep` entries with the smallest record ids: what one sequential pass keeps."""
    return sorted(items, key=lambda x: x[0])[:keep]


def merge_read(a: ReadTally, b: ReadTally) -> ReadTally:
    return ReadTally(malformed=_first_few([*a.malformed, *b.malformed]),
                     malformed_count=a.malformed_count + b.malformed_count,
                     oversized=sorted([*a.oversized, *b.oversized])[:KEEP],
                     oversized_count=a.oversized_count + b.oversized_count,
                     blank_lines=a.blank_lines + b.blank_lines, bytes_read=a.bytes_read + b.bytes_read)


def merge_tally(a: Tally, b: Tally) -> Tally:
    pairs = _first_few([*zip(a.first, a.detail, strict=True), *zip(b.first, b.detail, strict=True)])
    return Tally(a.count + b.count, [w for w, _ in pairs], [d for _, d in pairs])


# ---------------------------------------------------------------- duplicates


@dataclass(frozen=True)
class Duplicates:
    records: int = 0  # records whose key equals an earlier record's (blank ones included)
    blank: int = 0  # of those, records whose key is blank
    distinct: int = 0  # distinct keys that occur more than once (blank ones included)
    distinct_blank: int = 0  # of those, blank keys
    examples: tuple[tuple[int, int], ...] = ()  # (where, where of its first occurrence)

    def combine(self, other: Duplicates, keep: int = KEEP) -> Duplicates:
        """Duplicates of two disjoint digest partitions (no digest in both)."""
        return Duplicates(self.records + other.records, self.blank + other.blank,
                          self.distinct + other.distinct, self.distinct_blank + other.distinct_blank,
                          tuple(sorted(self.examples + other.examples)[:keep]))


def duplicates_of(chunks: Sequence[tuple[np.ndarray, np.ndarray]], blank: dict[int, int],
                  keep: int = KEEP, consume: bool = False) -> Duplicates:
    """Exact duplicates among (digests, wheres) chunks, in any order: within each group
    of equal digests the smallest where is the first occurrence and every other member
    a later copy, so the result does not depend on how the chunks were gathered.
    `blank` counts the records per blank key's digest. `consume` empties the `chunks`
    list once its arrays are joined (peak memory: one copy, not two)."""
    given, chunks = chunks, [c for c in chunks if len(c[0])]
    if not chunks:
        return Duplicates()
    d = np.concatenate([c[0] for c in chunks]) if len(chunks) > 1 else chunks[0][0]
    w = np.concatenate([c[1] for c in chunks]) if len(chunks) > 1 else chunks[0][1]
    if consume and isinstance(given, list):  # the blocks are copied: free them before sorting
        given.clear()
        chunks.clear()
    order = np.argsort(d)
    ds = d[order]
    del d
    same = ds[1:] == ds[:-1]
    n_dup = int(np.count_nonzero(same))
    if n_dup == 0:
        return Duplicates()
    distinct = int(np.count_nonzero(same & ~np.concatenate(([False], same[:-1]))))
    # Only the records in groups of two or more: a small share, so the rest is cheap.
    multi = np.flatnonzero(np.concatenate(([False], same)) | np.concatenate((same, [False])))
    dm, wm = ds[multi], w[order[multi]]
    del ds, order, same
    starts = np.flatnonzero(np.concatenate(([True], dm[1:] != dm[:-1])))
    marks = np.zeros(len(dm), bool)
    marks[starts] = True
    group = np.cumsum(marks) - 1
    first = np.minimum.reduceat(wm, starts)[group]
    copy = wm != first
    later, earlier = wm[copy], first[copy]
    pick = np.argsort(later, kind="stable")[:keep]
    counts = [c for c in blank.values() if c > 1]
    return Duplicates(n_dup, sum(c - 1 for c in counts), distinct, len(counts),
                      tuple((int(later[i]), int(earlier[i])) for i in pick))


def partition_of(digest: int, n: int) -> int:
    """The partition (of `n`, a power of two) a digest belongs to: its top bits."""
    return (digest & 0xFFFF_FFFF_FFFF_FFFF) >> (64 - (n.bit_length() - 1)) if n > 1 else 0


# ---------------------------------------------------------------- the summary


@dataclass
class DatasetSummary:
    """What one piece of a dataset contributed. `chunks` are (digests, wheres) int64
    arrays, one pair per measured piece (16 bytes per judged record)."""

    hash_name: str
    records: int = 0  # records decoded as JSON objects (rows, for Parquet)
    judged: int = 0  # records that had the shape's fields
    read: ReadTally = field(default_factory=ReadTally)
    tallies: dict[str, Tally] = field(default_factory=lambda: {p: Tally() for p in PROBLEMS})
    chunks: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    blank: dict[int, int] = field(default_factory=dict)  # blank key digest -> records with it
    sketches: list[Sketch] = field(default_factory=list)
    seconds: float = 0.0  # CPU-side time spent measuring (summed over pieces)

    def merge(self, other: DatasetSummary) -> DatasetSummary:
        """A new summary of both (neither is changed)."""
        out = DatasetSummary(self.hash_name, self.records, self.judged, merge_read(self.read, ReadTally()),
                             dict(self.tallies), list(self.chunks), dict(self.blank), list(self.sketches),
                             self.seconds)
        return out.absorb(other)

    def absorb(self, other: DatasetSummary) -> DatasetSummary:
        """Merge `other` into this summary in place (chunk lists are extended, not
        copied: merging thousands of shards one by one stays linear); returns self."""
        if other.hash_name != self.hash_name:
            raise InputError(f"cannot merge dataset summaries hashed with {self.hash_name} and "
                             f"{other.hash_name}: every worker needs the same trainproof install")
        mine = {s.name: s for s in self.sketches}
        for s in other.sketches:
            mine[s.name] = mine[s.name].merge(s) if s.name in mine else s
        self.sketches = [mine[n] for n in sorted(mine)]
        for k, v in other.blank.items():
            self.blank[k] = self.blank.get(k, 0) + v
        self.records += other.records
        self.judged += other.judged
        self.read = merge_read(self.read, other.read)
        self.tallies = {p: merge_tally(self.tallies.get(p, Tally()), other.tallies.get(p, Tally()))
                        for p in sorted(self.tallies.keys() | other.tallies.keys())}
        self.chunks.extend(other.chunks)
        self.seconds += other.seconds
        return self

    def duplicates(self) -> Duplicates:
        """Exact duplicates; the digests are consumed (this is the summary's last use)."""
        return duplicates_of(self.chunks, self.blank, consume=True)

    def partitions(self, n: int) -> list[tuple[list[tuple[np.ndarray, np.ndarray]], dict[int, int]]]:
        """The digests (and blank-key counts) split into `n` (a power of two) disjoint
        partitions by the digest's top bits, one chunk each: equal texts always land in
        the same partition, so each can be counted on its own (by its own worker) with
        `duplicates_of` and the results `combine`d."""
        if n < 1 or n & (n - 1):
            raise ValueError("partitions: n must be a power of two")
        chunks = [c for c in self.chunks if len(c[0])]
        d = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, np.int64)
        w = np.concatenate([c[1] for c in chunks]) if chunks else np.zeros(0, np.int64)
        part = (d.view(np.uint64) >> np.uint64(64 - (n.bit_length() - 1))).astype(np.intp) if n > 1 \
            else np.zeros(len(d), np.intp)
        order = np.argsort(part, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(part, minlength=n))))
        d, w = d[order], w[order]
        out: list[tuple[list[tuple[np.ndarray, np.ndarray]], dict[int, int]]] = [
            ([(d[bounds[p]:bounds[p + 1]], w[bounds[p]:bounds[p + 1]])], {}) for p in range(n)]
        for k, v in self.blank.items():
            out[partition_of(k, n)][1][k] = v
        return out

    # ------------------------------------------------------------ bytes

    def to_bytes(self) -> bytes:
        if self.hash_name.startswith("python-hash"):
            raise ValueError("a summary with per-process digests cannot leave its process")
        arrays: list[bytes] = []
        for d, w in self.chunks:
            arrays += [np.ascontiguousarray(d, _I64).tobytes(), np.ascontiguousarray(w, _I64).tobytes()]
        blobs = [s.to_bytes() for s in self.sketches]
        r = self.read
        header = {
            "hash": self.hash_name, "records": self.records, "judged": self.judged,
            "seconds": self.seconds,
            "read": {"malformed": r.malformed, "malformed_count": r.malformed_count, "oversized": r.oversized,
                     "oversized_count": r.oversized_count, "blank_lines": r.blank_lines,
                     "bytes_read": r.bytes_read},
            "tallies": {k: [t.count, t.first, t.detail] for k, t in self.tallies.items()},
            "chunks": [len(d) for d, _ in self.chunks],
            "blank": [[k, v] for k, v in self.blank.items()],
            "sketches": [[s.name, len(b)] for s, b in zip(self.sketches, blobs, strict=True)],
        }
        head = json.dumps(header, separators=(",", ":")).encode()
        return b"".join((_MAGIC, struct.pack("<Q", len(head)), head, *arrays, *blobs))

    @classmethod
    def from_bytes(cls, b: bytes) -> DatasetSummary:
        """Parses what `to_bytes` wrote; anything else raises InputError (one line)."""
        try:
            return _parse(b)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError, struct.error) as exc:
            raise InputError(f"corrupt dataset summary from a worker: {exc}".splitlines()[0]) from None


def _parse(b: bytes) -> DatasetSummary:
    if not b.startswith(_MAGIC):
        raise ValueError("not a trainproof dataset summary")
    (n,) = struct.unpack_from("<Q", b, len(_MAGIC))
    pos = len(_MAGIC) + 8
    h = json.loads(b[pos:pos + n])
    pos += n
    chunks = []
    for count in h["chunks"]:
        size = int(count) * 8
        if size < 0 or pos + 2 * size > len(b):
            raise ValueError("truncated or negative array length")
        d = np.frombuffer(b, _I64, int(count), pos).astype(np.int64)
        w = np.frombuffer(b, _I64, int(count), pos + size).astype(np.int64)
        chunks.append((d, w))
        pos += 2 * size
    sketches = []
    for name, size in h["sketches"]:
        if int(size) < 0 or pos + int(size) > len(b):
            raise ValueError("truncated sketch")
        sketches.append(sketch_from_bytes(str(name), b[pos:pos + int(size)]))
        pos += int(size)
    r = h["read"]
    read = ReadTally(malformed=[(int(w), str(s)) for w, s in r["malformed"]],
                     malformed_count=int(r["malformed_count"]), oversized=[int(w) for w in r["oversized"]],
                     oversized_count=int(r["oversized_count"]), blank_lines=int(r["blank_lines"]),
                     bytes_read=int(r["bytes_read"]))
    tallies = {str(k): Tally(int(c), [int(w) for w in first], [str(x) for x in detail])
               for k, (c, first, detail) in h["tallies"].items()}
    return DatasetSummary(str(h["hash"]), int(h["records"]), int(h["judged"]), read, tallies, chunks,
                          {int(k): int(v) for k, v in h["blank"]}, sketches, float(h["seconds"]))
