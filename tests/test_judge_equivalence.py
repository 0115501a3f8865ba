"""The vectorised judging helpers of #14 against straightforward reference
implementations kept here: same output, value for value (NaN and the sign of zero
included), on seeded generated curves with ties, repeats, NaN/Inf, zeros of both signs
and unsorted inputs. No timing: speed is measured by bench/, never by tests."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.curves import thin


def _same(a: object, b: object) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a == b) & (np.signbit(a) == np.signbit(b))
                                              | (np.isnan(a) & np.isnan(b))))


def _thin_reference(steps, values, buckets, keep=()):
    """curves.thin as it was: one stable sort by (bucket, value)."""
    ok = np.isfinite(values) & np.isfinite(steps)
    steps, values = steps[ok], values[ok]
    n = int(steps.size)
    if n <= 2 * buckets:
        return tuple(steps.tolist()), tuple(values.tolist())
    lo, hi = float(steps[0]), float(steps[-1])
    col = np.minimum(((steps - lo) / ((hi - lo) or 1.0) * buckets).astype(np.int64), buckets - 1)
    order = np.lexsort((values, col))
    sorted_col = col[order]
    first = np.flatnonzero(np.r_[True, sorted_col[1:] != sorted_col[:-1]])
    last = np.r_[first[1:] - 1, n - 1]
    cited = np.searchsorted(steps, np.asarray(keep, dtype=float), side="right") - 1
    idx = np.unique(np.concatenate([order[first], order[last], [0, n - 1], cited[cited >= 0]]).astype(np.int64))
    return tuple(steps[idx].tolist()), tuple(values[idx].tolist())


def _curve(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    kind = rng.integers(5)
    if kind == 0:
        values = rng.standard_normal(n)
    elif kind == 1:
        values = rng.integers(-3, 4, n).astype(float)  # many ties
    elif kind == 2:
        values = np.round(rng.random(n), 2) * rng.choice([-1.0, 1.0], n)
        values[rng.random(n) < 0.1] = 0.0
        values[rng.random(n) < 0.1] = -0.0  # equal to 0.0, other sign
    elif kind == 3:
        values = np.exp(-np.arange(n) / max(1, n / 5)) + 0.01 * rng.standard_normal(n)
    else:
        values = np.full(n, 1.5)
    bad = rng.random(n) < 0.02
    values[bad] = rng.choice([np.nan, np.inf, -np.inf], int(bad.sum()))
    gaps = rng.choice([1.0, 1.0, 2.0, 7.0], n) if rng.random() < 0.5 else np.ones(n)
    steps = np.cumsum(gaps) + rng.integers(0, 100)
    return steps, values


@pytest.mark.parametrize("seed", range(40))
def test_thin_equals_the_sorting_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 5, 50, 999, 5_000, 40_000]))
    steps, values = _curve(rng, n)
    buckets = int(rng.choice([1, 3, 100, 720]))
    keep = sorted(rng.choice(steps, size=min(n, 4), replace=False).tolist()) if rng.random() < 0.5 else []
    got, ref = thin(steps, values, buckets, keep), _thin_reference(steps, values, buckets, keep)
    assert _same(got[0], ref[0]) and _same(got[1], ref[1])


def test_thin_of_unsorted_steps_takes_the_sorting_path():
    rng = np.random.default_rng(7)
    steps, values = rng.random(3_000) * 100, rng.integers(0, 5, 3_000).astype(float)
    got, ref = thin(steps, values, 50), _thin_reference(steps, values, 50)
    assert _same(got[0], ref[0]) and _same(got[1], ref[1])
