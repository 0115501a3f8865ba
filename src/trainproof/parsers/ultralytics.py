"""Ultralytics YOLO `results.csv` (runs/<task>/<name>/results.csv): one row per epoch,
written by the trainer's save_metrics after each validation.

What the columns are, from ultralytics' trainer and loss code (8.x): each `train/X_loss`
is the epoch's running mean, over its batches, of one loss component already multiplied
by its gain (hyp.box, hyp.cls, hyp.dfl, ...); the trainer back-propagates
`sum(components) * batch_size`, so the sum of the train/*_loss columns is the optimised
loss divided by the batch size, averaged over the epoch. `val/X_loss` are the same
components averaged over the validation batches. Values are rounded to 5 decimals.

Read here: step = the `epoch` column; `loss` = the sum of the train/*_loss components
and `eval_loss` = the sum of the val/*_loss ones (on rows where every component has a
number); `lr` = `lr/pg0` (the parameter group of weights with decay; pg1 and pg2, the
norm weights and biases, differ only during warm-up). Every raw column is kept too.
A classify run logs one `train/loss` / `val/loss`, read as they are. Older releases pad
every cell with spaces; the CSV reader strips them. YOLOv5's results.csv has the same
shape (train/box_loss, train/obj_loss, train/cls_loss, ..., x/lr0..2; its `epoch`
counts from 0): read the same way, lr = x/lr0."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trainproof.model import InputError
from trainproof.parsers import csvlog
from trainproof.parsers.base import RawLog

NAME = "ultralytics"
_LRS = ("lr/pg0", "x/lr0")  # YOLOv8+ names the parameter groups pg0..2; YOLOv5 x/lr0..2


def _header(head: bytes) -> list[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    return [c.strip() for c in first.split(",")]


def sniff(name: str, head: bytes) -> bool:
    if not name.endswith(".csv"):
        return False
    cols = _header(head)
    return (cols[:1] == ["epoch"] and any(lr in cols for lr in _LRS)
            and any(c.startswith("train/") and c.endswith("loss") for c in cols))


def _components(names: list[str], split: str) -> list[str]:
    return sorted(n for n in names if n.startswith(f"{split}/") and n.endswith("_loss"))


def read(path: Path) -> RawLog:
    # every epoch row holds every column; YOLOv5's segment trainer appends its final validation
    # as a row of 13 cells under 20 names (the metrics and val losses shifted left under the
    # train losses), which read by position put a mAP where the box loss is
    raw = csvlog.read(path, whole_rows=True)
    if "epoch" not in raw.columns:
        raise InputError(f"{path}: no 'epoch' column; not an Ultralytics results.csv")
    rows, epochs = raw.columns["epoch"]
    # the CSV reader's steps here are row numbers (no step column): 0 .. records - 1
    size = max([raw.records] + [int(r.max()) + 1 for r, _ in raw.columns.values() if r.size])
    by_row = np.full(size, np.nan)
    by_row[rows.astype(np.int64)] = epochs
    cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, (r, v) in raw.columns.items():
        if name == "epoch":
            continue
        at = by_row[r.astype(np.int64)]
        keep = ~np.isnan(at)  # a row without an epoch has no step to stand at
        cols[name] = (at[keep], v[keep])
    notes = ["Ultralytics results.csv: one row per epoch, step = epoch"]
    for split, target in (("train", "loss"), ("val", "eval_loss")):
        parts = _components(list(cols), split)
        if parts and target not in cols:
            cols[target] = _summed(cols, parts)
            notes.append(f"{target} = {' + '.join(parts)} (gain-weighted components; "
                         "their sum is the optimised loss per batch divided by the batch size)")
    lr = next((name for name in _LRS if name in cols), None)
    if lr is not None and "lr" not in cols:
        cols["lr"] = cols[lr]
        notes.append(f"lr = {lr}")
    return RawLog(cols, raw.records, notes=notes + raw.notes, meta=raw.meta, step_column="epoch")


def _summed(cols: dict[str, tuple[np.ndarray, np.ndarray]], parts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The components' sum at the epochs where every one of them has a value."""
    steps = cols[parts[0]][0]
    for p in parts[1:]:
        steps = np.intersect1d(steps, cols[p][0])
    total = np.zeros(steps.size)
    for p in parts:
        s, v = cols[p]
        total += v[np.searchsorted(s, steps)] if np.all(s[1:] > s[:-1]) else _lookup(s, v, steps)
    return steps, total


def _lookup(s: np.ndarray, v: np.ndarray, at: np.ndarray) -> np.ndarray:
    """v at each step of `at`, the last write winning where a step repeats (a resumed run)."""
    last = {float(k): float(x) for k, x in zip(s, v, strict=True)}
    return np.array([last[float(k)] for k in at])
