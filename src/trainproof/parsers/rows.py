"""Decoded JSON rows (dicts) to columns, a block at a time, column-wise."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import compress, repeat
from operator import is_not
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


_FEW_MISSING = 64
Getter = Callable[[str], list[Any]]  # a key -> every row's value for it, None where absent


def steps_for(rows: list[dict[str, Any]], step_key: str | None, first_index: int,
              may_have_bools: bool = True, get: Getter | None = None, cells: Cells | None = None) -> np.ndarray:
    """Each row's step; rows without one inherit the previous row's (or their index).
    `cells` (typed rows, no booleans): a step in every row, converted as the cells are read
    (the conversion to_float_array applies to the list) - no list of 5M steps; any NaN or
    Inf (a gap, a literal numpy reads as one) takes the list way below."""
    n = len(rows)
    if step_key is not None and cells is not None and n:
        got = _dense(step_key, cells, n)
        if got is not None and not (np.isnan(got).any() or np.isinf(got).any()):
            return got
    index = np.arange(first_index, first_index + n, dtype=np.float64)
    if step_key is None:
        return index
    vals = column(rows, step_key) if get is None else get(step_key)
    mask = present(vals)
    if mask is None:
        steps, have = to_float_array(vals, may_have_bools)
    else:
        steps, have = np.full(n, np.nan), mask.copy()
        got, ok = to_float_array(list(compress(vals, mask)), may_have_bools)
        steps[mask], have[mask] = got, ok
    if have.all():
        return steps
    carry = np.where(have, np.arange(n), -1)
    np.maximum.accumulate(carry, out=carry)
    return np.where(carry >= 0, steps[np.maximum(carry, 0)], index)


def _numbers(key: str, vals: list[Any], steps: np.ndarray, cols: Columns) -> bool:
    """A column of numbers and gaps, converted in one C call before looking for gaps: numpy
    reads None as NaN, so an array without NaN had a number in every cell, and where it has
    NaN the gaps are the None cells (the other NaNs are values). Only for cells known to
    hold no boolean (numpy reads True as 1.0). Adds what the general loop below would and
    returns True, or returns False (text, anything numpy cannot convert) and adds nothing."""
    try:
        arr = np.array(vals, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):  # OverflowError: an int past float64's range
        return False
    if arr.ndim != 1 or np.isinf(arr).any():  # an inf may be a literal past the range: see number()
        return False
    if not np.isnan(arr).any():
        if arr.size:
            cols.extend(key, steps, arr)
        return True
    mask = present(vals)
    if mask is None:
        cols.extend(key, steps, arr)
    elif mask.any():
        cols.extend(key, steps[mask], arr[mask])
    return True


def present(vals: list[Any]) -> np.ndarray | None:
    """Mask of the cells that hold something, or None when every cell does (C loops)."""
    missing = vals.count(None)
    if missing == 0:
        return None
    if missing <= _FEW_MISSING:  # a dense column with a few gaps (the eval rows): find them in C
        mask, at = np.ones(len(vals), dtype=bool), -1
        for _ in range(missing):
            at = vals.index(None, at + 1)
            mask[at] = False
        return mask
    return np.fromiter(map(is_not, vals, repeat(None)), dtype=bool, count=len(vals))


def add_rows(rows: list[dict[str, Any]], cols: Columns, first_index: int, step_key: str | None,
             may_have_bools: bool = True) -> None:
    if not rows:
        return
    add_columns(rows, set().union(*rows), lambda key: column(rows, key), cols, first_index, step_key,
                may_have_bools)


# a key -> (an iterator over every row's value, None where absent; row i's value), or None
# when the first row has no value (a sparse column, read from the list below)
Cells = Callable[[str], "tuple[Iterator[Any], Callable[[int], Any]] | None"]


def _dense(key: str, cells: Cells, n: int, got: Any = None) -> np.ndarray | None:
    """`key`'s cells converted by np.fromiter as they are read (None reads as NaN), or None
    when the first row has none or a cell does not convert."""
    got = cells(key) if got is None else got
    if got is None:
        return None
    try:
        return np.fromiter(got[0], dtype=np.float64, count=n)
    except (ValueError, TypeError, OverflowError):
        return None


def _streamed(key: str, cells: Cells, n: int, steps: np.ndarray, cols: Columns) -> bool:
    """_numbers without the list of cells (typed rows only, which hold no boolean): numpy
    converts the cells as they are read, the same conversion np.array applies to the list.
    A NaN is a gap where the row has no value; with more than a few NaN, or any Inf or a
    cell numpy cannot convert, returns False and adds nothing (the list way decides)."""
    got = cells(key)
    if got is None:
        return False
    arr = _dense(key, cells, n, got)
    if arr is None or np.isinf(arr).any():
        return False
    nan = np.flatnonzero(np.isnan(arr))
    if nan.size > _FEW_MISSING:
        return False
    cell = got[1]
    gaps = [i for i in nan.tolist() if cell(i) is None]
    if not gaps:
        cols.extend(key, steps, arr)
    else:
        keep = np.ones(n, dtype=bool)
        keep[gaps] = False
        cols.extend(key, steps[keep], arr[keep])
    return True


def add_columns(rows: list[Any], keys: Iterable[str], get: Getter, cols: Columns, first_index: int,
                step_key: str | None, may_have_bools: bool = True, cells: Cells | None = None) -> None:
    """The columns of decoded rows, whatever holds them (dicts, or typed.py's structs):
    `get(key)` gives every row's value for `key`, None where the row has none; `cells`
    (typed rows) the same without building the list."""
    steps = steps_for(rows, step_key, first_index, may_have_bools, get,
                      cells if cells is not None and not may_have_bools else None)
    for key in keys:
        if key == step_key:
            continue
        if cells is not None and not may_have_bools and rows and _streamed(key, cells, len(rows), steps, cols):
            continue
        vals = get(key)
        # a first cell that is a gap suggests a sparse column (eval rows), cheaper below
        if not may_have_bools and vals and vals[0] is not None and _numbers(key, vals, steps, cols):
            continue
        mask = present(vals)
        if mask is not None:  # sparse (eval entries, epoch rows): keep only the cells that exist
            vals = list(compress(vals, mask))
        arr, ok = to_float_array(vals, may_have_bools)
        if not ok.any():
            continue  # a text column ("mode": "train"), not a metric
        at = steps if mask is None else steps[mask]
        if ok.all():
            cols.extend(key, at, arr)
        else:
            cols.extend(key, at[ok], arr[ok])
            cols.reject(key, int((~ok).sum()))


def add_matrix(matrix: np.ndarray, keys: tuple[str, ...], cols: Columns, step_key: str) -> None:
    """The columns of typed.Template.numbers' matrix: what add_columns adds for the same
    rows. The caller checked that `step_key` is a column without NaN or Inf and that no
    cell is infinite; a NaN is a row without the key (the matrix has no other NaN), so
    a column's points are its non-NaN cells, dense and sparse columns alike."""
    by_key = np.ascontiguousarray(matrix.T)  # a column per row of this array: contiguous
    n = by_key.shape[1]
    steps = by_key[keys.index(step_key)]
    # _extend_by_key's additions, with the gaps of every key found by one isnan and one
    # count over the whole array instead of three calls a key, and columns with gaps in
    # the same rows told apart by their gap masks' bytes instead of comparing each mask
    # with every one kept: a trainer_state.json is read in ~1 MiB slices (hf.SLICE), ~180
    # for 1M entries, and this ran 0.115 -> 0.105 s over them (#14)
    gaps = np.isnan(by_key)
    missing = np.count_nonzero(gaps, axis=1).tolist()
    shared: dict[bytes, np.ndarray] = {}  # a gap mask's bytes -> the steps of its rows
    for key, values, gap, miss in zip(keys, by_key, gaps, missing, strict=True):
        if key == step_key:
            continue
        if miss == 0:
            cols.extend(key, steps, values)
        elif miss < n:
            keep = ~gap
            at = shared.get(mask := gap.tobytes())
            if at is None:
                at = shared[mask] = steps[keep]
            cols.extend(key, at, values[keep])


def _extend_by_key(by_key: np.ndarray, keys: tuple[str, ...], cols: Columns, steps: np.ndarray,
                   step_key: str | None) -> None:
    """Each key's non-NaN cells (NaN is a row without the key) as its column's points at
    `steps`. Columns with gaps in the same rows (the train keys, absent from the eval rows)
    get one steps array between them, the same object: Columns then keeps one steps buffer
    for them all instead of one each (3 x 8 MB a 1M-entry file, #14)."""
    kept: list[tuple[np.ndarray, np.ndarray]] = []
    for key, values in zip(keys, by_key, strict=True):
        if key == step_key:
            continue
        gaps = np.isnan(values)
        if not gaps.any():
            cols.extend(key, steps, values)
        elif not gaps.all():
            keep = ~gaps
            at = next((s for k, s in kept if np.array_equal(k, keep)), None)
            if at is None:
                at = steps[keep]
                kept.append((keep, at))
            cols.extend(key, at, values[keep])


def add_by_key(by_key: np.ndarray, keys: tuple[str, ...], cols: Columns, first_index: int,
               step_key: str | None) -> None:
    """The columns of typed.Template.numbers_lines' array (a row of values per key, NaN
    where a line has no value: there is no other NaN or Inf): what add_columns adds for the
    same rows. A line without a step takes the previous line's, or its index when no
    earlier line of the block has one (steps_for)."""
    n = by_key.shape[1]
    if step_key in keys:
        steps = by_key[keys.index(step_key)]
        have = ~np.isnan(steps)
        if not have.all():
            carry = np.where(have, np.arange(n), -1)
            np.maximum.accumulate(carry, out=carry)
            steps = np.where(carry >= 0, steps[np.maximum(carry, 0)],
                             np.arange(first_index, first_index + n, dtype=np.float64))
    else:  # no step key, or one no row of the template had: every line's index
        steps = np.arange(first_index, first_index + n, dtype=np.float64)
    _extend_by_key(by_key, keys, cols, steps, step_key)
