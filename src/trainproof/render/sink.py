"""Where rendered reports go. Owns the promise of the report file options (what
standard output may hold is decided in trainproof.stdio, which the CLI consults before
any work is done):

- A report file is written whole or not at all: into a temporary file beside it, then
  renamed over it, so a full disk, a kill or a second writer never leaves it torn. A
  path that exists and is not a regular file (a device, a FIFO, /dev/stdout) is written
  in place, since it cannot be renamed over.
- A report replaces only an empty file or a report of its own kind. `--html` takes an
  optional PATH, so `compare --html base.json run.json` reads the baseline as the HTML
  path: overwriting it would destroy the user's log, so it is refused, with one line."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from trainproof.stdio import FILE_OPTIONS, STDOUT, OutputError, stdout_format, write_stdout

__all__ = ["FILE_OPTIONS", "STDOUT", "OutputError", "append_step_summary", "stdout_format", "write_report",
           "write_stdout"]
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"

# What the start of an existing report of each kind holds (trainproof's or another tool's).
_MARKS = {"html": (b"<!doctype html", b"<html"), "sarif": (b"sarif",), "junit": (b"<testsuite",),
          "json": (b'"schema_version"',), "gitlab": (b'"check_name"',)}
_NAMES = {"html": "an HTML", "sarif": "a SARIF", "junit": "a JUnit", "json": "a trainproof JSON",
          "gitlab": "a GitLab Code Quality"}
_HEAD = 4096


def write_report(target: str | Path, text: str, kind: str | None = None) -> None:
    """Write one report file atomically (see the module docstring); OutputError says why not.
    `kind` (html, sarif, junit, json) guards an existing file that is not such a report.
    Text that cannot be UTF-8 (a file name's undecodable bytes) is written escaped."""
    path = Path(target)
    data = text.encode("utf-8", "backslashreplace")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OutputError(f"cannot write {path}: is a directory")
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(path, "wb") as fh:  # a device or FIFO: there is nothing to rename over
                fh.write(data)
            return
        if st is not None and st.st_size and kind is not None and not _is_report(path, kind):
            raise OutputError(f"{path} exists and is not {_NAMES[kind]} report: not overwritten "
                              "(remove it or choose another path)")
        _replace(Path(os.path.realpath(path)), data, None if st is None else stat.S_IMODE(st.st_mode))
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _is_report(path: Path, kind: str) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(_HEAD).lower()
    if kind == "gitlab" and head.strip() == b"[]":  # a Code Quality report with no issues
        return True
    return any(mark in head for mark in _MARKS[kind])


def _replace(real: Path, data: bytes, mode: int | None) -> None:
    """Write `data` to a temporary file in `real`'s directory, sync it, rename it over
    `real`. The temporary file is removed whatever stops the write (a signal included)."""
    import tempfile  # here, not at the top: a report on standard output alone need not import it

    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name[:80]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode() if mode is None else mode)  # mkstemp's 0600 is not what users expect
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def append_step_summary(markdown: str) -> None:
    """Append to the file `$GITHUB_STEP_SUMMARY` names (GitHub gives each step its own and
    shows them all on the run's page); nothing when it is unset. Appended, not replaced:
    other steps' tools write there too."""
    target = os.environ.get(STEP_SUMMARY)
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(markdown)
    except OSError as exc:
        raise OutputError(f"cannot append the job summary to {target}: {exc.strerror or exc}") from None
