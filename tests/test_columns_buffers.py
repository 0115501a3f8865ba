"""parsers.base.Columns keeps each column's points in a _Floats buffer: an array('d')
while small, then (on Linux) an anonymous mapping grown in place (#14). Whatever holds
them, the arrays handed out are the points appended, in order, steps shared where the
columns were extended with the same steps array, and a later arrays() call joins what
came before with what came since (watch)."""

from __future__ import annotations

import numpy as np
import pytest

from trainproof.parsers import base


@pytest.fixture(params=["mapped-early", "array-only", "real"])
def buffers(request, monkeypatch):
    if request.param == "mapped-early":  # every buffer past 64 bytes is a mapping: many resizes
        monkeypatch.setattr(base, "_MAPPED_FROM", 64)
    elif request.param == "array-only":  # what other platforms do
        monkeypatch.setattr(base, "_MAPPABLE", False)
    return request.param


@pytest.mark.parametrize("seed", range(6))
def test_columns_hold_what_was_appended(seed, buffers):
    rng = np.random.default_rng(seed)
    cols = base.Columns()
    want: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}

    def add(name: str, steps: np.ndarray, values: np.ndarray) -> None:
        cols.extend(name, steps, values)
        got = want.setdefault(name, ([], []))
        got[0].append(steps)
        got[1].append(values)

    first = 0
    for block in range(int(rng.integers(20, 60))):
        n = int(rng.integers(1, 40_000))
        steps = np.arange(first, first + n, dtype=np.float64)
        first += n
        for name in ("loss", "lr", "grad_norm"):
            values = rng.standard_normal(n)
            if name == "grad_norm" and block % 7 == 3:
                keep = rng.random(n) < 0.5  # a column that skips rows: its own steps from here on
                add(name, steps[keep], values[keep])
            else:
                add(name, steps, values)
        if block % 11 == 5:
            for i in range(int(rng.integers(1, 5))):  # single points, as some readers add them
                cols.add("eval_loss", float(first + i), float(rng.random()))
                got = want.setdefault("eval_loss", ([], []))
                got[0].append(np.array([first + i], dtype=np.float64))
                got[1].append(np.array([cols._points["eval_loss"][1][-1]]))
        if block == 30 and seed % 2:
            _same(cols.arrays(), want)  # handed out mid-way: later points go to new buffers
    out = cols.arrays()
    _same(out, want)
    if not seed % 2:  # appended with the same steps, in step: one array (a mid-way call joins copies)
        assert out["loss"][0] is out["lr"][0]


def _same(out, want) -> None:
    assert set(out) == set(want)
    for name, (steps, values) in want.items():
        np.testing.assert_array_equal(out[name][0], np.concatenate(steps))
        np.testing.assert_array_equal(out[name][1], np.concatenate(values))
        assert out[name][0].dtype == out[name][1].dtype == np.float64


def test_a_large_column_is_a_mapping_on_linux():
    """Guards the test above against never leaving the array('d') buffers."""
    buf = base._Floats()
    buf.frombytes(memoryview(np.arange(400_000, dtype=np.float64)).cast("B"))
    buf.frombytes(memoryview(np.arange(400_000, dtype=np.float64)).cast("B"))
    assert (buf._map is not None) == base._MAPPABLE
    np.testing.assert_array_equal(buf.view(), np.r_[np.arange(400_000.0), np.arange(400_000.0)])
    np.testing.assert_array_equal(buf.head(5).view(), np.arange(5.0))
