"""What an intact checkpoint holds: NaN/Inf and all-zero tensors counted from the raw
bytes, optimizer state a resume needs, and tensor names, shapes and dtypes against a
reference checkpoint (--against)."""

from __future__ import annotations

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.checkpoint_model import RESUME_KEYS, CheckpointScan, Integrity, TensorInfo
from trainproof.rules import env_pickle  # noqa: F401  (registered first: keeps the checks' order)
from trainproof.rules.base import Example, check, rule
from trainproof.rules.env import G
from trainproof.rules.env_checkpoint import CheckpointSubject

SHOW = 3  # names quoted in an evidence line; the structured values carry the counts


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:SHOW])
    return shown + (f" (+{len(items) - SHOW} more)" if len(items) > SHOW else "")


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
