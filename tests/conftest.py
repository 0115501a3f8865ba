"""Shared paths. Everything the tests need is in the repository, except the large
corpus of real logs nobody here wrote (../shared/corpus beside the checkout, not ours
to copy): the tests that read it skip, saying so, where it is absent (a clone outside
this workplace)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "core"
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"


def need_shared(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent: the large shared corpus of strangers' logs lives beside the "
                    "checkout in ../shared, not in the repository")
    return path


@pytest.fixture
def corpus() -> Path:
    return need_shared(CORPUS)


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    from trainproof.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def evidence_matrix_module() -> ModuleType:
    """scripts/evidence_matrix.py, loaded once and shared (scripts/ is not a package,
    and its dataclasses need the module in sys.modules)."""
    if "evidence_matrix" not in sys.modules:
        spec = importlib.util.spec_from_file_location("evidence_matrix", ROOT / "scripts" / "evidence_matrix.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["evidence_matrix"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["evidence_matrix"]


@pytest.fixture(autouse=True)
def _colour_left_to_the_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI runner that sets FORCE_COLOR would paint the text reports tests read; tests
    that are about colour set it themselves."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def read_terminal(leader: int) -> bytes:
    """Everything a child wrote to a pseudo-terminal, read from its `leader` side until
    the terminal closes (Linux reports that as an OSError, not an empty read)."""
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: all was read
            return out
        if not chunk:
            return out
        out += chunk
