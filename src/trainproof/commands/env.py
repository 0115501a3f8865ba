"""`trainproof env`: can this machine start the run. One report per subject - the
import probe (--module), each --checkpoint, the machine (RAM, disk), the GPUs - so
each verdict says what it covers. With no flags it measures what it can (RAM, disk,
GPUs) and records what it could not."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field, replace

from trainproof import engine
from trainproof.model import InputError, Report, ReportSet
from trainproof.probes.checkpoint import inspect_checkpoint
from trainproof.probes.checkpoint_model import CheckpointScan
from trainproof.probes.imports import probe_import
from trainproof.probes.machine import GB, measure_disk, measure_gpus, measure_memory
from trainproof.rules.env_checkpoint import CheckpointSubject, read_caps
from trainproof.rules.env_import import IMPORT_TIMEOUT
from trainproof.rules.env_machine import GpuSubject, MachineSubject
from trainproof.rules.env_pickle import unsafe_globals as _unsafe

NAME = "env"
HELP = "can this machine start the run: import, checkpoints, RAM, disk, GPU"


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    imp = p.add_argument_group("import probe")
    imp.add_argument("--module", metavar="M", help="training module to import in a subprocess")
    imp.add_argument("--cwd", metavar="D", default=".", help="directory training launches from (default .)")
    imp.add_argument("--python", metavar="EXE", help="interpreter training uses (default: this one)")
    imp.add_argument("--import-timeout", metavar="S", type=_positive, default=IMPORT_TIMEOUT.t("timeout"),
                     help=f"seconds before the import counts as hung (default {IMPORT_TIMEOUT.t('timeout'):g})")
    ck = p.add_argument_group("checkpoints")
    ck.add_argument("--checkpoint", metavar="P", action="append", default=[],
                    help="torch/Lightning file, .safetensors, *.index.json or HF output dir (repeatable)")
    ck.add_argument("--against", metavar="OTHER", help="reference checkpoint for key/shape drift")
    mc = p.add_argument_group("machine")
    mc.add_argument("--required-gb", metavar="G", type=_positive, help="system RAM the run needs")
    mc.add_argument("--output-dir", metavar="D", help="where checkpoints are written (default --cwd)")
    mc.add_argument("--checkpoint-gb", metavar="G", type=_positive,
                    help="size of one checkpoint (default: the largest --checkpoint)")
    mc.add_argument("--keep", metavar="K", type=_count, default=1, help="checkpoints kept at once (default 1)")
    mc.add_argument("--bf16", action="store_true", help="the run trains in bf16: every GPU must support it")
    mc.add_argument("--gpu-gb", metavar="G", type=_positive, help="free GPU memory the run needs per GPU")


@dataclass(frozen=True)
class EnvRequest:
    """What `env` is asked to check, by the CLI's option names (--checkpoint is a list)."""

    module: str | None = None
    cwd: str = "."
    python: str | None = None
    import_timeout: float | None = None  # None: the declared IMPORT_TIMEOUT
    checkpoint: list[str] = field(default_factory=list)
    against: str | None = None
    required_gb: float | None = None
    output_dir: str | None = None
    checkpoint_gb: float | None = None
    keep: int = 1
    bf16: bool = False
    gpu_gb: float | None = None

    def checked(self) -> EnvRequest:
        """Refused with InputError where the CLI's argument types refuse it."""
        for name in ("import_timeout", "required_gb", "checkpoint_gb", "gpu_gb"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
                raise InputError(f"{name}: expected a positive number, got {v!r}")
        if isinstance(self.keep, bool) or not isinstance(self.keep, int) or self.keep < 1:
            raise InputError(f"keep: expected a whole number >= 1, got {self.keep!r}")
        if self.import_timeout is None:
            return replace(self, import_timeout=IMPORT_TIMEOUT.t("timeout"))
        return self


def run(args: argparse.Namespace) -> ReportSet:
    from trainproof import api

    return api.env(module=args.module, cwd=args.cwd, python=args.python, import_timeout=args.import_timeout,
                   checkpoints=args.checkpoint, against=args.against, required_gb=args.required_gb,
                   output_dir=args.output_dir, checkpoint_gb=args.checkpoint_gb, keep=args.keep, bf16=args.bf16,
                   gpu_gb=args.gpu_gb)


def check_env(req: EnvRequest) -> ReportSet:
    """The work behind `trainproof.env`: one report per subject."""
    req = req.checked()
    if req.against and not req.checkpoint:
        raise InputError("--against needs at least one --checkpoint to compare")
    reports: list[Report] = []
    if req.module:
        reports.append(_import_report(req))
    against = _reference(req.against) if req.against else None
    scans = [inspect_checkpoint(p, read_caps()) for p in req.checkpoint]
    reports += [_checkpoint_report(CheckpointSubject(s, against)) for s in scans]
    reports.append(_machine_report(req, scans))
    reports.append(_gpu_report(req))
    return ReportSet(NAME, tuple(reports))


def _import_report(args: EnvRequest) -> Report:
    res = probe_import(args.module, args.cwd, args.python, args.import_timeout)
    out = engine.judge("env:import", res)
    return Report(subject=res.file or args.module, format="python-import", findings=tuple(out.findings),
                  ignored=tuple(out.ignored),
                  ran=tuple(out.ran), skipped=out.skipped, kind="import",
                  notes=(f"interpreter: {res.python}", f"cwd: {os.path.abspath(res.cwd)}"))


def _reference(path: str) -> CheckpointScan:
    scan = inspect_checkpoint(path, read_caps())
    if not scan.intact:
        bad = next(f for f in scan.files if f.integrity.value != "ok") if scan.files else None
        why = f"{bad.integrity.value}: {bad.detail}" if bad else "nothing readable"
        raise InputError(f"--against {path} cannot serve as a reference ({why})")
    return scan


def _checkpoint_report(s: CheckpointSubject) -> Report:
    out = engine.judge("env:checkpoint", s)
    notes = list(s.scan.notes)
    for f in s.scan.files:
        if f.globals:
            flagged = set(_unsafe(f.globals))
            shown = ", ".join(g + (" (NOT ALLOWED)" if g in flagged else "") for g in f.globals)
            notes.append(f"pickle globals in {f.path}: {shown}")
    return Report(subject=s.scan.path, format=s.scan.layout, findings=tuple(out.findings),
                  ignored=tuple(out.ignored), ran=tuple(out.ran),
                  skipped=out.skipped, records=len(s.scan.tensors), notes=tuple(notes), kind="checkpoint")


def _machine_report(args: EnvRequest, scans: list[CheckpointScan]) -> Report:
    size_gb, size_from = args.checkpoint_gb, "--checkpoint-gb"
    if size_gb is None and scans:
        biggest = max(scans, key=lambda s: s.size)
        if biggest.size:
            size_gb, size_from = biggest.size / GB, f"size of {biggest.path}"
    where = args.output_dir or args.cwd
    m = MachineSubject(measure_memory(), measure_disk(where), args.required_gb, size_gb, args.keep, size_from)
    out = engine.judge("env:machine", m)
    return Report(subject="machine", format="system", findings=tuple(out.findings),
                  ignored=tuple(out.ignored), ran=tuple(out.ran),
                  skipped=out.skipped, kind="machine")


def _gpu_report(args: EnvRequest) -> Report:
    s = GpuSubject(measure_gpus(), args.bf16, args.gpu_gb)
    out = engine.judge("env:gpu", s)
    needed = bool(args.bf16 or args.gpu_gb is not None)
    return Report(subject="gpu", format="nvml", findings=tuple(out.findings),
                  ignored=tuple(out.ignored), ran=tuple(out.ran),
                  skipped=out.skipped, kind="gpu", required=needed)
