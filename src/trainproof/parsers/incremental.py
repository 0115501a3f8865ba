"""Logs read while they grow. Line formats (JSONL, CSV, Coqui, text logs) are decoded
incrementally: each poll feeds only the complete lines appended since the last one
to the same block decoders `read` uses. Formats written whole or as binary records
(trainer_state.json, TensorBoard event files and any other registered format) are
re-read through `read_run` only when their size or mtime changed; so are compressed
logs, whose appended bytes are not lines."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from trainproof.model import InputError, Run
from trainproof.parsers import build_run, coqui, csvlog, jsonl, read_run, textlog
from trainproof.parsers.base import Columns, RawLog
from trainproof.parsers.compressed import compression
from trainproof.parsers.jsonutil import may_have_bools
from trainproof.parsers.progress import Planned
from trainproof.parsers.rows import add_rows, find_step_key
from trainproof.tail import Tail


class Decoder(Protocol):
    def feed(self, data: bytes) -> None: ...

    def raw(self) -> RawLog: ...


def _compact(cols: Columns) -> tuple[dict, Columns]:
    """The columns as arrays, and the Columns to go on with: Columns.arrays() keeps what it
    hands out as one array per column (joined with what comes next on the next call), so a
    long watch neither piles up one chunk per poll nor copies the run into a second set."""
    return cols.arrays(), cols


class JsonlDecoder:
    def __init__(self) -> None:
        self.cols, self.tally, self.planned = Columns(), jsonl.Tally(), Planned()
        self.step_key: str | None = None
        self._decided = False

    def feed(self, data: bytes) -> None:
        rows = jsonl.decode_block(data, self.tally, self.planned)
        if not rows:
            return
        if not self._decided:
            self.step_key, self._decided = find_step_key(set().union(*rows[:100])), True
        add_rows(rows, self.cols, self.tally.records, self.step_key, may_have_bools(data))
        self.tally.records += len(rows)

    def raw(self) -> RawLog:
        arrays, self.cols = _compact(self.cols)
        return RawLog(arrays, self.tally.records, notes=jsonl.tally_notes(self.tally, False, self.cols),
                      meta=self.planned.meta(), step_column=self.step_key)


class CsvDecoder:
    def __init__(self) -> None:
        self.cols = Columns()
        self.header: list[str] | None = None
        self.step_key: str | None = None
        self.records = self.ragged = 0
        self.renamed: list[str] = []
        self.bad = [0]  # lines the csv module rejected, skipped (csvlog.rows)
        self._dialect: type[csv.Dialect] | csv.Dialect = csv.excel

    def feed(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        if self.header is None:
            first, _, rest = text.partition("\n")
            self._dialect = csvlog.dialect(text[:65536])
            self.header, self.renamed = csvlog.unique_header(
                [h.strip() for h in next(csvlog.rows([first.rstrip("\r")], self._dialect, self.bad), [])])
            self.step_key = find_step_key(set(self.header))
            text = rest
        rows = [r for r in csvlog.rows(io.StringIO(text, newline=""), self._dialect, self.bad) if r]
        if rows and self.header:
            self.ragged += csvlog.add_block(rows, self.header, self.step_key, self.records, self.cols)
            self.records += len(rows)

    def raw(self) -> RawLog:
        arrays, self.cols = _compact(self.cols)
        notes = self.renamed + self.cols.bad_notes()
        if self.ragged:
            notes.append(f"{self.ragged} row(s) with more cells than the header; extra cells ignored")
        if self.bad[0]:
            notes.append(f"{self.bad[0]} malformed CSV line(s) skipped")
        return RawLog(arrays, self.records, notes=notes, step_column=self.step_key)


class CoquiDecoder:
    def __init__(self) -> None:
        self.decoder = coqui.Decoder()

    def feed(self, data: bytes) -> None:
        self.decoder.feed(data.splitlines(keepends=True))

    def raw(self) -> RawLog:
        _, self.decoder.cols = _compact(self.decoder.cols)
        return self.decoder.raw()


class TextlogDecoder:
    def __init__(self) -> None:
        self.scanner = textlog.Scanner()

    def feed(self, data: bytes) -> None:
        self.scanner.feed(data)

    def raw(self) -> RawLog:
        _, self.scanner.cols = _compact(self.scanner.cols)
        return self.scanner.raw()


DECODERS: Mapping[str, type] = {jsonl.NAME: JsonlDecoder, csvlog.NAME: CsvDecoder, coqui.NAME: CoquiDecoder,
                                textlog.NAME: TextlogDecoder}


@dataclass(frozen=True)
class Update:
    changed: bool  # new data was read: judge again
    restarted: str | None = None  # the log was truncated/replaced/rewritten; earlier data dropped
    missing: bool = False
    problem: str | None = None  # a re-read failed (e.g. a half-rewritten JSON file); last run kept


class LineSource:
    """A line-format log followed by a Tail and decoded incrementally."""

    def __init__(self, path: Path, fmt: str, display: str, mapping: Mapping[str, str]) -> None:
        self.fmt, self.display, self.mapping = fmt, display, mapping
        self.tail = Tail(path)
        self.decoder: Decoder = DECODERS[fmt]()
        self.fed = False

    def update(self) -> Update:
        changed, restarted = False, None
        while True:
            chunk = self.tail.poll()
            if chunk.missing:
                return Update(changed, restarted, missing=True)
            if chunk.restarted:
                self.decoder, restarted, changed = DECODERS[self.fmt](), chunk.restarted, True
            if chunk.data:
                self.decoder.feed(chunk.data)
                changed = self.fed = True
            if not chunk.more:
                return Update(changed, restarted)

    def run(self) -> Run:
        return build_run(self.display, self.fmt, self.decoder.raw(), self.mapping)


class RereadSource:
    """A log re-read whole (through the format registry) whenever its files change."""

    def __init__(self, path: Path, fmt: str, display: str, mapping: Mapping[str, str],
                 run: str | None = None) -> None:
        self.path, self.fmt, self.display, self.mapping, self.run_id = path, fmt, display, mapping, run
        self._seen: object = None
        self._run: Run | None = None

    def update(self) -> Update:
        mark = fingerprint(self.path)
        if mark is None:
            return Update(False, missing=True)
        if mark == self._seen:
            return Update(False)
        try:
            run = read_run(self.path, self.fmt, self.mapping, display=self.display, run=self.run_id)
        except InputError as exc:  # caught mid-rewrite: keep the last good read, try next poll
            return Update(False, problem=str(exc))
        self._seen = mark
        before = self._run.step_span if self._run is not None else None
        after = run.step_span
        # re-read whole, nothing is lost; but a log that now ends earlier is a new run
        restarted = "rewritten" if before and after and after[1] < before[1] else None
        self._run = run
        return Update(True, restarted)

    def run(self) -> Run | None:
        return self._run


def fingerprint(path: Path) -> tuple | None:
    """What changes when the log changes: (inode, size, mtime) of the file, or of every
    file under a run directory."""
    try:
        if path.is_dir():
            marks = []
            for root, _, files in os.walk(path):
                for name in files:
                    full = os.path.join(root, name)
                    try:
                        st = os.stat(full)
                    except FileNotFoundError:  # removed while we walked
                        continue
                    marks.append((full, st.st_size, st.st_mtime_ns))
            return (None, tuple(sorted(marks)))
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return ((st.st_dev, st.st_ino), st.st_size, st.st_mtime_ns)


def open_source(path: Path, fmt: str, display: str, mapping: Mapping[str, str],
                run: str | None = None) -> LineSource | RereadSource:
    """The way to follow `path` as format `fmt` (a registered format name); `run` names
    one run of a multi-run store."""
    if not (path.is_file() or path.is_dir()):
        raise InputError(f"{path}: not a regular file or directory (a FIFO or device cannot be watched)")
    if fmt in DECODERS and path.is_file() and compression(path.name) is None and run is None:
        return LineSource(path, fmt, display, mapping)
    return RereadSource(path, fmt, display, mapping, run)
