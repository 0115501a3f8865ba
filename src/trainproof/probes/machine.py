"""What the machine offers a run: system RAM (the tighter of /proc/meminfo and the
process's cgroup limit, v1 or v2, walked up the hierarchy), free disk where
checkpoints will go, and GPUs through pynvml when it is installed and a driver
answers. Every measurement that cannot be made says why instead."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

GB = 1e9
_UNLIMITED = 1 << 60  # cgroup v1 writes ~2^63 for "no limit"


@dataclass
class Memory:
    available: float | None  # bytes this process can still use
    total: float | None
    cgroup_limit: float | None = None
    source: str = ""
    why_unknown: str = ""


@dataclass
class Disk:
    path: str  # the directory measured (the nearest existing one)
    free: float | None
    total: float | None = None
    why_unknown: str = ""
    target: str = ""  # the directory asked about, which may not exist yet

    @property
    def where(self) -> str:
        return self.path if not self.target or self.target == self.path else f"{self.target} (on {self.path})"


@dataclass
class Gpu:
    index: int
    name: str
    memory_total: float
    memory_free: float
    capability: tuple[int, int]


@dataclass
class Gpus:
    devices: list[Gpu] = field(default_factory=list)
    why_unknown: str = ""  # set when GPUs could not be enumerated at all


def measure_memory(proc: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> Memory:
    info = _meminfo(Path(proc) / "meminfo")
    if "MemTotal" not in info:
        return Memory(None, None, why_unknown=f"{proc}/meminfo is not readable here")
    total = info["MemTotal"]
    avail = info.get("MemAvailable", info.get("MemFree", 0.0) + info.get("Cached", 0.0))
    limit, headroom = _cgroup(Path(proc) / "self" / "cgroup", Path(cgroup_root))
    mem = Memory(avail, total, source="/proc/meminfo")
    if limit is not None and limit < total:
        mem.cgroup_limit, mem.total = limit, limit
        if headroom is not None and headroom < avail:
            mem.available, mem.source = headroom, "cgroup limit"
    return mem


def _meminfo(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        for line in path.read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                out[key] = float(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        pass
    return out


def _cgroup(self_cgroup: Path, root: Path) -> tuple[float | None, float | None]:
    """(tightest memory limit, limit minus non-reclaimable usage) along the cgroup path."""
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        return None, None
    best: tuple[float | None, float | None] = (None, None)
    for line in lines:
        _, controllers, rel = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":  # v2 unified
            best = _tighter(best, _walk(root, rel, "memory.max", "memory.current", "inactive_file"))
        elif "memory" in controllers.split(","):
            best = _tighter(best, _walk(root / "memory", rel, "memory.limit_in_bytes",
                                        "memory.usage_in_bytes", "total_inactive_file"))
    return best


def _walk(base: Path, rel: str, limit_f: str, usage_f: str, inactive_key: str) -> tuple[float | None, float | None]:
    best: tuple[float | None, float | None] = (None, None)
    parts = [p for p in rel.strip("/").split("/") if p]
    for depth in range(len(parts), -1, -1):
        d = base.joinpath(*parts[:depth])
        limit = _number(d / limit_f)
        if limit is None or limit >= _UNLIMITED:
            continue
        usage = _number(d / usage_f)
        inactive = _stat(d / "memory.stat", inactive_key)
        headroom = None if usage is None else max(0.0, limit - max(0.0, usage - inactive))
        best = _tighter(best, (limit, headroom))
    return best


def _tighter(a: tuple[float | None, float | None],
             b: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    limits = [x for x in (a[0], b[0]) if x is not None]
    rooms = [x for x in (a[1], b[1]) if x is not None]
    return (min(limits) if limits else None, min(rooms) if rooms else None)


def _number(path: Path) -> float | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return None if text == "max" or not text.isdigit() else float(text)


def _stat(path: Path, key: str) -> float:
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key and v.strip().isdigit():
                return float(v)
    except OSError:
        pass
    return 0.0


def measure_disk(path: str) -> Disk:
    """Free space where `path` is or will be created (its nearest existing ancestor)."""
    target = Path(path).absolute()
    p = target
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        usage = shutil.disk_usage(p)
    except OSError as exc:
        return Disk(str(p), None, why_unknown=f"cannot stat {p}: {exc.strerror or exc}", target=str(target))
    return Disk(str(p), float(usage.free), float(usage.total), target=str(target))


def measure_gpus() -> Gpus:
    try:
        import pynvml
    except ImportError:
        return Gpus(why_unknown="pynvml is not installed (pip install nvidia-ml-py)")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return Gpus(why_unknown=f"no NVIDIA driver answered: {exc}")
    try:
        return Gpus([_device(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount())])
    except Exception as exc:
        return Gpus(why_unknown=f"NVML failed while enumerating GPUs: {exc}")
    finally:
        pynvml.nvmlShutdown()


def _device(nvml, i: int) -> Gpu:
    h = nvml.nvmlDeviceGetHandleByIndex(i)
    name = nvml.nvmlDeviceGetName(h)
    mem = nvml.nvmlDeviceGetMemoryInfo(h)
    cc = nvml.nvmlDeviceGetCudaComputeCapability(h)
    return Gpu(i, name.decode() if isinstance(name, bytes) else str(name), float(mem.total),
               float(mem.free), (int(cc[0]), int(cc[1])))
