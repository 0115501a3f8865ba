"""Finding training logs under a directory for `doctor`, asking the format registry
what each file is (there is no second list of log patterns here). Every candidate
ends up judged or listed as not judged with its reason."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from trainproof.parsers import detect
from trainproof.parsers.base import Format
from trainproof.parsers.compressed import is_archive, logical_name, missing_decoder

# Directories that hold installed code or caches, never a user's training logs.
SKIP_DIRS = frozenset({"site-packages", "dist-packages", "node_modules", "__pycache__",
                       "venv", "virtualenv"})
# Files whose name alone says they are not logs (weights, media, archives, code). A
# compressed file (.gz, .bz2, .xz, .zst) is judged by the name inside: metrics.jsonl.gz
# is a log, model.bin.gz and data.tar.gz are not.
NOT_LOGS = re.compile(
    r"\.(pt|pth|bin|safetensors|ckpt|onnx|npy|npz|pkl|pickle|h5|arrow|parquet|msgpack|"
    r"png|jpe?g|gif|webp|svg|wav|flac|mp3|ogg|opus|mp4|zip|tgz|tbz2|txz|tar|7z|"
    r"py|pyc|so|dll|dylib|exe|md|rst|html?|css|js|ts|yaml|yml|toml|cfg|ini|lock|model|"
    r"vocab|spm|sarif)$", re.IGNORECASE)
_CHECKPOINT = re.compile(r"checkpoint-(\d+)$")


@dataclass
class Discovery:
    logs: list[tuple[Path, Format]] = field(default_factory=list)
    not_judged: list[tuple[Path, str]] = field(default_factory=list)
    # a directory run -> the other logs found inside it: more records of the same run
    # (Lightning's metrics.csv beside its event file), judged with it when they agree
    records: dict[Path, list[tuple[Path, Format]]] = field(default_factory=dict)


def _not_log(name: str) -> bool:
    return is_archive(name) or bool(NOT_LOGS.search(logical_name(name)))


def _skip_dir(d: Path, name: str) -> bool:
    return (name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info")
            or (d / name / "pyvenv.cfg").exists())


def discover(root: Path, max_logs: int) -> Discovery:
    found = Discovery()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(n for n in dirnames if not _skip_dir(here, n))
        fmt = detect(here)  # a format that reads whole directories (a TensorBoard run)
        if fmt is not None:
            found.logs.append((here, fmt))
            if fmt.store is not None:  # a multi-run store (mlruns/) owns everything under it
                dirnames[:] = []
                continue
            # a run directory's nested runs (Keras train/ + validation/, hparams runs
            # that SummaryWriter.add_hparams writes) belong to it, not beside it
            nested = [n for n in dirnames if detect(here / n) is not None]
            found.not_judged.extend((here / n, f"nested in the run directory {here}; not judged on its own")
                                    for n in nested)
            dirnames[:] = [n for n in dirnames if n not in nested]
            for name in sorted(filenames):  # other logs beside the event files are logs too
                other = here / name
                kind = None if _not_log(name) or not other.is_file() else detect(other)
                if kind is not None and kind is not fmt:
                    found.logs.append((other, kind))
            continue
        for name in sorted(filenames):
            if _not_log(name):
                continue
            p = here / name
            if not p.is_file() or p.is_symlink():
                continue
            why = missing_decoder(name)
            if why is not None:
                found.not_judged.append((p, why))
                continue
            f = detect(p)
            if f is not None:
                found.logs.append((p, f))
    _fold_checkpoints(found)
    _fold_records(found)
    if len(found.logs) > max_logs:
        for p, _ in found.logs[max_logs:]:
            for q in [p, *(r for r, _ in found.records.pop(p, []))]:
                found.not_judged.append((q, f"cap reached: only the first {max_logs} logs are judged "
                                            "(raise --max-logs)"))
        found.logs = found.logs[:max_logs]
    return found


def _fold_checkpoints(found: Discovery) -> None:
    """HF writes checkpoint-N/trainer_state.json as prefixes of the run: judge the
    run's own trainer_state.json, or the latest checkpoint when there is none."""
    states = {p for p, f in found.logs if p.name == "trainer_state.json"}
    latest: dict[Path, tuple[int, Path]] = {}
    for p in states:
        m = _CHECKPOINT.match(p.parent.name)
        if m is None:
            continue
        run_dir = p.parent.parent
        if (run_dir / "trainer_state.json") in states:
            continue
        n = int(m.group(1))
        if run_dir not in latest or n > latest[run_dir][0]:
            latest[run_dir] = (n, p)
    keep = []
    for p, f in found.logs:
        m = _CHECKPOINT.match(p.parent.name) if p in states else None
        if m is not None:
            run_dir = p.parent.parent
            own = run_dir / "trainer_state.json"
            chosen = own if own in states else latest[run_dir][1]
            if p != chosen:
                found.not_judged.append((p, f"checkpoint snapshot, a prefix of {chosen}"))
                continue
        keep.append((p, f))
    found.logs = keep


def _fold_records(found: Discovery) -> None:
    """A log that lies inside a directory run (a TensorBoard or W&B run directory) is
    another record of that run, not a run beside it: it goes with the innermost such
    directory, and doctor decides from the numbers whether they are one run."""
    run_dirs = sorted((p for p, _ in found.logs if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    if not run_dirs:
        return
    keep = []
    for p, f in found.logs:
        owner = next((d for d in run_dirs if d != p and d in p.parents), None)
        if owner is None:
            keep.append((p, f))
        else:
            found.records.setdefault(owner, []).append((p, f))
    found.logs = keep
