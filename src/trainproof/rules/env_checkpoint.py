"""Checkpoint integrity (`trainproof env --checkpoint`): is every file the checkpoint
needs there, whole and readable, with the reading caps that bound the probe, and the
statement a sound checkpoint's report makes (TP-ENV-CKPT-OK). Pickle safety is judged in
env_pickle.py, tensor values, optimizer state and drift in env_tensors.py; all three
judge the CheckpointSubject declared here, measured by probes/checkpoint*.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainproof.model import Finding, Level, Location
from trainproof.probes.checkpoint_model import CheckpointScan, Integrity, ReadCaps
from trainproof.probes.machine import GB
from trainproof.rules import env_import  # noqa: F401  (registered first: keeps the checks' order)
from trainproof.rules.base import Example, Threshold, check, rule, statement
from trainproof.rules.env import FAMILIES, G


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


def _ckpt_values(s: CheckpointSubject) -> dict[str, Any] | None:
    """What TP-ENV-CKPT-OK states; None when the checkpoint was not read whole."""
    if not s.scan.intact:
        return None
    tensors = s.scan.tensors
    return dict(files=len(s.scan.files), size_gb=s.scan.size / GB, tensors=len(tensors),
                params=sum(t.numel for t in tensors))


statement("env:checkpoint", CKPT_OK, lambda s: Location(s.scan.path), values=_ckpt_values,
          checks=FAMILIES["checkpoint"])
