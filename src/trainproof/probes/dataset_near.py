"""Near-duplicate records: MinHash signatures by one-permutation hashing, LSH banding,
and candidate pairs verified by their estimated Jaccard similarity.

Each record's word shingles (dataset_words) are hashed once; the top bits of a
shingle's hash pick one of `bins` bins and the record keeps the minimum of the rest
per bin (one-permutation hashing, Li, Owen & Zhang 2012). Empty bins borrow the value
of a neighbouring bin (densification, see `signatures`), so two records agree in a
bin with probability equal to their Jaccard similarity, as classic MinHash with
`bins` permutations would, at the cost of one hash per shingle instead of `bins`.

Only the lowest 8 bits of each bin's minimum are kept (b-bit minwise hashing, Li &
Koenig 2010): `bins` bytes per record. Two records agree in a byte with probability
J + (1 - J) / 256, which the similarity estimate corrects for. The bytes double as
LSH keys: band i is bytes [i*rows, (i+1)*rows) read as one integer, so records that
agree on a whole band share a bucket. Memory: bins + 16 bytes per record (signature,
record id, exact-text digest); measured in BENCHMARKS.md.

`NearDupSketch` follows probes/dataset_summary's Sketch protocol: `add` per block,
`merge` is concatenation (the analysis sorts by record id, so merge order never
matters), `to_bytes`/`from_bytes` a JSON header plus raw arrays, parsed, never
unpickled."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from trainproof.model import InputError
from trainproof.probes.dataset_read import WHERE_BITS
from trainproof.probes.dataset_summary import register_sketch
from trainproof.probes.dataset_words import U64, block_words, mix64, shingles
from trainproof.probes.sketch_frame import pack, unpack

_MAX = np.iinfo(np.uint64).max
_MAGIC = b"TPNEAR1\n"


@dataclass(frozen=True)
class NearParams:
    """How near-duplicates are measured; the values are rules/preflight_overlap.py's thresholds."""

    shingle: int = 3  # words per shingle
    bins: int = 128  # signature length (a power of two)
    bands: int = 16
    rows: int = 8  # bytes per band, at most 8
    jaccard: float = 0.7  # a verified pair's estimated similarity is at least this

    def check(self) -> None:
        if self.bins & (self.bins - 1) or not 8 <= self.bins <= 1024:
            raise InputError(f"near-duplicate bins must be a power of two in 8..1024, got {self.bins}")
        if not 1 <= self.rows <= 8 or self.bands < 1 or self.bands * self.rows > self.bins:
            raise InputError(f"near-duplicate bands x rows ({self.bands} x {self.rows}) must fit {self.bins} "
                             "bins with at most 8 rows per band")
        if not 1 <= self.shingle <= 64:
            raise InputError(f"near-duplicate shingle size must be 1..64 words, got {self.shingle}")


def candidate_probability(j: float, bands: int, rows: int) -> float:
    """The LSH S-curve: the chance that a pair of Jaccard similarity `j` shares a bucket."""
    return 1.0 - (1.0 - j ** rows) ** bands


@dataclass(frozen=True)
class NearDuplicates:
    records: int  # records with a signature (at least one word)
    count: int  # near-copies: distinct texts in a cluster, minus one per cluster
    clusters: int  # clusters of two or more distinct texts
    candidates: int  # candidate pairs the buckets produced
    verified: int  # of those, pairs at or above the similarity threshold (exact copies included)
    examples: tuple[tuple[int, int, float], ...] = ()  # (later where, earlier where, estimated Jaccard)


_DIRECTION = (mix64(np.arange(1024, dtype=U64) + U64(0x5EED)) & U64(1)).astype(bool)  # per bin, fixed
_STEP = U64(0x9E3779B97F4A7C15)  # what a borrowed value is offset by per bin of distance


def signatures(sh: np.ndarray, rec: np.ndarray, n: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 signatures of the records that have shingles, their block indices).

    Empty bins are densified as Shrivastava & Li (ICML 2014) improve it: each bin has
    a fixed direction (left or right, the same for every record) and takes the value of
    the nearest non-empty bin that way, circularly, offset by the distance so a borrowed
    value differs from its source. Two records then agree in a bin with probability
    equal to their Jaccard similarity. Whole-array numpy operations, no per-bin loop."""
    bits = bins.bit_length() - 1
    m = np.full(n * bins, _MAX, dtype=U64)
    np.minimum.at(m, rec * bins + (sh >> U64(64 - bits)).astype(np.int64), sh & U64((1 << (64 - bits)) - 1))
    has = np.flatnonzero(np.bincount(rec, minlength=n) > 0)
    m = m.reshape(n, bins)[has]
    empty = m == _MAX
    if empty.any():
        col = np.arange(bins, dtype=np.int16)  # bins <= 1024: int16 quarters the memory traffic
        big = np.int16(4 * bins)
        twice = np.concatenate((np.where(empty, big, col), np.where(empty, big, col + bins)), axis=1)
        right = np.minimum.accumulate(twice[:, ::-1], axis=1)[:, ::-1][:, :bins]  # first non-empty >= j
        twice = np.concatenate((np.where(empty, -big, col - bins), np.where(empty, -big, col)), axis=1)
        left = np.maximum.accumulate(twice, axis=1)[:, bins:]  # last non-empty <= j
        src = np.where(_DIRECTION[:bins], right, left)
        dist = np.abs(src - col)
        flat = (np.arange(len(has), dtype=np.int64) * bins)[:, None] + src % bins
        with np.errstate(over="ignore"):
            m = np.take(m, flat) + dist.astype(U64) * _STEP
    return (m & U64(0xFF)).astype(np.uint8), has


CHUNK = 1 << 16  # signature rows per storage chunk (8 MiB at 128 bins)


class _Rows:
    """Signature rows in fixed-size chunks: appending never copies what is stored, and
    nothing is ever concatenated into one array (which would double the peak, and with
    many small blocks the heap would keep both)."""

    def __init__(self, bins: int, chunks: list[np.ndarray] | None = None) -> None:
        self.bins = bins
        self.chunks = chunks or []  # full chunks, then the last one's first `fill` rows
        self.fill = len(self.chunks[-1]) if self.chunks else CHUNK

    def append(self, sig: np.ndarray) -> None:
        at = 0
        while at < len(sig):
            if not self.chunks or self.fill == len(self.chunks[-1]):
                self.chunks.append(np.empty((CHUNK, self.bins), dtype=np.uint8))
                self.fill = 0
            last = self.chunks[-1]
            k = min(len(sig) - at, len(last) - self.fill)
            last[self.fill:self.fill + k] = sig[at:at + k]
            self.fill += k
            at += k

    def parts(self) -> list[np.ndarray]:
        """The stored rows, chunk by chunk (the last one trimmed)."""
        if not self.chunks:
            return []
        return [*self.chunks[:-1], self.chunks[-1][:self.fill]]

    def key(self, band: int, rows: int) -> np.ndarray:
        """Band `band`'s rows bytes as one integer per record, in storage order."""
        out = []
        for p in self.parts():
            if rows == 8:  # 8 one-byte rows are one little-endian 64-bit word of the row
                out.append(p.view("<u8")[:, band])
            else:
                k = np.zeros(len(p), dtype=U64)
                for t in range(rows):
                    k |= p[:, band * rows + t].astype(U64) << U64(8 * t)
                out.append(k)
        return np.concatenate(out) if out else np.zeros(0, U64)

    def take(self, idx: np.ndarray) -> np.ndarray:
        parts = self.parts()
        starts = np.cumsum([0] + [len(p) for p in parts])
        which = np.searchsorted(starts, idx, side="right") - 1
        out = np.empty((len(idx), self.bins), dtype=np.uint8)
        for c in np.unique(which):
            sel = np.flatnonzero(which == c)
            out[sel] = parts[c][idx[sel] - starts[c]]
        return out


@register_sketch("near-dup")
class NearDupSketch:
    """Signatures of every record added, mergeable across shards and processes."""

    name = "near-dup"

    def __init__(self, params: NearParams | None = None) -> None:
        self.params = params or NearParams()
        self.params.check()
        self._ids: list[np.ndarray] = []
        self._raw: list[np.ndarray] = []
        self._rows = _Rows(self.params.bins)

    def add(self, file_index: int, rows: Sequence[int], texts: Sequence[str]) -> None:
        if not texts:
            return
        w = block_words(texts, exact=True)
        sh, rec = shingles(w, self.params.shingle, short=True)
        sig, has = signatures(sh, rec, len(texts), self.params.bins)
        row = np.asarray(rows, dtype=np.int64)[has]
        self._ids.append((np.int64(file_index) << np.int64(WHERE_BITS)) | row)
        self._raw.append(w.raw[has])
        self._rows.append(sig)

    def merge(self, other: NearDupSketch) -> NearDupSketch:
        if other.params != self.params:
            raise InputError("near-duplicate sketches measured with different parameters cannot be merged")
        out = NearDupSketch(self.params)
        out._ids, out._raw = self._ids + other._ids, self._raw + other._raw
        out._rows = _Rows(self.params.bins, [*self._rows.parts(), *other._rows.parts()])
        return out

    def _columns(self) -> tuple[np.ndarray, np.ndarray]:
        ids = np.concatenate(self._ids) if self._ids else np.zeros(0, np.int64)
        raw = np.concatenate(self._raw) if self._raw else np.zeros(0, U64)
        self._ids, self._raw = [ids], [raw]
        return ids, raw

    def to_bytes(self) -> bytes:
        ids, raw = self._columns()
        parts = self._rows.parts()
        sigs = np.concatenate(parts).ravel() if parts else np.zeros(0, np.uint8)
        return pack(_MAGIC, {"params": asdict(self.params), "n": len(ids)},
                    [ids.astype("<i8"), raw.astype("<u8"), sigs])

    @classmethod
    def from_bytes(cls, b: bytes) -> NearDupSketch:
        try:
            head, (ids, raw, sigs) = unpack(b, _MAGIC, ("<i8", "<u8", "u1"))
            params = NearParams(**{k: type(getattr(NearParams, k))(v) for k, v in head["params"].items()})
            n = int(head["n"])
            if len(ids) != n or len(raw) != n or len(sigs) != n * params.bins:
                raise ValueError("truncated")
            out = cls(params)
            ids, raw = ids.astype(np.int64), raw.astype(U64)
            sigs = sigs.reshape(n, params.bins).copy()
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            raise InputError(f"unreadable near-duplicate sketch: {exc}") from None
        out._ids, out._raw = [ids], [raw]
        out._rows = _Rows(params.bins, [sigs] if n else [])
        return out

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ids, exact digests, a, b, similarity): every candidate pair (a, b) as
        positions in record-id order, a < b, with its estimated Jaccard similarity.
        Independent of the order pieces were added or merged in."""
        ids, raw = self._columns()
        order = np.argsort(ids, kind="stable")  # sorted position -> storage index
        if bool(np.all(order[1:] > order[:-1])):
            order = None  # already in id order (one process): no indirection needed
        p = self.params
        keys = (self._rows.key(band, p.rows) for band in range(p.bands))
        a, b = _candidates((k if order is None else k[order] for k in keys), len(ids))
        sim = _similarity(self._rows, a if order is None else order[a], b if order is None else order[b])
        if order is not None:
            ids, raw = ids[order], raw[order]
        return ids, raw, a, b, sim

    def result(self, keep: int = 5) -> NearDuplicates:
        ids, raw, a, b, sim = self.pairs()
        ok = sim >= self.params.jaccard
        va, vb, vs = a[ok], b[ok], sim[ok]
        count, clusters = _count(raw, va, vb)
        near = raw[va] != raw[vb]
        order = np.lexsort((va[near], vb[near]))[:keep]
        ex = tuple((int(ids[vb[near][i]]), int(ids[va[near][i]]), round(float(vs[near][i]), 3)) for i in order)
        return NearDuplicates(len(ids), count, clusters, len(a), int(ok.sum()), ex)


def _candidates(keys: Iterable[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (a, b), a < b, of records that share a bucket in some band (`keys`: one
    array per band, in record order). Each record is paired with the first (smallest)
    record of its bucket, not with every member, so a bucket of m records gives m - 1
    pairs, never m^2 / 2."""
    found = []
    for key in keys:
        o = np.argsort(key, kind="stable")  # stable: a bucket lists its records in id order
        k = key[o]
        same = k[1:] == k[:-1]
        if not same.any():
            continue
        pos = np.flatnonzero(same) + 1
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        first = starts[np.searchsorted(starts, pos, side="right") - 1]
        found.append(o[first] * np.int64(n) + o[pos])
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = np.unique(np.concatenate(found))
    return pairs // n, pairs % n


def _similarity(rows: _Rows, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Estimated Jaccard similarity from the share of equal signature bytes, corrected for
    the 1/256 chance that two different minima agree in their low 8 bits."""
    out = np.zeros(len(a))
    step = 1 << 16  # bounds the temporary comparison array
    for s in range(0, len(a), step):
        eq = (rows.take(a[s:s + step]) == rows.take(b[s:s + step])).mean(axis=1)
        out[s:s + step] = (eq - 1 / 256) / (1 - 1 / 256)
    return np.clip(out, 0.0, 1.0)


def _count(raw: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """(near-copies, clusters): clusters are the connected components of the verified
    pairs; each cluster of k distinct texts holds k - 1 near-copies, so an exact copy
    inside a cluster (counted by TP-PRE-DUPLICATE-TEXT) is not counted again here."""
    if len(a) == 0:
        return 0, 0
    nodes = np.unique(np.concatenate((a, b)))
    ia, ib = np.searchsorted(nodes, a), np.searchsorted(nodes, b)
    lab = np.arange(len(nodes))
    while True:  # label propagation with pointer jumping; labels only decrease, so it ends
        low = np.minimum(lab[ia], lab[ib])
        new = lab.copy()
        np.minimum.at(new, ia, low)
        np.minimum.at(new, ib, low)
        new = new[new]
        if np.array_equal(new, lab):
            break
        lab = new
    d = raw[nodes]
    order = np.lexsort((d, lab))
    ls, ds = lab[order], d[order]
    distinct = 1 + int(np.count_nonzero((ls[1:] != ls[:-1]) | (ds[1:] != ds[:-1])))
    comps = len(np.unique(lab))
    multi = np.unique(ls[np.concatenate(([False], (ls[1:] == ls[:-1]) & (ds[1:] != ds[:-1])))])
    return distinct - comps, len(multi)
