"""CSV and TSV metric logs (Lightning's metrics.csv, Keras' CSVLogger, hand-written).

The dialect is sniffed; empty cells are missing values, not errors (Lightning writes
step rows and epoch rows with different columns filled); numbers written as
strings are numbers. Rows are converted column-wise in blocks.

A header that names a column twice is not guessed at: the first keeps the name, the
k-th becomes `NAME#k`, and a note says so, so `--map loss=loss#2` reads another."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import BinaryIO

import numpy as np

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, bounded_lines, require_file
from trainproof.parsers.columns import looks_like_metric
from trainproof.parsers.compressed import open_log
from trainproof.parsers.numeric import to_float_array
from trainproof.parsers.rows import find_step_key

NAME = "csv"
BLOCK_ROWS = 100_000
csv.field_size_limit(16 << 20)


def dialect(sample: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",\t;|")
    except csv.Error:
        return csv.excel_tab if sample.count("\t") > sample.count(",") else csv.excel


# Keras' CSVLogger is documented with the file name `training.log`, so a `.log`/`.txt`
# file is a CSV log too when it is one beyond doubt: its header is CSVLogger's (`epoch`
# first, then the metric names) and the row under it has as many cells, an epoch number first.
_CSV_TEXT_SUFFIXES = (".log", ".txt")


def sniff(name: str, head: bytes) -> bool:
    if not name.endswith((".csv", ".tsv", *_CSV_TEXT_SUFFIXES)):
        return False
    text = head.decode("utf-8", "replace")
    lines = text.splitlines()
    first = lines[0] if lines else ""
    header = next(rows([first], dialect(text[:4096]), [0]), [])
    if not any(looks_like_metric(h) for h in header):
        return False
    return name.endswith((".csv", ".tsv")) or _csvlogger_text(header, lines[1:2])


def _csvlogger_text(header: list[str], second: list[str]) -> bool:
    """A text-named file holding what Keras' CSVLogger writes (its default separator)."""
    if not second or header[0] != "epoch":
        return False
    cells = second[0].split(",")
    return len(cells) == len(header) and cells[0].strip().isdigit()


MAX_LINE = 1 << 20  # a CSV log row is a few hundred bytes; a longer line is skipped, counted


def rows(lines: Iterable[str], dia: type[csv.Dialect] | csv.Dialect, bad: list[int]) -> Iterator[list[str]]:
    """Parsed rows of `lines`; a line the csv module rejects (a stray carriage return inside
    a field, a field past the size limit) is skipped and counted in bad[0], never raised."""
    reader = csv.reader(lines, dia)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            bad[0] += 1
            continue
        yield row


def _text_lines(fh: BinaryIO, bad: list[int]) -> Iterator[str]:
    for line in bounded_lines(fh, MAX_LINE):
        if line is None:
            bad[0] += 1
            continue
        yield line.decode("utf-8", "replace")


def read(path: Path, whole_rows: bool = False) -> RawLog:
    """The CSV's columns. A row with fewer cells than the header is padded with missing
    cells (a hand-written log that leaves trailing cells out) - unless `whole_rows`: a
    writer that writes every cell of every row (Ultralytics) wrote a shorter row for
    something else, whose cells do not sit under the header's names, and it is skipped."""
    require_file(path)
    with open_log(path) as fh:
        head = fh.read(65536)
        head += fh.readline(MAX_LINE)  # the sample, finished to its line end
        sample = head.decode("utf-8", "replace")
        if "\x00" in sample:
            raise InputError(f"{path}: binary data, not a CSV log")
        bad = [0]
        # a decompressing stream cannot seek back: the sample's lines go first
        lines = chain(io.StringIO(sample, newline=""), _text_lines(fh, bad))
        reader = rows(lines, dialect(sample), bad)
        header = next(reader, None)
        if not header:
            return RawLog({}, 0, notes=["empty file"])
        header, renamed = unique_header([h.strip() for h in header])
        step_key = find_step_key(set(header))
        cols, records, ragged, short = Columns(), 0, 0, 0
        while True:
            block = [r for _, r in zip(range(BLOCK_ROWS), reader, strict=False)]
            if not block:
                break
            if whole_rows:
                kept = [r for r in block if len(r) >= len(header)]
                short, block = short + len(block) - len(kept), kept
                if not block:
                    continue
            ragged += add_block(block, header, step_key, records, cols)
            records += len(block)
    notes = renamed + cols.bad_notes()
    if ragged:
        notes.append(f"{ragged} row(s) with more cells than the header; extra cells ignored")
    if short and not records:
        raise InputError(f"{path}: no row holds every column of its header ({short} row(s) with fewer cells "
                         "than the header); not the rows this writer writes")
    if short:
        notes.append(f"{short} row(s) with fewer cells than the header skipped: the writer writes every "
                     "cell of a row, so their cells do not sit under the header's names")
    if bad[0]:
        notes.append(f"{bad[0]} line(s) that are not CSV rows (over {MAX_LINE >> 20} MiB, or malformed) skipped")
    return RawLog(cols.arrays(), records, notes=notes, step_column=step_key)


def unique_header(header: list[str]) -> tuple[list[str], list[str]]:
    """The header with the k-th repeat of a name renamed NAME#k, and a note per repeated name."""
    seen: dict[str, list[int]] = {}
    out = []
    for i, h in enumerate(header):
        at = seen.setdefault(h, [])
        at.append(i + 1)
        out.append(f"{h}#{len(at)}" if len(at) > 1 and h else h)
    notes = [f"{len(at)} columns are named '{h}': column {at[0]} is read as '{h}', "
             + ", ".join(f"column {c} as '{h}#{k}'" for k, c in enumerate(at[1:], 2))
             + " (--map can name another)" for h, at in seen.items() if h and len(at) > 1]
    return out, notes


def add_block(block: list[list[str]], header: list[str], step_key: str | None,
               first: int, cols: Columns) -> int:
    width = len(header)
    ragged = sum(1 for r in block if len(r) > width)
    padded = [r if len(r) == width else (r + [""] * width)[:width] for r in block]
    columns = list(zip(*padded, strict=True)) if padded else []
    steps = np.arange(first, first + len(block), dtype=np.float64)
    if step_key is not None:
        sv, sok = _cells(columns[header.index(step_key)])
        steps = np.where(sok, sv, np.nan)
        # rows with no step inherit the previous one (epoch rows in Lightning carry it anyway)
        have = ~np.isnan(steps)
        if not have.all():
            carry = np.where(have, np.arange(len(steps)), -1)
            np.maximum.accumulate(carry, out=carry)
            index = np.arange(first, first + len(block), dtype=np.float64)
            steps = np.where(carry >= 0, steps[np.maximum(carry, 0)], index)
    for name, cells in zip(header, columns, strict=True):
        if name == step_key or not name:
            continue
        vals, ok = _cells(cells)
        present = np.fromiter((not _missing(c) for c in cells), dtype=bool, count=len(cells))
        bad = present & ~ok
        if ok.any():
            cols.extend(name, steps[ok], vals[ok])
            if bad.any():
                cols.reject(name, int(bad.sum()))
    return ragged


# How CSV writers spell "no value here" (Keras' CSVLogger writes NA, pandas writes an
# empty cell): missing, not a bad number. NaN stays a value: it is evidence.
_MISSING = frozenset({"", "na", "n/a", "null", "none"})


def _missing(cell: str) -> bool:
    return cell.strip().lower() in _MISSING


def _cells(cells: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    return to_float_array([None if _missing(c) else c for c in cells])
