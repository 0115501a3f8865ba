"""Replays every committed regression input (tests/hostile/regressions/) through the
CLI in-process: exit 0, 1 or 2, one line on stderr at most, never an internal error."""

from __future__ import annotations

import pytest

from tests.hostile.gen_regressions import KNOWN, REGRESSIONS
from tests.hostile.spec import CHECKPOINT
from tests.hostile.test_campaign import KNOWN as XFAIL

pytestmark = pytest.mark.filterwarnings("ignore")


def test_every_regression_file_is_listed():
    on_disk = {p.name for p in REGRESSIONS.iterdir() if p.name != "README.md"}
    assert on_disk == set(KNOWN)


def _param(name: str):
    reason = XFAIL.get(f"regression/{name}")
    return pytest.param(name, id=name, marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [])


@pytest.mark.parametrize("name", [_param(n) for n in KNOWN])
def test_regression_input_is_answered_cleanly(run_cli, tmp_path, name):
    family, expect, _ = KNOWN[name]
    path = REGRESSIONS / name
    argv = ["env", "--checkpoint", path, "--output-dir", tmp_path] if family == CHECKPOINT else ["epoch", path]
    code, out, err = run_cli(*argv)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "internal error" not in err and "Traceback" not in err, err
    assert len(lines) <= 1, lines
    assert code == 2 if expect == "unreadable" else code in (1, 2)
