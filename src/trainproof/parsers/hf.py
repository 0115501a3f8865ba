"""HuggingFace Trainer `trainer_state.json`: the `log_history` list, train and eval
entries alike. The end-of-training summary entry (train_loss as the run's average,
train_runtime, total_flos, ...) is run metadata, not a loss point; `is_summary` is
the one place that tells it apart, for this reader and for the HF callback.

A million-entry log_history decoded at once costs ~0.6 KB of Python objects per
entry, so the list is read from the file and decoded in slices of about a MiB cut at
entry boundaries and turned into columns slice by slice (_Stream); a slice of plain
numbers becomes one float matrix (typed.Template.numbers). Anything unusual about the
text (nested values, braces in strings) makes a slice fail to parse, and then the
whole document is decoded in one piece instead: slower, never wrong.

Every entry is told a summary or a point on its own (`is_summary`), wherever it sits: the
summary is usually the last entry, but `trainer.evaluate()` after `train()` (one entry per
eval set) and `save_state()` put entries after it. Only a slice's last three entries used
to be looked at, so a summary followed by three or more entries was read as a loss point -
or not, depending on whether a 4 MB cut fell just after it."""

from __future__ import annotations

import io
import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, require_file
from trainproof.parsers.compressed import open_log
from trainproof.parsers.jsonutil import loads, may_have_bools
from trainproof.parsers.rows import add_columns, add_matrix, add_rows
from trainproof.parsers.typed import Template

NAME = "hf"
# Bytes of text a slice holds (at least; it ends at the next entry boundary). Its decoded
# rows, ~1.3x its size in small objects (a struct and its floats per entry), are freed
# before the next slice is decoded: at 4 MiB the ~5 MiB freed each time went back to the
# system in whole pymalloc arenas and the next slice faulted them in again (75k page
# faults, ~0.1 s of system time a 176 MB file), and the decode itself ran ~15 % slower per
# byte than at 1-1.5 MiB, where the memory is reused. 1 MiB: 25k faults, the read ~0.1 s
# less CPU, peak RSS 137 -> 110 MB (#14).
SLICE = 1 << 20
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


def _end(data: bytes | bytearray, pos: int, stop: int | None = None, floor: int | None = None) -> int:
    """Where the first `}` followed by blanks and `]` in data[pos:stop] starts, or -1: the
    end of log_history in a trainer's layout. Found from each `]` (bytes.find, a memchr)
    rather than by a regex over the whole history; the same match as `\\}\\s*\\]`'s first.
    `floor` (default `pos`): the `}` and its blanks may start that far back, for a search
    resumed at `pos` over text from `floor` on that held no match before `pos`."""
    stop = len(data) if stop is None else stop
    floor = pos if floor is None else floor
    while (close := data.find(b"]", pos, stop)) >= 0:
        at = close - 1
        while at >= floor and data[at] in _BLANK:
            at -= 1
        if at >= floor and data[at] == 0x7D:  # }
            return at
        pos = close + 1
    return -1


class _Stream:
    """log_history read from the file a slice at a time, into one buffer reused from slice
    to slice, instead of the whole file at once: the file's bytes are never all in memory
    (a 176 MB file peaked at ~330 MB, ~170 MB of it the file's copy), and neither are the
    page faults and copies of a file-sized buffer paid (~0.13 s a 176 MB file).

    The buffer holds `[` and then the entries not decoded yet. A slice is the entries up to
    the first boundary (`}` `,` `{` with blanks) at least SLICE bytes in, or up to the end
    of log_history (the first `}` blanks `]`, as _end finds it): the same slices as cut
    from the whole text. The byte after a slice's last `}` (a blank, a comma or the
    closing `]`) is overwritten with `]`, and the slice is decoded in place."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        # A file known to be smaller than the usual buffer gets one of its size (and room for
        # the read that finds its end): the 8 MB zeroed for a 10 KB file were ~4 ms of a small
        # log's start-up (#14). The reads ask no more than the bytes said to be left (_more).
        self._left = _bytes_left(fh)
        cap = 2 * SLICE + 2
        self._buf = bytearray(cap if self._left is None else min(cap, self._left + 2))
        self._n = 0  # bytes of the buffer that hold the text
        # buffer[1:_clear] holds no end of log_history (_end searched it): the next search
        # resumes there instead of going over the bytes held since the last slice again
        # (~8 MB a slice, 0.03-0.08 s a 176 MB file)
        self._clear = 1
        self._eof = False
        self.head = b""  # the document up to log_history's opening bracket
        self.tail = b""  # from log_history's closing bracket to the end of the file

    @property
    def buf(self) -> bytearray:
        """The buffer the slices are views of."""
        return self._buf

    def _more(self) -> bool:
        """Read up to a quarter of SLICE more bytes after those held; False at the end of
        the file. A quarter, not a whole SLICE: what is held past a slice's cut is moved to
        the front of the buffer for the next (_drop), up to a read's worth - 168 MB of moves
        a 176 MB file when each read was a SLICE, ~1/4 of that now (#14)."""
        if self._eof:
            return False
        step = max(1, SLICE // 4)
        if self._left is not None:  # the bytes left, and one more to see the end of the file
            step = min(step, self._left + 1)
        if len(self._buf) < self._n + step:  # an entry longer than the buffer: grow it
            self._buf.extend(bytes(max(SLICE, len(self._buf))))
        with memoryview(self._buf) as view:
            got = self._fh.readinto(view[self._n:self._n + step])
        if not got:
            self._eof = True
            return False
        self._n += got
        if self._left is not None:
            # past the size the file had when opened (it is being written): reads of the usual size
            self._left = self._left - got if got <= self._left else None
        return True

    def rest(self) -> bytes:
        """Everything held and not read yet: the whole file when no slice was taken."""
        return bytes(self._buf[:self._n]) + self._fh.read()

    def start(self) -> bool:
        """Read up to log_history's entries; False when there is no such list to slice (no
        log_history, or an empty one): the caller decodes the document whole."""
        pos = 0
        while (m := _HISTORY.search(self._buf, pos, self._n)) is None:
            # Searched up to what is held: only the last "log_history" seen, or one cut
            # at the end, can still start the first match once more is read.
            last = self._buf.rfind(b'"log_history"', pos, self._n)
            pos = last if last >= 0 else max(pos, self._n - len(b'"log_history"'))
            if not self._more():
                return False
        while self._n - m.end() < SLICE and self._more():
            pass
        if _EMPTY.match(self._buf, m.end(), self._n):
            return False
        self.head = bytes(self._buf[:m.end()])
        self._drop(m.end())
        return True

    def _drop(self, upto: int) -> None:
        """Keep `[` and the text from `upto` on at the start of the buffer."""
        keep = self._n - upto
        with memoryview(self._buf) as view:
            view[1:1 + keep] = view[upto:self._n]
        self._buf[0] = 0x5B  # [
        self._n = 1 + keep
        self._clear = max(1, self._clear - upto + 1)

    def slices(self) -> Iterator[memoryview]:
        """Each slice as a JSON array in the buffer (valid until the next one is asked for).
        _Irregular when the history has no end."""
        buf = self._buf
        while True:
            close = _end(buf, self._clear, self._n, floor=1)
            self._clear = close if close >= 0 else self._n
            stop = close + 1 if close >= 0 else self._n
            cut = _BOUNDARY.search(buf, 1 + SLICE, stop) if stop > 1 + SLICE else None
            if cut is None and close < 0:
                if not self._more():
                    raise _Irregular
                buf = self._buf
                continue
            last = cut.start() + 1 if cut is not None else stop
            if cut is None:
                tail_at = buf.index(b"]", close, self._n)
                self.tail = bytes(buf[tail_at:self._n]) + self._fh.read()
            buf[last] = 0x5D  # ]
            with memoryview(buf) as view:
                piece = view[:last + 1]
            yield piece
            piece.release()  # the caller is done with it; the buffer may grow again
            if cut is None:
                return
            self._drop(cut.end() - 1)


def _bytes_left(fh: IO[bytes]) -> int | None:
    """How many bytes a regular file opened as `fh` holds after its position; None for a
    decompressed stream, a pipe, or anything else whose size is not known beforehand."""
    raw = getattr(fh, "raw", None)
    if not isinstance(raw, io.FileIO):
        return None
    try:
        st = os.fstat(raw.fileno())
        pos = fh.tell()
    except (OSError, ValueError):
        return None
    return max(0, st.st_size - pos) if stat.S_ISREG(st.st_mode) else None


# How a slice was decoded: dicts from the general decoder, typed.py's structs for plain
# entries of known keys, or (numbers only) Template.numbers' float matrix
GENERAL, TYPED, MATRIX = 0, 1, 2
# (entries, may hold booleans, how decoded)
Chunk = tuple[Any, bool, int]


def _chunks(stream: _Stream, template: Template) -> Iterator[Chunk]:
    """The slices decoded. The first is decoded the general way, to learn its keys. A slice
    that does not decode leaves the whole document to _whole (_Irregular): a string that
    holds `},{` or `}]` can cut a slice or end the history inside itself, and the whole
    document may still be valid. The typed rows and matrices hold no reference to the
    buffer (msgspec copies what it keeps)."""
    slices = stream.slices()
    first = bytes(next(slices))
    try:
        decoded = loads(first)
    except ValueError:
        raise _Irregular from None
    # Learnt before read() would, the first slice's keys let its columns come from the
    # matrix too: its rows converted once instead of again as dicts, column by column.
    # Every entry is looked at (a summary can sit anywhere): one with a summary goes the
    # general way, where the summary is told apart and its keys are not learnt.
    if set(map(type, decoded)) == {dict} and not any(map(is_summary, decoded)):
        template.learn(decoded)  # what read() learns from these rows, all of them points
        matrix = template.numbers(first)
        if matrix is not None and _fits(matrix, template):
            yield matrix, False, MATRIX
        else:
            yield decoded, may_have_bools(first), GENERAL
    else:
        yield decoded, may_have_bools(first), GENERAL
    for raw in slices:
        if stream.tail:  # the last slice: the summary's keys are in it, and no other row's
            split = _split_last(stream, raw, template)
            if split is not None:
                yield from split
                continue
        matrix = template.numbers(raw)
        if matrix is not None and _fits(matrix, template):
            yield matrix, False, MATRIX
            continue
        typed = template.decode(raw)
        if typed is not None and not _maybe_summary(typed, template):
            yield typed, False, TYPED
        else:
            text = bytes(raw)
            try:
                decoded = loads(text)
            except ValueError:  # cut inside a string (`},{` or `}]` in it): no trainer's layout
                raise _Irregular from None
            yield decoded, may_have_bools(text), GENERAL


def _split_last(stream: _Stream, raw: memoryview, template: Template) -> list[Chunk] | None:
    """The last slice as a matrix of all but its last three entries and those three
    decoded the general way, or None: read it whole, as the other slices. It holds the
    summary, whose keys no earlier row had, so as a whole it goes the general way (~0.06 s
    a 4 MiB slice). Split only where that reads alike: no row before the three can be a
    summary (_fits, as for any matrix), and the first point of the three has a step of its
    own (one without would inherit the previous row's). The three are told a summary or a
    point one by one, as every general entry is; a summary further up (entries after it:
    evaluate() on several sets) makes the matrix refuse or decline, and the slice is read
    whole."""
    end = len(raw)
    marks = list(_BOUNDARY.finditer(stream.buf, max(1, end - 65536), end - 1))
    if len(marks) < 4:
        return None
    at = marks[-3]
    last = b"[" + bytes(raw[at.end() - 1:])
    try:
        tail = loads(last)
    except ValueError:
        return None
    if len(tail) != 3:
        return None
    # the first of the three that is a point (summaries and non-objects are dropped before
    # the steps are read): without a step of its own it would take its index, not the
    # step of the matrix's last row as it does when the slice is read whole
    first = next((e for e in tail if type(e) is dict and not is_summary(e)), None)
    if first is not None and (type(step := first.get("step")) not in (int, float) or not math.isfinite(step)):
        return None
    kept = stream.buf[at.start() + 1]
    stream.buf[at.start() + 1] = 0x5D  # ]
    matrix = template.numbers(raw[:at.start() + 2])
    stream.buf[at.start() + 1] = kept
    if matrix is None or not _fits(matrix, template):
        return None
    return [(matrix, False, MATRIX), (tail, may_have_bools(last), GENERAL)]


def _maybe_summary(rows: list[Any], template: Template) -> bool:
    """Could one of these typed entries be a summary? The decoder refuses keys it was not
    taught, so without a run-total key in the template none can. Otherwise typed rows read
    a null and a missing key alike, so any entry without a loss value leaves the slice to
    the general path, where is_summary decides."""
    if not any(k in template.keys for k in _RUN_TOTALS):
        return False
    losses = [template.column(rows, k) for k in _POINT_KEYS]
    return any(all(v is None for v in cells) for cells in zip(*losses, strict=True))


def _fits(matrix: Any, template: Template) -> bool:
    """Can rows.add_matrix take this slice? Every entry has a step (a missing one would be
    inherited, which add_columns does) and no entry, wherever it sits, can be a summary:
    _maybe_summary's test as a column test over the rows (no loss value of either kind,
    where the template has a run-total key). A NaN is a null or a missing key alike, so
    such a row leaves the slice to the general path, where is_summary decides. No cell is
    infinite: msgspec refuses NaN, Infinity, 1e999 and an integer past float64's range."""
    keys = template.keys
    if "step" not in keys or np.isnan(matrix[:, keys.index("step")]).any():
        return False
    if not any(k in keys for k in _RUN_TOTALS):  # numbers() refused any row with one
        return True
    points = [keys.index(k) for k in _POINT_KEYS if k in keys]
    return bool(points) and not np.isnan(matrix[:, points]).all(axis=1).any()


def _whole(data: bytes) -> tuple[dict[str, Any], Iterator[Chunk]]:
    doc = loads(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("log_history"), list):
        raise _Irregular
    history = doc["log_history"]
    return doc, iter([(history, True, GENERAL)])


def read(path: Path) -> RawLog:
    """Slice by slice from the file (_Stream); the document decoded whole when its layout is
    not a trainer's: read again from the start when that shows only after slices were
    taken (no end to log_history, a first slice or the document around log_history that
    does not decode), at once otherwise."""
    require_file(path)
    try:
        with open_log(path) as fh:
            stream = _Stream(fh)
            if not stream.start():
                return _read(path, lambda: _whole(stream.rest()))
            template = Template()
            try:
                return _read(path, lambda: (None, _chunks(stream, template)), stream, template)
            except _Irregular:
                pass
        with open_log(path) as fh:
            data = fh.read()
        return _read(path, lambda: _whole(data))
    except (ValueError, UnicodeDecodeError) as exc:  # from _whole's decode
        raise InputError(f"{path}: not a readable trainer_state.json ({_short(exc)})") from None


def _read(path: Path, entries: Callable[[], tuple[dict[str, Any] | None, Iterator[Chunk]]],
          stream: _Stream | None = None, template: Template | None = None) -> RawLog:
    """The columns of the chunks `entries` gives; the document around log_history is
    _whole's, or (doc None) the stream's head and tail decoded once the chunks are read.
    _Irregular from the stream's chunks or that document: decode the file whole."""
    template = Template() if template is None else template
    try:
        doc, chunks = entries()
    except _Irregular as exc:
        if stream is None:
            raise InputError(f"{path}: not a readable trainer_state.json ({_short(exc)})") from None
        raise
    cols: Columns = Columns()
    notes: list[str] = []
    records, not_objects, summary = 0, 0, None
    try:
        for entries_, bools, kind in chunks:
            if kind == MATRIX:
                add_matrix(entries_, template.keys, cols, "step")
                records += len(entries_)
                continue
            if kind == TYPED:  # the typed rows hold no boolean
                add_columns(entries_, template.keys, lambda k, rows=entries_: template.column(rows, k), cols,
                            records, "step", may_have_bools=False,
                            cells=lambda k, rows=entries_: template.cells(rows, k))
                records += len(entries_)
                continue
            rows = entries_ if set(map(type, entries_)) == {dict} else [e for e in entries_ if type(e) is dict]
            not_objects += len(entries_) - len(rows)
            points = [e for e in rows if not is_summary(e)]
            if len(points) != len(rows):  # the last summary of the history is the run's
                summary = next(e for e in reversed(rows) if is_summary(e))
            add_rows(points, cols, records, "step", bools)
            records += len(points)
            template.learn(points)
    except (ValueError, UnicodeDecodeError) as exc:  # a later slice the general decoder refused
        raise InputError(f"{path}: not a readable trainer_state.json ({_short(exc)})") from None
    if doc is None and stream is not None:
        try:
            doc = loads(stream.head + stream.tail)
        except ValueError:
            raise _Irregular from None
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
    # _POINT_KEYS and _RUN_TOTALS spelt out: the first slice asks this of each of its ~24k
    # entries, and two generator expressions a call cost ~30 ms of them (#14)
    return ("loss" not in entry and "eval_loss" not in entry
            and ("train_loss" in entry or "total_flos" in entry or "train_runtime" in entry))


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0][:120] if str(exc) else "no log_history list"
    return text
