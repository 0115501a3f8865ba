"""Shared paths. The real-run corpus lives in ../shared beside the checkout; tests that
need it skip, saying so, when it is absent (a clone outside this workplace)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "core"
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"


def need_shared(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared corpus/tools live beside the checkout")
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
