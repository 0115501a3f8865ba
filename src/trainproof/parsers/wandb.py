"""Weights & Biases run logs: a `run-<id>.wandb` record log, or the run directory
that holds it (`wandb/offline-run-<stamp>-<id>/`, or `wandb/run-<stamp>-<id>/` for a
synced run).

Each history record (one `wandb.log` call) is a row; its numeric values become
columns under their key (a nested dict's path joined with "/", as wandb itself
shows them). The step of a row is the run's training step when it logs one: the
step metric declared with `wandb.define_metric` (HF's WandbCallback declares
`train/global_step` and logs it in every row), else a step-like key of the user's
own (`step`, `global_step`, ...), else wandb's `_step`, which counts log calls.
The choice is stated in the notes and in meta["step_column"].

Framing is in wandb_frame, Record decoding in wandb_records; the wandb package and
protobuf are never imported. Memory holds the points kept plus one batch of rows.
"""

from __future__ import annotations

import re
from pathlib import Path

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, require_file
from trainproof.parsers.columns import is_step
from trainproof.parsers.rows import add_rows, find_step_key
from trainproof.parsers.wandb_frame import Damage, is_header, read_payloads
from trainproof.parsers.wandb_records import Tally, decode

NAME = "wandb"
SUFFIX = ".wandb"
WANDB_STEP = "_step"
BATCH = 4096  # rows turned into columns at a time
_RUN_DIR = re.compile(r"^(offline-)?run-\d{8}_\d{6}-\w+$")


def sniff(name: str, head: bytes) -> bool:
    """A `.wandb` file is claimed by its name (so a damaged one is reported, not
    passed over); any other file by the `:W&B` header."""
    return name.endswith(SUFFIX) or is_header(head)


def log_files(d: Path) -> list[Path]:
    """The record logs directly in a run directory, in name order."""
    try:
        return sorted(p for p in d.iterdir() if p.name.endswith(SUFFIX) and p.is_file())
    except OSError:
        return []


def sniff_dir(d: Path) -> bool:
    """A wandb run directory: named as wandb names them (or wandb's `latest-run` link
    to one), holding a `.wandb` log."""
    named = _RUN_DIR.match(d.name) is not None
    if not named and d.is_symlink():
        try:
            named = _RUN_DIR.match(d.resolve().name) is not None
        except (OSError, RuntimeError):  # a link loop or a dangling link
            return False
    return named and bool(log_files(d))


def _declared(declared: dict[str, str]) -> str | None:
    """The one step metric define_metric set for every metric ("*"), or for all it named."""
    if "*" in declared:
        return declared["*"]
    metrics = set(declared.values())
    return metrics.pop() if len(metrics) == 1 else None


def choose_step(keys: set[str], declared: dict[str, str]) -> tuple[str | None, str]:
    """(step key, why) for rows with these keys, given define_metric's declarations."""
    stated = _declared(declared)
    if stated is not None and stated in keys:
        return stated, f"declared as the step metric with wandb.define_metric (not wandb's own {WANDB_STEP})"
    own = find_step_key({k for k in keys if is_step(k) and k != WANDB_STEP})
    if own is not None:
        return own, f"a training step the run logs in its rows (not wandb's own {WANDB_STEP})"
    if WANDB_STEP in keys:
        return WANDB_STEP, "wandb's own step, which counts wandb.log calls (the run logs no step of its own)"
    return None, "no step in the rows: rows are numbered in order"


class _Reader:
    """Rows of one run (several files: oldest first) turned into columns in batches."""

    def __init__(self) -> None:
        self.cols, self.tally = Columns(), Tally()
        self.rows: list[dict[str, float]] = []
        self.notes: list[str] = []  # damage found in the files
        self.records = 0
        self.step_key: str | None = None
        self.why: str | None = None

    def flush(self) -> None:
        if not self.rows:
            return
        if self.why is None:
            self.step_key, self.why = choose_step(set().union(*self.rows), self.tally.step_metrics)
        add_rows(self.rows, self.cols, self.records, self.step_key, may_have_bools=False)
        self.records += len(self.rows)
        self.rows = []

    def read_file(self, path: Path, label: str) -> None:
        damage = Damage()
        with open(path, "rb") as fh:
            for payload in read_payloads(fh, damage, str(path)):
                row = decode(payload, self.tally)
                if row:
                    self.rows.append(row)
                    if len(self.rows) >= BATCH:
                        self.flush()
        self.notes.extend(f"{label}: {note}" for note in damage.notes())

    def result(self, files: int) -> RawLog:
        self.flush()
        notes = []
        if self.why is not None:
            notes.append(f"step: '{self.step_key}', {self.why}" if self.step_key else f"step: {self.why}")
        notes += self.notes + self.tally.notes()
        meta: dict[str, object] = {"wandb_files": files, "step_column": self.step_key, **self.tally.meta}
        meta["finished"] = "exit_code" in self.tally.meta
        return RawLog(self.cols.arrays(), self.records, notes=notes, meta=meta, step_column=self.step_key)


def _read(files: list[Path]) -> RawLog:
    reader = _Reader()
    for path in files:
        reader.read_file(path, path.name)
    return reader.result(len(files))


def read(path: Path) -> RawLog:
    if path.is_dir():
        files = log_files(path)
        if not files:
            raise InputError(f"{path}: no run-*.wandb file in this directory")
        return _read(files)
    require_file(path)
    return _read([path])
