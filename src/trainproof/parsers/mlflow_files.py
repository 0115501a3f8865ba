"""MLflow's file store (`mlruns/`): a tree of experiments, each a directory of runs.

    mlruns/<experiment_id>/meta.yaml                  the experiment
    mlruns/<experiment_id>/<run_id>/meta.yaml         run_id, run_name, status, lifecycle_stage
    mlruns/<experiment_id>/<run_id>/metrics/<key>     one point a line: `timestamp value step`

A metric key with '/' is a nested path under metrics/ (`train/loss`). Lines may carry
two more fields (the dataset name and digest) or, from old clients, no step (step 0,
as MLflow reads them); a malformed line is counted in a note, never fatal. A run
directory, an experiment directory or the whole tree can be given: each run
directory is one run. `models/` (logged models) and `.trash/` are not runs.
meta.yaml is read as flat `key: value` lines, never through a YAML loader.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from trainproof.parsers.base import Columns, RawLog, bounded_lines, overflowed
from trainproof.parsers.stores import RunRef, UnknownRun

META, METRICS = "meta.yaml", "metrics"
META_MAX = 1 << 16  # a meta.yaml is a few hundred bytes; read no more than this
MAX_LINE = 4096  # a metric line is ~40 bytes; longer ones are not metric lines
NOT_EXPERIMENTS = frozenset({"models", ".trash"})
STATUS = {"1": "RUNNING", "2": "SCHEDULED", "3": "FINISHED", "4": "FAILED", "5": "KILLED"}


def meta(d: Path) -> dict[str, str]:
    """The top-level `key: value` pairs of d/meta.yaml ({} when absent or unreadable)."""
    try:
        with open(d / META, "rb") as fh:
            text = fh.read(META_MAX).decode("utf-8", "replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key[0].isspace():
            out[key.strip()] = value.strip().strip("'\"")
    return out


def is_run_dir(d: Path) -> bool:
    return (d / METRICS).is_dir() and "run_id" in meta(d)


def _subdirs(d: Path) -> Iterator[Path]:
    try:
        names = sorted(e.name for e in os.scandir(d) if e.is_dir(follow_symlinks=False))
    except OSError:
        return
    for name in names:
        if name not in NOT_EXPERIMENTS and not name.startswith("."):
            yield d / name


def is_experiment_dir(d: Path) -> bool:
    info = meta(d)
    return "experiment_id" in info and "run_id" not in info and any(map(is_run_dir, _subdirs(d)))


def sniff_dir(d: Path) -> bool:
    """A run directory, an experiment directory, or a tree of experiments."""
    if (d / META).is_file():
        return is_run_dir(d) or is_experiment_dir(d)
    return any((e / META).is_file() and is_experiment_dir(e) for e in _subdirs(d))


def _experiments(path: Path) -> list[Path]:
    return [path] if "experiment_id" in meta(path) else [e for e in _subdirs(path) if is_experiment_dir(e)]


def runs(path: Path) -> list[RunRef]:
    """Every active run under path, by experiment, oldest first."""
    if is_run_dir(path):
        return [_ref(path, meta(path))]
    found = []
    for exp in _experiments(path):
        for d in _subdirs(exp):
            info = meta(d)
            if "run_id" in info and info.get("lifecycle_stage") != "deleted" and (d / METRICS).is_dir():
                found.append((info.get("start_time", ""), _ref(d, info)))
    found.sort(key=lambda pair: (len(pair[0]), pair[0], pair[1].id))
    return [ref for _, ref in found]


def _ref(d: Path, info: dict[str, str]) -> RunRef:
    return RunRef(info.get("run_id", d.name), info.get("run_name", ""), d)


def find(path: Path, run_id: str) -> Path:
    if is_run_dir(path):
        if meta(path).get("run_id") == run_id:
            return path
        raise UnknownRun(f"{path}: no run {run_id}")
    for exp in _experiments(path):
        if is_run_dir(exp / run_id):
            return exp / run_id
    raise UnknownRun(f"{path}: no run {run_id}")


def read(path: Path, run_id: str) -> RawLog:
    d = find(path, run_id)
    info = meta(d)
    cols, bad, records = Columns(), {}, 0
    root = d / METRICS
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            f = Path(dirpath) / name
            if f.is_symlink() or not f.is_file():
                continue
            key = f.relative_to(root).as_posix()
            n, malformed = _read_metric(f, key, cols)
            records += n
            if malformed:
                bad[key] = malformed
    status = STATUS.get(info.get("status", ""), info.get("status", "?"))
    notes = [f"MLflow run '{info.get('run_name', '')}' ({status})"]
    notes += [f"{n} malformed line(s) in metrics/{k} skipped" for k, n in sorted(bad.items())]
    return RawLog(cols.arrays(), records, notes=notes,
                  meta={"run_id": run_id, "run_name": info.get("run_name", ""), "status": status})


def _read_metric(f: Path, key: str, cols: Columns) -> tuple[int, int]:
    """Points of one metric file into cols; returns (points read, malformed lines)."""
    points = malformed = 0
    with open(f, "rb") as fh:
        for line in bounded_lines(fh, MAX_LINE):
            if line is None:
                malformed += 1
                continue
            parts = line.split()
            if not parts:
                continue
            try:
                value = float(parts[1])
                step = float(parts[2]) if len(parts) >= 3 else 0.0
                if overflowed(parts[1], value) or overflowed(parts[2] if len(parts) >= 3 else b"", step):
                    raise ValueError("a number past float64's range")
                int(parts[0])  # the time stamp: a line without one is not a metric line
            except (ValueError, IndexError):
                malformed += 1
                continue
            if len(parts) == 4 or len(parts) > 5:
                malformed += 1
                continue
            cols.add(key, step, value)
            points += 1
    return points, malformed
