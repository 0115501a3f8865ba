"""Train/eval contamination: evaluation records whose text appears in the training data,
exactly (equal normalised text) or by a shared long word n-gram (13 words by default,
as benchmark decontamination does it since GPT-3).

The evaluation side is built first and in full (`EvalIndex`): every n-gram hash of
every eval record, sorted, with the eval record it came from, plus each eval record's
normalised-text digest. Eval sets are small; the index is 12 bytes per n-gram and its
size is capped (a declared threshold) so a wrongly passed corpus cannot exhaust
memory. The training side is then streamed once through `ContaminationSketch.add`,
which looks each block's n-grams up in the index (a binary search over a sorted
array, vectorised) and keeps only counts, a bitmap of the eval records leaked, and
the first few examples. Sketches of different shards merge by adding counts and
OR-ing bitmaps; the index itself is what a driver broadcasts to workers."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainproof.model import InputError
from trainproof.probes.dataset_read import WHERE_BITS
from trainproof.probes.dataset_summary import register_sketch
from trainproof.probes.dataset_words import U64, block_words, normalised_digests, shingles
from trainproof.probes.sketch_frame import pack, peek_head, unpack

_MAGIC = b"TPCONT1\n"
_MAGIC_INDEX = b"TPEVAL1\n"
KEEP = 5


def _cat(xs: Sequence[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(xs) if xs else np.zeros(0, dtype)


def _wheres(file_index: int, rows: Sequence[int]) -> np.ndarray:
    return (np.int64(file_index) << np.int64(WHERE_BITS)) | np.asarray(rows, dtype=np.int64)


_ARRAYS = ("grams", "gram_rec", "digests", "digest_rec", "wheres")


@register_sketch("eval-index")
class EvalIndex:
    """The eval records' n-grams and exact digests. A sketch itself (built through the
    same pass as the training data, mergeable), then `freeze`d for lookups: sorted
    n-grams, each with the first eval record that has it, and sorted digests."""

    name = "eval-index"

    def __init__(self, ngram: int, max_ngrams: int, offset: int = 0) -> None:
        self.ngram, self.max_ngrams, self.offset = ngram, max_ngrams, offset
        self._parts: list[tuple[np.ndarray, ...]] = []  # (grams, their record's where, digests, wheres)
        self._size = 0
        self.wordless = 0  # eval records without a word: nothing of them can leak
        self.frozen = False
        self.grams = self.digests = np.zeros(0, U64)
        self.gram_rec = self.digest_rec = self.wheres = np.zeros(0, np.int64)

    def add(self, file_index: int, rows: Sequence[int], texts: Sequence[str]) -> None:
        if not texts:
            return
        w = block_words(texts)
        g, rec = shingles(w, self.ngram, short=False)
        wh = _wheres(file_index + self.offset, rows)
        self._grow(len(g))
        self.wordless += int(np.count_nonzero(w.count == 0))
        self._parts.append((g, wh[rec], normalised_digests(w), wh))

    def _grow(self, n: int) -> None:
        self._size += n
        if self._size > self.max_ngrams:
            raise InputError(f"the evaluation set holds more than {self.max_ngrams:,} {self.ngram}-word "
                             "n-grams (TP-PRE-EVAL-CONTAMINATION's max_eval_ngrams): is --eval a "
                             "training corpus? Pass the evaluation split")

    def merge(self, other: EvalIndex) -> EvalIndex:
        if (other.ngram, other.max_ngrams) != (self.ngram, self.max_ngrams):
            raise InputError("eval indexes of different n-gram lengths cannot be merged")
        out = EvalIndex(self.ngram, self.max_ngrams, self.offset)
        out._parts = self._parts + other._parts
        out._grow(self._size + other._size)
        out.wordless = self.wordless + other.wordless
        return out

    def freeze(self) -> EvalIndex:
        """Sorted for lookup; independent of the order the parts were added or merged in."""
        cols = [_cat([p[i] for p in self._parts], (U64, np.int64, U64, np.int64)[i]) for i in range(4)]
        g, gw, d, self.wheres = cols
        self._parts = []
        self.wheres = np.sort(self.wheres)
        o = np.lexsort((gw, g))  # per n-gram, its smallest eval record first
        g, gr = g[o], np.searchsorted(self.wheres, gw[o])
        same = np.concatenate(([False], (g[1:] == g[:-1]) & (gr[1:] == gr[:-1]))) if len(g) else np.zeros(0, bool)
        self.grams, self.gram_rec = g[~same], gr[~same]  # one entry per (n-gram, eval record)
        dw = cols[3]
        keep = np.flatnonzero(d != 0)  # records without words match nothing
        o = np.lexsort((dw[keep], d[keep]))
        self.digests, self.digest_rec = d[keep][o], np.searchsorted(self.wheres, dw[keep][o])
        self.frozen = True
        return self

    @property
    def records(self) -> int:
        return len(self.wheres)

    def to_bytes(self) -> bytes:
        head = {"ngram": self.ngram, "max_ngrams": self.max_ngrams, "offset": self.offset,
                "wordless": self.wordless, "frozen": self.frozen}
        if self.frozen:
            return pack(_MAGIC_INDEX, head, [getattr(self, a) for a in _ARRAYS])
        cols = [_cat([p[i] for p in self._parts], (U64, np.int64, U64, np.int64)[i]) for i in range(4)]
        return pack(_MAGIC_INDEX, {**head, "parts": [len(p[0]) for p in self._parts]}, cols)

    @classmethod
    def from_bytes(cls, b: bytes) -> EvalIndex:
        try:
            head = peek_head(b, _MAGIC_INDEX)
            out = cls(int(head["ngram"]), int(head["max_ngrams"]), int(head["offset"]))
            out.wordless = int(head["wordless"])
            if head["frozen"]:
                _, arrays = unpack(b, _MAGIC_INDEX, ("<u8", "<i8", "<u8", "<i8", "<i8"))
                for name, arr in zip(_ARRAYS, arrays, strict=True):
                    setattr(out, name, arr)
                out.frozen = True
            else:
                _, (g, gw, d, wh) = unpack(b, _MAGIC_INDEX, ("<u8", "<i8", "<u8", "<i8"))
                if len(g):
                    out._parts = [(g, gw, d, wh)]
                out._size = len(g)
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            raise InputError(f"unreadable eval index: {exc}") from None
        return out


@dataclass(frozen=True)
class Contamination:
    eval_records: int  # eval records with at least one word
    leaked: int  # eval records found in training (exactly or by a shared n-gram)
    leaked_exact: int  # of those, found as an equal normalised text
    train_records: int  # training records that contain eval text
    train_exact: int  # of those, equal to an eval record
    examples: tuple[tuple[int, int, str], ...] = ()  # (train where, eval where, "exact"/"n-gram")


def _lookup(keys: np.ndarray, owners: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (query index, owner) with keys[...] == query[i]: `keys` sorted, an equal key
    may belong to several eval records (an eval set can hold the same item twice)."""
    lo = np.searchsorted(keys, query, side="left")
    hi = np.searchsorted(keys, query, side="right")
    n = hi - lo
    q = np.repeat(np.arange(len(query)), n)
    at = np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
    return q, owners[at]


@register_sketch("contamination")
class ContaminationSketch:
    """What one part of the training data shares with the eval set. The driver's sketch
    carries the frozen index in its bytes, so every piece (and worker) gets it; the
    sketches rebuilt from those bytes do not send it back."""

    name = "contamination"

    def __init__(self, index: EvalIndex | None, eval_records: int | None = None, ship_index: bool = True) -> None:
        if index is not None and not index.frozen:
            raise ValueError("freeze the eval index before measuring against it")
        self.index, self.ship_index = index, ship_index and index is not None
        n = index.records if index is not None else int(eval_records or 0)
        self.leaked = np.zeros(n, dtype=bool)
        self.leaked_exact = np.zeros(n, dtype=bool)
        self.train_records = self.train_exact = 0
        self.examples: list[tuple[int, int, int]] = []  # (train where, eval record, exact 1/0)

    def add(self, file_index: int, rows: Sequence[int], texts: Sequence[str]) -> None:
        ix = self.index
        if ix is None:
            raise InputError("a contamination sketch without its eval index cannot measure records")
        if not texts or ix.records == 0:
            return
        w = block_words(texts)
        d = normalised_digests(w)
        exact = np.zeros(0, np.int64)
        recs, evals = [], []
        if len(ix.digests):
            q, e_ex = _lookup(ix.digests, ix.digest_rec, d)  # the index holds no 0 (wordless) digest
            self.leaked_exact[e_ex] = True
            exact = np.unique(q)
            self.train_exact += len(exact)
            recs.append(q)
            evals.append(e_ex)
        if len(ix.grams):
            g, rec = shingles(w, ix.ngram, short=False)
            hit, hit_eval = _lookup(ix.grams, ix.gram_rec, g)
            recs.append(rec[hit])
            evals.append(hit_eval)
        r, e = _cat(recs, np.int64), _cat(evals, np.int64)
        if len(r) == 0:
            return
        self.leaked[e] = True
        o = np.lexsort((e, r))  # per train record, its smallest eval record
        r, e = r[o], e[o]
        first = np.concatenate(([True], r[1:] != r[:-1]))
        self.train_records += int(first.sum())
        wh = _wheres(file_index, rows)
        is_exact = np.isin(r[first][:KEEP], exact)
        self.examples = sorted(self.examples + [
            (int(wh[t]), int(v), int(x)) for t, v, x in zip(r[first][:KEEP], e[first][:KEEP], is_exact, strict=True)
        ])[:KEEP]

    def merge(self, other: ContaminationSketch) -> ContaminationSketch:
        if len(other.leaked) != len(self.leaked):
            raise InputError("contamination sketches against different eval sets cannot be merged")
        out = ContaminationSketch(None, len(self.leaked))
        out.index = self.index if self.index is not None else other.index
        out.leaked = self.leaked | other.leaked
        out.leaked_exact = self.leaked_exact | other.leaked_exact
        out.train_records = self.train_records + other.train_records
        out.train_exact = self.train_exact + other.train_exact
        out.examples = sorted(self.examples + other.examples)[:KEEP]
        return out

    def to_bytes(self) -> bytes:
        head = {"n": len(self.leaked), "train_records": self.train_records, "train_exact": self.train_exact,
                "examples": self.examples}
        index = self.index.to_bytes() if self.ship_index and self.index is not None else b""
        return pack(_MAGIC, {**head, "index": len(index)}, [np.packbits(self.leaked), np.packbits(self.leaked_exact),
                                                            np.frombuffer(index, np.uint8)])

    @classmethod
    def from_bytes(cls, b: bytes) -> ContaminationSketch:
        try:
            head, (leaked, exact, index) = unpack(b, _MAGIC, ("u1", "u1", "u1"))
            n = int(head["n"])
            ix = EvalIndex.from_bytes(index.tobytes()) if len(index) else None
            if ix is not None and ix.records != n:
                raise ValueError("index and bitmap sizes differ")
            out = cls(ix, n, ship_index=False)
            out.leaked = np.unpackbits(leaked)[:n].astype(bool)
            out.leaked_exact = np.unpackbits(exact)[:n].astype(bool)
            if len(out.leaked) != n or len(out.leaked_exact) != n:
                raise ValueError("bitmap too short")
            out.train_records, out.train_exact = int(head["train_records"]), int(head["train_exact"])
            out.examples = [(int(t), int(e), int(x)) for t, e, x in head["examples"]][:KEEP]
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            raise InputError(f"unreadable contamination sketch: {exc}") from None
        return out

    def result(self, index: EvalIndex) -> Contamination:
        """The findings' numbers; `index` (the one measured against) names the eval records."""
        ex = tuple((t, int(index.wheres[e]), "exact" if x else "n-gram") for t, e, x in self.examples)
        return Contamination(len(self.leaked) - index.wordless, int(self.leaked.sum()),
                             int(self.leaked_exact.sum()), self.train_records, self.train_exact, ex)
