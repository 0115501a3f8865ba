"""Turning lists of decoded JSON/CSV cells into float arrays fast, while keeping
the rule that only numbers (and numeric strings) are numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainproof.parsers.base import number


def to_float_array(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(floats, ok-mask). The fast path is one C conversion; any bool, None or string
    sends the list through the per-cell path so `true` never becomes 1.0."""
    if not values:
        return np.empty(0), np.empty(0, dtype=bool)
    if not any(type(v) is bool for v in values):
        try:
            arr = np.array(values, dtype=np.float64)
            if arr.ndim == 1:
                return arr, np.ones(arr.size, dtype=bool)
        except (ValueError, TypeError):
            pass
    cells = [number(v) for v in values]
    ok = np.fromiter((c is not None for c in cells), dtype=bool, count=len(cells))
    arr = np.fromiter((c if c is not None else np.nan for c in cells), dtype=np.float64,
                      count=len(cells))
    return arr, ok
