"""Environment rules (`trainproof env`): can the run start at all - does the training
module import, is the checkpoint it resumes from intact, safe to load and numerically
sound, is there RAM, disk and a capable GPU. Four families share the group: import,
checkpoint, machine, gpu; a report of scope `env:<family>` runs that family's checks.
This module owns the group's name, which checks each family runs and the families whose
reports state no outcome of their own; the rules live in env_import.py (the import
probe), env_checkpoint.py (integrity, and the checkpoint's PASS statement),
env_pickle.py (pickle safety), env_tensors.py (values, optimizer state, drift),
env_machine.py (RAM, disk, GPUs), and env_examples.py runs their examples.

Levels the contract leaves open, decided across the group: a checkpoint the user named
that is missing, empty, truncated or corrupt is a FAIL about their run (it cannot
resume); one we refuse to read (legacy format, unknown layout, permission) is
NOT-CHECKED; an interpreter or working directory that cannot run the probe is
NOT-CHECKED (exit 2), since nothing was learned about the module; a measurement that
cannot be made is NOT-CHECKED with its reason when a requirement depends on it, and a
recorded skip otherwise - never a pass."""

from __future__ import annotations

from trainproof.model import Location
from trainproof.rules.base import statement

G = "env"

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
