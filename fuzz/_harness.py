"""Shared by the atheris targets: one scratch file per process that each input is
written to under the name its reader expects, and the rule that only trainproof's
own InputError may leave a reader (anything else is a crash atheris reports)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["trainproof"]):  # not numpy: slow and not ours
    import trainproof.parsers  # the readers, instrumented for coverage
    import trainproof.probes.checkpoint  # noqa: F401  (imported here to be instrumented)
    from trainproof.model import InputError

_DIR = Path(tempfile.mkdtemp(prefix="tp-fuzz-"))


def scratch(name: str, data: bytes) -> Path:
    p = _DIR / name
    p.write_bytes(data)
    return p


def main(target: Callable[[bytes], None]) -> None:
    def one(data: bytes) -> None:
        with contextlib.suppress(InputError):  # the promised answer to bad input: one line, exit 2
            target(data)

    atheris.Setup(sys.argv, one)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    atheris.Fuzz()
