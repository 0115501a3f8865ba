"""The format registry: every log format trainproof reads, with a cheap sniff
(file name + first KiBs) that `--format auto` and `doctor` both use, and the one
function that turns a reader's columns into a canonical Run.

Formats are declared here by name and module; a format's module is imported the
first time its sniff, reader or store is called, so judging a trainer_state.json
imports the HF reader and not the TensorBoard, W&B or text-log ones."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.address import SEPARATOR, join_address
from trainproof.files import require_regular
from trainproof.model import InputError, Run, Series
from trainproof.parsers.base import Format, RawLog, read_text_head
from trainproof.parsers.columns import CANONICAL, choose, heldout_quality
from trainproof.parsers.compressed import compression, is_archive, logical_name, open_log, stream_notes
from trainproof.parsers.stores import Store, read_selected
from trainproof.stats import increasing

FORMATS: dict[str, Format] = {}
DirSniff = Callable[[Path], bool]
_DIR_SNIFFS: dict[str, DirSniff] = {}


def register(fmt: Format, sniff_dir: DirSniff | None = None) -> None:
    FORMATS[fmt.name] = fmt
    if sniff_dir is not None:
        _DIR_SNIFFS[fmt.name] = sniff_dir


def _lazy(module: str, attr: str) -> Callable[..., Any]:
    """`trainproof.parsers.<module>.<attr>`, its module imported on the first call."""
    target = f"{__name__}.{module}"

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(target), attr)(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"{module}.{attr}"
    return call


def _declare(module: str, name: str, description: str, sniff_dir: bool = False, **kw: Any) -> None:
    """A format whose module exports sniff and read (and sniff_dir for run directories)."""
    register(Format(name, _lazy(module, "sniff"), _lazy(module, "read"), description, **kw),
             _lazy(module, "sniff_dir") if sniff_dir else None)


# In sniffing order. The names are the modules' NAME and textlog's head its HEAD
# (tests/test_startup.py checks both against the modules).
_declare("hf", "hf", "HuggingFace Trainer trainer_state.json", compressed=True)
# a binary header or the .wandb suffix: decided before any text sniff
_declare("wandb", "wandb", "Weights & Biases run log (run-*.wandb) or its run directory", sniff_dir=True)
# Sacred's metrics.json, one object of {"steps", "values"} objects: before keras and jsonl
_declare("sacred", "sacred", "Sacred FileStorageObserver metrics.json (beside run.json)", compressed=True)
# one JSON object of per-epoch column lists: before jsonl, which would take its one line
_declare("keras_history", "keras", "Keras History saved as JSON (json.dump(history.history)), "
         "or pandas' to_json of it", compressed=True)
# mmcv 1.x JSON lines whose `iter` restarts every epoch: before jsonl, which would read it as steps
_declare("mmcv", "mmcv", "mmcv 1.x TextLoggerHook <timestamp>.log.json (MMDetection 2.x, MMSegmentation 0.x)",
         compressed=True)
# JSON lines whose validation steps count epochs: before jsonl, which would read them as steps
_declare("mmengine", "mmengine", "MMEngine / OpenMMLab vis_data/scalars.json (or <timestamp>.json)",
         compressed=True)
# JSON lines whose `time` is seconds per iteration: before jsonl, which would read a clock
_declare("detectron2", "detectron2", "Detectron2 metrics.json (JSONWriter)", compressed=True)
_declare("coqui", "coqui", "Coqui Trainer text log (trainer_0_log.txt)", compressed=True)
_declare("jsonl", "jsonl", "JSON Lines, one metrics object per line", compressed=True)
# a CSV whose header is YOLO's: before csv, which would read it without a loss
_declare("ultralytics", "ultralytics", "Ultralytics YOLO results.csv (one row per epoch)", compressed=True)
# a TSV whose header is Flair's (EPOCH, TIMESTAMP, ...): before csv, which would number its rows from 0
_declare("flair", "flair", "Flair ModelTrainer loss.tsv (one row per epoch)", compressed=True)
_declare("csvlog", "csv", "CSV/TSV with a header row", compressed=True)
register(Format("mlflow", _lazy("mlflow_sqlite", "sniff"), _lazy("mlflow", "read"),
                "MLflow tracking store: mlflow.db (SQLite) or an mlruns/ tree, experiment or run directory",
                store=Store(_lazy("mlflow", "runs"), _lazy("mlflow", "read_one")),
                confirm=_lazy("mlflow_sqlite", "confirm")), _lazy("mlflow_files", "sniff_dir"))
_declare("clearml", "clearml", "ClearML scalar events: an offline session folder or zip, or metrics.jsonl",
         sniff_dir=True)
if importlib.util.find_spec(f"{__name__}.tfevents") is not None:  # not in every tree
    _declare("tfevents", "tfevents", "TensorBoard event files (events.out.tfevents.*) or a run directory",
             sniff_dir=True)
_declare("dvclive", "dvclive", "DVCLive run directory (plots/metrics/*.tsv beside metrics.json)",
         sniff_dir=True, owns_dir=True)
# Last: a stdout capture is claimed only when no structured format is (a Coqui log,
# JSON lines and CSV rows are text files too).
_declare("textlog", "textlog", "training stdout / text log (HF Trainer, TRL, nanoGPT, Megatron-LM, NeMo, "
         "DeepSpeed, fairseq, torchtune, Keras model.fit, mlx-lm, spaCy, OpenNMT-py, Flair)",
         head=128 << 10, compressed=True)


def detect(path: Path) -> Format | None:
    """The registered format that claims this path, or None."""
    if path.is_dir():
        for name, sniff_dir in _DIR_SNIFFS.items():
            try:
                if sniff_dir(path):
                    return FORMATS[name]
            except OSError:  # a child it looks at is unreadable: not this format; the walk lists it
                continue
        return None
    if not path.is_file() or is_archive(path.name):  # FIFOs, devices, sockets, tarballs: never read
        return None
    packed = compression(path.name) is not None
    candidates = [f for f in FORMATS.values() if f.compressed or not packed]
    try:
        head = read_text_head(path, max((f.head for f in candidates), default=0))
    except OSError:
        return None
    name = logical_name(path.name)
    for fmt in candidates:
        if fmt.sniff(name, head[: fmt.head]) and (fmt.confirm is None or fmt.confirm(path)):
            return fmt
    return None


def resolve(path: Path, fmt_name: str = "auto") -> Format:
    if not path.is_dir():
        require_regular(path)  # missing, FIFO, device: one line, never opened
    if fmt_name != "auto":
        if fmt_name not in FORMATS:
            raise InputError(f"unknown --format {fmt_name!r}; known: auto, {', '.join(FORMATS)}")
        return FORMATS[fmt_name]
    if compression(path.name) is not None and path.is_file():
        open_log(path).close()  # a .zst without zstandard installed: say so, not "unrecognised"
    fmt = detect(path) or _by_suffix(path)
    if fmt is None:
        kind = "directory holds no recognised log" if path.is_dir() else "not a recognised log format"
        raise InputError(f"{path}: {kind}; pass --format ({', '.join(FORMATS)})")
    return fmt


_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "csv",
             ".log": "textlog", ".txt": "textlog", ".out": "textlog"}


def _by_suffix(path: Path) -> Format | None:
    """A file the user named explicitly whose content sniffed as no known metric log:
    its suffix decides, so the report can say which columns (or lines) it did find."""
    if not path.is_file() or is_archive(path.name):
        return None
    name = _SUFFIXES.get(Path(logical_name(path.name)).suffix.lower())
    return FORMATS.get(name) if name else None


def read_run(path: Path, fmt_name: str = "auto", mapping: Mapping[str, str] | None = None,
             display: str | None = None, run: str | None = None) -> Run:
    """Read one log (file or run directory) into a Run. `run` names one run of a
    multi-run store (stores.py); the Run's path is then the `PATH::RUN_ID` address.
    Raises InputError on bad input."""
    fmt = resolve(path, fmt_name)
    if compression(path.name) is not None and not fmt.compressed:
        raise InputError(f"{path}: the {fmt.name} reader does not read compressed files; decompress it first")
    shown = display or str(path)
    if run is not None and fmt.store is None:
        raise InputError(f"{shown}{SEPARATOR}{run}: a {fmt.name} log holds one run; "
                         f"PATH{SEPARATOR}RUN_ID names a run in a multi-run store")
    try:
        with stream_notes() as cut:
            if fmt.store is None:
                raw = fmt.read(path)
            else:
                run_id, raw = read_selected(fmt.store, path, run)
                shown = shown if run_id is None else join_address(shown, run_id)
    except InputError:
        raise
    except (OSError, UnicodeDecodeError, MemoryError) as exc:
        raise InputError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None
    raw.notes.extend(cut)
    if fmt.name == "hf" and run is None and path.is_file():
        from trainproof.parsers.beside import beside_state  # HF output directories only

        raw.meta.update(beside_state(path))  # the declared settings and checkpoints on disk
    elif fmt.name in ("csv", "tfevents") and run is None:
        from trainproof.parsers.beside import beside_hparams  # a Lightning version directory

        raw.meta.update(beside_hparams(path))
    elif fmt.name == "coqui" and run is None and path.is_file():
        from trainproof.parsers.beside import beside_coqui  # the run directory's .pth files

        raw.meta.update(beside_coqui(path, raw.meta))
    return build_run(shown, fmt.name, raw, mapping or {})


def build_run(path: str, fmt: str, raw: RawLog, mapping: Mapping[str, str]) -> Run:
    for canon, col in mapping.items():
        if canon not in CANONICAL:
            raise InputError(f"--map {canon}={col}: unknown metric; known: {', '.join(CANONICAL)}")
        if col not in raw.columns:
            found = ", ".join(sorted(raw.columns)) or "none"
            raise InputError(f"--map {canon}={col}: no column {col!r} in {path} (found: {found})")
    chosen = choose(raw.columns, mapping, {col: len(values) for col, (_, values) in raw.columns.items()})
    notes = list(raw.notes)
    series: dict[str, Series] = {}
    resumes: dict[str, list[dict]] = {}
    resume_counts: dict[str, int] = {}
    for canon, col in chosen.items():
        if canon == "step" or col not in raw.columns:
            continue
        steps, values = raw.columns[col]
        s, dropped, nan_steps, found, total = _ordered(canon, steps, values)
        series[canon] = s
        if found:
            resumes[canon] = found
            resume_counts[canon] = total
        if dropped:
            notes.append(f"{dropped} '{col}' value(s) at a repeated step replaced by a later, "
                         "different record (a resumed run writes its overlap again)")
        if nan_steps:
            notes.append(f"{nan_steps} '{col}' point(s) without a usable step ignored")
    columns = tuple(sorted(raw.columns))
    records = raw.records if series or raw.records else 0
    meta = dict(raw.meta)
    heldout = _heldout_metrics(raw)
    if heldout:
        meta["heldout_metrics"] = heldout  # read by TP-EVAL-METRIC-FROZEN (rules/eval_frozen.py)
    if resumes:
        meta["resumes"] = resumes  # judged by the resume rule (rules/resume.py)
        meta["resume_counts"] = resume_counts
    run = Run(path=path, format=fmt, series=series, records=records, columns=columns,
              notes=tuple(notes), meta=meta)
    if _may_hold_runs(run):
        # Which runs a log holds is a judgement with declared thresholds (rules/appended.py);
        # made here, so that every command judges the same run: the one the log ends with.
        # An epoch that goes back says so only where no step column numbers the rows.
        from trainproof.rules.appended import last_run

        run = last_run(run, by_epoch=raw.step_column is None)
    return run


def _heldout_metrics(raw: RawLog) -> dict[str, Series]:
    """Raw name -> series of every held-out quality column (columns.heldout_quality), in
    log order with steps made increasing as the canonical series are. These are the
    columns beside the loss that no canonical name keeps (coco/bbox_mAP, DEV_F1, val/iou);
    evaluations are few, so they cost little."""
    out: dict[str, Series] = {}
    for col in sorted(raw.columns):
        if heldout_quality(col):
            steps, values = raw.columns[col]
            s = _ordered(col, steps, values)[0].finite_only()
            if len(s):
                out[col] = s
    return out


def _may_hold_runs(run: Run) -> bool:
    """Cheap: whether the loss curve's counter or the epoch ever went back."""
    found = run.meta.get("resumes")
    if isinstance(found, dict) and (found.get("loss") or found.get("eval_loss")):
        return True
    epoch = run.series.get("epoch")
    return epoch is not None and epoch.values.size > 2 and bool(np.any(epoch.values[1:] < epoch.values[:-1]))


# Boundaries described in meta: the first and the last this many (the last say where the
# log's final run began: rules/appended.py); the rest are counted (meta stays bounded).
_KEPT_BOUNDARIES = 20


def _ordered(name: str, steps: np.ndarray, values: np.ndarray) -> tuple[Series, int, int, list[dict], int]:
    """Log order kept, steps made increasing: a step at or below the one before it starts a
    new segment. One that goes back into the log's own range (a run resumed from a
    checkpoint writes its overlap again), or repeats the step just written, replaces the
    earlier points from that step on:
    the later write wins. One that goes back to or below the log's first step (a counter
    restarted at 0, a second run appended to the same file) is placed after what came
    before, its steps shifted to continue the count. Returns the series, how many replaced
    values differed from their replacement (identical repeats are not news), the points
    without a step, and the boundaries found (kind, the step the counter went back from and
    to, points replaced; the first and last _KEPT_BOUNDARIES of them) and how many there were."""
    nan_steps = 0
    if steps.size and np.isnan(steps.min()):  # a NaN makes the minimum NaN: no mask unless one is there
        keep = ~np.isnan(steps)
        nan_steps = int((~keep).sum())
        steps, values = steps[keep], values[keep]
    if steps.size < 2 or increasing(steps):  # chunked: no 5M-point mask per column (#14)
        return Series(name, steps, values), 0, nan_steps, [], 0
    starts = np.flatnonzero(steps[1:] <= steps[:-1]) + 1
    if bool(np.all(steps[starts] == steps[starts - 1])) and bool(
            np.all(np.isclose(values[starts - 1], values[starts], equal_nan=True))):
        # Only identical rewrites (HF logs `epoch` in the train and the eval entry of one
        # step): the loop below would drop each earlier point and record nothing.
        keep = np.ones(steps.size, dtype=bool)
        keep[starts - 1] = False
        return Series(name, steps[keep], values[keep]), 0, nan_steps, [], 0
    return _replay(name, steps, values, starts, nan_steps)


def _replay(name: str, steps: np.ndarray, values: np.ndarray, starts: np.ndarray,
            nan_steps: int) -> tuple[Series, int, int, list[dict], int]:
    """_ordered's general case: the segments that begin at `starts`, in log order."""
    bounds = [0, *starts.tolist(), steps.size]
    # Chunks of (steps, values) in log order; a resume trims chunks from the end, so every
    # point is appended and removed at most once (linear even when every step repeats).
    chunks: list[tuple[np.ndarray, np.ndarray]] = [(steps[: bounds[1]], values[: bounds[1]])]
    first = float(steps[0])
    differing, total, found = 0, 0, []
    for lo, hi in itertools.pairwise(bounds[1:]):
        seg_s, seg_v = steps[lo:hi], values[lo:hi]
        back_from, s0 = float(chunks[-1][0][-1]), float(seg_s[0])
        # Resumed inside the log, or the same step written again: the later write
        # replaces the overlap.
        if s0 > first or s0 == back_from:
            same = s0 == back_from and np.isclose(chunks[-1][1][-1], seg_v[0], equal_nan=True)
            replaced, diff = _trim(chunks, seg_s, seg_v)
            differing += diff
            if not (same and replaced == 1):  # one identical rewrite (HF's epoch in a train
                # and an eval entry at one step) is the same record twice, not a resume
                found.append({"kind": "resume", "from": back_from, "to": s0, "replaced": replaced})
                total += 1
        else:  # the counter restarted: continue it after what came before
            d = float(seg_s[1] - seg_s[0]) if seg_s.size > 1 else 1.0
            found.append({"kind": "restart", "from": back_from, "to": s0, "replaced": 0})
            total += 1
            seg_s = seg_s - s0 + back_from + max(d, 1.0)
        chunks.append((seg_s, seg_v))
    out_s = np.concatenate([c[0] for c in chunks])
    out_v = np.concatenate([c[1] for c in chunks])
    kept = found if len(found) <= 2 * _KEPT_BOUNDARIES else found[:_KEPT_BOUNDARIES] + found[-_KEPT_BOUNDARIES:]
    return Series(name, out_s, out_v), differing, nan_steps, kept, total


def _trim(chunks: list[tuple[np.ndarray, np.ndarray]], seg_s: np.ndarray, seg_v: np.ndarray) -> tuple[int, int]:
    """Drop the points at or after seg_s[0] from the end of `chunks`; returns how many were
    dropped and how many of those differ from the new segment's value at the same step."""
    s0, dropped, differing = seg_s[0], 0, 0
    while chunks and chunks[-1][0][-1] >= s0:  # chunks are in increasing step order
        cs, cv = chunks.pop()
        keep = cs < s0
        old_s, old_v = cs[~keep], cv[~keep]
        dropped += int(old_s.size)
        at = np.searchsorted(seg_s, old_s).clip(0, seg_s.size - 1)
        same = seg_s[at] == old_s
        differing += int(np.count_nonzero(~np.isclose(old_v[same], seg_v[at][same], equal_nan=True)))
        if keep.any():
            chunks.append((cs[keep], cv[keep]))
            break
    return dropped, differing
