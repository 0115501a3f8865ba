"""Environment rules (`trainproof env`): can the run start at all - does the training
module import, is the checkpoint it resumes from intact, safe to load and numerically
sound, is there RAM, disk and a capable GPU. Four families share the group: import,
checkpoint, machine, gpu; `judge(family, subject)` runs one family's checks.

Levels the contract leaves open, decided here: a checkpoint the user named that is
missing, empty, truncated or corrupt is a FAIL about their run (it cannot resume);
one we refuse to read (legacy format, unknown layout, permission) is NOT-CHECKED; an
interpreter or working directory that cannot run the probe is NOT-CHECKED (exit 2),
since nothing was learned about the module; a measurement that cannot be made is
NOT-CHECKED with its reason when a requirement depends on it, and a recorded skip
otherwise - never a pass."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.checkpoint_model import (
    RESUME_KEYS,
    CheckpointScan,
    FileScan,
    Integrity,
    ReadCaps,
    TensorInfo,
)
from trainproof.probes.imports import ImportResult
from trainproof.probes.machine import GB, Disk, Gpu, Gpus, Memory
from trainproof.rules.base import Example, Threshold, check, example_subject, rule, statement

G = "env"
SHOW = 3  # names quoted in an evidence line; the structured values carry the counts

FAMILIES = {
    "import": ("import",),
    "checkpoint": ("ckpt-integrity", "ckpt-pickle-safety", "ckpt-tensor-health", "ckpt-optimizer-state",
                   "ckpt-drift"),
    "machine": ("memory", "disk"),
    "gpu": ("gpu",),
}

# These families' reports state no outcome of their own: each check's own finding
# (TP-ENV-IMPORT-OK, TP-ENV-MEM-OK, TP-ENV-DISK-OK, TP-ENV-GPU-INFO) says what was measured.
for _family in ("import", "machine", "gpu"):
    statement(f"{G}:{_family}", None, lambda _s: Location(""), checks=FAMILIES[_family])


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:SHOW])
    return shown + (f" (+{len(items) - SHOW} more)" if len(items) > SHOW else "")


# ================================================================ import probe

IMPORT_OK = rule(
    id="TP-ENV-IMPORT-OK", level=Level.PASS, group=G,
    title="The training module imports.",
    evidence="{module} imported in {seconds:.1f} s with {python} (Python {version}) from {cwd}",
    summary="The module was imported in a child process of the given interpreter, from the given directory.",
    why="Says which interpreter and directory were probed, so the PASS is not read as covering another.",
    fix="Nothing to fix.",
    fires=Example({"kind": "import", "outcome": "imported"}),
    passes=Example({"kind": "import", "outcome": "raised", "exc_type": "ImportError"}),
)

IMPORT_FAIL = rule(
    id="TP-ENV-IMPORT-FAIL", level=Level.FAIL, group=G,
    title="The training module cannot be imported - this run cannot start.",
    evidence="{exc_type}: {message} (raised at {raised_at}; your code: {user_frame})",
    summary="Importing the module raised a Python exception; the message is reported whole, "
    "multi-line included, with the innermost frame and the innermost frame in your own tree.",
    why="A run that cannot import fails at minute zero, usually after the job waited in a queue.",
    fix="Fix the import at the named line: pin the dependency version the code expects, "
    "install what is missing, or run from the directory training launches from (--cwd).",
    limits="Only the import is probed; code under `if __name__ == '__main__'` is not run.",
    fires=Example({"kind": "import", "outcome": "raised", "exc_type": "ModuleNotFoundError"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

IMPORT_CRASH = rule(
    id="TP-ENV-IMPORT-CRASH", level=Level.FAIL, group=G,
    title="Importing the training module crashed the interpreter (native crash, no Python exception).",
    evidence="{detail}; last Python line: {raised_at} (your code: {user_frame})",
    summary="The child died without raising: a signal (SIGSEGV, SIGABRT, ...) or an exit that "
    "bypassed Python's exception handling (os._exit, a native library calling exit()).",
    why="A native crash in an extension (a CUDA, BLAS or tokenizer build for another ABI) takes "
    "the whole training process down with no traceback to read.",
    fix="Reinstall the extension built for this Python/CUDA; the last Python line names the "
    "import that loaded it.",
    fires=Example({"kind": "import", "outcome": "crashed", "returncode": -11}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

IMPORT_TIMEOUT = rule(
    id="TP-ENV-IMPORT-TIMEOUT", level=Level.FAIL, group=G,
    title="Importing the training module did not finish in time.",
    evidence="{detail} (--import-timeout {timeout:g} s); stuck at {raised_at} (your code: {user_frame})",
    summary="The import was still running when the timeout expired; the child and its process "
    "group were killed.",
    why="Imports that block (a network call, a lock, a dataset download at import time) stall "
    "every launch, and on a cluster they burn the allocation.",
    fix="Move work out of module scope; raise --import-timeout if the import is legitimately slow.",
    thresholds={"timeout": Threshold(120, "s", "Heavy stacks (torch + transformers + CUDA init) "
                                     "import in 5-30 s; 120 s is far past any healthy import.")},
    fires=Example({"kind": "import", "outcome": "timeout"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

PYTHON_UNUSABLE = rule(
    id="TP-ENV-PYTHON-UNUSABLE", level=Level.NOT_CHECKED, group=G,
    title="The interpreter could not run the import probe.",
    evidence="{detail}",
    summary="--python does not exist, is not executable, or exited before the probe started; exit 2.",
    why="Nothing was learned about the module, so neither PASS nor FAIL is honest.",
    fix="Pass the interpreter training uses: --python /path/to/venv/bin/python.",
    fires=Example({"kind": "import", "outcome": "python-unusable"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

CWD_MISSING = rule(
    id="TP-ENV-CWD-MISSING", level=Level.NOT_CHECKED, group=G,
    title="The working directory for the import probe does not exist.",
    evidence="{detail}",
    summary="--cwd names no directory; the import was not attempted; exit 2.",
    why="Imports resolve relative to the working directory; probing from elsewhere would "
    "report a missing module that imports fine where training launches.",
    fix="Pass the directory training is launched from.",
    fires=Example({"kind": "import", "outcome": "cwd-missing"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)


def _import_loc(r: ImportResult) -> Location:
    where = r.user_frame or r.raised_at
    file, _, line = where.rpartition(":")
    if file and line.isdigit():
        return Location(file, line=int(line))
    return Location(r.file or r.cwd)


@check("import", IMPORT_OK, IMPORT_FAIL, IMPORT_CRASH, IMPORT_TIMEOUT, PYTHON_UNUSABLE, CWD_MISSING)
def import_outcome(r: ImportResult) -> list[Finding]:
    loc = _import_loc(r)
    common = dict(module=r.module, python=r.python, cwd=r.cwd)
    if r.outcome == "imported":
        return [IMPORT_OK.finding(loc, seconds=r.seconds, version=r.python_version or "?", **common)]
    if r.outcome == "raised":
        return [IMPORT_FAIL.finding(loc, exc_type=r.exc_type, message=r.message,
                                    raised_at=r.raised_at or "?", user_frame=r.user_frame or "none found",
                                    **common)]
    if r.outcome == "crashed":
        return [IMPORT_CRASH.finding(loc, detail=r.detail, raised_at=r.raised_at or "unknown",
                                     user_frame=r.user_frame or "none found",
                                     returncode=r.returncode, signal=r.signal or None, **common)]
    if r.outcome == "timeout":
        return [IMPORT_TIMEOUT.finding(loc, detail=r.detail, timeout=r.seconds,
                                       raised_at=r.raised_at or "unknown",
                                       user_frame=r.user_frame or "none found", **common)]
    rule_ = CWD_MISSING if r.outcome == "cwd-missing" else PYTHON_UNUSABLE
    return [rule_.finding(loc, detail=r.detail, **common)]


# ================================================================ checkpoints


@dataclass
class CheckpointSubject:
    scan: CheckpointScan
    against: CheckpointScan | None = None


CKPT_OK = rule(
    id="TP-ENV-CKPT-OK", level=Level.PASS, group=G,
    title="The checkpoint is intact and sound.",
    evidence="{files} file(s), {size_gb:.3g} GB, {tensors} tensors ({params} values). Ran: {ran}. "
    "Skipped: {skipped}.",
    summary="The statement for a checkpoint with no FAIL or WARN: what was read and which checks ran.",
    why="Lists what was verified (CRC, layout, pickle globals, values), so the PASS is not read as more.",
    fix="Nothing to fix.",
    limits="Sound bytes are not good weights: a checkpoint of a diverged run can be intact and finite.",
)

CKPT_MISSING = rule(
    id="TP-ENV-CKPT-MISSING", level=Level.FAIL, group=G,
    title="The checkpoint (or a file it needs) does not exist.",
    evidence="{path}: {detail}",
    summary="The named checkpoint, or a shard its index maps tensors to, is absent.",
    why="A resume from a missing checkpoint either crashes at load or silently starts from scratch.",
    fix="Point at the checkpoint that was actually written; for shards, copy every shard the index names.",
    fires=Example({"kind": "checkpoint", "files": [{"integrity": "missing"}]}),
    passes=Example({"kind": "checkpoint", "files": [{}]}),
)

CKPT_EMPTY = rule(
    id="TP-ENV-CKPT-EMPTY", level=Level.FAIL, group=G,
    title="The checkpoint file is empty.",
    evidence="{path}: {detail}",
    summary="The file exists with 0 bytes.",
    why="A save that was killed before writing, or a full disk, leaves an empty file that "
    "looks like a checkpoint in a directory listing.",
    fix="Resume from the previous checkpoint; check free disk where checkpoints are written.",
    fires=Example({"kind": "checkpoint", "files": [{"integrity": "empty"}]}),
    passes=Example({"kind": "checkpoint", "files": [{}]}),
)

CKPT_TRUNCATED = rule(
    id="TP-ENV-CKPT-TRUNCATED", level=Level.FAIL, group=G,
    title="The checkpoint is truncated: the write stopped part-way.",
    evidence="{path}: {detail}",
    summary="The ZIP lacks its central directory or an entry runs past the end of the file; a "
    "safetensors header or tensor extends past the end.",
    why="A preempted job or a full disk mid-save leaves a checkpoint that fails to load - "
    "usually discovered hours later, at resume time.",
    fix="Resume from the previous checkpoint; save to a temporary name and rename when complete.",
    fires=Example({"kind": "checkpoint", "files": [{"integrity": "truncated"}]}),
    passes=Example({"kind": "checkpoint", "files": [{}]}),
)

CKPT_CORRUPT = rule(
    id="TP-ENV-CKPT-CORRUPT", level=Level.FAIL, group=G,
    title="The checkpoint is corrupt.",
    evidence="{path}: {detail}",
    summary="A CRC mismatch, a malformed pickle, a storage smaller than its tensors, or a "
    "safetensors header whose offsets overlap, leave gaps, or leave trailing bytes.",
    why="Flipped bits in a weight file load without error in formats that do not check, and "
    "train on garbage; here the format says they are wrong.",
    fix="Restore the file from another copy; check the storage it came from.",
    fires=Example({"kind": "checkpoint", "files": [{"integrity": "corrupt"}]}),
    passes=Example({"kind": "checkpoint", "files": [{}]}),
)

CKPT_UNREADABLE = rule(
    id="TP-ENV-CKPT-UNREADABLE", level=Level.NOT_CHECKED, group=G,
    title="The checkpoint could not be read.",
    evidence="cannot read checkpoint: {path}: {detail}",
    summary="Permission denied, an unknown format, declared sizes past the reading caps, or a ZIP "
    "directory no writer makes (an entry listed twice, entries that overlap); exit 2.",
    why="What cannot be read cannot be judged either way.",
    fix="Check the path and permissions; pass the checkpoint file itself.",
    thresholds={
        "max_pickle_bytes": Threshold(64 << 20, "bytes of data.pkl", "A torch ZIP's data.pkl is the tensor "
                                      "table: 100k tensors take about 20 MB, so more is not a plausible "
                                      "checkpoint; the cap also bounds what the static replay builds."),
        "max_index_bytes": Threshold(64 << 20, "bytes", "A shard index maps tensor names to files: "
                                     "a few MB for the largest public models."),
        "max_inflate_ratio": Threshold(100, "x compressed size", "torch stores entries uncompressed; "
                                       "a deflated entry that expands more than this is a ZIP bomb."),
        "max_zip_entries": Threshold(1_000_000, "entries", "torch writes one ZIP entry per storage: "
                                     "with Adam, four per parameter (weight, exp_avg, exp_avg_sq, step), "
                                     "so 100k parameters make 400k entries. Counted from the end record "
                                     "before the directory is parsed (about 0.5 KB of memory per entry)."),
        "max_inflated_bytes": Threshold(1 << 30, "bytes", "Declared size of all deflated entries of one "
                                        "file together: torch deflates nothing, so this only bounds a "
                                        "re-zipped or hostile file to seconds of work."),
        "max_pickle_nodes": Threshold(1_000_000, "objects", "Ways one object of data.pkl is reached, "
                                      "and objects walked a second time, through parts the pickle shares: "
                                      "torch.save shares a container once or twice at most (one dict "
                                      "saved under two keys); a memo DAG (x1 = (x0, x0), forty levels) "
                                      "reaches x0 2**40 ways and is refused at this count, in under a "
                                      "second."),
    },
    fires=Example({"kind": "checkpoint", "files": [{"integrity": "unreadable"}]}),
    passes=Example({"kind": "checkpoint", "files": [{}]}),
)


def read_caps() -> ReadCaps:
    """The reading caps the checkpoint probe applies, from the declarations."""
    return ReadCaps(pickle_bytes=int(CKPT_UNREADABLE.t("max_pickle_bytes")),
                    index_bytes=int(CKPT_UNREADABLE.t("max_index_bytes")),
                    inflate_ratio=CKPT_UNREADABLE.t("max_inflate_ratio"),
                    zip_entries=int(CKPT_UNREADABLE.t("max_zip_entries")),
                    inflated_bytes=int(CKPT_UNREADABLE.t("max_inflated_bytes")),
                    pickle_nodes=int(CKPT_UNREADABLE.t("max_pickle_nodes")))

CKPT_LEGACY = rule(
    id="TP-ENV-CKPT-LEGACY", level=Level.NOT_CHECKED, group=G,
    title="A legacy (pre-1.6) torch checkpoint: refused, not inspected.",
    evidence="{path}: {detail}",
    summary="The file is the old torch.save format: a bare pickle stream with storages appended; exit 2.",
    why="It has no entry table and no CRC, so nothing can be verified without unpickling it, "
    "which this tool never does.",
    fix="Load it once in a trusted environment and torch.save it again (ZIP format).",
    fires=Example({"kind": "checkpoint", "files": [{"integrity": "legacy"}]}),
    passes=Example({"kind": "checkpoint", "files": [{}]}),
)

CKPT_INDEX_MISMATCH = rule(
    id="TP-ENV-CKPT-INDEX-MISMATCH", level=Level.FAIL, group=G,
    title="The shard index maps tensors to shards that do not hold them.",
    evidence="{detail}",
    summary="A `*.index.json` weight_map names a tensor its shard does not contain.",
    why="from_pretrained fails (or silently initialises the tensor) when the index and the shards "
    "come from different saves.",
    fix="Copy the index and the shards from the same save.",
    fires=Example({"kind": "checkpoint", "index_problems": ["model-00002.safetensors lacks fc.weight"]}),
    passes=Example({"kind": "checkpoint"}),
)

_BY_INTEGRITY = {Integrity.MISSING: CKPT_MISSING, Integrity.EMPTY: CKPT_EMPTY,
                 Integrity.TRUNCATED: CKPT_TRUNCATED, Integrity.CORRUPT: CKPT_CORRUPT,
                 Integrity.UNREADABLE: CKPT_UNREADABLE, Integrity.LEGACY: CKPT_LEGACY}


@check("ckpt-integrity", *_BY_INTEGRITY.values(), CKPT_INDEX_MISMATCH)
def checkpoint_integrity(s: CheckpointSubject) -> list[Finding]:
    out = [_BY_INTEGRITY[f.integrity].finding(Location(f.path), path=f.path, detail=f.detail,
                                              format=f.format, size=f.size)
           for f in s.scan.files if f.integrity is not Integrity.OK]
    out += [CKPT_INDEX_MISMATCH.finding(Location(s.scan.path), detail=p) for p in s.scan.index_problems]
    return out


# ---------------------------------------------------------------- pickle safety

# What torch.save itself writes (the set torch.load(weights_only=True) accepts), plus
# numpy's array reconstruction, which HF Trainer's rng_state.pth carries and which
# builds data without running code. Anything else is a callable the unpickler would
# import and call.
ALLOWED_GLOBALS = frozenset({
    "collections.OrderedDict", "collections.Counter", "torch.nn.parameter.Parameter",
    "torch.serialization._get_layout", "torch.Size", "torch.Tensor", "torch.device",
    "_codecs.encode", "builtins.bytearray", "builtins.set", "builtins.complex",
    "torch._tensor._rebuild_from_type_v2", "torch.storage.TypedStorage", "torch.storage.UntypedStorage",
    "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct", "numpy.ndarray",
    "numpy.dtype", "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
})
ALLOWED_PATTERNS = (
    re.compile(r"torch\._utils\._rebuild_[a-z0-9_]+"),
    re.compile(r"torch\.(cuda\.)?[A-Za-z0-9]+Storage"),
    re.compile(r"torch\.((cuda\.)?(sparse\.)?)[A-Za-z0-9]+Tensor"),
    re.compile(r"torch\.(u?int[0-9]+|float[0-9a-z_]+|bfloat16|bool|complex[0-9]+|bits[0-9x]+|q(u)?int[0-9x]+)"),
    re.compile(r"torch\.per_(tensor|channel)_[a-z_]+"),
    re.compile(r"numpy\.dtypes\.[A-Za-z0-9]+DType"),
)


def unsafe_globals(names: list[str]) -> list[str]:
    return [g for g in names if g not in ALLOWED_GLOBALS and not any(p.fullmatch(g) for p in ALLOWED_PATTERNS)]


UNSAFE_PICKLE = rule(
    id="TP-ENV-CKPT-UNSAFE-PICKLE", level=Level.FAIL, group=G,
    title="The checkpoint's pickle imports code outside what torch.save writes.",
    evidence="{path} names {n} global(s) outside the allowlist: {globals}",
    summary="The pickle inside the checkpoint names a global (a module attribute the unpickler "
    "would import and call) that torch.save never writes: os.system, builtins.eval, a class of "
    "your own code.",
    why="torch.load(weights_only=False) runs whatever the pickle names; a checkpoint from "
    "anywhere but your own run can execute code on load. torch >= 2.6 refuses these by default, "
    "but any script that passes weights_only=False, or runs an older torch, executes them.",
    fix="Do not load it with weights_only=False. If the global is your own class, save "
    "state_dict()s instead of objects; otherwise treat the file as hostile.",
    limits="Judged from the names alone: the file was never unpickled and nothing it names was "
    "imported. The allowlist is torch.load(weights_only=True)'s plus numpy array reconstruction.",
    fires=Example({"kind": "checkpoint", "files": [{"globals": ["collections.OrderedDict", "posix.system"]}]}),
    passes=Example({"kind": "checkpoint", "files": [{"globals": ["collections.OrderedDict",
                                                                 "torch._utils._rebuild_tensor_v2",
                                                                 "torch.FloatStorage"]}]}),
)


@check("ckpt-pickle-safety", UNSAFE_PICKLE)
def unsafe_pickle(s: CheckpointSubject) -> list[Finding] | Skip:
    pickled = [f for f in s.scan.files if f.format == "torch-zip" and f.integrity is Integrity.OK]
    if not pickled:
        return Skip(SkipKind.NO_DATA, "no intact pickle-based file (safetensors holds no code)"
                    if s.scan.files and any(f.format == "safetensors" for f in s.scan.files)
                    else "no intact pickle-based file")
    out = []
    for f in pickled:
        bad = unsafe_globals(f.globals)
        if bad:
            out.append(UNSAFE_PICKLE.finding(Location(f.path), path=f.path, n=len(bad), globals=", ".join(bad)))
    return out


# ---------------------------------------------------------------- tensor values

NONFINITE = rule(
    id="TP-ENV-CKPT-NONFINITE", level=Level.FAIL, group=G,
    title="The checkpoint holds NaN or Inf values.",
    evidence="{n} tensor(s) with non-finite values ({nan} NaN, {inf} Inf): {names}",
    summary="Counted from the raw bytes of every float tensor, weights and optimizer state alike "
    "(trainer bookkeeping such as Lightning's callback state, where inf is a normal start, aside).",
    why="Resuming from non-finite weights or Adam moments makes every following step NaN; the "
    "run that wrote this had already diverged.",
    fix="Resume from an earlier checkpoint, before the loss went non-finite; lower the learning "
    "rate or use bf16 / a loss scaler for the rerun.",
    fires=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight", "nan": 3}]}),
    passes=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight"}]}),
)

DEAD_TENSOR = rule(
    id="TP-ENV-CKPT-DEAD-TENSOR", level=Level.WARN, group=G,
    title="Some weight matrices are entirely zero.",
    evidence="{n} of {weights} weight tensor(s) are all zeros: {names} ({zero_biases} all-zero "
    "bias/buffer tensor(s) not counted: zero is their normal start)",
    summary="Float tensors of 2+ dimensions outside the optimizer state whose every element is 0.",
    why="An all-zero weight matrix passes no signal and gets a zero gradient through many "
    "layers: a failed load, an overflow flushed to zero, or a layer the optimizer never reached.",
    fix="Check how the layer is initialised and whether it is in the optimizer's parameter groups.",
    limits="Some layers start at zero on purpose (LoRA's B matrices, zero-init residual "
    "projections); in a checkpoint saved after training they should have moved.",
    fires=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight", "nonzero": 0}]}),
    passes=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight"},
                                                      {"name": "fc.bias", "shape": [4], "nonzero": 0}]}),
)

UNMEASURED = rule(
    id="TP-ENV-CKPT-UNMEASURED", level=Level.INFO, group=G,
    title="Some tensors' values were not counted.",
    evidence="{n} tensor(s) not counted: {names}",
    summary="Tensors whose bytes could not be decoded (float8, strided views of shared storage).",
    why="The NaN/Inf/zero checks did not cover them; saying so keeps the PASS honest.",
    fix="Nothing to fix; judge those tensors by other means if they matter.",
)


@check("ckpt-tensor-health", NONFINITE, DEAD_TENSOR, UNMEASURED)
def tensor_health(s: CheckpointSubject) -> list[Finding] | Skip:
    tensors = [t for f in s.scan.files if f.integrity is Integrity.OK for t in f.tensors if t.role != "meta"]
    if not tensors:
        return Skip(SkipKind.NO_DATA, "no tensors in an intact file")
    loc = Location(s.scan.path)
    out = []
    bad = [t for t in tensors if t.nan or t.inf]
    if bad:
        out.append(NONFINITE.finding(loc, n=len(bad), nan=sum(t.nan for t in bad), inf=sum(t.inf for t in bad),
                                     names=_names([f"{t.name} ({t.nan} NaN, {t.inf} Inf)" for t in bad])))
    weights = [t for t in tensors if t.role == "weight"]
    dead = [t.name for t in weights if t.all_zero]
    if dead:
        zero_other = sum(1 for t in tensors if t.role in ("bias", "buffer") and t.all_zero and t.floating)
        out.append(DEAD_TENSOR.finding(loc, n=len(dead), weights=len(weights), names=_names(dead),
                                       zero_biases=zero_other))
    skipped = [f"{t.name} ({t.unmeasured_why})" for t in tensors if t.unmeasured_why]
    if skipped:
        out.append(UNMEASURED.finding(loc, n=len(skipped), names=_names(skipped)))
    return out


NO_OPTIMIZER = rule(
    id="TP-ENV-CKPT-NO-OPTIMIZER", level=Level.WARN, group=G,
    title="A resume checkpoint without optimizer state.",
    evidence="{detail}: resuming restarts Adam's moments from zero",
    summary="The checkpoint records training progress (epoch/step, trainer_state.json, Lightning "
    "loops) but its optimizer state is absent or empty.",
    why="With the moments reset, the first resumed steps take full-size updates at the "
    "scheduled learning rate - a loss spike, sometimes a divergence.",
    fix="Save optimizer.state_dict() with the model (HF: do not set save_only_model); or "
    "resume with a short warm-up.",
    limits="A weights-only file (a state_dict with no training progress) is not judged.",
    fires=Example({"kind": "checkpoint", "files": [{"top_keys": ["model", "epoch"]}]}),
    passes=Example({"kind": "checkpoint", "files": [{"top_keys": ["model", "optimizer", "epoch"],
                                                     "optimizer_state": 4}]}),
)


@check("ckpt-optimizer-state", NO_OPTIMIZER)
def optimizer_state(s: CheckpointSubject) -> list[Finding] | Skip:
    scan, loc = s.scan, Location(s.scan.path)
    if scan.layout == "hf-dir":
        if not scan.resume_dir:
            return Skip(SkipKind.NOT_REQUESTED, "a model directory without trainer_state.json (weights only)")
        if scan.optimizer_file is None:
            return [NO_OPTIMIZER.finding(loc, detail="trainer_state.json present but no optimizer.pt")]
        return []
    files = [f for f in scan.files if f.integrity is Integrity.OK and f.format == "torch-zip"]
    resumable = [f for f in files if any(k in RESUME_KEYS for k in f.top_keys)]
    if not resumable:
        return Skip(SkipKind.NOT_REQUESTED, "weights only: no training progress recorded")
    out = []
    for f in resumable:
        if f.optimizer_state is None:
            out.append(NO_OPTIMIZER.finding(Location(f.path), detail=f"no optimizer entry in {f.path}"))
        elif f.optimizer_state == 0:
            out.append(NO_OPTIMIZER.finding(Location(f.path), detail=f"the optimizer entry in {f.path} holds "
                                            "no state tensors (saved before the first step?)"))
    return out


# ---------------------------------------------------------------- drift

DRIFT = rule(
    id="TP-ENV-CKPT-DRIFT", level=Level.FAIL, group=G,
    title="The checkpoint's tensors do not match the reference (--against).",
    evidence="against {against}: {missing} missing (e.g. {missing_names}), {extra} unexpected "
    "(e.g. {extra_names}), {shapes} shape mismatch(es) (e.g. {shape_names})",
    summary="Model tensor names and shapes compared with another checkpoint (optimizer state aside).",
    why="load_state_dict(strict=True) refuses any difference; strict=False silently leaves the "
    "missing layers at their random initialisation.",
    fix="Resume with the architecture/config that wrote the checkpoint, or convert the keys "
    "(a `module.` prefix from DDP is the classic).",
    fires=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight", "shape": [4, 4]}],
                   "against": [{"name": "fc.weight", "shape": [8, 4]}]}),
    passes=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight"}],
                    "against": [{"name": "fc.weight"}]}),
)

DTYPE_DRIFT = rule(
    id="TP-ENV-CKPT-DTYPE-DRIFT", level=Level.WARN, group=G,
    title="Tensors changed dtype relative to the reference (--against).",
    evidence="{n} tensor(s) differ in dtype: {names}",
    summary="Same names and shapes, different dtypes.",
    why="load_state_dict casts silently; an fp32 reference resumed from bf16 weights has lost precision.",
    fix="Save and resume in the precision the run trains in.",
    fires=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight", "dtype": "bfloat16"}],
                   "against": [{"name": "fc.weight"}]}),
    passes=Example({"kind": "checkpoint", "tensors": [{"name": "fc.weight"}],
                    "against": [{"name": "fc.weight"}]}),
)

_WRAPPERS = ("state_dict.", "model_state_dict.", "model.", "module.")


def model_table(scan: CheckpointScan) -> dict[str, TensorInfo]:
    """Model tensors by name, container prefixes (state_dict., model., module.) removed."""
    out = {}
    for t in scan.tensors:
        if t.role == "optimizer":
            continue
        name = t.name
        for w in _WRAPPERS:
            if name.startswith(w):
                name = name[len(w):]
        out[name] = t
    return out


@check("ckpt-drift", DRIFT, DTYPE_DRIFT)
def drift(s: CheckpointSubject) -> list[Finding] | Skip:
    if s.against is None:
        return Skip(SkipKind.NOT_REQUESTED, "no --against checkpoint")
    if not s.against.intact or not s.scan.intact:
        return Skip(SkipKind.DEGENERATE, "one side is not intact")
    mine, ref = model_table(s.scan), model_table(s.against)
    missing = sorted(set(ref) - set(mine))
    extra = sorted(set(mine) - set(ref))
    both = sorted(set(mine) & set(ref))
    shapes = [f"{n} {list(mine[n].shape)} vs {list(ref[n].shape)}" for n in both if mine[n].shape != ref[n].shape]
    dtypes = [f"{n} {mine[n].dtype} vs {ref[n].dtype}" for n in both
              if mine[n].shape == ref[n].shape and mine[n].dtype != ref[n].dtype]
    out, loc = [], Location(s.scan.path)
    if missing or extra or shapes:
        out.append(DRIFT.finding(loc, against=s.against.path, missing=len(missing),
                                 missing_names=_names(missing) or "-", extra=len(extra),
                                 extra_names=_names(extra) or "-", shapes=len(shapes),
                                 shape_names=_names(shapes) or "-"))
    if dtypes:
        out.append(DTYPE_DRIFT.finding(loc, n=len(dtypes), names=_names(dtypes)))
    return out


def _ckpt_values(s: CheckpointSubject) -> dict[str, Any] | None:
    """What TP-ENV-CKPT-OK states; None when the checkpoint was not read whole."""
    if not s.scan.intact:
        return None
    tensors = s.scan.tensors
    return dict(files=len(s.scan.files), size_gb=s.scan.size / GB, tensors=len(tensors),
                params=sum(t.numel for t in tensors))


statement("env:checkpoint", CKPT_OK, lambda s: Location(s.scan.path), values=_ckpt_values,
          checks=FAMILIES["checkpoint"])


# ================================================================ machine


@dataclass
class MachineSubject:
    memory: Memory | None = None
    disk: Disk | None = None
    required_gb: float | None = None  # RAM the run declares it needs
    checkpoint_gb: float | None = None  # size of one checkpoint
    keep: int = 1  # checkpoints kept on disk at once
    checkpoint_source: str = "--checkpoint-gb"


def _gb(x: float | None) -> float:
    return round((x or 0.0) / GB, 1)


MEM_INSUFFICIENT = rule(
    id="TP-ENV-MEM-INSUFFICIENT", level=Level.FAIL, group=G,
    title="Less system RAM is available than this run declares it needs.",
    evidence="{available_gb} GB available, {required_gb} GB required ({total_gb} GB total; {measured_by})",
    summary="Available RAM (MemAvailable, or the cgroup limit minus what the cgroup already holds, "
    "whichever is tighter) is below --required-gb.",
    why="Running out of system RAM does not fail cleanly: the OOM killer takes the run (or "
    "another process), and on Windows the GPU driver spills to RAM and the machine pages to a halt.",
    fix="Free memory, lower the data-loader workers or batch size, or run on a larger machine.",
    fires=Example({"kind": "machine", "available_gb": 10.8, "total_gb": 31.1, "required_gb": 20}),
    passes=Example({"kind": "machine", "available_gb": 64, "total_gb": 128, "required_gb": 20}),
)

MEM_TIGHT = rule(
    id="TP-ENV-MEM-TIGHT", level=Level.WARN, group=G,
    title="System RAM is enough, but only just.",
    evidence="{available_gb} GB available, {required_gb} GB required: {margin_gb} GB margin < {limit_margin} GB",
    summary="Available RAM covers --required-gb with less than the margin to spare.",
    why="Peak RAM exceeds the steady state: checkpoint saves, evaluation, and loader workers "
    "forking all add to it.",
    fix="Leave more headroom: fewer loader workers, smaller prefetch, or more RAM.",
    thresholds={"margin": Threshold(4, "GB", "A checkpoint save of a few-billion-parameter model "
                                    "and a handful of loader workers each take gigabytes on top of "
                                    "the steady state; the old tool's 4 GB is kept.")},
    fires=Example({"kind": "machine", "available_gb": 22, "total_gb": 32, "required_gb": 20}),
    passes=Example({"kind": "machine", "available_gb": 30, "total_gb": 32, "required_gb": 20}),
)

MEM_OK = rule(
    id="TP-ENV-MEM-OK", level=Level.PASS, group=G,
    title="System RAM covers the run's requirement.",
    evidence="{available_gb} GB available, {required_gb} GB required ({total_gb} GB total; {measured_by})",
    summary="Available RAM exceeds --required-gb by at least the TP-ENV-MEM-TIGHT margin.",
    why="States the numbers the PASS rests on.",
    fix="Nothing to fix.",
    fires=Example({"kind": "machine", "available_gb": 30, "total_gb": 32, "required_gb": 20}),
    passes=Example({"kind": "machine", "available_gb": 10, "total_gb": 32, "required_gb": 20}),
)

MEM_INFO = rule(
    id="TP-ENV-MEM-INFO", level=Level.INFO, group=G,
    title="System RAM (no requirement given).",
    evidence="{available_gb} GB available of {total_gb} GB ({measured_by}); pass --required-gb to judge it",
    summary="Without --required-gb the RAM is reported, not judged.",
    why="Context for reading an OOM later; a verdict needs a requirement.",
    fix="Pass --required-gb G to have it judged.",
    fires=Example({"kind": "machine", "available_gb": 30, "total_gb": 32}),
    passes=Example({"kind": "machine", "available_gb": 30, "total_gb": 32, "required_gb": 8}),
)

MEM_UNKNOWN = rule(
    id="TP-ENV-MEM-UNKNOWN", level=Level.NOT_CHECKED, group=G,
    title="System RAM could not be measured, so the requirement was not checked.",
    evidence="{detail}; {required_gb} GB required",
    summary="--required-gb was given but neither /proc/meminfo nor a cgroup limit could be read; exit 2.",
    why="A requirement that was not checked must not read as met.",
    fix="Run on Linux with /proc mounted, or check the RAM by hand.",
    fires=Example({"kind": "machine", "required_gb": 20}),
    passes=Example({"kind": "machine", "available_gb": 30, "total_gb": 32, "required_gb": 20}),
)


@check("memory", MEM_INSUFFICIENT, MEM_TIGHT, MEM_OK, MEM_INFO, MEM_UNKNOWN)
def memory(m: MachineSubject) -> list[Finding] | Skip:
    loc = Location("machine")
    mem = m.memory
    if mem is None or mem.available is None:
        why = mem.why_unknown if mem is not None else "not measured"
        if m.required_gb is None:
            return Skip(SkipKind.NO_DATA, why)
        return [MEM_UNKNOWN.finding(loc, detail=why, required_gb=m.required_gb)]
    source = mem.source + (f", cgroup limit {_gb(mem.cgroup_limit)} GB" if mem.cgroup_limit else "")
    vals = dict(available_gb=_gb(mem.available), total_gb=_gb(mem.total), measured_by=source)
    if m.required_gb is None:
        return [MEM_INFO.finding(loc, **vals)]
    margin = mem.available / GB - m.required_gb
    if margin < 0:
        return [MEM_INSUFFICIENT.finding(loc, required_gb=m.required_gb, **vals)]
    if margin < MEM_TIGHT.t("margin"):
        return [MEM_TIGHT.finding(loc, required_gb=m.required_gb, margin_gb=round(margin, 1), **vals)]
    return [MEM_OK.finding(loc, required_gb=m.required_gb, **vals)]


DISK_INSUFFICIENT = rule(
    id="TP-ENV-DISK-INSUFFICIENT", level=Level.FAIL, group=G,
    title="Not enough free disk for the checkpoints this run will keep.",
    evidence="{free_gb} GB free at {path}, {need_gb} GB needed ({checkpoint_gb} GB per checkpoint "
    "[{size_from}] x {keep} kept)",
    summary="Free space where checkpoints go is below one checkpoint's size times the copies kept.",
    why="The save that does not fit is truncated - and it is usually the last one, the one you "
    "wanted (see TP-ENV-CKPT-TRUNCATED).",
    fix="Free space, point --output-dir elsewhere, or keep fewer checkpoints (HF: save_total_limit).",
    fires=Example({"kind": "machine", "free_gb": 10, "checkpoint_gb": 6, "keep": 3}),
    passes=Example({"kind": "machine", "free_gb": 100, "checkpoint_gb": 6, "keep": 3}),
)

DISK_OK = rule(
    id="TP-ENV-DISK-OK", level=Level.PASS, group=G,
    title="Free disk covers the checkpoints this run will keep.",
    evidence="{free_gb} GB free at {path}, {need_gb} GB needed ({checkpoint_gb} GB [{size_from}] x {keep})",
    summary="Free space exceeds one checkpoint's size times the copies kept.",
    why="States the numbers the PASS rests on.",
    fix="Nothing to fix.",
    limits="Logs, caches and datasets written to the same disk are not counted.",
    fires=Example({"kind": "machine", "free_gb": 100, "checkpoint_gb": 6, "keep": 3}),
    passes=Example({"kind": "machine", "free_gb": 10, "checkpoint_gb": 6, "keep": 3}),
)

DISK_INFO = rule(
    id="TP-ENV-DISK-INFO", level=Level.INFO, group=G,
    title="Free disk (no checkpoint size given).",
    evidence="{free_gb} GB free of {total_gb} GB at {path}; pass --checkpoint-gb (or --checkpoint) to judge it",
    summary="Without a checkpoint size the free space is reported, not judged.",
    why="Context; a verdict needs to know what will be written.",
    fix="Pass --checkpoint-gb G and --keep K.",
    fires=Example({"kind": "machine", "free_gb": 100}),
    passes=Example({"kind": "machine", "free_gb": 100, "checkpoint_gb": 6}),
)

DISK_UNKNOWN = rule(
    id="TP-ENV-DISK-UNKNOWN", level=Level.NOT_CHECKED, group=G,
    title="Free disk could not be measured, so the checkpoint space was not checked.",
    evidence="{detail}; {need_gb} GB needed",
    summary="A checkpoint size was given but the output directory's file system could not be queried; exit 2.",
    why="A requirement that was not checked must not read as met.",
    fix="Check that --output-dir (or its parent) is readable.",
    fires=Example({"kind": "machine", "checkpoint_gb": 6}),
    passes=Example({"kind": "machine", "free_gb": 100, "checkpoint_gb": 6}),
)


@check("disk", DISK_INSUFFICIENT, DISK_OK, DISK_INFO, DISK_UNKNOWN)
def disk(m: MachineSubject) -> list[Finding] | Skip:
    d = m.disk
    need = None if m.checkpoint_gb is None else m.checkpoint_gb * m.keep
    if d is None or d.free is None:
        why = d.why_unknown if d is not None else "not measured"
        if need is None:
            return Skip(SkipKind.NO_DATA, why)
        return [DISK_UNKNOWN.finding(Location(d.path if d else "."), detail=why, need_gb=round(need, 1))]
    loc = Location(d.path)
    if need is None:
        return [DISK_INFO.finding(loc, free_gb=_gb(d.free), total_gb=_gb(d.total), path=d.where)]
    vals = dict(free_gb=_gb(d.free), path=d.where, need_gb=need, checkpoint_gb=m.checkpoint_gb or 0.0,
                keep=m.keep, size_from=m.checkpoint_source)
    rule_ = DISK_INSUFFICIENT if d.free / GB < need else DISK_OK
    return [rule_.finding(loc, **vals)]


# ================================================================ GPU


@dataclass
class GpuSubject:
    gpus: Gpus
    bf16: bool = False
    gpu_gb: float | None = None


GPU_INFO = rule(
    id="TP-ENV-GPU-INFO", level=Level.INFO, group=G,
    title="GPUs visible to this process.",
    evidence="{count} GPU(s): {devices}",
    summary="Count, name, memory and compute capability of each GPU NVML reports.",
    why="Context for every other GPU judgement and for reading an OOM later.",
    fix="Nothing to fix.",
    fires=Example({"kind": "gpu", "gpus": [{"cc": [8, 0], "gb": 80}]}),
    passes=Example({"kind": "gpu", "why_unknown": "pynvml is not installed"}),
)

GPU_NO_BF16 = rule(
    id="TP-ENV-GPU-NO-BF16", level=Level.FAIL, group=G,
    title="bf16 was requested on a GPU that cannot run it.",
    evidence="{n} GPU(s) below compute capability {limit_capability}: {devices}",
    summary="--bf16 was passed and a GPU's compute capability is below 8.0 (Ampere).",
    why="Before Ampere there are no bf16 tensor cores: HF Trainer refuses bf16=True outright, and "
    "code that forces it runs emulated at a fraction of fp16 speed.",
    fix="Use fp16 with a loss scaler on this GPU, or move to an Ampere-or-newer GPU (A100, A10, "
    "L4, RTX 30xx, H100).",
    thresholds={"capability": Threshold(8.0, "compute capability", "bf16 tensor cores arrive with "
                                        "Ampere (sm_80); torch.cuda.is_bf16_supported() answers the same.")},
    fires=Example({"kind": "gpu", "bf16": True, "gpus": [{"name": "Tesla V100", "cc": [7, 0]}]}),
    passes=Example({"kind": "gpu", "bf16": True, "gpus": [{"name": "A100", "cc": [8, 0]}]}),
)

GPU_MEM_INSUFFICIENT = rule(
    id="TP-ENV-GPU-MEM-INSUFFICIENT", level=Level.FAIL, group=G,
    title="A GPU has less memory than the run declares it needs.",
    evidence="{n} GPU(s) with less than {gpu_gb} GB free: {devices}",
    summary="--gpu-gb was passed and a GPU's free memory is below it.",
    why="The run dies with CUDA out of memory at its first full batch - or shares the GPU with "
    "a process that is still holding it.",
    fix="Free the GPU (nvidia-smi shows who holds it), lower the batch size, or use a larger GPU.",
    fires=Example({"kind": "gpu", "gpu_gb": 40, "gpus": [{"gb": 24}]}),
    passes=Example({"kind": "gpu", "gpu_gb": 40, "gpus": [{"gb": 80}]}),
)

GPU_NOT_CHECKED = rule(
    id="TP-ENV-GPU-NOT-CHECKED", level=Level.NOT_CHECKED, group=G,
    title="No GPU could be inspected.",
    evidence="{detail}",
    summary="pynvml is missing, no NVIDIA driver answered, or NVML lists no GPU. Exit 2 only when "
    "a GPU requirement (--bf16, --gpu-gb) depended on it.",
    why="Saying nothing would read as 'the GPU is fine'.",
    fix="Install nvidia-ml-py and run on the machine that trains; on a CPU-only machine this is expected.",
    fires=Example({"kind": "gpu", "why_unknown": "pynvml is not installed"}),
    passes=Example({"kind": "gpu", "gpus": [{}]}),
)


def _device(g: Gpu) -> str:
    cc = f"sm_{g.capability[0]}{g.capability[1]}"
    return f"#{g.index} {g.name} {cc} {_gb(g.memory_total)} GB ({_gb(g.memory_free)} free)"


@check("gpu", GPU_INFO, GPU_NO_BF16, GPU_MEM_INSUFFICIENT, GPU_NOT_CHECKED)
def gpu(s: GpuSubject) -> list[Finding]:
    loc = Location("machine")
    devs = s.gpus.devices
    if not devs:
        return [GPU_NOT_CHECKED.finding(loc, detail=s.gpus.why_unknown or "NVML lists no GPU")]
    out = [GPU_INFO.finding(loc, count=len(devs), devices="; ".join(_device(g) for g in devs))]
    if s.bf16:
        old = [g for g in devs if g.capability[0] + g.capability[1] / 10 < GPU_NO_BF16.t("capability")]
        if old:
            out.append(GPU_NO_BF16.finding(loc, n=len(old), devices="; ".join(_device(g) for g in old)))
    if s.gpu_gb is not None:
        small = [g for g in devs if g.memory_free / GB < s.gpu_gb]
        if small:
            out.append(GPU_MEM_INSUFFICIENT.finding(loc, n=len(small), gpu_gb=s.gpu_gb,
                                                    devices="; ".join(_device(g) for g in small)))
    return out


# ================================================================ executable examples


def _tensor(d: Mapping[str, Any]) -> TensorInfo:
    shape = tuple(d.get("shape", (4, 4)))
    numel = 1
    for x in shape:
        numel *= x
    return TensorInfo(d.get("name", "fc.weight"), d.get("dtype", "float32"), shape, numel,
                      nan=d.get("nan", 0), inf=d.get("inf", 0), nonzero=d.get("nonzero", numel), measured=numel)


def _file(d: Mapping[str, Any], tensors: list[TensorInfo]) -> FileScan:
    return FileScan("example.pt", "torch-zip", Integrity(d.get("integrity", "ok")), detail="example",
                    tensors=tensors, globals=list(d.get("globals", ["collections.OrderedDict"])),
                    top_keys=list(d.get("top_keys", [])), optimizer_state=d.get("optimizer_state"))


def _checkpoint(data: Mapping[str, Any]) -> CheckpointSubject:
    tensors = [_tensor(t) for t in data.get("tensors", [{}])]
    files = [_file(f, tensors) for f in data.get("files", [{}])]
    scan = CheckpointScan("example.pt", "torch", files, index_problems=list(data.get("index_problems", [])))
    against = None
    if "against" in data:
        against = CheckpointScan("reference.pt", "torch", [_file({}, [_tensor(t) for t in data["against"]])])
    return CheckpointSubject(scan, against)


def _machine(data: Mapping[str, Any]) -> MachineSubject:
    mem = Memory(data["available_gb"] * GB, data["total_gb"] * GB, source="example") \
        if "available_gb" in data else Memory(None, None, why_unknown="example: not measurable")
    dsk = Disk("/data", data["free_gb"] * GB, 2 * data["free_gb"] * GB) if "free_gb" in data \
        else Disk("/data", None, why_unknown="example: not measurable")
    return MachineSubject(mem, dsk, data.get("required_gb"), data.get("checkpoint_gb"), data.get("keep", 1))


def _gpu(data: Mapping[str, Any]) -> GpuSubject:
    devs = [Gpu(i, g.get("name", "GPU"), g.get("gb", 80) * GB, g.get("gb", 80) * GB, tuple(g.get("cc", (9, 0))))
            for i, g in enumerate(data.get("gpus", []))]
    return GpuSubject(Gpus(devs, data.get("why_unknown", "")), data.get("bf16", False), data.get("gpu_gb"))


def _import(data: Mapping[str, Any]) -> ImportResult:
    r = ImportResult("train", "python", ".", data["outcome"], exc_type=data.get("exc_type", ""),
                     message="example", returncode=data.get("returncode"), seconds=1.0)
    r.detail = "example"
    return r


_SUBJECTS = {"import": _import, "checkpoint": _checkpoint, "machine": _machine, "gpu": _gpu}


@example_subject(G)
def _example(data: Mapping[str, Any]) -> tuple[str, Any]:
    return f"{G}:{data['kind']}", _SUBJECTS[data["kind"]](data)
