"""DVCLive's run directory (`dvclive/` by default, Live(dir=...)), read as one run.

    <dir>/plots/metrics/<name>.tsv   one file per metric: a header `[timestamp] step <base>`
                                     then one tab-separated row per log_metric call
    <dir>/metrics.json               the summary: the last value of each metric (not read)
    <dir>/params.yaml, dvc.yaml      the logged parameters, DVC's pipeline stanza (not read)

A metric's name is its path under plots/metrics without `.tsv` (`train/loss`,
`eval/loss`, `train/learning_rate`), so columns.py maps it like any other slash-named
column. `timestamp` (milliseconds since the epoch) is written only by
log_metric(..., timestamp=True); where the loss file (else the first file) has one it
becomes a `timestamp` column in seconds, a clock. DVCLive writes a NaN or infinite
value as the text `nan` / `inf`, read back as those numbers; other text is a value
that is not a number (counted in a note). A row that is not `[timestamp] step value`
(a torn last line, an edited file) is counted and skipped, never fatal; a file whose
header has no `step` column is listed in a note and not read. The directory is one run:
doctor judges it once and not its TSV files or metrics.json on their own
(Format.owns_dir)."""

from __future__ import annotations

import os
from pathlib import Path

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, bounded_lines, number
from trainproof.parsers.columns import canonical

NAME = "dvclive"
PLOTS = Path("plots") / "metrics"
SUFFIX = ".tsv"
MAX_LINE = 4096  # a row is ~40 bytes; a longer line is not a metric row
SNIFF_ENTRIES = 200  # directory entries the sniff looks at before giving up
CLOCK = "timestamp"


def sniff(name: str, head: bytes) -> bool:
    return False  # a run directory only; one .tsv of it on its own is read as a CSV/TSV log


def _tsv_files(root: Path) -> list[Path]:
    """Every regular .tsv under root (symlinks not followed), in name order."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            f = Path(dirpath) / name
            if name.endswith(SUFFIX) and not f.is_symlink() and f.is_file():
                found.append(f)
    return found


def sniff_dir(d: Path) -> bool:
    """A plots/metrics folder holding a .tsv within its first SNIFF_ENTRIES entries."""
    root = d / PLOTS
    if not root.is_dir():
        return False
    seen = 0
    for _, _, filenames in os.walk(root, followlinks=False):
        if any(n.endswith(SUFFIX) for n in filenames):
            return True
        seen += len(filenames) + 1
        if seen > SNIFF_ENTRIES:
            return False
    return False


def read(path: Path) -> RawLog:
    root = path / PLOTS
    if not path.is_dir() or not root.is_dir():
        raise InputError(f"{path}: not a DVCLive directory (needs {PLOTS.as_posix()}/<metric>.tsv)")
    files = _tsv_files(root)
    if not files:
        raise InputError(f"{path}: no metric files under {PLOTS.as_posix()}/")
    keys = [f.relative_to(root).as_posix()[: -len(SUFFIX)] for f in files]
    clock_key = _clock_source(keys)
    cols, notes, records = Columns(), [f"DVCLive run: {len(files)} metric file(s) under {PLOTS.as_posix()}/"], 0
    bad: dict[str, int] = {}
    for f, key in zip(files, keys, strict=True):
        n, malformed, why = _read_metric(f, key, cols, key == clock_key)
        records += n
        if why:
            notes.append(f"{PLOTS.as_posix()}/{key}{SUFFIX}: {why}; not read")
        if malformed:
            bad[key] = malformed
    notes += [f"{n} malformed row(s) in {PLOTS.as_posix()}/{k}{SUFFIX} skipped" for k, n in sorted(bad.items())]
    arrays = cols.arrays()
    if CLOCK in arrays:
        notes.append(f"`timestamp` (ms) of {clock_key}{SUFFIX} read as a clock in seconds")
    return RawLog(arrays, records, notes=notes + cols.bad_notes())


def _clock_source(keys: list[str]) -> str | None:
    """The metric whose timestamps are the run's clock: the best-ranked loss, else the first."""
    losses = sorted((hit[1], k) for k in keys if (hit := canonical(k)) is not None and hit[0] == "loss")
    return losses[0][1] if losses else (keys[0] if keys else None)


def _header(line: bytes | None) -> tuple[int, int | None] | None:
    """(index of step, index of timestamp or None) from a TSV header; None when it has no step."""
    if line is None:
        return None
    names = line.decode("utf-8", "replace").rstrip("\r\n").split("\t")
    if "step" not in names or len(names) < 2:
        return None
    return names.index("step"), names.index(CLOCK) if CLOCK in names else None


def _read_metric(f: Path, key: str, cols: Columns, clock: bool) -> tuple[int, int, str]:
    """Points of one metric file into cols: (rows read, malformed rows, why the file was not read)."""
    points = malformed = 0
    with open(f, "rb") as fh:
        lines = bounded_lines(fh, MAX_LINE)
        head = _header(next(lines, None))
        if head is None:
            return 0, 0, "no `step` column in its header"
        at_step, at_time = head
        width = 2 if at_time is None else 3
        for line in lines:
            if line is None:
                malformed += 1
                continue
            parts = line.rstrip(b"\r\n").split(b"\t")
            if parts == [b""]:
                continue
            step = number(parts[at_step].decode("ascii", "replace")) if len(parts) == width else None
            if step is None:
                malformed += 1
                continue
            value = number(parts[-1].decode("utf-8", "replace"))
            if value is None:
                cols.reject(key)
            else:
                cols.add(key, step, value)
            points += 1
            if clock and at_time is not None and (ms := number(parts[at_time].decode("ascii", "replace"))):
                cols.add(CLOCK, step, ms / 1000.0)
    return points, malformed, ""
