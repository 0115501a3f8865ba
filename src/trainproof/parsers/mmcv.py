"""mmcv 1.x's TextLoggerHook JSON log, `work_dirs/<name>/<timestamp>.log.json`
(MMDetection 2.x, MMSegmentation 0.x, MMClassification 0.x, ... before MMEngine).

What the hook writes (mmcv 1.7, runner/hooks/logger/text.py): first the runner's meta
as one line (`{"env_info": ..., "config": ..., "seed": ..., "exp_name": ...}`) when
there is one; then one line per log: `{"mode": "train", "epoch": E, "iter": I, "lr": ...,
"memory": ..., "data_time": ..., <losses>, "loss": ..., "time": ...}` every `interval`
iterations, and `{"mode": "val", "epoch": E, "iter": N, "lr": ..., <metrics>}` after
each evaluation. In an epoch-based runner a train line's `iter` is the iteration WITHIN
epoch E (1-based); in an iter-based one it is the global iteration. A val line's `iter`
is the length of the validation loader (EvalHook's eval_iter_num), not a training
step. `time` is seconds per iteration (read as step_time); `lr` is an object per
optimizer when there are several (flattened to `lr/<name>`).

Read here: the log is epoch-based when a train line's `iter` goes back as its epoch
goes up; its global step is then (E - 1) x L + I, where L, the iterations per epoch, is
the largest `iter` logged in any epoch (the log holds nothing else that says it: a val
line's `iter` counts validation batches; with ignore_last, the hook's default, an
epoch's last partial interval is not logged, so L may be short by less than one
logging interval, and a note says so). Otherwise `iter` is the step. A val line's keys
are prefixed `val/` (its `loss` is the eval loss, its `lr`/`time` not the loop's) and
it is placed where its evaluation ran: at the end of epoch E (E x L) in an epoch-based
log, at the last train iteration logged before it otherwise. The meta line is not a
record. Train lines are encoded as E x 2**32 + I while reading (exact in float64) and
mapped to steps once L is known, so memory stays proportional to the points kept."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.parsers.base import Columns, RawLog, require_file
from trainproof.parsers.jsonl import Tally, tally_notes
from trainproof.parsers.mmengine import per_iteration, read_rows
from trainproof.parsers.rows import add_rows

NAME = "mmcv"
SCALE = float(2 ** 32)  # an in-epoch iteration is below this; E x SCALE + I stays exact
MAX_EPOCH = 2 ** 20  # (2**20 x 2**32 = 2**52: float64 holds every such integer)
_MODE = re.compile(rb'(?:^|\n)\{"mode": "(?:train|val)", "epoch": \d+, "iter": \d+')  # json.dump's spacing
_KEEP = frozenset({"mode", "epoch", "iter"})  # a val line's keys that are not prefixed


def sniff(name: str, head: bytes) -> bool:
    """The meta line the hook writes first (the environment, then the config), or a log line
    of its exact shape in the head (the meta line, a whole config, may fill the head)."""
    return name.endswith(".json") and (head.lstrip().startswith(b'{"env_info": "')
                                       or _MODE.search(head) is not None)


class _State:
    """What the stream has shown so far: a few numbers, plus one row per validation."""

    def __init__(self) -> None:
        self.cols = Columns()
        self.tally = Tally()
        self.last: tuple[int, int] | None = None  # (epoch, iter) of the last train line
        self.epoch_based = False
        self.longest = 0  # the largest in-epoch iteration logged
        self.evals: list[tuple[dict[str, Any], tuple[int, int] | None]] = []
        self.meta: dict[str, object] = {}
        self.skipped = 0  # lines with a mode but no integer epoch/iter

    def take(self, rows: list[dict[str, Any]]) -> None:
        train = []
        for r in rows:
            mode, e, i = r.get("mode"), r.get("epoch"), r.get("iter")
            if mode is None:
                self._meta(r)
                continue
            if type(e) is not int or type(i) is not int or not (0 <= e < MAX_EPOCH and 0 <= i < SCALE):
                self.skipped += 1
                continue
            if mode == "train":
                self._train(r, e, i)
                train.append(r)
            else:
                self.evals.append(({k if k in _KEEP else f"val/{k}": v for k, v in r.items()}, self.last))
        add_rows(train, self.cols, self.tally.records, "step")
        self.tally.records += len(train)

    def _train(self, r: dict[str, Any], e: int, i: int) -> None:
        if self.last is not None and e > self.last[0] and i <= self.last[1]:
            self.epoch_based = True  # the iteration counter restarted with the epoch
        self.last = (e, i)
        self.longest = max(self.longest, i)
        per_iteration(r)
        del r["iter"]
        r["step"] = r["epoch"] = e * SCALE + i  # the epoch column: epochs completed, once L is known

    def _meta(self, r: dict[str, Any]) -> None:
        """The runner's meta line: the seed and experiment name kept, the rest (the
        environment and the whole config as text) not."""
        for key in ("exp_name", "seed"):
            if type(r.get(key)) in (str, int):
                self.meta[key] = r[key]


def read(path: Path) -> RawLog:
    require_file(path)
    st = _State()
    half_written = read_rows(path, st.tally, st.take)
    st.epoch_based = st.epoch_based and st.longest > 0  # every `iter` 0: nothing to count epochs by
    length = st.longest if st.epoch_based else 0
    arrays = {k: (_global(s, length), v) for k, (s, v) in st.cols.arrays().items()}
    notes = []
    if st.epoch_based:
        s, v = arrays["epoch"]
        arrays["epoch"] = (s, s / length)  # epochs completed at each step, as HF logs them
        notes.append(f"epoch-based log: step = (epoch - 1) x {length} + the iteration within the epoch; "
                     f"{length} iterations per epoch is the largest logged (an epoch's last, shorter "
                     "logging interval is not logged by default: the true length may be a little more)")
    else:
        arrays.pop("epoch", None)  # loader passes of an iter-based runner: not the epochs the rules mean
    evals = _placed(st, length)
    if evals:
        extra = Columns()
        add_rows(evals, extra, 0, "step")
        for k, (s, v) in extra.arrays().items():
            arrays[k] = (s, v)
        where = "at the end of their epoch" if st.epoch_based else "at the last train iteration logged before each"
        notes.append(f"{len(evals)} validation line(s) placed {where} (their `iter` counts validation batches)")
    if "step_time" in arrays:
        notes.append("mmcv's `time` is seconds per iteration: read as step_time")
    if st.skipped:
        notes.append(f"{st.skipped} line(s) without an integer epoch and iter skipped")
    return RawLog(arrays, st.tally.records + len(evals), meta=st.meta,
                  notes=notes + tally_notes(st.tally, half_written, st.cols), step_column="step")


def _global(steps: np.ndarray, length: int) -> np.ndarray:
    """Encoded E x SCALE + I -> the global iteration ((E - 1) x length + I, or I when length is 0)."""
    epoch, inner = np.divmod(steps, SCALE)
    return inner if length == 0 else (epoch - 1) * length + inner


def _placed(st: _State, length: int) -> list[dict[str, Any]]:
    """The validation rows at the iteration their evaluation ran."""
    out = []
    for row, before in st.evals:
        r = {k: v for k, v in row.items() if k not in _KEEP}
        if st.epoch_based:
            r["step"] = row["epoch"] * length
        else:
            r["step"] = 0 if before is None else before[1]
        out.append(r)
    return out
