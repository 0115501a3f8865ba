"""The env rules' executable examples: how an Example's data becomes the subject of its
family (an import result, a checkpoint scan, the machine's RAM and disk, its GPUs), so
that tests and `trainproof rule` run every rule's fires/passes pair."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainproof.probes.checkpoint_model import CheckpointScan, FileScan, Integrity, TensorInfo
from trainproof.probes.imports import ImportResult
from trainproof.probes.machine import GB, Disk, Gpu, Gpus, Memory
from trainproof.rules.base import example_subject
from trainproof.rules.env import G
from trainproof.rules.env_checkpoint import CheckpointSubject
from trainproof.rules.env_machine import GpuSubject, MachineSubject


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
