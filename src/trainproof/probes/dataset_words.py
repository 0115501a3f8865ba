"""Word and word-n-gram hashes of a block of texts, vectorised with numpy: the shared
first step of near-duplicate detection (MinHash) and train/eval contamination
(long n-gram overlap).

Normalisation (declared in rules/preflight_overlap.py's limits): letters are
case-folded (ASCII by a lookup table; a block with non-ASCII text goes through Unicode
case folding, str.casefold, so "STRASSE" matches "straße"), ASCII punctuation,
control characters and whitespace separate words and are otherwise dropped.
Non-ASCII bytes are word characters, so curly quotes stay attached to their word. A
chat record's role names are dropped: its text is what its turns say.

Every hash here is stable - the same in every process and on every machine - so
summaries measured by different workers can be merged. A word's hash is a
polynomial over its UTF-8 bytes modulo 2**64, computed for a whole block at once from
one prefix sum (the word's hash is the difference of two prefix values, shifted back
to position 0 with the multiplier's inverse), then scrambled with the SplitMix64
finaliser so every output bit depends on every input byte. No Python code runs per
record or per word: a block of ~500 records costs a few dozen numpy calls."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

U64 = np.uint64
_P = U64(0x9E3779B97F4A7C15)  # odd, so invertible modulo 2**64
_P_INV = U64(pow(int(_P), -1, 1 << 64))
_ROLE_TAG = re.compile("(?:^|(?<=[\x00\x1f]))[^\x00\x1e\x1f]*\x1e")
_SEP = 0  # the byte that joins records in a block (a NUL inside a record is replaced first)
_SPACE = 32


def _lut() -> np.ndarray:
    t = np.arange(256, dtype=np.uint8)
    ascii_ = t[:128]
    keep = np.zeros(128, dtype=bool)
    for lo, hi in ((48, 57), (65, 90), (97, 122)):
        keep[lo:hi + 1] = True
    ascii_[~keep] = _SPACE
    ascii_[65:91] += 32  # A-Z -> a-z
    t[_SEP] = _SEP
    return t


_LUT = _lut()


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise (uint64 in, uint64 out; wraps by design)."""
    x = x ^ (x >> U64(30))
    x = x * U64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> U64(27))
    x = x * U64(0x94D049BB133111EB)
    return x ^ (x >> U64(31))


_POWERS: dict[int, np.ndarray] = {}
_CACHE_MAX = 1 << 22
SPAN = 1 << 20  # characters hashed at once: bounds the block's arrays (about 40 bytes per character)


def _powers(base: np.uint64, n: int) -> np.ndarray:
    """base**0 .. base**(n-1) modulo 2**64, from a grow-only cache (a block needs as many
    as it has bytes; recomputing them per block cost a tenth of the pass)."""
    if n > _CACHE_MAX:
        p = np.full(n, base, dtype=U64)
        p[0] = 1
        return np.cumprod(p, dtype=U64)
    have = _POWERS.get(int(base))
    if have is None or len(have) < n:
        size = max(n, 1 << 19, 2 * len(have) if have is not None else 0)
        p = np.full(size, base, dtype=U64)
        p[0] = 1
        have = _POWERS[int(base)] = np.cumprod(p, dtype=U64)  # wraps modulo 2**64, as wanted
    return have[:n]


def _segment_hashes(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Polynomial hash of b[starts[i]:ends[i]] for every i, independent of where the
    segment lies: (S[end] - S[start]) * P**-start with S the prefix sums of b[j] * P**j."""
    with np.errstate(over="ignore"):
        s = np.zeros(len(b) + 1, dtype=U64)
        np.cumsum(b.astype(U64) * _powers(_P, len(b)), dtype=U64, out=s[1:])
        return (s[ends] - s[starts]) * _powers(_P_INV, len(b) + 1)[starts]


@dataclass(frozen=True)
class Words:
    """The words of a block: `hashes[i]` is word i's hash and `record[i]` the index
    (within the block) of the record it belongs to; `count[r]` is record r's number of
    words and `raw` a stable 64-bit digest of each record's exact text."""

    hashes: np.ndarray  # uint64
    record: np.ndarray  # int64, non-decreasing
    count: np.ndarray  # int64, per record
    raw: np.ndarray  # uint64, per record (zeros unless asked for)


def block_words(texts: Sequence[str], exact: bool = False) -> Words:
    """The words of `texts`, in pieces of at most SPAN characters (a record longer than
    that is hashed on its first SPAN characters: declared in the rules' limits). With
    `exact`, also each record's exact-text digest (`raw`; else zeros)."""
    total = sum(map(len, texts)) + len(texts)
    if total <= SPAN:
        return _words(texts, exact)
    texts = [t if len(t) <= SPAN else t[:SPAN] for t in texts]
    pieces: list[Words] = []
    size = start = 0
    for i, t in enumerate(texts):
        if size and size + len(t) > SPAN:
            pieces.append(_words(texts[start:i], exact))
            start, size = i, 0
        size += len(t) + 1
    pieces.append(_words(texts[start:], exact))
    offsets = np.cumsum([0] + [len(p.count) for p in pieces[:-1]])
    return Words(np.concatenate([p.hashes for p in pieces]),
                 np.concatenate([p.record + o for p, o in zip(pieces, offsets, strict=True)]),
                 np.concatenate([p.count for p in pieces]), np.concatenate([p.raw for p in pieces]))


def _words(texts: Sequence[str], exact: bool) -> Words:
    n = len(texts)
    joined = "\x00".join(texts)
    if joined.count("\x00") != n - 1 if n else False:  # a NUL inside a record: make it a space
        joined = "\x00".join(t.replace("\x00", " ") for t in texts)
    raw = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    digest = np.zeros(n, dtype=U64)
    if exact:
        rb = np.concatenate(([-1], np.flatnonzero(raw == _SEP), [len(raw)]))
        with np.errstate(over="ignore"):
            digest = mix64(_segment_hashes(raw, rb[:-1] + 1, rb[1:]) + (rb[1:] - rb[:-1]).astype(U64))
    if "\x1e" in joined:  # chat keys (dataset_shape): "role\x1econtent" per turn; the role is not text
        joined = _ROLE_TAG.sub(" ", joined)
        raw_norm = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    else:
        raw_norm = raw
    norm = _LUT[raw_norm] if joined.isascii() else _LUT[np.frombuffer(
        joined.casefold().encode("utf-8", "surrogatepass"), dtype=np.uint8)]
    word = (norm != _SPACE) & (norm != _SEP)
    edge = np.diff(word.astype(np.int8), prepend=0, append=0)
    starts, ends = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    seps = np.flatnonzero(norm == _SEP)
    record = np.searchsorted(seps, starts)
    hashes = mix64(_segment_hashes(norm, starts, ends))
    return Words(hashes, record.astype(np.int64), np.bincount(record, minlength=n).astype(np.int64), digest)


def _spans(w: Words, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Hash of the word runs [starts[i], ends[i]) - the words' polynomial, as for bytes."""
    with np.errstate(over="ignore"):
        s = np.zeros(len(w.hashes) + 1, dtype=U64)
        np.cumsum(w.hashes * _powers(_P, len(w.hashes)), dtype=U64, out=s[1:])
        return mix64((s[ends] - s[starts]) * _powers(_P_INV, len(w.hashes) + 1)[starts]
                     + (ends - starts).astype(U64))


def shingles(w: Words, k: int, short: bool) -> tuple[np.ndarray, np.ndarray]:
    """(hash, record) of every run of `k` consecutive words inside one record (word
    order counts). With `short`, a record of 1..k-1 words gets one shingle of all its
    words, so it still has a signature; without, it gets none."""
    n = len(w.hashes)
    starts = np.zeros(0, dtype=np.int64)
    if n >= k:
        starts = np.flatnonzero(w.record[k - 1:] == w.record[: n - k + 1])
    ends = starts + k
    if short:
        first = np.cumsum(w.count) - w.count
        few = np.flatnonzero((w.count > 0) & (w.count < k))
        if len(few):
            starts = np.concatenate((starts, first[few]))
            ends = np.concatenate((ends, first[few] + w.count[few]))
            o = np.argsort(starts, kind="stable")
            starts, ends = starts[o], ends[o]
    if len(starts) == 0:
        return np.zeros(0, dtype=U64), np.zeros(0, dtype=np.int64)
    return _spans(w, starts, ends), w.record[starts]


def normalised_digests(w: Words) -> np.ndarray:
    """A stable digest per record of its normalised words in order (0 for a record
    without words): equal exactly when the normalised texts are equal."""
    n = len(w.count)
    out = np.zeros(n, dtype=U64)
    if len(w.hashes) == 0:
        return out
    ends = np.cumsum(w.count)
    out[:] = _spans(w, ends - w.count, ends)
    out[w.count == 0] = 0
    return out
