"""Coqui Trainer text logs (`trainer_0_log.txt`), ANSI colours and all.

Training blocks start at `--> TIME: ... GLOBAL_STEP: N` and list `| > key: value
(running avg)`; the value, not the running average, is the point. `--> EVAL
PERFORMANCE` blocks list `| > avg_key: value (+delta)` and become eval_* columns at
the last global step seen. BEST MODEL and CHECKPOINT lines are kept as metadata, and so is
which weights each evaluation judged (meta["coqui_evals"]: the eval's logged step, the
epoch's last training step when `STEP: i/n` says it, and the first training step logged
after it), for parsers/beside.py to match the run directory's best_model_N.pth /
checkpoint_N.pth files against."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from trainproof.parsers.base import Columns, RawLog, number, require_file
from trainproof.parsers.compressed import open_log

NAME = "coqui"
_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
_STEP = re.compile(rb"GLOBAL_STEP:\s*(-?\d+)")
_IN_EPOCH = re.compile(rb"STEP:\s*(\d+)/(\d+)\s*--")  # the batch index and the epoch's last index
_FIELD = re.compile(rb"^\s*\|\s*>\s*([\w./-]+):\s*(\S+)")
# Coqui logs a clipped gradient norm as the tensor's repr: `tensor(3.3801)`, on a GPU
# `tensor(3.3801, device='cuda:0')` (cut at the space by _FIELD)
_TENSOR = re.compile(rb"tensor\(([^,)]+)[,)]")
_SAVED = re.compile(rb">\s*(BEST MODEL|CHECKPOINT)\s*:\s*(\S.*?)\s*$")


def sniff(name: str, head: bytes) -> bool:
    if re.fullmatch(r"trainer_\d+_log\.txt", name):
        return True
    return b"GLOBAL_STEP:" in head or b"> Training Environment:" in head


class Decoder:
    """The log's state machine, fed whole lines: `read` feeds it a file, `watch` the
    lines each poll found appended."""

    def __init__(self) -> None:
        self.cols = Columns()
        self.step: float = 0.0
        self.mode = ""
        self.records = 0
        self.best: list[str] = []
        self.checkpoints: list[str] = []
        # one [eval step, the epoch's last train step or None, first train step logged after
        # it or None] per evaluation: a few hundred at most (one per epoch)
        self.evals: list[list[float | None]] = []
        self.epoch_end: float | None = None
        # grad_norm values logged, and how many were a bare 0 rather than a tensor's repr
        self.grad_norms = [0, 0]

    def feed(self, lines: Iterable[bytes]) -> None:
        for raw in lines:
            self._line(_ANSI.sub(b"", raw) if b"\x1b" in raw else raw)

    def _line(self, line: bytes) -> None:
        m = _FIELD.match(line)
        if m:
            if self.mode:
                key = m.group(1).decode("ascii", "replace")
                if key == "grad_norm" and self.mode == "train":
                    self.grad_norms[0] += 1
                    self.grad_norms[1] += number(m.group(2).decode("ascii", "replace")) == 0.0
                _field(self.cols, self.mode, self.step, key, m.group(2))
            return
        if b"GLOBAL_STEP:" in line:
            sm = _STEP.search(line)
            if sm:
                self.step, self.mode = float(sm.group(1)), "train"
                if self.evals and self.evals[-1][2] is None:
                    self.evals[-1][2] = self.step
                im = _IN_EPOCH.search(line)
                # batch i of an epoch whose last index is n: the epoch ends n - i steps on
                # (floats: a hostile 5,000-digit index must not overflow or hit int's digit limit)
                self.epoch_end = self.step + float(im.group(2)) - float(im.group(1)) if im else None
                self.records += 1
        elif b"EVAL PERFORMANCE" in line:
            self.mode = "eval"
            self.records += 1
            self.evals.append([self.step, self.epoch_end, None])
        elif b"BEST MODEL" in line or b"CHECKPOINT" in line:
            sv = _SAVED.search(line)
            if sv:
                target = self.best if sv.group(1) == b"BEST MODEL" else self.checkpoints
                target.append(_basename(sv.group(2).decode("utf-8", "replace")))
        elif line.strip().startswith(b">") and b"EPOCH" in line:
            self.mode = ""

    def raw(self) -> RawLog:
        meta: dict[str, object] = {}
        if self.best:
            meta["best_model"] = self.best[-1]
        if self.checkpoints:
            meta["last_checkpoint"] = self.checkpoints[-1]
        if self.evals:
            meta["coqui_evals"] = [list(e) for e in self.evals]
        columns, notes = self.cols.arrays(), list(self.cols.bad_notes())
        if self.grad_norms[0] and self.grad_norms[0] == self.grad_norms[1]:
            # Coqui's trainer computes the norm only to clip it: with grad_clip 0 it logs a
            # literal 0 at every step (a computed norm is logged as `tensor(...)`), so an
            # all-bare-zero column says "not measured", never "the gradients were zero"
            columns.pop("grad_norm", None)
            notes.append("grad_norm is a bare 0 at every step: Coqui logs that when it does not "
                         "compute the norm (grad_clip 0), so it is not read as a gradient norm")
        return RawLog(columns, self.records, notes=notes, meta=meta, step_column="GLOBAL_STEP")


def read(path: Path) -> RawLog:
    require_file(path)
    decoder = Decoder()
    with open_log(path) as fh:
        decoder.feed(fh)
    return decoder.raw()


def _field(cols: Columns, mode: str, step: float, key: str, raw: bytes) -> None:
    name = key if mode == "train" else "eval_" + key.removeprefix("avg_")
    tm = _TENSOR.match(raw)
    if tm:
        raw = tm.group(1)
    v = number(raw.decode("ascii", "replace"))
    if v is None:
        cols.reject(name)
    else:
        cols.add(name, step, v)


def _basename(p: str) -> str:
    return re.split(r"[\\/]", p)[-1]
