"""`-` as a log path: standard input, copied once into a temporary file the readers can
sniff and seek (many formats are read twice: sniffed, then parsed), removed at exit.

Bounded: the copy stops past STDIN_MAX_BYTES with an InputError, so `cat /dev/zero |
trainproof epoch -` cannot fill the disk. The file has no telling name, so a format that
is recognised by its name alone (a CSV, an event file) needs `--format`; JSON, JSONL and
trainer_state.json are recognised by their content. `watch` and `doctor` do not take `-`:
a pipe does not grow in place, and there is nothing to search in it."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from pathlib import Path

from trainproof.model import InputError

STDIN = "-"
STDIN_MAX_BYTES = 2 << 30  # 2 GiB: a large training log; past it, write the log to a file
_CHUNK = 1 << 20
_copied: list[Path] = []


def stdin_log() -> Path:
    """The temporary file holding standard input (copied on first use; the same file after)."""
    if _copied:
        return _copied[0]
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None or sys.stdin.isatty():
        raise InputError("-: standard input is a terminal or closed; pipe a log into it, or give a path")
    import tempfile  # only when a log really comes on standard input

    fd, name = tempfile.mkstemp(prefix="trainproof-stdin-")
    atexit.register(_remove, name)
    _copied.append(Path(name))
    total = 0
    with os.fdopen(fd, "wb") as out:
        while chunk := stream.read(_CHUNK):
            total += len(chunk)
            if total > STDIN_MAX_BYTES:
                raise InputError(f"-: standard input is over {STDIN_MAX_BYTES >> 30} GiB; write the log "
                                 "to a file and give its path")
            out.write(chunk)
    if total == 0:
        raise InputError("-: standard input was empty")
    return _copied[0]


def _remove(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)
