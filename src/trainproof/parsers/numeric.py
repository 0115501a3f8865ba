"""Turning lists of decoded JSON/CSV cells into float arrays fast, while keeping
the rule that only numbers (and numeric strings) are numbers: a missing cell or a
null is not a point, and `true` is not a loss of 1.0."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainproof.parsers.base import number

_FEW = 1024  # below this many NaNs, look at the cells one by one


def to_float_array(values: list[Any], may_have_bools: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(floats, ok-mask) for a column of cells (None = missing).

    The fast path is one C conversion. numpy turns None into NaN and True into 1.0, so
    NaNs are checked against their cells, and a block whose raw text holds no `true` or
    `false` literal (`may_have_bools=False`) skips the bool scan."""
    n = len(values)
    if not n:
        return np.empty(0), np.empty(0, dtype=bool)
    if may_have_bools and any(type(v) is bool for v in values):
        return _per_cell(values)
    try:
        arr = np.array(values, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):  # OverflowError: an int past float64's range
        return _per_cell(values)
    if arr.ndim != 1:
        return _per_cell(values)
    ok = np.ones(n, dtype=bool)
    for i in np.flatnonzero(np.isinf(arr)):  # numpy reads "1e400" as inf; number() does not
        if type(values[i]) is str and number(values[i]) is None:
            arr[i], ok[i] = np.nan, False
    nan = np.flatnonzero(np.isnan(arr) & ok)
    if nan.size == 0:
        return arr, ok
    if nan.size <= _FEW:
        for i in nan:
            ok[i] = values[i] is not None
    else:
        cells = np.empty(n, dtype=object)
        cells[:] = values
        ok &= (cells != None).astype(bool)  # noqa: E711  (elementwise: which cells are real values)
    return arr, ok


def _per_cell(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    cells = [number(v) for v in values]
    ok = np.fromiter((c is not None for c in cells), dtype=bool, count=len(cells))
    arr = np.fromiter((np.nan if c is None else c for c in cells), dtype=np.float64, count=len(cells))
    return arr, ok
