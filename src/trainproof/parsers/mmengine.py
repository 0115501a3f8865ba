"""MMEngine's scalar log (MMDetection, MMSegmentation, MMPretrain, ... 3.x):
`work_dirs/<name>/<timestamp>/vis_data/scalars.json` and the `<timestamp>.json` beside it
(LocalVisBackend writes the same lines to both), JSON Lines.

What LoggerHook writes (mmengine 0.10): a train line every `interval` iterations with
the smoothed losses, `lr`, `data_time`, `time` (seconds per iteration, not a clock), `iter`
and `step` (both the global iteration, 1-based) and, in epoch-based training, `epoch`; a
validation line after each validation with the metrics (`coco/bbox_mAP`, `toy/mse`,
`mIoU`), its own `data_time` and `time`, and `step` = the EPOCH number when
`log_metric_by_epoch` is True (its default, epoch-based configs) or the iteration when
it is False (iter-based configs). Read as one log, those steps went back from the
iteration to the epoch at every validation and the step counter was re-based each time.

Read here: train lines at their `step`; `time` read as `step_time`; validation lines
(no `iter`) apart, their keys without a `/` prefixed `val/` (their `time`/`data_time`
are not the training loop's; a `loss` becomes `val/loss`, the eval loss), placed at the
iteration where their epoch ended in an epoch-based log, at their own step otherwise
(a step below the iterations already logged is an epoch number even where the train
lines carry no `epoch`: placed at the last iteration logged before it).
An epoch's end is E * L when every epoch's first logged iteration is L after the
previous one's (fixed-length epochs, logged every `interval` inner iterations); else
the last iteration logged in that epoch; a note says which."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainproof.parsers.base import Columns, LineBlocks, RawLog, require_file
from trainproof.parsers.compressed import open_log
from trainproof.parsers.jsonl import BLOCK, MAX_LINE, Tally, decode_block, first_row, tally_notes
from trainproof.parsers.jsonutil import loads
from trainproof.parsers.progress import Planned
from trainproof.parsers.rows import add_rows

NAME = "mmengine"
_TRAIN_KEYS = frozenset({"step", "iter", "data_time", "time"})
_NAMES = re.compile(r"(scalars|\d{8}_\d{6})\.json")


def sniff(name: str, head: bytes) -> bool:
    if _NAMES.fullmatch(name) is None:
        return False
    row = first_row(head)
    return isinstance(row, dict) and row.keys() >= _TRAIN_KEYS


class _Epochs:
    """Per epoch, the first and last train step logged (a few numbers per epoch)."""

    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.seen: float = 0.0  # the last train step read so far

    def add(self, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            e, s = r.get("epoch"), r.get("step")
            if type(e) is int and type(s) in (int, float):
                self.first.setdefault(e, s)
                self.last[e] = s

    def ends(self) -> tuple[dict[int, float], str]:
        """Epoch -> the iteration it ended at, and how that was found."""
        order = sorted(self.first)
        pairs = list(itertools.pairwise(order))
        gaps = {self.first[b] - self.first[a] for a, b in pairs}
        if len(gaps) == 1 and all(b == a + 1 for a, b in pairs):
            length = gaps.pop()
            if length > 0:
                return ({e: e * length for e in order},
                        f"epochs of {length:g} iterations (the first logged iteration of each epoch "
                        f"is {length:g} after the last's)")
        return dict(self.last), "the last iteration logged in that epoch"


def read_rows(path: Path, tally: Tally, take: Callable[[list[dict[str, Any]]], None]) -> bool:
    """Feed `take` the decoded objects of a JSON-lines file a block at a time (a final
    line without its newline too, when it decodes); True when that last line was
    half-written. Shared with the mmcv 1.x reader (parsers/mmcv.py)."""
    planned = Planned()
    with open_log(path) as fh:
        lines = LineBlocks(fh, BLOCK, MAX_LINE)
        for chunk in lines:
            take(decode_block(chunk, tally, planned))
        tally.oversized += lines.oversized
        if not lines.tail.strip():
            return False
        try:
            last = loads(lines.tail.strip())
        except (ValueError, UnicodeDecodeError):
            return True
        if type(last) is not dict:
            return True
        take([last])
        return False


def per_iteration(row: dict[str, Any]) -> None:
    """OpenMMLab's `time` is seconds per iteration (IterTimerHook), not a clock: step_time."""
    if "time" in row:
        row["step_time"] = row.pop("time")


def read(path: Path) -> RawLog:
    require_file(path)
    cols, tally, epochs = Columns(), Tally(), _Epochs()
    evals: list[tuple[dict[str, Any], float]] = []  # (row, last train step before it): one per validation
    half_written = read_rows(path, tally, lambda rows: _take(rows, cols, tally, epochs, evals))
    notes = _place_evals(evals, epochs, cols)
    arrays = cols.arrays()
    if "step_time" in arrays:
        notes.append("mmengine's `time` is seconds per iteration: read as step_time")
    return RawLog(arrays, tally.records, notes=notes + tally_notes(tally, half_written, cols),
                  step_column="step")


def _take(rows: list[dict[str, Any]], cols: Columns, tally: Tally, epochs: _Epochs,
          evals: list[tuple[dict[str, Any], float]]) -> None:
    train = []
    for r in rows:
        if "iter" in r:
            per_iteration(r)
            train.append(r)
            if type(r.get("step")) in (int, float):
                epochs.seen = r["step"]
        else:
            evals.append(({k if k == "step" or "/" in k else f"val/{k}": v for k, v in r.items()}, epochs.seen))
    add_rows(train, cols, tally.records, "step")
    epochs.add(train)
    tally.records += len(rows)


def _place_evals(evals: list[tuple[dict[str, Any], float]], epochs: _Epochs, cols: Columns) -> list[str]:
    """Add the validation rows at the iteration they were made at; the notes that say how."""
    if not evals:
        return []
    if epochs.first:
        ends, how = epochs.ends()
        where = [ends.get(r.get("step")) for r, _ in evals]  # type: ignore[arg-type]
        said = f"placed at the iteration the epoch ended, from {how}"
    elif any(type(r.get("step")) in (int, float) and r["step"] < before for r, before in evals):
        # no `epoch` on the train lines, yet steps below the iterations already logged:
        # epoch numbers all the same; the epoch ended at or after the last train line
        where = [before for _, before in evals]
        said = "placed at the last iteration logged before each (the train lines carry no epoch)"
    else:  # iter-based: a validation line's step is the iteration
        add_rows([r for r, _ in evals], cols, 0, "step")
        return ["validation lines at their own step (an iter-based log: the iteration)"]
    placed = [{**r, "step": at} for (r, _), at in zip(evals, where, strict=True) if at is not None]
    add_rows(placed, cols, 0, "step")
    notes = [f"validation lines carry the epoch number as their step: {said}"]
    if len(placed) < len(evals):
        notes.append(f"{len(evals) - len(placed)} validation line(s) for an epoch without logged training ignored")
    return notes
