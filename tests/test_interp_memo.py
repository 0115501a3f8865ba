"""rules.gate.interp_at: np.interp of a Series at some steps, remembered for the same
array objects (epoch-sawtooth, eval-mismatch and second-pass each ask for the epoch at
every train loss point). Same values as np.interp, the same answer for the same objects
only, read-only, and nothing kept once the arrays asked about are gone."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from trainproof.model import Series
from trainproof.rules import gate


def _epoch(n: int, seed: int) -> Series:
    rng = np.random.default_rng(seed)
    steps = np.cumsum(rng.integers(1, 4, n)).astype(np.float64)
    return Series("epoch", steps, np.cumsum(rng.random(n)) / n)


@pytest.mark.parametrize("seed", range(5))
def test_values_are_np_interp(seed: int) -> None:
    f = _epoch(500, seed)
    at = np.random.default_rng(seed + 100).uniform(-5, f.steps[-1] + 5, 300)
    got = gate.interp_at(at, f)
    np.testing.assert_array_equal(got, np.interp(at, f.steps, f.values))
    assert gate.interp_at(at, f) is got  # asked again: the same answer, not a new one


def test_only_the_same_objects_share_an_answer() -> None:
    f = _epoch(200, 1)
    at = f.steps[::3].copy()
    first = gate.interp_at(at, f)
    equal_copy = at.copy()  # equal values, another array: computed again
    again = gate.interp_at(equal_copy, f)
    assert again is not first
    np.testing.assert_array_equal(again, first)
    other = Series("epoch", f.steps, f.values * 2)  # same steps, other values
    assert not np.array_equal(gate.interp_at(at, other), first)


def test_answer_is_read_only() -> None:
    f = _epoch(50, 2)
    got = gate.interp_at(f.steps, f)
    with pytest.raises(ValueError):
        got[0] = 1.0


def test_kept_answers_and_forgetting() -> None:
    f = _epoch(100, 3)
    a, b, c = (f.steps + d for d in (0.25, 0.5, 0.75))
    ra, rb = gate.interp_at(a, f), gate.interp_at(b, f)
    assert gate.interp_at(a, f) is ra and gate.interp_at(b, f) is rb  # the last two are kept
    gate.interp_at(c, f)  # a third pushes the oldest of the two out
    assert gate.interp_at(a, f) is not ra
    del a, b, c, ra, rb
    gc.collect()
    # nothing is kept about arrays that are gone (only f's own arrays remain asked about)
    assert all(all(r() is not None for r in m[:3]) for m in gate._at_memo)
    assert len(gate._at_memo) <= gate._AT_KEPT
