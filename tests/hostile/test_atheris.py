"""A short coverage-guided run of each atheris target in fuzz/ (CI installs atheris
from ci/requirements/fuzz.txt; without it these skip, saying so). Seeds are the
committed fixtures; the corpus grows in a temporary folder, never in tests/fixtures.
The long run is documented in fuzz/README.md."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.test_campaign import runner_env

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
SEEDS = {
    "tfevents": FIX / "tfevents" / "torch_default",
    "wandb": FIX / "wandb" / "hf" / "offline-run-20261203_075710-yr7iu05b",
    "checkpoint": FIX / "env" / "hf" / "checkpoint-2",
    "pickle": FIX / "env" / "hf" / "checkpoint-2",
    "safetensors": FIX / "env" / "hf" / "checkpoint-2",
}
RUNS = int(os.environ.get("TP_FUZZ_RUNS", "300"))

pytestmark = pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                                reason="atheris is not installed (ci/requirements/fuzz.txt installs it)")


# Targets with a known hole still open: {target: reason}. (The checkpoint target's first
# find, a ZIP entry name that is not UTF-8, is closed: tests/hostile/regressions/.)
KNOWN: dict[str, str] = {}


def _param(target: str):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[target])] if target in KNOWN else []
    return pytest.param(target, id=target, marks=marks)


@pytest.mark.slow
@pytest.mark.parametrize("target", [_param(t) for t in SEEDS])
def test_short_atheris_run_finds_no_crash(target, tmp_path):
    corpus, artifacts = tmp_path / "corpus", tmp_path / "crashes"
    corpus.mkdir()
    artifacts.mkdir()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / f"fuzz_{target}.py"), f"-runs={RUNS}", "-seed=1", "-max_len=65536",
         "-rss_limit_mb=1024", "-timeout=20", f"-artifact_prefix={artifacts}/", str(corpus), str(SEEDS[target])],
        cwd=ROOT / "fuzz", env=runner_env(), capture_output=True, text=True, timeout=600)
    crashes = sorted(p.name for p in artifacts.iterdir())
    assert proc.returncode == 0 and not crashes, (crashes, proc.stderr[-3000:])
