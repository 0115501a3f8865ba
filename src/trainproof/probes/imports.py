"""Imports the user's training module in a child process of their interpreter and
reads back what happened from a JSON report the child writes, never from its
stderr. A child that dies without a report crashed natively (signal, abort,
os._exit); one that outlives the timeout is killed with its whole process group."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CHILD = Path(__file__).with_name("_import_child.py")
TAIL_BYTES = 4000
DUMP_WAIT_S = 2.0  # how long a timed-out child gets to write where it is stuck
_FAULT_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


@dataclass
class ImportResult:
    module: str
    python: str
    cwd: str
    outcome: str  # imported, raised, crashed, timeout, python-unusable, cwd-missing
    exc_type: str = ""
    message: str = ""
    raised_at: str = ""  # innermost real frame, file:line
    user_frame: str = ""  # innermost frame inside the user's own tree
    returncode: int | None = None
    signal: str = ""
    seconds: float = 0.0
    detail: str = ""
    python_version: str = ""
    file: str = ""
    stderr_tail: str = ""
    frames: list[dict] = field(default_factory=list)


def probe_import(module: str, cwd: str = ".", python: str | None = None, timeout: float = 120.0) -> ImportResult:
    exe = python or sys.executable
    res = ImportResult(module, exe, cwd, "imported")
    if not Path(cwd).is_dir():
        res.outcome, res.detail = "cwd-missing", f"{cwd} is not a directory"
        return res
    with tempfile.TemporaryDirectory(prefix="trainproof-import-") as tmp:
        report, fault, err = (os.path.join(tmp, n) for n in ("report.json", "fault.log", "stderr.log"))
        return _run_child(res, exe, report, fault, err, timeout)


def _run_child(res: ImportResult, exe: str, report: str, fault: str, err: str, timeout: float) -> ImportResult:
    import time

    start = time.monotonic()
    with open(err, "wb") as err_fh:
        try:
            proc = subprocess.Popen([exe, str(CHILD), res.module, report, fault], cwd=res.cwd,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err_fh,
                                    start_new_session=True)
        except OSError as exc:
            res.outcome, res.detail = "python-unusable", f"cannot run {exe}: {exc.strerror or exc}"
            return res
        try:
            res.returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _ask_where(proc, fault)
            _kill_group(proc)
            res.stderr_tail = _tail(err)
            res.outcome, res.seconds = "timeout", timeout
            res.detail = f"still importing after {timeout:g} s; killed"
            return _with_fault(res, fault)
    res.seconds = time.monotonic() - start
    res.stderr_tail = _tail(err)
    return _interpret(res, _read_report(report), fault)


def _ask_where(proc: subprocess.Popen, fault: str) -> None:
    """SIGUSR1 makes the child's faulthandler dump the stack it is stuck in."""
    import time

    try:
        os.kill(proc.pid, signal.SIGUSR1)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + DUMP_WAIT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(fault) and os.path.getsize(fault) > 0:
            time.sleep(0.05)  # let the dump finish its last lines
            return
        time.sleep(0.02)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _read_report(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def _interpret(res: ImportResult, rec: dict, fault: str) -> ImportResult:
    phase = rec.get("phase")
    res.python_version = str(rec.get("python", ""))
    if phase is None:
        res.outcome = "python-unusable"
        res.detail = f"{res.python} did not start the probe (exit status {res.returncode})"
        return res
    if phase == "imported":
        res.outcome, res.file = "imported", str(rec.get("file") or "")
        return res
    if phase == "raised":
        res.outcome, res.exc_type, res.message = "raised", str(rec.get("type")), str(rec.get("message"))
        if rec.get("module") not in (None, "builtins"):
            res.exc_type = f"{rec['module']}.{res.exc_type}"
        res.frames = [f for f in rec.get("frames", []) if isinstance(f, dict)]
        res.raised_at, res.user_frame = _frames(res.frames, res.cwd)
        return res
    res.outcome = "crashed"  # started, then died without a report
    rc = res.returncode or 0
    if rc < 0:
        res.signal = _signal_name(-rc)
        res.detail = f"killed by {res.signal} (no Python exception)"
    else:
        res.detail = f"exited with status {rc} without raising a Python exception (os._exit or a native exit)"
    return _with_fault(res, fault)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _frames(frames: list[dict], cwd: str) -> tuple[str, str]:
    real = [f for f in frames if not str(f.get("file", "")).startswith("<")
            and os.path.realpath(str(f.get("file", ""))) != os.path.realpath(CHILD)]
    raised = _where(real[-1]) if real else ""
    root = os.path.realpath(cwd)
    own = [f for f in real if _is_users(str(f.get("file", "")), root)]
    return raised, _where(own[-1]) if own else ""


def _is_users(file: str, root: str) -> bool:
    path = os.path.realpath(file)
    if any(part in path for part in ("site-packages", "dist-packages", "/lib/python")):
        return False
    return path == root or path.startswith(root + os.sep)


def _where(frame: dict) -> str:
    return f"{frame.get('file')}:{frame.get('line')}"


def _with_fault(res: ImportResult, fault: str) -> ImportResult:
    """faulthandler's dump, written by the child on a fatal signal or timeout, names the
    Python line that was running: evidence only, the outcome is already decided."""
    text = _tail(fault)
    hits = [m for m in _FAULT_FRAME.finditer(text)]
    if hits:  # faulthandler lists the innermost frame first
        first = hits[0]
        res.raised_at = f"{first['file']}:{first['line']}"
        root = os.path.realpath(res.cwd)
        own = [m for m in hits if _is_users(m["file"], root)]
        res.user_frame = f"{own[0]['file']}:{own[0]['line']}" if own else ""
    return res


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
