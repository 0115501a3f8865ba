"""Detectron2's `metrics.json` (JSONWriter, detectron2/utils/events.py): JSON Lines, one
object per iteration written, keys sorted, `"iteration"` the step.

It is read as any JSON-lines log (parsers/jsonl.py) with one difference: detectron2's
`time` is the median SECONDS PER ITERATION over the last 20 (IterationTimer), not a
clock, so it is read as `step_time` (beside `data_time`, the loader's share) and a note
says so. Evaluation results (`bbox/AP`, `segm/AP`, ...) are their own lines or share the
training line of the iteration they were made at; a line of an earlier iteration written
after a later one (an evaluation between two writes) only holds evaluation columns,
each column in order on its own."""

from __future__ import annotations

from pathlib import Path

from trainproof.parsers import jsonl
from trainproof.parsers.base import RawLog

NAME = "detectron2"
# keys only detectron2's trainer writes beside "iteration" (SimpleTrainer, CommonMetricPrinter)
_OWN = ("total_loss", "eta_seconds")


def sniff(name: str, head: bytes) -> bool:
    if not name.endswith((".json", ".jsonl")):
        return False
    row = jsonl.first_row(head)
    return isinstance(row, dict) and "iteration" in row and any(k in row for k in _OWN)


def read(path: Path) -> RawLog:
    raw = jsonl.read(path)
    if "time" in raw.columns and "step_time" not in raw.columns:
        raw.columns["step_time"] = raw.columns.pop("time")
        raw.notes.insert(0, "detectron2's `time` is seconds per iteration: read as step_time")
    return raw
