"""ClearML metric events: an offline session (`Task.set_offline(True)`), its zip, or a
file of exported events.

An offline session is a folder `<task id>/` holding task.json (the task, its name)
and metrics.jsonl, where each line is one JSON array of the events the reporter
flushed together; ClearML also writes the folder as `<task id>.zip`. A scalar event
is `{"type": "training_stats_scalar", "metric": ..., "variant": ..., "value": ...,
"iter": ...}`: it becomes column `metric/variant` at step `iter` (just `metric` when
the variant repeats it), so `loss/train` and `loss/validation` map to loss and
eval_loss. Lines holding one event object each are read the same way. Plots, debug
images and other events are not series; single values (`report_single_value`,
written at iteration -2**31) are summary, not points. By default ClearML writes NaN
and Inf as 0.0 before they reach the file: only a session that set
`set_reporting_nan_value(nan)` keeps them, as bare NaN/Infinity tokens.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, bounded_lines, number, require_file
from trainproof.parsers.jsonutil import loads
from trainproof.zipsafe import ZipRefused, open_zip

NAME = "clearml"
TASK, METRICS, CONSOLE = "task.json", "metrics.jsonl", "log.jsonl"
SCALAR = "training_stats_scalar"
SUMMARY_ITER = -(2 ** 31)  # where ClearML files report_single_value
MAX_LINE = 64 << 20  # a longer line is not one flushed batch; skip it instead of buffering it
TASK_MAX = 16 << 20  # task.json is read for the task's name only
ZIP_MAGIC = b"PK\x03\x04"
REPLACED = re.compile(rb"(NaN|inf) value encountered\. Reporting it as '([^']*)'")
SCAN_BLOCK = 1 << 20
_EVENT = re.compile(rb'^\s*\[?\s*\{.*"type"\s*:\s*"(training_stats_\w+|training_debug_image|plot)"', re.DOTALL)


@dataclass
class Tally:
    scalars: int = 0
    other: int = 0  # plots, histograms, debug images: events that are not series
    summary: int = 0
    malformed: int = 0
    oversized: int = 0
    half_written: bool = False


def sniff(name: str, head: bytes) -> bool:
    """metrics.jsonl-shaped text (ClearML's `log` events alone are not metrics), or the
    session zip, whose first member names sit in the first local headers."""
    if head.startswith(ZIP_MAGIC):
        return name.endswith(".zip") and METRICS.encode() in head
    first = head.lstrip()[:1]
    return first in (b"[", b"{") and _EVENT.match(head) is not None and b'"metric"' in head


def sniff_dir(d: Path) -> bool:
    return (d / TASK).is_file() and (d / METRICS).is_file()


def read(path: Path) -> RawLog:
    if path.is_dir():
        if not sniff_dir(path):
            raise InputError(f"{path}: not a ClearML offline session (needs {TASK} and {METRICS})")
        with open(path / METRICS, "rb") as fh:
            raw = _read_events(fh)
        _name_task(raw, _task_name(path / TASK))
        if (path / CONSOLE).is_file():
            with open(path / CONSOLE, "rb") as fh:
                raw.notes.extend(_replaced_notes(fh))
        return raw
    require_file(path)
    if not path.name.endswith(".zip"):
        with open(path, "rb") as fh:
            return _read_events(fh)
    try:
        with open_zip(path) as zf:  # bounded: duplicate or overlapping entries, inflation caps
            if METRICS not in zf.namelist():
                raise InputError(f"{path}: zip without {METRICS}; not a ClearML offline session")
            with zf.open(METRICS) as fh:
                raw = _read_events(fh)
            name = _zip_task_name(zf)
            if CONSOLE in zf.namelist():
                with zf.open(CONSOLE) as fh:
                    raw.notes.extend(_replaced_notes(fh))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, ZipRefused) as exc:
        raise InputError(f"{path}: unreadable zip ({exc})") from None
    _name_task(raw, name)
    return raw


def _name_task(raw: RawLog, name: str | None) -> None:
    if name:
        raw.meta["task_name"] = name
        raw.notes.insert(0, f"ClearML task '{name}'")


def _task_name(path: Path) -> str | None:
    try:
        if path.stat().st_size > TASK_MAX:
            return None
        return _name_of(path.read_bytes())
    except OSError:
        return None


def _zip_task_name(zf: zipfile.ZipFile) -> str | None:
    try:
        info = zf.getinfo(TASK)
    except KeyError:
        return None
    return _name_of(zf.read(info)) if info.file_size <= TASK_MAX else None


def _name_of(data: bytes) -> str | None:
    try:
        doc = loads(data)
    except ValueError:  # UnicodeDecodeError, nesting too deep and 5,000-digit ints included
        return None
    name = doc.get("name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) else None


def _replaced_notes(fh: IO[bytes]) -> list[str]:
    """ClearML writes NaN/Inf as a stand-in (0.0 by default) and says so in its console
    log, once per warning period: the one trace in the session that they happened."""
    counts: dict[tuple[str, str], int] = {}
    tail = b""
    while True:
        block = fh.read(SCAN_BLOCK)
        text = tail + block
        # a message (under 200 bytes) that starts in the last 200 is counted next time
        cut = len(text) if not block else max(0, len(text) - 200)
        for m in REPLACED.finditer(text):
            if m.start() < cut:
                key = (m.group(1).decode(), m.group(2).decode("utf-8", "replace"))
                counts[key] = counts.get(key, 0) + 1
        if not block:
            break
        tail = text[cut:]
    return [f"ClearML's console log says {kind} values were written as {value} ({n} warning(s)): "
            f"those points hold {value}, not {kind}" for (kind, value), n in sorted(counts.items())
            if value.lower() not in ("nan", "inf", "-inf")]


def _read_events(fh: IO[bytes]) -> RawLog:
    cols, tally = Columns(), Tally()
    for line in bounded_lines(fh, MAX_LINE):
        if line is None:
            tally.oversized += 1
            continue
        if not line.strip():
            continue
        try:
            doc = loads(line)
        except (ValueError, UnicodeDecodeError):
            if line.endswith(b"\n"):
                tally.malformed += 1
            else:
                tally.half_written = True
            continue
        _add_events(doc if type(doc) is list else [doc], cols, tally)
    return RawLog(cols.arrays(), tally.scalars, notes=_notes(tally) + cols.bad_notes())


def _add_events(events: list[Any], cols: Columns, tally: Tally) -> None:
    for ev in events:
        if type(ev) is not dict or ev.get("type") != SCALAR:
            tally.other += 1
            continue
        metric, variant = ev.get("metric"), ev.get("variant")
        step = number(ev.get("iter"))
        if not isinstance(metric, str) or not isinstance(variant, str) or step is None:
            tally.other += 1
            continue
        if step == SUMMARY_ITER:
            tally.summary += 1
            continue
        column = metric if variant in ("", metric) else f"{metric}/{variant}"
        value = number(ev.get("value"))
        if value is None:
            cols.reject(column)
            continue
        cols.add(column, step, value)
        tally.scalars += 1


def _notes(t: Tally) -> list[str]:
    notes = []
    if t.other:
        notes.append(f"{t.other} event(s) that are not scalars (plots, images, histograms) skipped")
    if t.summary:
        notes.append(f"{t.summary} single value(s) (report_single_value) are a summary, not points")
    if t.malformed:
        notes.append(f"{t.malformed} malformed line(s) skipped")
    if t.oversized:
        notes.append(f"{t.oversized} line(s) over {MAX_LINE >> 20} MiB skipped")
    if t.half_written:
        notes.append("half-written last line ignored (the writer was still running or was killed)")
    return notes
