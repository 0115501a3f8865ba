"""JSON Lines training logs: one object per line, streamed in blocks.

Banner lines, non-object lines and a half-written last line are counted and
reported, never fatal. Nested objects ({"metrics": {"loss": ...}}) are flattened
to "metrics/loss"; LLaMA-Factory's and ms-swift's progress fields give the step and
the planned total (parsers/progress.py). Memory stays proportional to the points kept: each block's
decoded rows are turned into columns and dropped before the next block."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.parsers.base import Columns, LineViews, RawLog, require_file
from trainproof.parsers.columns import looks_like_metric
from trainproof.parsers.compressed import open_log
from trainproof.parsers.jsonutil import loads, may_have_bools
from trainproof.parsers.progress import Planned, lift
from trainproof.parsers.rows import add_by_key, add_columns, add_rows, find_step_key, flatten
from trainproof.parsers.typed import Template

NAME = "jsonl"
# Bytes read and decoded at a time. Each block's decoded rows and copies are freed before
# the next; what the allocator keeps of them stays resident: after a 5M-line read, 4 MiB
# blocks left ~40 MiB, 1 MiB ~8 MiB, 256 KiB none measurable, and read as fast (#14).
BLOCK = 1 << 18
MAX_LINE = 64 << 20  # a longer "line" is not a log record; skip it instead of buffering it
# One object of last values, not a log: W&B's end-of-run summary (files/wandb-summary.json);
# that run's history is read from its run directory (parsers/wandb).
SUMMARIES = frozenset({"wandb-summary.json"})


@dataclass
class Tally:
    records: int = 0
    non_object: int = 0
    malformed: int = 0
    oversized: int = 0


def sniff(name: str, head: bytes) -> bool:
    if name in SUMMARIES or (name.endswith((".json",)) and b'"log_history"' in head):
        return False
    row = first_row(head)
    return isinstance(row, dict) and any(looks_like_metric(k) for k in flatten(row))


def first_row(head: bytes) -> Any:
    """The first of the head's first 20 lines that is a JSON object, decoded; None when none is.
    A damaged line (a torn first write, flipped bits) is skipped: it does not hide a log."""
    for line in head.splitlines()[:20]:
        line = line.strip()
        if not line.startswith(b"{"):
            continue
        try:
            return loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
    return None


def _decode_block(block: bytes, tally: Tally) -> list[dict[str, Any]]:
    """Rows of a block of complete lines: one C call when every line is a clean object."""
    body = block.strip()
    if not body:
        return []
    if body[:1] == b"{" and b"\n\n" not in body:
        try:
            rows = loads(b"[" + body.replace(b"\n", b",") + b"]")
            if set(map(type, rows)) == {dict}:
                return rows
        except (ValueError, UnicodeDecodeError):
            pass
    return _decode_lines(body.split(b"\n"), tally)


def _decode_lines(lines: list[bytes], tally: Tally) -> list[dict[str, Any]]:
    rows = []
    for ln in lines:
        if not ln.strip():
            continue
        s = ln.strip()
        if not s.startswith(b"{"):
            tally.non_object += 1
            continue
        try:
            r = loads(s)
        except (ValueError, UnicodeDecodeError):
            tally.malformed += 1
            continue
        if type(r) is dict:
            rows.append(r)
        else:
            tally.non_object += 1
    return rows


def decode_block(chunk: bytes, tally: Tally, planned: Planned) -> list[dict[str, Any]]:
    """The records of a block of complete lines, nested objects flattened and progress
    fields lifted: what `watch` feeds each poll's appended lines through and read() uses."""
    rows = _decode_block(chunk, tally)
    if rows and (b'":{' in chunk or b'": {' in chunk):
        rows = [flatten(r) for r in rows]
    lift(rows, chunk, planned)
    return rows


def _typed_lines(chunk: bytes | memoryview) -> int | None:
    """The number of lines of a block the typed decoders may read where it lies (one row
    per line: no array text built, two copies of every block, #14), or None when they
    may not. A line reader strips blank lines and surrounding whitespace, which the
    decoders would read as separators: so every line must start the block with `{` or
    follow a newline that closes an object (`}` or `}\r` before each newline - a JSON
    string holds no raw newline, so each one is between lines); the decoders then refuse
    a row count other than this line count (a line of two objects). Byte tests in numpy:
    bytes.find and count crawl through a block of short lines at ~1 ms per MiB for a
    two-byte pattern. The common case first: as many `}\n` pairs as newlines, counted
    as 16-bit words at even and at odd offsets (no array of the newlines' positions)."""
    size = len(chunk)
    if size < 2 or chunk[0] != _OPEN:
        return None
    raw = np.frombuffer(chunk, dtype=np.uint8)
    lines = int(np.count_nonzero(raw == _NL))
    even = np.frombuffer(chunk, dtype=np.uint16, count=size // 2)
    odd = np.frombuffer(chunk, dtype=np.uint16, offset=1, count=(size - 1) // 2)
    if np.count_nonzero(even == _PAIR) + np.count_nonzero(odd == _PAIR) != lines:
        ends = np.flatnonzero(raw == _NL)
        before = raw[ends - 1]  # ends[0] >= 1: the block starts with "{"
        if not ((before == _CLOSE) | ((before == _CR) & (raw[ends - 2] == _CLOSE))).all():
            return None
    return lines + (chunk[-1] != _NL)


_NL, _CR, _OPEN, _CLOSE = ord("\n"), ord("\r"), ord("{"), ord("}")
_PAIR = int(np.frombuffer(b"}\n", dtype=np.uint16)[0])  # the two bytes as one word, in this machine's order


class _Backoff:
    """When to try Template.numbers_lines: on every block while it reads them, and after
    it refuses one (a null, a string, a new key: the block is decoded again another way),
    only on every 2nd, 4th, ... 64th block, so that a log where most blocks hold a string
    pays for the refused decode on few of them. It decides speed only: every block is
    read alike whichever decoder reads it."""

    __slots__ = ("_skip", "_wait")

    def __init__(self) -> None:
        self._wait = self._skip = 0

    def ready(self) -> bool:
        if self._skip:
            self._skip -= 1
            return False
        return True

    def worked(self, ok: bool) -> None:
        self._wait = 0 if ok else min(64, max(1, 2 * self._wait))
        self._skip = self._wait


def read(path: Path) -> RawLog:
    require_file(path)
    cols, tally, planned, template = Columns(), Tally(), Planned(), Template()
    numbers = _Backoff()
    step_key: str | None = None
    decided = False
    half_written = False

    def take(rows: list[dict[str, Any]], raw: bytes) -> None:
        nonlocal step_key, decided
        if not rows:
            return
        if not decided:
            step_key, decided = find_step_key(set().union(*rows[:100])), True
        add_rows(rows, cols, tally.records, step_key, may_have_bools(raw))
        tally.records += len(rows)
        template.learn(rows)

    def take_block(chunk: memoryview) -> None:
        n_lines = _typed_lines(chunk) if decided else None
        if n_lines is not None and numbers.ready():
            by_key = template.numbers_lines(chunk, n_lines)
            numbers.worked(by_key is not None)
            if by_key is not None:
                add_by_key(by_key, template.keys, cols, tally.records, step_key)
                tally.records += by_key.shape[1]
                return
        typed = None if n_lines is None else template.decode_lines(chunk, n_lines)
        if typed is None:
            raw = bytes(chunk)
            take(decode_block(raw, tally, planned), raw)
        elif typed:
            add_columns(typed, template.keys, lambda key: template.column(typed, key), cols, tally.records,
                        step_key, may_have_bools=False,  # the typed rows hold no boolean
                        cells=lambda key: template.cells(typed, key))
            tally.records += len(typed)

    with open_log(path) as fh:
        lines = LineViews(fh, BLOCK, MAX_LINE)
        for chunk in lines:
            take_block(chunk)
        tally.oversized += lines.oversized
        rest = lines.tail
        if rest.strip():
            last = _last_line(rest)
            if last is None:
                half_written = True
            else:
                rows = [flatten(last)]
                lift(rows, rest, planned)
                take(rows, rest)
    return RawLog(cols.arrays(), tally.records, notes=tally_notes(tally, half_written, cols),
                  meta=planned.meta(), step_column=step_key)


def _last_line(raw: bytes) -> dict[str, Any] | None:
    """A final line without its newline: a record if it decodes, else half-written."""
    try:
        row = loads(raw.strip())
    except (ValueError, UnicodeDecodeError):
        return None
    return row if type(row) is dict else None


def tally_notes(t: Tally, half_written: bool, cols: Columns) -> list[str]:
    notes = []
    if t.non_object:
        notes.append(f"{t.non_object} non-object line(s) (banners, plain text) skipped")
    if t.malformed:
        notes.append(f"{t.malformed} malformed JSON line(s) skipped")
    if t.oversized:
        notes.append(f"{t.oversized} line(s) over {MAX_LINE >> 20} MiB skipped")
    if half_written:
        notes.append("half-written last line ignored (the writer was still running or was killed)")
    return notes + cols.bad_notes()
