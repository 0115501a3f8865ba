"""Flair's `loss.tsv`, which ModelTrainer writes in the model folder: one tab-separated
row per epoch under a header `EPOCH  TIMESTAMP  [BAD_EPOCHS]  LEARNING_RATE  TRAIN_LOSS
[TRAIN_*]  [DEV_LOSS  DEV_PRECISION ...]  [TEST_LOSS ...]`.

What the cells are, from Flair's source: 0.4-0.12 write the header in ModelTrainer.train
and each row as `\\n{epoch}\\t{%H:%M:%S}\\t{bad_epochs}\\t{lr:.4f}\\t{train_loss}` then the
evaluation cells (so the file ends without a newline; 0.4.x numbered epochs from 0 and
wrote `_` where a split was not evaluated); 0.13+ write it from LossFilePlugin, every
float to 4 decimals, the LEARNING_RATE of several parameter groups as `0.1000,0.0100`,
and drop the columns the first epoch did not fill (BAD_EPOCHS without a plateau
scheduler). TRAIN_LOSS is the epoch's mean training loss, DEV_LOSS / TEST_LOSS the loss
on that split after the epoch.

Read here: step = EPOCH as written; names as written (TRAIN_LOSS is the loss and DEV_LOSS
the eval loss through parsers/columns.py, TEST_LOSS only where no DEV_LOSS is); the
first parameter group's LR; TIMESTAMP, a wall clock without a date, as seconds since
the midnight before the first row, a day added each time it goes back. Streaming, one
bounded line at a time."""

from __future__ import annotations

from pathlib import Path

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, bounded_lines, number, require_file
from trainproof.parsers.compressed import open_log

NAME = "flair"
MAX_LINE = 1 << 16  # a row is a few hundred bytes; a longer line is not one, skipped and counted
_HEAD = ("EPOCH", "TIMESTAMP")
_MISSING = ("", "_")  # 0.4.x's placeholder for a split it did not evaluate
_DAY = 86400.0


def _header(head: bytes) -> list[str]:
    first = head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0].rstrip(b"\r")
    return first.decode("utf-8", "replace").split("\t")


def sniff(name: str, head: bytes) -> bool:
    cols = _header(head)
    return name.endswith(".tsv") and tuple(cols[:2]) == _HEAD and "TRAIN_LOSS" in cols


def _clock(text: str) -> float | None:
    parts = text.split(":")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        return None
    h, m, s = (int(p) for p in parts)
    return h * 3600.0 + m * 60.0 + s


class _Reader:
    """The rows after the header, as columns at their EPOCH, and what was skipped."""

    def __init__(self, header: list[str]) -> None:
        self.header = header
        self.cols = Columns()
        self.records = self.ragged = self.no_epoch = self.groups = self.doubled = 0
        self.day = 0.0  # seconds added for each midnight the clock passed
        self.last_clock: float | None = None
        # The most decimals a LEARNING_RATE cell printed (Flair writes `{lr:.4f}`), or None once
        # a cell is in exponent notation: a 0.0000 there is an LR below half the last digit.
        self.lr_decimals: int | None = 0

    def row(self, cells: list[str]) -> None:
        if len(cells) == len(self.header) + 1 and "" in cells[4:]:
            # Older releases write a doubled tab in some rows (public loss.tsv files: after
            # TRAIN_LOSS when train metrics are off, or before DEV_ACCURACY): one empty cell
            # too many, every later value one column right of its name. Without it they align.
            i = cells.index("", 4)
            cells = cells[:i] + cells[i + 1:]
            self.doubled += 1
        if len(cells) > len(self.header):
            self.ragged += 1
        epoch = number(cells[0])
        if epoch is None:
            self.no_epoch += 1
            return
        self.records += 1
        self.cols.add("EPOCH", epoch, epoch)  # the epoch series too: the epoch-aware rules ask for it
        for name, cell in zip(self.header[1:], cells[1:], strict=False):
            cell = cell.strip()
            if cell in _MISSING:
                continue
            if name == "TIMESTAMP":
                self._time(epoch, cell)
                continue
            if name == "LEARNING_RATE":
                if "," in cell:
                    self.groups += 1
                    cell = cell.split(",", 1)[0]
                self._lr_printed(cell)
            value = number(cell)
            if value is None:
                self.cols.reject(name)
            else:
                self.cols.add(name, epoch, value)

    def _lr_printed(self, cell: str) -> None:
        if self.lr_decimals is None:
            return
        if "e" in cell.lower():
            self.lr_decimals = None
            return
        _, dot, frac = cell.partition(".")
        self.lr_decimals = max(self.lr_decimals, len(frac) if dot else 0)

    def meta(self) -> dict[str, object]:
        """The LR's printed precision, for TP-ZERO-LR: 0.0000 at 4 decimals is not a zero."""
        return {} if not self.lr_decimals else {"lr_printed_decimals": self.lr_decimals}

    def _time(self, epoch: float, cell: str) -> None:
        clock = _clock(cell)
        if clock is None:
            self.cols.reject("TIMESTAMP")
            return
        if self.last_clock is not None and clock < self.last_clock:
            self.day += _DAY  # the clock went back: midnight passed
        self.last_clock = clock
        self.cols.add("TIMESTAMP", epoch, self.day + clock)

    def notes(self, bad: int) -> list[str]:
        notes = ["Flair loss.tsv: one row per epoch, step = EPOCH; TIMESTAMP (a clock without a date) "
                 "read as seconds from the midnight before the first row"]
        if self.groups:
            notes.append(f"LEARNING_RATE lists several parameter groups on {self.groups} row(s): "
                         "the first group's is read")
        if self.doubled:
            notes.append(f"{self.doubled} row(s) with one empty cell more than the header (a doubled tab): "
                         "read without it")
        if self.ragged:
            notes.append(f"{self.ragged} row(s) with more cells than the header; extra cells ignored")
        if self.no_epoch:
            notes.append(f"{self.no_epoch} row(s) without an EPOCH number skipped")
        if bad:
            notes.append(f"{bad} line(s) over {MAX_LINE >> 10} KiB skipped")
        return notes + self.cols.bad_notes()


def read(path: Path) -> RawLog:
    require_file(path)
    bad = 0
    reader: _Reader | None = None
    with open_log(path) as fh:
        for raw in bounded_lines(fh, MAX_LINE):
            if raw is None:
                bad += 1
                continue
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line.strip():
                continue  # 0.4-0.12 start each row with its newline
            cells = line.lstrip("\ufeff").split("\t")
            if reader is None:
                if tuple(cells[:2]) != _HEAD:
                    raise InputError(f"{path}: the first line is not Flair's loss.tsv header (EPOCH, TIMESTAMP, ...)")
                reader = _Reader([c.strip() for c in cells])
            else:
                reader.row(cells)
    if reader is None:
        # every line over the cap is not an empty file: say which it was
        raise InputError(f"{path}: every line is over {MAX_LINE >> 10} KiB, not a Flair loss.tsv" if bad
                         else f"{path}: empty file")
    return RawLog(reader.cols.arrays(), reader.records, notes=reader.notes(bad), meta=reader.meta(),
                  step_column="EPOCH")
