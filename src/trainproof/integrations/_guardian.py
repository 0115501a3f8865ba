"""What the training callbacks share: logged metrics accumulated into a Run, judged
by the same single-run rules as `epoch`, the stop decision, the abort message, and
telemetry (step time, GPU utilisation as context).

The stop decision is judged on the logged metrics alone. Telemetry is measured per
process and differs between ranks, so it only enters the report shown at the end;
that keeps the decision a pure function of what the trainer logged."""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.api import judge_metrics
from trainproof.config import Config, active
from trainproof.model import Finding, Level, Report, ReportSet, Verdict
from trainproof.rules.live import PROGRESS_RULES, STOPPED, stop_grounds, stopped_finding

POLICIES = ("warn", "stop_on_fail")
THIN_AFTER = 100  # past this many log events, judge every k // THIN_AFTER-th one (O(n) total)
TELEMETRY = ("step_time", "gpu_util")


class Metrics:
    """Column buffers of (step, value) pairs, turned into numpy arrays only when judged."""

    def __init__(self) -> None:
        self._cols: dict[str, tuple[array, array]] = {}
        self.records = 0

    def add(self, step: float, values: Mapping[str, float]) -> None:
        for name, v in values.items():
            col = self._cols.get(name)
            if col is None:
                col = self._cols[name] = (array("d"), array("d"))
            col[0].append(step)
            col[1].append(v)
        self.records += 1

    def columns(self, exclude: tuple[str, ...] = ()) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {k: (np.array(s, dtype=np.float64), np.array(v, dtype=np.float64))
                for k, (s, v) in self._cols.items() if k not in exclude}


def numeric(logs: Mapping[str, object]) -> dict[str, float]:
    """The numeric scalars of a log event (floats, ints, 0-d tensors); booleans are not numbers."""
    out: dict[str, float] = {}
    for k, v in logs.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[k] = float(v)
        elif hasattr(v, "item") and getattr(v, "numel", lambda: 0)() == 1:
            out[k] = float(v.item())
    return out


class Guardian:
    """One training run under watch. Callbacks feed it log events; it says when to stop."""

    def __init__(self, policy: str, subject: str, fmt: str, scheduled: int | None = None,
                 config: Config | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        self.policy, self.subject, self.fmt, self.scheduled = policy, subject, fmt, scheduled
        self.config = config  # judged under it: thresholds, selection, severity (trainproof.config)
        self.metrics = Metrics()
        self.report: Report | None = None
        self.stopped_at: float | None = None
        self._stop: Finding | None = None
        self.errors: list[str] = []
        self._announced: set[str] = set()
        self._events = 0
        self._last_judged = 0
        self.meta: dict[str, object] = {}  # what the run's own log would carry beside it (its vocabulary)

    def due(self, values: Mapping[str, float]) -> bool:
        """Judge every log event early on, then thin out deterministically (every rank
        agrees), but at once whenever the new event carries a non-finite value."""
        self._events += 1
        k = self._events
        if k - self._last_judged >= max(1, k // THIN_AFTER) or not all(map(math.isfinite, values.values())):
            self._last_judged = k
            return True
        return False

    def judge(self, with_telemetry: bool = False) -> Report:
        exclude = () if with_telemetry else TELEMETRY
        with active(self.config):
            report = judge_metrics(self.metrics.columns(exclude), subject=self.subject, format=self.fmt,
                                   records=self.metrics.records, meta=self.meta)
        if self._stop is not None:
            report = replace(report, findings=(*report.findings, self._stop))
        self.report = report
        return report

    def decide_stop(self, report: Report, step: float) -> list[Finding]:
        """The FAIL findings that stop the run now (empty: keep training). Decided once."""
        if self.policy != "stop_on_fail" or self._stop is not None or report.verdict is not Verdict.FAIL:
            return []
        grounds = stop_grounds(report, step, self.scheduled)
        if grounds:
            self.stopped_at = step
            self._stop = stopped_finding(self.subject, step, self.scheduled, grounds)
            self.report = replace(report, findings=(*report.findings, self._stop))
        return grounds

    def new_findings(self, report: Report) -> list[Finding]:
        """FAIL/WARN findings whose rule has not been announced yet."""
        fresh = [f for f in report.findings if f.level in (Level.FAIL, Level.WARN)
                 and f.rule_id not in self._announced]
        self._announced.update(f.rule_id for f in fresh)
        return fresh

    def record_error(self, where: str, exc: BaseException) -> str | None:
        """Keep the error; return a line to print the first time only."""
        self.errors.append(f"{where}: {type(exc).__name__}: {exc}")
        if len(self.errors) == 1:
            return (f"trainproof: internal error in {where} ({type(exc).__name__}: {exc}); "
                    "training continues unguarded by this check")
        return None

    def finish(self, main: bool, report_path: str | os.PathLike[str] | None) -> None:
        """End of training: judge with telemetry, and on the main process say the verdict
        and write the JSON report when one was asked for."""
        if self.metrics.records:
            report = self.judge(with_telemetry=True)
            if main:
                ids = ", ".join(sorted({f.rule_id for f in report.findings})) or "none"
                print(f"TRAINPROOF verdict: {report.verdict.value} ({ids})", file=sys.stderr)
        if report_path is not None and main:
            self.write_json(report_path)

    def write_json(self, path: str | os.PathLike[str]) -> None:
        from trainproof.render import jsonout

        rs = ReportSet("callback", (self.report,)) if self.report else ReportSet("callback", error="nothing logged")
        if self.config is not None:
            rs = replace(rs, config=self.config.summary())
        Path(path).write_text(jsonout.render(rs), encoding="utf-8")


def finding_lines(findings: list[Finding] | tuple[Finding, ...]) -> list[str]:
    out = []
    for f in findings:
        out.append(f"  [{f.level.value}] {f.rule_id}: {f.message}")
        out.append(f"         Evidence: {f.evidence}")
    return out


def abort_message(grounds: list[Finding], step: float, max_steps: int | None) -> str:
    lines = [f"TRAINPROOF ABORT - stopping training at step {step:g}. Findings:",
             *finding_lines(grounds), ""]
    if max_steps and max_steps > 0:
        saved = max(0.0, (max_steps - step) / max_steps)
        lines += [f"  scheduled steps : {max_steps}", f"  stopped at step : {step:g}",
                  f"  run saved       : {saved:.0%} of the scheduled steps never ran"]
    else:
        lines.append(f"  stopped at step : {step:g} (no step schedule known)")
    return "\n".join(lines)


def warn_message(findings: list[Finding], step: float, policy: str) -> str:
    lines = [f"TRAINPROOF at step {step:g}: new findings (training continues)", *finding_lines(findings)]
    waiting = sorted({f.rule_id for f in findings if f.rule_id in PROGRESS_RULES and f.level is Level.FAIL})
    if waiting and policy == "stop_on_fail":
        verb, them = ("judges", "it") if len(waiting) == 1 else ("judge", "them")
        lines.append(f"  ({', '.join(waiting)} {verb} a whole run's progress: stop_on_fail acts on {them} "
                     f"only after {STOPPED.t('patience'):.0%} of the scheduled steps)")
    return "\n".join(lines)


class StepTimer:
    """Mean wall time per optimizer step between log events: two perf_counter calls a step."""

    __slots__ = ("_count", "_start", "_total")

    def __init__(self) -> None:
        self._start = 0.0
        self._total = 0.0
        self._count = 0

    def begin(self) -> None:
        self._start = time.perf_counter()

    def end(self) -> None:
        if self._start:
            self._total += time.perf_counter() - self._start
            self._count += 1
            self._start = 0.0

    def take(self) -> float | None:
        """Mean step time since the last take, or None if no step was timed."""
        if not self._count:
            return None
        mean = self._total / self._count
        self._total, self._count = 0.0, 0
        return mean


class GpuProbe:
    """GPU utilisation of this process's own device through pynvml, as context only.
    Absent pynvml, no CUDA, or any NVML error: silently no reading."""

    def __init__(self, device_index: int | None = None) -> None:
        self._nvml = None
        self._handle = None
        try:
            self._handle = self._open(device_index)
        except Exception:
            self._handle = None

    def _open(self, device_index: int | None) -> object | None:
        import pynvml  # optional: nvidia-ml-py
        import torch

        if not torch.cuda.is_available():
            return None
        idx = device_index
        if idx is None or not 0 <= idx < torch.cuda.device_count():
            idx = torch.cuda.current_device()
        pynvml.nvmlInit()
        self._nvml = pynvml
        uuid = getattr(torch.cuda.get_device_properties(idx), "uuid", None)
        if uuid is not None:  # robust to CUDA_VISIBLE_DEVICES remapping
            text = str(uuid)
            return pynvml.nvmlDeviceGetHandleByUUID(text if text.startswith("GPU-") else f"GPU-{text}")
        return pynvml.nvmlDeviceGetHandleByIndex(_physical_index(idx))

    def read(self) -> float | None:
        if self._handle is None:
            return None
        try:
            return float(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)
        except Exception:
            return None


def _physical_index(logical: int) -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [s.strip() for s in visible.split(",") if s.strip()]
    if logical < len(ids) and ids[logical].isdigit():
        return int(ids[logical])
    return logical


def local_device_index(framework_index: int | None) -> int | None:
    """This process's device: the one the framework placed the model on, else LOCAL_RANK as
    launchers set it (GpuProbe falls back to the current CUDA device if neither fits)."""
    if framework_index is not None:
        return framework_index
    lr = os.environ.get("LOCAL_RANK", "")
    return int(lr) if lr.isdigit() else None


class GuardianResults:
    """What both callbacks expose after (or during) training, read from their Guardian."""

    _guardian: Guardian

    @property
    def report(self) -> Report | None:
        return self._guardian.report

    @property
    def verdict(self) -> Verdict | None:
        return None if self.report is None else self.report.verdict

    @property
    def findings(self) -> tuple[Finding, ...]:
        return () if self.report is None else self.report.findings

    @property
    def stopped_at(self) -> float | None:
        return self._guardian.stopped_at

    @property
    def errors(self) -> list[str]:
        return self._guardian.errors


def telemetry(timer: StepTimer, gpu: GpuProbe | None) -> dict[str, float]:
    """Context columns for the step just taken: step time, and GPU use when probed."""
    out = {}
    st = timer.take()
    if st is not None:
        out["step_time"] = st
    if gpu is not None and (util := gpu.read()) is not None:
        out["gpu_util"] = util
    return out


Hook = Callable[..., Any]


def guarded(where: str, is_main: Callable[[tuple[Any, ...]], bool]) -> Callable[[Hook], Hook]:
    """Wrap a callback hook so that an exception inside it is recorded and reported once
    (by the main process, as `is_main(hook args)` tells) and never reaches the training loop."""

    def wrap(fn: Hook) -> Hook:
        @functools.wraps(fn)
        def hook(self: Any, *args: Any, **kw: Any) -> Any:
            try:
                return fn(self, *args, **kw)
            except Exception as exc:
                line = self._guardian.record_error(where, exc)
                if line and is_main(args):
                    print(line, file=sys.stderr)
                return None

        return hook

    return wrap
