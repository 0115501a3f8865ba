"""Colour on a terminal only: NO_COLOR, FORCE_COLOR and --color decide, a pipe gets plain
text, and machine formats are never painted. Run as subprocesses (one through a real
pseudo-terminal), on the gallery's NaN run."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from .conftest import ROOT, read_terminal

NAN = ROOT / "examples/gallery/nan/trainer_state.json"
ESC = "\x1b["
BASE = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}


def tp(*args, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", "epoch", NAN, *args], capture_output=True, text=True,
                          timeout=120, env={**BASE, "PYTHONPATH": str(ROOT / "src"), **env})


@pytest.mark.parametrize(("args", "env", "painted"), [
    ((), {}, False),  # a pipe
    ((), {"FORCE_COLOR": "1"}, True),
    ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ((), {"NO_COLOR": ""}, False),  # set but empty means nothing
    (("--color", "always"), {"NO_COLOR": "1"}, True),  # the flag wins
    (("--color", "never"), {"FORCE_COLOR": "1"}, False),
    (("--json", "--color", "always"), {}, False),  # machine formats never
    (("--github", "--color", "always"), {}, True),
])
def test_who_decides(args, env, painted):
    r = tp(*args, **env)
    assert r.returncode == 1 and (ESC in r.stdout) is painted
    if painted:
        assert f"VERDICT: {ESC}31;1mFAIL{ESC}0m" in r.stdout
        assert all(ESC not in line for line in r.stdout.splitlines() if line.startswith("::"))
    plain = tp(*[a for a in args if a not in ("--color", "always", "never")]).stdout
    assert r.stdout.replace(f"{ESC}31;1m", "").replace(f"{ESC}0m", "") == plain  # the words never change


def test_a_terminal_gets_colour_by_default():
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "trainproof", "epoch", NAN, "-q"], stdout=follower,
                              stderr=subprocess.PIPE, timeout=120, env={**BASE, "PYTHONPATH": str(ROOT / "src")})
        os.close(follower)
        out = read_terminal(leader)
    finally:
        os.close(leader)
    assert proc.returncode == 1
    assert out.decode().startswith(f"{ESC}31;1mFAIL{ESC}0m")
