"""Keeping native decoders off stderr. libsndfile's MP3 decoder (mpg123) and its kin
print notes ("Illegal Audio-MPEG-Header ... Trying to resync...") straight to file
descriptor 2, past Python, on exactly the undecodable files `data` exists to find;
the CLI's contract is at most one line on stderr. While they run, descriptor 2 points
at /dev/null (worker processes inherit that), and Python's sys.stderr keeps writing
to the real one, so trainproof's own progress line still shows."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def native_stderr_silenced() -> Iterator[None]:
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 at all: nothing to protect
        yield
        return
    old = sys.stderr
    with contextlib.suppress(AttributeError, OSError, ValueError):
        old.flush()  # what Python wrote so far goes out before the descriptor moves
    devnull = os.open(os.devnull, os.O_WRONLY)
    ours = io.TextIOWrapper(io.FileIO(os.dup(saved), "w"), encoding=getattr(old, "encoding", None) or "utf-8",
                            errors=getattr(old, "errors", None) or "backslashreplace", write_through=True)
    try:
        os.dup2(devnull, 2)
        sys.stderr = ours
        yield
    finally:
        sys.stderr = old
        os.dup2(saved, 2)
        for fd in (devnull, saved):
            os.close(fd)
        ours.close()

