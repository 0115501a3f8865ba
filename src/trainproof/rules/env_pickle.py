"""Checkpoint pickle safety: does the pickle inside a torch checkpoint name globals
outside what torch.save writes. Judged from the names probes/pickle_scan.py lists; the
file is never unpickled and nothing it names is imported. The allowlist is declared here."""

from __future__ import annotations

import re

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.checkpoint_model import Integrity
from trainproof.rules.base import Example, check, rule
from trainproof.rules.env import G
from trainproof.rules.env_checkpoint import CheckpointSubject

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
