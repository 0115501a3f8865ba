"""Shared by the atheris targets: one scratch file per process that each input is
written to under the name its reader expects, and the rule that only trainproof's
own InputError may leave a reader (anything else is a crash atheris reports)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris

with atheris.instrument_imports():
    import trainproof.parsers  # noqa: F401  (the readers, instrumented for coverage)
    import trainproof.probes.checkpoint  # noqa: F401
    from trainproof.model import InputError

_DIR = Path(tempfile.mkdtemp(prefix="tp-fuzz-"))


def scratch(name: str, data: bytes) -> Path:
    p = _DIR / name
    p.write_bytes(data)
    return p


def main(target: Callable[[bytes], None]) -> None:
    def one(data: bytes) -> None:
        try:
            target(data)
        except InputError:
            pass  # the promised answer to bad input: one line, exit 2

    atheris.Setup(sys.argv, one)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    atheris.Fuzz()
