"""`inspect_checkpoint(path, caps)`: whatever the user points at - a torch or Lightning
file, a safetensors file, a shard index (`*.index.json`) or a Hugging Face output
directory - becomes one CheckpointScan. Nothing is unpickled or imported; parts
larger than `caps` (declared in rules/env_checkpoint.py) are not read."""

from __future__ import annotations

from pathlib import Path

from trainproof.parsers.jsonutil import loads
from trainproof.probes.checkpoint_model import CheckpointScan, FileScan, Integrity, ReadCaps
from trainproof.probes.checkpoint_torch import inspect_torch
from trainproof.probes.safetensors_scan import inspect_safetensors

# What a Hugging Face Trainer checkpoint directory holds, weights first.
HF_WEIGHTS = ("model.safetensors.index.json", "model.safetensors", "pytorch_model.bin.index.json",
              "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin")
HF_STATE = ("optimizer.pt", "scheduler.pt")


def inspect_checkpoint(path: str, caps: ReadCaps) -> CheckpointScan:
    p = Path(path)
    if p.is_dir():
        return _directory(path, p, caps)
    if p.name.endswith(".index.json"):
        return _sharded(path, p, caps)
    f = inspect_file(p, caps)
    layout = "safetensors" if f.format == "safetensors" else "torch"
    if "pytorch-lightning_version" in f.top_keys or ("state_dict" in f.top_keys and "loops" in f.top_keys):
        layout = "lightning"
    return CheckpointScan(path, layout, [f])


def inspect_file(p: Path, caps: ReadCaps) -> FileScan:
    """One file: existence and emptiness first, then its format decides the reader."""
    try:
        if not p.exists():
            return FileScan(str(p), "?", Integrity.MISSING, detail="no such file")
        if not p.is_file():  # a FIFO or device would block or stream forever
            return FileScan(str(p), "?", Integrity.UNREADABLE, detail="not a regular file")
        size = p.stat().st_size
        if size == 0:
            return FileScan(str(p), "?", Integrity.EMPTY, detail="0 bytes: the save never wrote anything")
        with p.open("rb") as fh:
            head = fh.read(16)
        if _looks_safetensors(p, head):
            return inspect_safetensors(p)
        return inspect_torch(p, caps)
    except OSError as exc:
        return FileScan(str(p), "?", Integrity.UNREADABLE, detail=f"{type(exc).__name__}: {exc.strerror or exc}")


def _looks_safetensors(p: Path, head: bytes) -> bool:
    if p.suffix == ".safetensors":
        return True
    # an 8-byte length followed by '{' is the safetensors layout whatever the name
    return len(head) > 8 and head[8:9] == b"{" and not head.startswith(b"PK")


def _sharded(path: str, p: Path, caps: ReadCaps) -> CheckpointScan:
    scan = CheckpointScan(path, "sharded")
    index = inspect_index(p, caps)
    if isinstance(index, FileScan):
        scan.files.append(index)
        return scan
    by_shard: dict[str, list[str]] = {}
    for name, shard in index.items():
        by_shard.setdefault(str(shard), []).append(str(name))
    for shard, names in sorted(by_shard.items()):
        f = inspect_file(p.parent / shard, caps)
        scan.files.append(f)
        if f.integrity is Integrity.OK:
            have = {t.name for t in f.tensors}
            lost = [n for n in names if n not in have]
            if lost:
                scan.index_problems.append(f"{shard} lacks {len(lost)} tensor(s) the index maps to it, "
                                           f"e.g. {lost[0]}")
    return scan


def inspect_index(p: Path, caps: ReadCaps) -> dict[str, str] | FileScan:
    """The weight_map of a shard index, or a FileScan saying why it cannot be read."""
    probe = _absent_or_empty(p)
    if probe is not None:
        return probe
    try:
        if p.stat().st_size > caps.index_bytes:
            return FileScan(str(p), "index", Integrity.UNREADABLE, detail=f"over {caps.index_bytes} bytes")
        doc = loads(p.read_bytes())
    except (OSError, ValueError) as exc:  # ValueError: not JSON, UTF-8, too deep, 5,000-digit ints
        return FileScan(str(p), "index", Integrity.CORRUPT, detail=f"not a JSON shard index: {str(exc)[:200]}")
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict) or not wmap:
        return FileScan(str(p), "index", Integrity.CORRUPT, detail="no weight_map in the shard index")
    return wmap


def _absent_or_empty(p: Path) -> FileScan | None:
    """Why `p` cannot be an index at all, or None."""
    if not p.exists():
        return FileScan(str(p), "?", Integrity.MISSING, detail="no such file")
    if p.stat().st_size == 0:
        return FileScan(str(p), "?", Integrity.EMPTY, detail="0 bytes")
    return None


def _latest_trainer_checkpoint(p: Path) -> Path | None:
    """HF Trainer's output_dir holds checkpoint-<step>/ folders; resume takes the highest step."""
    steps = [(int(d.name.split("-", 1)[1]), d) for d in p.glob("checkpoint-*")
             if d.is_dir() and d.name.split("-", 1)[1].isdigit()]
    return max(steps)[1] if steps else None


def _directory(path: str, p: Path, caps: ReadCaps) -> CheckpointScan:
    weights = next((p / n for n in HF_WEIGHTS if (p / n).exists()), None)
    latest = _latest_trainer_checkpoint(p) if weights is None else None
    if latest is not None:
        scan = _directory(str(latest), latest, caps)
        scan.path = path
        scan.notes.append(f"an output directory: judged its latest checkpoint, {latest.name}")
        return scan
    if weights is None:
        ckpts = sorted(p.glob("*.ckpt")) + sorted(p.glob("*.pt")) + sorted(p.glob("*.pth"))
        if not ckpts:
            f = FileScan(path, "directory", Integrity.UNREADABLE,
                         detail="no model weights (model.safetensors, pytorch_model.bin, shards, *.ckpt, *.pt)")
            return CheckpointScan(path, "hf-dir", [f])
        weights = ckpts[-1]
    inner = _sharded(str(weights), weights, caps) if weights.name.endswith(".index.json") else \
        CheckpointScan(str(weights), "file", [inspect_file(weights, caps)])
    scan = CheckpointScan(path, "hf-dir", list(inner.files), index_problems=inner.index_problems)
    scan.resume_dir = (p / "trainer_state.json").exists()
    for name in HF_STATE:
        if (p / name).exists():
            scan.files.append(inspect_file(p / name, caps))
            if name == "optimizer.pt":
                scan.optimizer_file = str(p / name)
    return scan
