"""TensorBoard event files (`events.out.tfevents.*`): one file, or a run directory.

A run directory's event files (restarts, resumes, one file per process) are one
run: their points are concatenated oldest file first, so at a step written twice
the later write wins when the run is built. Keras's TensorBoard callback writes a
run as `train/` and `validation/` siblings: the validation tags join the train
run with a `validation/` prefix (so `epoch_loss` there becomes the eval loss).

Reads with numpy alone (google-crc32c speeds up the odd long record when
installed); tensorflow, tensorboard and protobuf are never imported. Framing is in
tfevents_frame, CRCs in tfevents_crc, decoding in tfevents_decode / tfevents_proto.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from trainproof.model import InputError
from trainproof.parsers.base import RawLog, require_file
from trainproof.parsers.tfevents_crc import crc32c, mask
from trainproof.parsers.tfevents_decode import Points, Tags, decode_chunk, group_by
from trainproof.parsers.tfevents_frame import Damage, read_chunks

NAME = "tfevents"
_EVENT_NAME = re.compile(r"(^|\.)tfevents\.")
_STAMP = re.compile(r"tfevents\.(\d+)")
KERAS_TRAIN, KERAS_VALIDATION = "train", "validation"
VALIDATION_PREFIX = "validation/"

Series = dict[str, list[tuple[np.ndarray, np.ndarray]]]


def is_event_file(name: str) -> bool:
    return _EVENT_NAME.search(name) is not None


def sniff(name: str, head: bytes) -> bool:
    if is_event_file(name):
        return True
    if len(head) < 16:
        return False
    header_ok = mask(crc32c(head[:8])) == int.from_bytes(head[8:12], "little")
    return header_ok and b"brain.Event:" in head[12:12 + int.from_bytes(head[:8], "little")]


def event_files(d: Path) -> list[Path]:
    """Event files directly in d, oldest first (by the time stamp in the name)."""
    try:
        found = [p for p in d.iterdir() if is_event_file(p.name) and p.is_file()]
    except OSError:
        return []

    def key(p: Path) -> tuple[int, str]:
        m = _STAMP.search(p.name)
        return (int(m.group(1)) if m else 0, p.name)

    return sorted(found, key=key)


def sniff_dir(d: Path) -> bool:
    """A run directory: event files of its own, or a Keras train/ (+ validation/) pair."""
    return bool(event_files(d)) or bool(event_files(d / KERAS_TRAIN))


def run_parts(d: Path) -> list[tuple[Path, str]]:
    """(directory, tag prefix) pairs that make up the run at d."""
    if event_files(d):
        parts = [(d, "")]
        if d.name == KERAS_TRAIN and event_files(d.parent / KERAS_VALIDATION):
            parts.append((d.parent / KERAS_VALIDATION, VALIDATION_PREFIX))
        return parts
    if event_files(d / KERAS_TRAIN):
        parts = [(d / KERAS_TRAIN, "")]
        if event_files(d / KERAS_VALIDATION):
            parts.append((d / KERAS_VALIDATION, VALIDATION_PREFIX))
        return parts
    return []


def _collect(points: Points, first: int, size: int, out: dict[int, list[tuple[np.ndarray, np.ndarray]]]) -> int:
    """Append a chunk's points to the per-tag lists, in record order; count the
    records (numbered first .. first+size-1) that carried a scalar."""
    if not points.record:
        return 0
    rec, tag = np.concatenate(points.record), np.concatenate(points.tag)
    step, value = np.concatenate(points.step), np.concatenate(points.value)
    by_tag, bounds = group_by(tag)
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        pos = by_tag[a:b]
        r = rec[pos]
        if r.size > 1 and not bool(np.all(r[1:] >= r[:-1])):
            pos = pos[np.argsort(r, kind="stable")]  # a few sorted runs: timsort merges them
        out.setdefault(int(tag[pos[0]]), []).append((step[pos], value[pos]))
    carried = np.zeros(size, dtype=bool)
    carried[rec - first] = True
    return int(carried.sum())


def read_file(path: Path, tags: Tags, damage: Damage) -> tuple[dict[int, list], int]:
    """Per-tag-id (steps, values) parts of one event file, and how many records held scalars."""
    out: dict[int, list] = {}
    records = first = 0
    for chunk in read_chunks(path, damage):
        records += _collect(decode_chunk(chunk, first, tags, damage), first, chunk.starts.size, out)
        first += chunk.starts.size
    return out, records


def _read_files(files: list[tuple[Path, str]], label: Callable[[Path], str]) -> RawLog:
    series: Series = {}
    notes: list[str] = []
    records = 0
    tags = Tags()
    for path, prefix in files:
        damage = Damage()
        try:
            parts, n = read_file(path, tags, damage)
        except OSError as exc:
            notes.append(f"{label(path)}: unreadable ({type(exc).__name__}: {exc})")
            continue
        records += n
        for tag_id, pieces in parts.items():
            series.setdefault(prefix + tags.names[tag_id], []).extend(pieces)
        notes.extend(f"{label(path)}: {note}" for note in damage.notes())
    columns = {name: (np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]))
               for name, pieces in series.items()}
    meta: dict[str, object] = {"event_files": len(files), "tags": sorted(columns)}
    return RawLog(columns=columns, records=records, notes=notes, meta=meta)


def read(path: Path) -> RawLog:
    if path.is_dir():
        parts = run_parts(path)
        if not parts:
            raise InputError(f"{path}: no events.out.tfevents.* files in this directory")
        files = [(f, prefix) for d, prefix in parts for f in event_files(d)]
        return _read_files(files, lambda p: str(p.relative_to(path)))
    require_file(path)
    return _read_files([(path, "")], lambda p: p.name)
