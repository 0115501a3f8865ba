"""The machine the run starts on (`trainproof env`): system RAM against --required-gb,
free disk against the checkpoints the run will keep, and the GPUs NVML lists against
--bf16 and --gpu-gb. probes/machine.py measures; the verdicts are declared here."""

from __future__ import annotations

from dataclasses import dataclass

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.machine import GB, Disk, Gpu, Gpus, Memory
from trainproof.rules import env_tensors  # noqa: F401  (registered first: keeps the checks' order)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.env import G


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


# ---------------------------------------------------------------- GPU


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
