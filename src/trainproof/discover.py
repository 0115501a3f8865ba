"""Finding training logs under a directory for `doctor`, asking the format registry
what each file is (there is no second list of log patterns here). Every candidate
ends up judged or listed as not judged with its reason."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
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
# Deeper than any run layout (output/project/run/version/checkpoint-N/... is under 15
# levels); a folder this far below PATH is listed as not searched, not walked, so a
# hostile 2,000-deep tree costs 64 listings.
MAX_DEPTH = 64


@dataclass
class Discovery:
    logs: list[tuple[Path, Format]] = field(default_factory=list)
    not_judged: list[tuple[Path, str]] = field(default_factory=list)
    # a directory run -> the other logs found inside it: more records of the same run
    # (Lightning's metrics.csv beside its event file), judged with it when they agree
    records: dict[Path, list[tuple[Path, Format]]] = field(default_factory=dict)


def excluded(shown: str, globs: list[str]) -> str | None:
    """The first `--exclude` GLOB that matches a log, as shown ('/'-separated): the whole
    path, its file name, or one of its folder names (`--exclude 'seed*'` drops every log
    under a seed43/ folder). None when it is kept."""
    parts = Path(shown).parts
    for glob in globs:
        if fnmatch.fnmatchcase(Path(shown).as_posix(), glob) or any(fnmatch.fnmatchcase(p, glob) for p in parts):
            return glob
    return None


def _not_log(name: str) -> bool:
    return is_archive(name) or bool(NOT_LOGS.search(logical_name(name)))


def _skip_dir(d: Path, name: str) -> bool:
    if name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    try:
        return (d / name / "pyvenv.cfg").exists()
    except OSError:  # a folder we may not search is listed when the walk gets there
        return False


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _listing(d: Path, found: Discovery) -> tuple[list[str], list[str]] | None:
    """(subfolder names, other names) of d, symlinked folders left out as os.walk
    leaves them; None, with d listed as not judged, when d cannot be listed."""
    dirs, files = [], []
    try:
        with os.scandir(d) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    dirs.append(entry.name)
                elif not entry.is_symlink() or not os.path.isdir(entry.path):
                    files.append(entry.name)
    except OSError as exc:
        found.not_judged.append((d, f"cannot list this folder: {_why(exc)}"))
        return None
    return sorted(dirs), sorted(files)


def _sniff(p: Path, found: Discovery) -> Format | None:
    """detect(p); a path that cannot be read is listed as not judged instead."""
    try:
        return detect(p)
    except OSError as exc:
        found.not_judged.append((p, f"cannot read: {_why(exc)}"))
        return None


def _candidate(p: Path, found: Discovery) -> None:
    """A file whose name does not rule it out: a log, not judged with a reason, or not a log."""
    try:
        st = os.lstat(p)
    except OSError as exc:
        found.not_judged.append((p, f"cannot stat: {_why(exc)}"))
        return
    if not stat.S_ISREG(st.st_mode):  # symlinks, FIFOs, devices, sockets: never opened
        return
    why = missing_decoder(p.name)
    if why is None:
        try:
            open(p, "rb").close()  # detect() reads quietly; an unreadable log must be said
        except OSError as exc:
            why = f"cannot read: {_why(exc)}"
    if why is not None:
        found.not_judged.append((p, why))
        return
    f = _sniff(p, found)
    if f is not None:
        found.logs.append((p, f))


def _run_dir(here: Path, fmt: Format, dirnames: list[str], filenames: list[str],
             found: Discovery) -> list[str]:
    """A folder a format reads whole (a TensorBoard run): the subfolders still to walk."""
    found.logs.append((here, fmt))
    if fmt.store is not None or fmt.owns_dir:  # a multi-run store (mlruns/), a DVCLive
        return []  # directory: everything under it is its own
    # a run directory's nested runs (Keras train/ + validation/, hparams runs
    # that SummaryWriter.add_hparams writes) belong to it, not beside it
    nested = [n for n in dirnames if _sniff(here / n, found) is not None]
    found.not_judged.extend((here / n, f"nested in the run directory {here}; not judged on its own")
                            for n in nested)
    for name in filenames:  # other logs beside the event files are logs too
        other = here / name
        if _not_log(name) or not os.path.isfile(other):
            continue
        kind = _sniff(other, found)
        if kind is not None and kind is not fmt:
            found.logs.append((other, kind))
    return [n for n in dirnames if n not in nested]


def discover(root: Path, max_logs: int) -> Discovery:
    """Walk root without recursion (a 2,000-deep tree is data, not a crash), folders in
    name order, at most MAX_DEPTH levels down; what is cut off or cannot be listed or
    read is in not_judged with its reason."""
    found = Discovery()
    stack = [(root, 0)]
    while stack:
        here, depth = stack.pop()
        listing = _listing(here, found)
        if listing is None:
            continue
        dirnames = [n for n in listing[0] if not _skip_dir(here, n)]
        fmt = _sniff(here, found)  # a format that reads whole directories
        if fmt is not None:
            dirnames = _run_dir(here, fmt, dirnames, listing[1], found)
        else:
            for name in listing[1]:
                if not _not_log(name):
                    _candidate(here / name, found)
        if dirnames and depth >= MAX_DEPTH:
            found.not_judged.append((here, f"{len(dirnames)} subfolder(s) more than {MAX_DEPTH} levels "
                                           "below the path given: not searched"))
            continue
        stack.extend((here / n, depth + 1) for n in reversed(dirnames))
    _fold_checkpoints(found)
    _fold_mmengine_copies(found)
    _fold_flair_training_log(found)
    _fold_records(found)
    if len(found.logs) > max_logs:
        for p, _ in found.logs[max_logs:]:
            for q in [p, *(r for r, _ in found.records.pop(p, []))]:
                found.not_judged.append((q, f"cap reached: only the first {max_logs} logs are judged "
                                            "(raise --max-logs)"))
        found.logs = found.logs[:max_logs]
    seen: set[Path] = set()  # a folder that cannot be read may be met twice (sniffed, then listed)
    found.not_judged = [(p, why) for p, why in found.not_judged if not (p in seen or seen.add(p))]
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


def _fold_mmengine_copies(found: Discovery) -> None:
    """MMEngine writes every scalar line to vis_data/scalars.json and to the
    <timestamp>.json beside it: judge scalars.json once and list the copy, when the two
    are the same size (a copy that differs is judged too)."""
    kept = {p for p, f in found.logs if f.name == "mmengine" and p.name == "scalars.json"}
    keep = []
    for p, f in found.logs:
        twin = p.with_name("scalars.json")
        if f.name == "mmengine" and p != twin and twin in kept and _same_size(p, twin):
            found.not_judged.append((p, f"the same lines as {twin.name} beside it (MMEngine writes both)"))
        else:
            keep.append((p, f))
    found.logs = keep


def _fold_flair_training_log(found: Discovery) -> None:
    """Flair's ModelTrainer writes training.log beside loss.tsv in its model folder, the same
    epochs twice: judge loss.tsv (it also holds the LR and every split's scores) once and
    list training.log, so one run is not reported as two."""
    tsv = {p.parent for p, f in found.logs if f.name == "flair" and p.name == "loss.tsv"}
    keep = []
    for p, f in found.logs:
        if f.name == "textlog" and p.name == "training.log" and p.parent in tsv:
            found.not_judged.append((p, "Flair's training.log: the same epochs as loss.tsv beside it, judged there"))
        else:
            keep.append((p, f))
    found.logs = keep


def _same_size(a: Path, b: Path) -> bool:
    try:
        return os.stat(a).st_size == os.stat(b).st_size
    except OSError:
        return False


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
