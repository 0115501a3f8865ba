"""The pre-commit hooks (.pre-commit-hooks.yaml), run by pre-commit itself: a
repository using them as a consumer would (`repo:` this tree at a commit, `rev:` that
commit), `pre-commit run --all-files` on a healthy and on a failing training log.
pre-commit installs trainproof into its own hook environment (from PyPI, so it needs
the index pip uses); without pre-commit installed the test skips (ci/requirements/plug.txt
installs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainproof.precommit import combined, main

from .conftest import ROOT

GALLERY = ROOT / "examples" / "gallery"
SHIPPED = ("src", "pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml")


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    if not Path(exe).is_file():
        pytest.skip("pre-commit is not installed (ci/requirements/plug.txt installs it)")
    return [exe]


def _git(cwd: Path, *argv: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *argv], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def _hook_repo(tmp: Path) -> tuple[Path, str]:
    """This tree as it is now (committed or not), as a repository pre-commit can clone."""
    repo = tmp / "hooks"
    repo.mkdir()
    for name in SHIPPED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "hooks")
    return repo, _git(repo, "rev-parse", "HEAD")


def _consumer(tmp: Path, name: str, log: Path, repo: Path, rev: str, hook: str) -> Path:
    work = tmp / name
    (work / "runs" / "r1").mkdir(parents=True)
    shutil.copy2(log, work / "runs" / "r1" / "trainer_state.json")
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: {hook}\n", encoding="utf-8")
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    return work


@pytest.mark.slow
def test_pre_commit_runs_the_hooks_on_a_healthy_and_a_failing_log(tmp_path):
    exe = _pre_commit()
    repo, rev = _hook_repo(tmp_path)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)  # the hook runs the trainproof pre-commit installed, not this checkout
    cases = [("trainproof-epoch", "healthy", 0), ("trainproof-epoch", "lr_hot", 1),
             ("trainproof-doctor", "healthy", 0), ("trainproof-doctor", "lr_zero", 1)]
    for hook, run, expected in cases:
        work = _consumer(tmp_path, f"{hook}-{run}", GALLERY / run / "trainer_state.json", repo, rev, hook)
        proc = subprocess.run([*exe, "run", "--all-files", "--verbose"], cwd=work, env=env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == expected, (hook, run, proc.stdout[-3000:], proc.stderr[-3000:])
        verdict = "FAIL" if expected else "PASS"
        assert f"VERDICT: {verdict}" in proc.stdout, proc.stdout[-3000:]


def test_the_hook_entry_combines_exit_codes_like_the_contract(capsys):
    assert combined([0, 2, 1]) == 1 and combined([0, 2]) == 2 and combined([0, 0]) == 0 and combined([]) == 2
    healthy, hot = GALLERY / "healthy" / "trainer_state.json", GALLERY / "lr_hot" / "trainer_state.json"
    assert main(["epoch", str(healthy)]) == 0
    assert main(["epoch", "--vocab-size", "50257", str(healthy), str(hot)]) == 1
    assert main(["epoch", str(healthy), str(ROOT / "no_such" / "trainer_state.json")]) == 2
    assert main(["nosuchcommand", str(healthy)]) == 2
    out = capsys.readouterr().out
    assert out.count("VERDICT: PASS") == 3 and out.count("VERDICT: FAIL") == 1
