"""What inspecting a checkpoint measures: per file, whether it is intact, which
globals its pickle names, and per tensor its name, dtype, shape and the NaN/Inf/
zero counts read from its raw bytes. Measurements only; rules/env_*.py judge."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from trainproof.zipsafe import ZipLimits


class Integrity(str, enum.Enum):
    OK = "ok"
    MISSING = "missing"
    EMPTY = "empty"
    TRUNCATED = "truncated"
    CORRUPT = "corrupt"
    UNREADABLE = "unreadable"
    LEGACY = "legacy"


OPTIMIZER_KEYS = ("optimizer", "optimizer_states", "optimizer_state_dict", "optim", "opt")
RESUME_KEYS = ("epoch", "global_step", "step", "iteration", "pytorch-lightning_version",
               "loops", "lr_schedulers", "scheduler", "trainer_state")
# Bookkeeping a trainer stores beside the weights (Lightning's ModelCheckpoint keeps
# `kth_value = inf` until a metric arrives): not judged as weights.
META_KEYS = ("callbacks", "loops", "lr_schedulers", "scheduler", "hyper_parameters", "trainer_state",
             "rng_state", "rng_states")



@dataclass(frozen=True)
class ReadCaps:
    """Sizes past which a part of a checkpoint is not read, and the file is reported
    unreadable instead. The numbers are thresholds of TP-ENV-CKPT-UNREADABLE."""

    pickle_bytes: int  # data.pkl of a torch ZIP
    index_bytes: int  # a *.index.json shard index
    inflate_ratio: float  # declared size / compressed size of a deflated ZIP entry
    zip_entries: int  # entries in a torch ZIP's directory
    inflated_bytes: int  # declared size of all deflated entries of one ZIP together
    pickle_nodes: int  # containers and items walked in data.pkl's structure

    def zip_limits(self) -> ZipLimits:
        return ZipLimits(self.zip_entries, self.inflate_ratio, self.inflated_bytes)


@dataclass
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    numel: int
    nan: int = 0
    inf: int = 0
    nonzero: int = 0
    measured: int = 0  # elements whose bytes were counted
    unmeasured_why: str = ""

    @property
    def fully_measured(self) -> bool:
        return self.measured == self.numel and not self.unmeasured_why

    @property
    def floating(self) -> bool:
        return self.dtype.startswith(("float", "bfloat", "complex"))

    @property
    def in_optimizer(self) -> bool:
        head = self.name.split(".", 1)[0]
        return head in OPTIMIZER_KEYS or self.name.startswith("state.")

    @property
    def role(self) -> str:
        """weight / bias / buffer / optimizer / meta: only weights are judged for all-zero,
        and trainer bookkeeping (meta) is not judged at all."""
        if self.in_optimizer:
            return "optimizer"
        if self.name.split(".", 1)[0] in META_KEYS:
            return "meta"
        leaf = self.name.rsplit(".", 1)[-1]
        if "bias" in leaf:
            return "bias"
        if not self.floating or len(self.shape) < 2 or leaf.startswith(("running_", "num_batches")):
            return "buffer"
        return "weight"

    @property
    def all_zero(self) -> bool:
        return self.fully_measured and self.numel > 0 and self.nonzero == 0


@dataclass
class FileScan:
    """One file of a checkpoint (a torch ZIP, a safetensors file, a shard)."""

    path: str
    format: str  # torch-zip, safetensors, legacy-pickle, ...
    integrity: Integrity
    detail: str = ""
    size: int = 0
    tensors: list[TensorInfo] = field(default_factory=list)
    globals: list[str] = field(default_factory=list)
    top_keys: list[str] = field(default_factory=list)
    optimizer_state: int | None = None  # tensors of optimizer state; None when no optimizer entry
    notes: list[str] = field(default_factory=list)


@dataclass
class CheckpointScan:
    """What the user pointed at: a file, a shard index or an output directory."""

    path: str
    layout: str  # torch, safetensors, sharded, hf-dir, lightning
    files: list[FileScan] = field(default_factory=list)
    index_problems: list[str] = field(default_factory=list)
    resume_dir: bool = False  # an HF trainer checkpoint directory (trainer_state.json)
    optimizer_file: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def tensors(self) -> list[TensorInfo]:
        return [t for f in self.files for t in f.tensors]

    @property
    def intact(self) -> bool:
        return bool(self.files) and all(f.integrity is Integrity.OK for f in self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)
