"""Coqui Trainer text logs (`trainer_0_log.txt`), ANSI colours and all.

Training blocks start at `--> TIME: ... GLOBAL_STEP: N` and list `| > key: value
(running avg)`; the value, not the running average, is the point. `--> EVAL
PERFORMANCE` blocks list `| > avg_key: value (+delta)` and become eval_* columns at
the last global step seen. BEST MODEL and CHECKPOINT lines are kept as metadata."""

from __future__ import annotations

import re
from pathlib import Path

from trainproof.parsers.base import Columns, RawLog, number, require_file

NAME = "coqui"
_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
_STEP = re.compile(rb"GLOBAL_STEP:\s*(-?\d+)")
_FIELD = re.compile(rb"^\s*\|\s*>\s*([\w./-]+):\s*(\S+)")
_SAVED = re.compile(rb">\s*(BEST MODEL|CHECKPOINT)\s*:\s*(\S.*?)\s*$")


def sniff(name: str, head: bytes) -> bool:
    if re.fullmatch(r"trainer_\d+_log\.txt", name):
        return True
    return b"GLOBAL_STEP:" in head or b"> Training Environment:" in head


def read(path: Path) -> RawLog:
    require_file(path)
    cols = Columns()
    step: float = 0.0
    mode = ""
    records = 0
    best: list[str] = []
    checkpoints: list[str] = []
    with open(path, "rb") as fh:
        for raw in fh:
            line = _ANSI.sub(b"", raw) if b"\x1b" in raw else raw
            m = _FIELD.match(line)
            if m:
                if mode:
                    _field(cols, mode, step, m.group(1).decode("ascii", "replace"), m.group(2))
                continue
            if b"GLOBAL_STEP:" in line:
                sm = _STEP.search(line)
                if sm:
                    step, mode = float(sm.group(1)), "train"
                    records += 1
            elif b"EVAL PERFORMANCE" in line:
                mode = "eval"
                records += 1
            elif b"BEST MODEL" in line or b"CHECKPOINT" in line:
                sv = _SAVED.search(line)
                if sv:
                    target = best if sv.group(1) == b"BEST MODEL" else checkpoints
                    target.append(_basename(sv.group(2).decode("utf-8", "replace")))
            elif line.strip().startswith(b">") and b"EPOCH" in line:
                mode = ""
    meta: dict[str, object] = {}
    if best:
        meta["best_model"] = best[-1]
    if checkpoints:
        meta["last_checkpoint"] = checkpoints[-1]
    return RawLog(cols.arrays(), records, notes=cols.bad_notes(), meta=meta, step_column="GLOBAL_STEP")


def _field(cols: Columns, mode: str, step: float, key: str, raw: bytes) -> None:
    name = key if mode == "train" else "eval_" + key.removeprefix("avg_")
    v = number(raw.decode("ascii", "replace"))
    if v is None:
        cols.reject(name)
    else:
        cols.add(name, step, v)


def _basename(p: str) -> str:
    return re.split(r"[\\/]", p)[-1]
