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
are not the training loop's; a `loss` becomes `val/loss`, the eval loss). Each goes
where it ran: at its own step in an iter-based log (the iteration); where its step is
an epoch count (runner.epoch, the epochs COMPLETED), at the iteration that epoch ended
when it is the epoch the train lines before it were in (validation after an epoch), and
otherwise at the last iteration logged before it (0 when none was): a count below that
epoch means the validation ran inside an epoch - an IterBasedTrainLoop never advances
runner.epoch, so with the by-epoch defaults every train line carries `epoch` 1 and every
validation step 0, wherever it ran. A step below the iterations already logged is an
epoch count even where the train lines carry no `epoch`: also placed at the last
iteration logged before it. No validation line is dropped.
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
    """A train line among the head's first 20 lines, after nothing but validation lines (a
    validation can be written before the first train line: one every 25 iterations, a train
    line every 30)."""
    if _NAMES.fullmatch(name) is None:
        return False
    for line in head.splitlines()[:20]:
        row = first_row(line)
        if row is None:  # not an object, or torn: first_row's rule, line by line
            continue
        if not isinstance(row, dict) or "step" not in row:
            return False
        if row.keys() >= _TRAIN_KEYS:
            return True
        if "iter" in row:  # not a validation line either
            return False
    return False


class _Epochs:
    """Per epoch, the first and last train step logged (a few numbers per epoch)."""

    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.seen: float = 0.0  # the last train step read so far
        self.seen_epoch: int | None = None  # and its `epoch` (None before any, or without one)

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
    evals: list[_Eval] = []  # one per validation
    half_written = read_rows(path, tally, lambda rows: _take(rows, cols, tally, epochs, evals))
    notes = _place_evals(evals, epochs, cols)
    arrays = cols.arrays()
    if "step_time" in arrays:
        notes.append("mmengine's `time` is seconds per iteration: read as step_time")
    return RawLog(arrays, tally.records, notes=notes + tally_notes(tally, half_written, cols),
                  step_column="step")


# a validation row (keys renamed), the last train step and that line's `epoch` read before it
_Eval = tuple[dict[str, Any], float, int | None]


def _take(rows: list[dict[str, Any]], cols: Columns, tally: Tally, epochs: _Epochs,
          evals: list[_Eval]) -> None:
    train = []
    for r in rows:
        if "iter" in r:
            per_iteration(r)
            train.append(r)
            if type(r.get("step")) in (int, float):
                epochs.seen = r["step"]
                epochs.seen_epoch = r["epoch"] if type(r.get("epoch")) is int else None
        else:
            evals.append(({k if k == "step" or "/" in k else f"val/{k}": v for k, v in r.items()},
                          epochs.seen, epochs.seen_epoch))
    add_rows(train, cols, tally.records, "step")
    epochs.add(train)
    tally.records += len(rows)


def _place_evals(evals: list[_Eval], epochs: _Epochs, cols: Columns) -> list[str]:
    """Add the validation rows at the iteration they were made at; the notes that say how."""
    if not evals:
        return []
    if epochs.first:
        ends, how = epochs.ends()
        where, inside = [], 0
        for r, before, epoch in evals:
            step = r.get("step")
            if epoch is not None and step == epoch:  # after the epoch the train lines before it were in
                where.append(ends.get(step, before))
            else:  # a lower count: inside an epoch (or before any train line)
                where.append(before)
                inside += 1
        notes = ["validation lines carry an epoch count as their step"
                 + (f": placed at the iteration the epoch ended, from {how}" if inside < len(evals) else "")]
        if inside:
            notes.append(f"{inside} validation line(s) whose epoch count is not the epoch of the train lines "
                         "before them (validation inside an epoch; an iter-based loop counts no epochs) "
                         "placed at the last iteration logged before each (0 before the first)")
    elif any(type(r.get("step")) in (int, float) and r["step"] < before for r, before, _ in evals):
        # no `epoch` on the train lines, yet steps below the iterations already logged:
        # epoch counts all the same; the validation ran at or after the last train line
        where = [before for _, before, _ in evals]
        notes = ["validation lines carry an epoch count as their step: placed at the last iteration logged "
                 "before each (the train lines carry no epoch)"]
    else:  # iter-based: a validation line's step is the iteration
        add_rows([r for r, _, _ in evals], cols, 0, "step")
        return ["validation lines at their own step (an iter-based log: the iteration)"]
    add_rows([{**r, "step": at} for (r, _, _), at in zip(evals, where, strict=True)], cols, 0, "step")
    return notes
