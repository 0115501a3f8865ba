"""The committed regression inputs (tests/hostile/regressions/) as campaign inputs."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.hostile.spec import CHECKPOINT, LOG, Env, Spec

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
# file -> (family, expectation, class)
KNOWN = {
    "torch-zip-name-invalid-utf8.pt": (CHECKPOINT, "broken", "invalid-utf8"),
    "clearml-zip-name-invalid-utf8.zip": (LOG, "unreadable", "invalid-utf8"),
    "torch-zip-unknown-method.pt": (CHECKPOINT, "unreadable", "zip-method"),
    "torch-zip-local-name-invalid-utf8.pt": (CHECKPOINT, "broken", "invalid-utf8"),
    "torch-zip-unknown-version.pt": (CHECKPOINT, "unreadable", "zip-version"),
}


def _copy(name: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        return Path(shutil.copyfile(REGRESSIONS / name, env.dir / name))

    return write


def specs() -> Iterator[Spec]:
    for name, (family, expect, cls) in KNOWN.items():
        yield Spec(f"regression/{name}", family, expect, cls, _copy(name))
