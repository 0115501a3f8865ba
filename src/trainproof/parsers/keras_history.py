"""Keras `History` saved as JSON: `json.dump(model.fit(...).history, f)`, one object of
column lists ({"loss": [...], "val_loss": [...], ...}), one value per epoch; the same
wrapped as {"history": {...}}; and pandas' `pd.DataFrame(history.history).to_json()`,
whose columns are objects keyed by the row index ({"loss": {"0": ..., "1": ...}}).

Steps are epoch numbers (list index + 1). Keras appends val_* only on the epochs that
validated, so with `validation_freq=k` those lists are shorter: they are placed at
epochs k, 2k, ... and a note says so. The document is decoded whole (a history holds a
value per epoch: a few KB); a file past MAX_BYTES is refused, not buffered."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, number
from trainproof.parsers.columns import looks_like_metric
from trainproof.parsers.jsonutil import read_document

NAME = "keras"
MAX_BYTES = 64 << 20  # millions of epochs; anything larger is not a History
# Keras' own metric names that are not loss/lr columns: a history whose head shows only
# these (an `accuracy` list that fills the sniffed KiBs) is still one
_KERAS_METRICS = frozenset({"accuracy", "acc", "mae", "mse", "auc", "precision", "recall",
                            "categorical_accuracy", "sparse_categorical_accuracy", "binary_accuracy"})
# a key whose value opens a list of numbers, or a pandas column ({"0": number)
_COLUMN = re.compile(rb'"([^"\\]{1,200})"\s*:\s*(?:\[\s*(?:-?[\d.]|NaN|-?Infinity|null|\])'
                     rb'|\{\s*"\d+"\s*:\s*(?:-?[\d.]|null))')
_OPEN = re.compile(rb'\{\s*(?:"history"\s*:\s*\{\s*)?"')


def sniff(name: str, head: bytes) -> bool:
    if not name.endswith(".json"):
        return False
    body = head.lstrip()
    m = _OPEN.match(body)
    if m is None:
        return False
    first = _COLUMN.match(body, m.end() - 1)  # the first key must open a column
    if first is None:
        return False
    keys = [k.decode("utf-8", "replace") for k in _COLUMN.findall(body)]
    return any(looks_like_metric(k) or k.lower() in _KERAS_METRICS or k.lower().startswith("val_")
               for k in keys)


def read(path: Path) -> RawLog:
    doc = read_document(path, MAX_BYTES, "a Keras History JSON holds one value per epoch",
                        "truncated or corrupt Keras History")
    notes: list[str] = []
    if isinstance(doc, dict) and set(doc) == {"history"} and isinstance(doc["history"], dict):
        doc = doc["history"]
        notes.append("read the History under the document's \"history\" key")
    if not isinstance(doc, dict) or not doc:
        raise InputError(f"{path}: not a Keras History (expected an object of per-epoch lists)")
    cols, epochs, nulls = Columns(), 0, 0
    shorter: dict[str, int] = {}
    lengths = [len(v) for v in doc.values() if isinstance(v, list | dict)]
    longest = max(lengths, default=0)
    for key, value in doc.items():
        if isinstance(value, dict):  # pandas: {"0": v, ...}, NaN written as null
            steps, cells = _indexed(path, key, value)
            nulls += sum(1 for c in cells if c is None)
            cells = [math.nan if c is None else c for c in cells]
        elif isinstance(value, list):
            every = _every(len(value), longest)
            if every is None:
                notes.append(f"'{key}': {len(value)} value(s) for {longest} epochs fit no validation_freq; "
                             "column ignored")
                continue
            if every > 1:
                shorter[key] = every
            steps, cells = np.arange(1, len(value) + 1, dtype=np.float64) * every, value
        else:
            continue  # a scalar beside the lists (a note, a run name): not a column
        epochs = max(epochs, _add(cols, key, steps, cells))
    arrays = cols.arrays()
    if not arrays:
        raise InputError(f"{path}: not a Keras History (no column holds numbers)")
    notes.append("a Keras History holds one value per epoch: step = epoch number (list index + 1)")
    notes += [f"'{k}' has a value every {e} epochs (validation_freq={e}): placed at epochs {e}, {2 * e}, ..."
              for k, e in shorter.items()]
    if nulls:
        notes.append(f"{nulls} null value(s) read as NaN (pandas' to_json writes NaN as null)")
    return RawLog(arrays, epochs, notes=notes + cols.bad_notes())


def _add(cols: Columns, key: str, steps: np.ndarray, cells: list[Any]) -> int:
    """Add a column's numbers (null is no value; text is counted as rejected); returns
    the last epoch that holds a number, 0 if none."""
    vals = [None if c is None else number(c) for c in cells]
    keep = np.fromiter((v is not None for v in vals), dtype=bool, count=len(vals))
    rejected = sum(1 for c, v in zip(cells, vals, strict=True) if c is not None and v is None)
    if rejected:
        cols.reject(key, rejected)
    if not keep.any():
        return 0
    arr = np.array([v for v in vals if v is not None], dtype=np.float64)
    cols.extend(key, steps[keep], arr)
    return int(steps[keep].max())


def _every(n: int, longest: int) -> int | None:
    """The validation frequency a list of n values implies in a History of `longest`
    epochs (Keras validates when epoch % k == 0), or None when no k fits."""
    if n == 0:
        return 1
    every = longest // n
    return every if longest // every == n else None


def _indexed(path: Path, key: str, value: dict[str, Any]) -> tuple[np.ndarray, list[Any]]:
    """A pandas column {"0": v, "1": v, ...}: (epochs, cells)."""
    steps = []
    for index in value:
        try:
            steps.append(int(index) + 1)
        except ValueError:
            raise InputError(f"{path}: column {key!r} is keyed by {index!r}, not a row index") from None
    return np.asarray(steps, dtype=np.float64), list(value.values())
