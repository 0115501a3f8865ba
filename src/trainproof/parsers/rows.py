"""Decoded JSON rows (dicts) to columns, a block at a time, column-wise."""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np

from trainproof.parsers.base import Columns
from trainproof.parsers.columns import is_step
from trainproof.parsers.numeric import to_float_array


def flatten(row: dict[str, Any]) -> dict[str, Any]:
    """{"metrics": {"loss": 1}} -> {"metrics/loss": 1}; flat rows pass through untouched."""
    if not any(type(v) is dict for v in row.values()):
        return row
    out: dict[str, Any] = {}
    stack: list[tuple[str, dict[str, Any]]] = [("", row)]
    while stack:
        prefix, d = stack.pop()
        for k, v in d.items():
            name = f"{prefix}{k}"
            if type(v) is dict:
                stack.append((name + "/", v))
            else:
                out[name] = v
    return out


def column(rows: list[dict[str, Any]], key: str) -> list[Any]:
    """Every row's value for `key` (None where absent), looped in C."""
    return list(map(dict.get, rows, repeat(key)))


def find_step_key(keys: set[str]) -> str | None:
    hits = sorted(k for k in keys if is_step(k))
    for preferred in ("step", "global_step"):
        if preferred in hits:
            return preferred
    return hits[0] if hits else None


def steps_for(rows: list[dict[str, Any]], step_key: str | None, first_index: int,
              may_have_bools: bool = True) -> np.ndarray:
    """Each row's step; rows without one inherit the previous row's (or their index)."""
    n = len(rows)
    index = np.arange(first_index, first_index + n, dtype=np.float64)
    if step_key is None:
        return index
    steps, have = to_float_array(column(rows, step_key), may_have_bools)
    if have.all():
        return steps
    carry = np.where(have, np.arange(n), -1)
    np.maximum.accumulate(carry, out=carry)
    return np.where(carry >= 0, steps[np.maximum(carry, 0)], index)


def add_rows(rows: list[dict[str, Any]], cols: Columns, first_index: int, step_key: str | None,
             may_have_bools: bool = True) -> None:
    if not rows:
        return
    keys: set[str] = set().union(*rows)
    steps = steps_for(rows, step_key, first_index, may_have_bools)
    for key in keys:
        if key == step_key:
            continue
        vals = column(rows, key)
        arr, ok = to_float_array(vals, may_have_bools)
        if not ok.any():
            continue  # absent here, or a text column ("mode": "train"), not a metric
        if ok.all():
            cols.extend(key, steps, arr)
            continue
        cols.extend(key, steps[ok], arr[ok])
        bad = len(vals) - vals.count(None) - int(ok.sum())  # present but not a number
        if bad:
            cols.reject(key, bad)
