"""HuggingFace Trainer `trainer_state.json`: the `log_history` list, train and eval
entries alike. The end-of-training summary entry (train_loss as the run's average,
train_runtime, total_flos, ...) is run metadata, not a loss point; `is_summary` is
the one place that tells it apart, for this reader and for the HF callback.

A million-entry log_history decoded at once costs ~0.6 KB of Python objects per
entry, so the list is decoded in slices of a few MB cut at entry boundaries and
turned into columns slice by slice. Anything unusual about the text (nested values,
braces in strings) makes a slice fail to parse, and then the whole document is
decoded in one piece instead: slower, never wrong."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, require_file
from trainproof.parsers.compressed import open_log
from trainproof.parsers.jsonutil import loads, may_have_bools
from trainproof.parsers.rows import add_columns, add_matrix, add_rows
from trainproof.parsers.typed import Template

NAME = "hf"
SLICE = 4 << 20
_HISTORY = re.compile(rb'"log_history"\s*:\s*\[')
_EMPTY = re.compile(rb"\s*\]")
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_BLANK = b" \t\n\r\f\v"  # what \s matches in a bytes pattern
# Keys only the end-of-training summary carries together with no per-step loss. Per-step
# entries can carry train_runtime too (transformers 5.x, include_num_input_tokens_seen).
_RUN_TOTALS = ("train_loss", "total_flos", "train_runtime")
_POINT_KEYS = ("loss", "eval_loss")
_META_KEYS = ("global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
              "num_train_epochs", "best_model_checkpoint", "best_metric", "train_batch_size")


class _Irregular(Exception):
    """The text is not laid out as trainers write it; decode it whole instead."""


def sniff(name: str, head: bytes) -> bool:
    return name == "trainer_state.json" or (b'"log_history"' in head and head.lstrip()[:1] == b"{")


def _slices(data: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """(the document with an empty log_history, offsets of entry slices)."""
    m = _HISTORY.search(data)
    if m is None or _EMPTY.match(data, m.end()):
        raise _Irregular
    close = _end(data, m.end())
    if close < 0:
        raise _Irregular
    stop = close + 1
    out, pos = [], m.end()
    while pos < stop:
        cut = _BOUNDARY.search(data, pos + SLICE, stop) if pos + SLICE < stop else None
        if cut is None:
            out.append((pos, stop))
            break
        out.append((pos, cut.start() + 1))
        pos = cut.end() - 1
    return data[: m.end()] + data[data.index(b"]", close) :], out


def _end(data: bytes, pos: int) -> int:
    """Where the first `}` followed by blanks and `]` after `pos` starts, or -1: the end of
    log_history in a trainer's layout. Found from each `]` (bytes.find, a memchr) rather
    than by a regex over the whole history; the same match as `\\}\\s*\\]`'s first."""
    while (close := data.find(b"]", pos)) >= 0:
        at = close - 1
        while at >= pos and data[at] in _BLANK:
            at -= 1
        if at >= pos and data[at] == 0x7D:  # }
            return at
        pos = close + 1
    return -1


# How a slice was decoded: dicts from the general decoder, typed.py's structs for plain
# entries of known keys, or (numbers only) Template.numbers' float matrix
GENERAL, TYPED, MATRIX = 0, 1, 2
# (entries, may hold booleans, how decoded)
Chunk = tuple[Any, bool, int]


def _entries(data: bytes, template: Template) -> tuple[dict[str, Any], Iterator[Chunk]]:
    try:
        rest, pieces = _slices(data)
        doc = loads(rest)
        first = b"[" + data[pieces[0][0]:pieces[0][1]] + b"]"
        decoded = loads(first)
    except (_Irregular, ValueError):
        return _whole(data)

    def gen() -> Iterator[Chunk]:
        # The first slice is decoded the general way, to learn its keys (and to fall back
        # on the whole document when even it is irregular); learnt before read() would,
        # they let the slice's columns come from the matrix too: its rows converted once
        # instead of again as dicts, column by column.
        if set(map(type, decoded)) == {dict} and not any(map(is_summary, decoded[-3:])):
            template.learn(decoded)  # what read() learns from these rows, all of them points
            matrix = template.numbers(first)
            if matrix is not None and _fits(matrix, template):
                yield matrix, False, MATRIX
            else:
                yield decoded, may_have_bools(first), GENERAL
        else:
            yield decoded, may_have_bools(first), GENERAL
        # Each slice is bracketed in one buffer reused from slice to slice: `b"[" + data[a:b]
        # + b"]"` made three fresh copies a slice (~0.1 s of page faults on 175 MB). The typed
        # rows hold no reference to the buffer (msgspec copies what it keeps).
        view, raw = memoryview(data), bytearray(b"[")
        for a, b in pieces[1:]:
            raw[1:] = view[a:b]
            raw += b"]"
            matrix = template.numbers(raw)
            if matrix is not None and _fits(matrix, template):
                yield matrix, False, MATRIX
                continue
            typed = template.decode(raw)
            if typed is not None and not _maybe_summary(typed[-3:], template):
                yield typed, False, TYPED
            else:
                text = bytes(raw)
                yield loads(text), may_have_bools(text), GENERAL

    return doc, gen()


def _maybe_summary(rows: list[Any], template: Template) -> bool:
    """Could one of these typed entries be the summary? Typed rows read a null and a missing
    key alike, so any entry without a loss value leaves the slice to the general path,
    where is_summary decides."""
    losses = [template.column(rows, k) for k in _POINT_KEYS]
    return any(all(v is None for v in cells) for cells in zip(*losses, strict=True))


def _fits(matrix: Any, template: Template) -> bool:
    """Can rows.add_matrix take this slice? Every entry has a step (a missing one would be
    inherited, which add_columns does) and none of the last entries can be the summary
    (_maybe_summary's test: no loss value of either kind). No cell is infinite: msgspec
    refuses NaN, Infinity and 1e999, and an integer past float64's range fails the
    conversion in Template.numbers."""
    keys = template.keys
    if "step" not in keys or np.isnan(matrix[:, keys.index("step")]).any():
        return False
    tail = matrix[-3:]
    gaps = [np.isnan(tail[:, keys.index(k)]) for k in _POINT_KEYS if k in keys]
    return bool(gaps) and not np.logical_and.reduce(gaps).any()


def _whole(data: bytes) -> tuple[dict[str, Any], Iterator[Chunk]]:
    doc = loads(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("log_history"), list):
        raise _Irregular
    history = doc["log_history"]
    return doc, iter([(history, True, GENERAL)])


def read(path: Path) -> RawLog:
    require_file(path)
    with open_log(path) as fh:
        data = fh.read()
    template = Template()
    try:
        doc, chunks = _entries(data, template)
        cols, notes = Columns(), []
        records, not_objects, summary = 0, 0, None
        for entries, bools, kind in chunks:
            if kind == MATRIX:
                add_matrix(entries, template.keys, cols, "step")
                records += len(entries)
                continue
            if kind == TYPED:  # the typed rows hold no boolean
                add_columns(entries, template.keys, lambda k, rows=entries: template.column(rows, k), cols,
                            records, "step", may_have_bools=False,
                            cells=lambda k, rows=entries: template.cells(rows, k))
                records += len(entries)
                continue
            rows = entries if set(map(type, entries)) == {dict} else [e for e in entries if type(e) is dict]
            not_objects += len(entries) - len(rows)
            points = [e for e in rows if not is_summary(e)] if any(map(is_summary, rows[-3:])) else rows
            if len(points) != len(rows):
                summary = next(e for e in reversed(rows) if is_summary(e))
            add_rows(points, cols, records, "step", bools)
            records += len(points)
            template.learn(points)
    except (_Irregular, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a readable trainer_state.json ({_short(exc)})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a trainer_state.json (top level is not an object)")
    if not_objects:
        notes.append(f"{not_objects} log_history entries that are not objects ignored")
    notes.extend(cols.bad_notes())
    meta = {k: doc[k] for k in _META_KEYS if k in doc}
    meta.update(_stop_request(doc))
    if summary is not None:
        meta["summary"] = {k: v for k, v in summary.items() if isinstance(v, (int, float, str))}
    return RawLog(cols.arrays(), records=records, notes=notes, meta=meta, step_column="step")


def _stop_request(doc: Mapping[str, Any]) -> dict[str, object]:
    """Whether the Trainer had been asked to stop when it wrote this state: transformers
    >= 4.38 saves TrainerControl (should_training_stop: max_steps reached, or a callback
    such as EarlyStoppingCallback stopped it) among `stateful_callbacks`. Absent in older
    states; rules/declared.py tells a crash from a deliberate stop with it."""
    callbacks = doc.get("stateful_callbacks")
    if not isinstance(callbacks, dict):
        return {}
    control = callbacks.get("TrainerControl")
    args = control.get("args") if isinstance(control, dict) else None
    out: dict[str, object] = {"stateful_callbacks": sorted(str(k) for k in callbacks)[:20]}
    if isinstance(args, dict) and isinstance(args.get("should_training_stop"), bool):
        out["should_training_stop"] = args["should_training_stop"]
    return out


def is_summary(entry: Mapping[str, Any]) -> bool:
    """The end-of-training entry: metadata, not a point. Told apart by its structure, not by
    one key: `Trainer._finalize_training` (4.x and 5.x) logs the run totals (train_loss as
    the average over all steps, train_runtime, train_samples_per_second, total_flos) and no
    per-step `loss`; per-step entries always carry `loss`, evaluations `eval_loss`, and
    either may carry train_runtime and throughput (include_num_input_tokens_seen in 5.x)."""
    return not any(k in entry for k in _POINT_KEYS) and any(k in entry for k in _RUN_TOTALS)


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0][:120] if str(exc) else "no log_history list"
    return text
