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

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trainproof.model import InputError
from trainproof.probes.dataset_read import WHERE_BITS
from trainproof.probes.dataset_words import U64, block_words, normalised_digests, shingles

_MAGIC = b"TPCONT1\n"
KEEP = 5


def _cat(xs: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(xs) if xs else np.zeros(0, dtype)


def _wheres(file_index: int, rows: Sequence[int]) -> np.ndarray:
    return (np.int64(file_index) << np.int64(WHERE_BITS)) | np.asarray(rows, dtype=np.int64)


class EvalIndex:
    """The eval records' n-grams and exact digests; add every eval block, then `freeze`."""

    def __init__(self, ngram: int, max_ngrams: int) -> None:
        self.ngram, self.max_ngrams = ngram, max_ngrams
        self.files: list[str] = []  # eval file paths, indexed by the file index of `wheres`
        self._grams: list[np.ndarray] = []
        self._gram_rec: list[np.ndarray] = []
        self._digests: list[np.ndarray] = []
        self._wheres: list[np.ndarray] = []
        self._size = self._records = 0
        self.wordless = 0  # eval records without a word: nothing of them can leak
        self.grams = self.gram_rec = self.digests = self.digest_rec = self.wheres = np.zeros(0, np.int64)

    def add(self, file_index: int, rows: Sequence[int], texts: Sequence[str]) -> None:
        if not texts:
            return
        w = block_words(texts)
        g, rec = shingles(w, self.ngram, short=False)
        self._size += len(g)
        if self._size > self.max_ngrams:
            raise InputError(f"the evaluation set holds more than {self.max_ngrams:,} {self.ngram}-word "
                             "n-grams (TP-PRE-EVAL-CONTAMINATION's max_eval_ngrams): is --eval a "
                             "training corpus? Pass the evaluation split")
        self._grams.append(g)
        self._gram_rec.append(rec + self._records)
        d = normalised_digests(w)
        self.wordless += int(np.count_nonzero(w.count == 0))
        self._digests.append(d)
        self._wheres.append(_wheres(file_index, rows))
        self._records += len(texts)

    def freeze(self) -> EvalIndex:
        """Sort the n-grams (and digests) for lookup; keeps, per n-gram, its first eval record."""
        self.wheres = _cat(self._wheres, np.int64)
        g, r = _cat(self._grams, U64), _cat(self._gram_rec, np.int64)
        d = _cat(self._digests, U64)
        self._grams, self._gram_rec, self._digests, self._wheres = [], [], [], []
        o = np.lexsort((r, g))
        g, r = g[o], r[o]
        first = np.concatenate(([True], g[1:] != g[:-1])) if len(g) else np.zeros(0, bool)
        self.grams, self.gram_rec = g[first], r[first]
        rec = np.flatnonzero(d != 0)  # records without words match nothing
        o = np.lexsort((rec, d[rec]))
        self.digests, self.digest_rec = d[rec][o], rec[o]
        return self

    @property
    def records(self) -> int:
        return len(self.wheres)


@dataclass(frozen=True)
class Contamination:
    eval_records: int  # eval records with at least one word
    leaked: int  # eval records found in training (exactly or by a shared n-gram)
    leaked_exact: int  # of those, found as an equal normalised text
    train_records: int  # training records that contain eval text
    train_exact: int  # of those, equal to an eval record
    examples: tuple[tuple[int, int, str], ...] = ()  # (train where, eval where, "exact"/"n-gram")


class ContaminationSketch:
    """What one part of the training data shares with the eval set."""

    name = "contamination"

    def __init__(self, index: EvalIndex | None, eval_records: int | None = None) -> None:
        self.index = index
        n = index.records if index is not None else int(eval_records or 0)
        self.leaked = np.zeros(n, dtype=bool)
        self.leaked_exact = np.zeros(n, dtype=bool)
        self.train_records = self.train_exact = 0
        self.examples: list[tuple[int, int, int]] = []  # (train where, eval record, exact 1/0)

    def add(self, file_index: int, rows: Sequence[int], texts: Sequence[str]) -> None:
        ix = self.index
        if ix is None:
            raise InputError("a contamination sketch read back from bytes cannot measure more records")
        if not texts or ix.records == 0:
            return
        w = block_words(texts)
        hit_rec, hit_eval = [], []
        d = normalised_digests(w)
        if len(ix.digests):
            pos = np.minimum(np.searchsorted(ix.digests, d), len(ix.digests) - 1)
            ex = np.flatnonzero((ix.digests[pos] == d) & (d != 0))
            self.leaked_exact[ix.digest_rec[pos[ex]]] = True
            self.train_exact += len(ex)
            hit_rec.append(ex)
            hit_eval.append(ix.digest_rec[pos[ex]])
        if len(ix.grams):
            g, rec = shingles(w, ix.ngram, short=False)
            pos = np.minimum(np.searchsorted(ix.grams, g), len(ix.grams) - 1)
            hit = np.flatnonzero(ix.grams[pos] == g)
            self.leaked[ix.gram_rec[pos[hit]]] = True
            hit_rec.append(rec[hit])
            hit_eval.append(ix.gram_rec[pos[hit]])
        recs, evals = np.concatenate(hit_rec), np.concatenate(hit_eval)
        if len(recs) == 0:
            return
        self.leaked[evals] = True
        o = np.lexsort((evals, recs))  # per train record, its smallest eval record
        recs, evals = recs[o], evals[o]
        first = np.concatenate(([True], recs[1:] != recs[:-1]))
        self.train_records += int(first.sum())
        wh = _wheres(file_index, rows)
        exact_set = set(hit_rec[0].tolist()) if len(ix.digests) else set()
        for r, e in zip(recs[first][:KEEP].tolist(), evals[first][:KEEP].tolist(), strict=True):
            self.examples.append((int(wh[r]), e, int(r in exact_set)))
        self.examples = sorted(self.examples)[:KEEP]

    def merge(self, other: ContaminationSketch) -> ContaminationSketch:
        if len(other.leaked) != len(self.leaked):
            raise InputError("contamination sketches against different eval sets cannot be merged")
        out = ContaminationSketch(self.index if self.index is not None else other.index, len(self.leaked))
        out.leaked = self.leaked | other.leaked
        out.leaked_exact = self.leaked_exact | other.leaked_exact
        out.train_records = self.train_records + other.train_records
        out.train_exact = self.train_exact + other.train_exact
        out.examples = sorted(self.examples + other.examples)[:KEEP]
        return out

    def to_bytes(self) -> bytes:
        head = json.dumps({"n": len(self.leaked), "train_records": self.train_records,
                           "train_exact": self.train_exact, "examples": self.examples}).encode()
        return b"".join((_MAGIC, struct.pack("<I", len(head)), head, np.packbits(self.leaked).tobytes(),
                         np.packbits(self.leaked_exact).tobytes()))

    @classmethod
    def from_bytes(cls, b: bytes) -> ContaminationSketch:
        try:
            if not b.startswith(_MAGIC):
                raise ValueError("not a contamination sketch")
            (hl,) = struct.unpack_from("<I", b, len(_MAGIC))
            at = len(_MAGIC) + 4
            head = json.loads(b[at:at + hl])
            n, nb = int(head["n"]), (int(head["n"]) + 7) // 8
            at += hl
            if len(b) != at + 2 * nb:
                raise ValueError("truncated")
            out = cls(None, n)
            bits = np.frombuffer(b, np.uint8, 2 * nb, at)
            out.leaked = np.unpackbits(bits[:nb])[:n].astype(bool)
            out.leaked_exact = np.unpackbits(bits[nb:])[:n].astype(bool)
            out.train_records, out.train_exact = int(head["train_records"]), int(head["train_exact"])
            out.examples = [(int(t), int(e), int(x)) for t, e, x in head["examples"]][:KEEP]
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            raise InputError(f"unreadable contamination sketch: {exc}") from None
        return out

    def result(self, index: EvalIndex) -> Contamination:
        """The findings' numbers; `index` (the one measured against) names the eval records."""
        ex = tuple((t, int(index.wheres[e]), "exact" if x else "n-gram") for t, e, x in self.examples)
        return Contamination(len(self.leaked) - index.wordless, int(self.leaked.sum()), int(self.leaked_exact.sum()),
                             self.train_records, self.train_exact, ex)
