"""Sacred's FileStorageObserver run: `<basedir>/<run_id>/metrics.json`, beside run.json,
config.json and cout.txt.

metrics.json is one JSON object, rewritten whole at every heartbeat (sorted keys,
indent 2): each key a metric name given to `_run.log_scalar(name, value[, step])`, each
value `{"steps": [...], "timestamps": [...], "values": [...]}` (steps counted 0, 1, ...
per metric when the call gave none; NaN/Inf written as bare NaN/Infinity). A metric is
read when its steps and values are lists of equal length; anything else is named in a
note and skipped. Names map through columns.py (`training.loss`, `train.loss`, `loss`
-> loss; `validation.loss`, `val_loss` -> eval_loss). The ISO timestamps are not read.
run.json beside it gives the experiment's name and the run's status (COMPLETED, FAILED,
INTERRUPTED, RUNNING, ...) as a note, with a failed run's exception line. The document
is decoded whole: a file past MAX_BYTES is refused, not buffered; a torn file (killed
mid-rewrite) is one InputError line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, number
from trainproof.parsers.jsonutil import loads, read_document

NAME = "sacred"
MAX_BYTES = 256 << 20  # tens of millions of points; a larger file is not decoded whole
RUN_MAX = 16 << 20  # run.json is read for its status and experiment name only
RUN_JSON = "run.json"
# the first metric's object opens with one of Sacred's three lists (keys are sorted)
_OPEN = re.compile(rb'\{\s*"(?:[^"\\]|\\.){1,500}"\s*:\s*\{\s*"(?:steps|timestamps|values)"\s*:\s*\[')


def sniff(name: str, head: bytes) -> bool:
    return name.endswith(".json") and _OPEN.match(head.lstrip()) is not None


def read(path: Path) -> RawLog:
    doc = read_document(path, MAX_BYTES, "not read as one Sacred metrics.json",
                        "a truncated or corrupt Sacred metrics.json")
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a Sacred metrics.json (expected an object of metrics)")
    cols, records, skipped = Columns(), 0, []
    for key, metric in doc.items():
        steps, values = _lists(metric)
        if steps is None or values is None:
            skipped.append(key)
            continue
        records += _add(cols, key, steps, values)
    arrays = cols.arrays()
    if not arrays and doc:
        raise InputError(f"{path}: not a Sacred metrics.json (no metric holds steps and values)")
    status, notes = _run_notes(path.parent / RUN_JSON)
    if skipped:
        notes.append(f"{len(skipped)} metric(s) without equal-length steps and values lists skipped: "
                     + ", ".join(repr(k) for k in skipped[:5]) + (" ..." if len(skipped) > 5 else ""))
    return RawLog(arrays, records, notes=notes + cols.bad_notes(), meta={"status": status} if status else {})


def _lists(metric: Any) -> tuple[list[Any] | None, list[Any] | None]:
    if not isinstance(metric, dict):
        return None, None
    steps, values = metric.get("steps"), metric.get("values")
    if type(steps) is not list or type(values) is not list or len(steps) != len(values):
        return None, None
    return steps, values


def _add(cols: Columns, key: str, steps: list[Any], values: list[Any]) -> int:
    """One metric's points (a point whose step or value is not a number is counted as rejected)."""
    pairs = [(s, v) for s, v in zip(map(number, steps), map(number, values), strict=True)
             if s is not None and v is not None]
    if len(pairs) < len(steps):
        cols.reject(key, len(steps) - len(pairs))
    if pairs:
        arr = np.array(pairs, dtype=np.float64)
        cols.extend(key, arr[:, 0], arr[:, 1])
    return len(steps)


def _run_notes(run_json: Path) -> tuple[str | None, list[str]]:
    """The run's status and the notes from run.json: 'Sacred run of experiment X (STATUS)',
    and a failed run's exception line."""
    try:
        with open(run_json, "rb") as fh:
            info = loads(fh.read(RUN_MAX))
    except (OSError, ValueError, UnicodeDecodeError):
        return None, []  # absent, unreadable or torn: the metrics are judged without it
    if not isinstance(info, dict):
        return None, []
    exp = info.get("experiment")
    name = exp.get("name") if isinstance(exp, dict) else None
    status = info.get("status") if isinstance(info.get("status"), str) else None
    notes = [f"Sacred run of experiment '{name}' ({status or '?'})"]
    trace = info.get("fail_trace")
    if isinstance(trace, list) and trace and isinstance(trace[-1], str):
        notes.append(f"the run failed with: {trace[-1].strip()[:300]}")
    return status, notes
