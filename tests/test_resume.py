"""Resumed and restarted logs keep log order (parsers/__init__._ordered) and are reported
as resume boundaries (TP-RESUMED, INFO), never sorted into a false divergence. Fixtures:
real HF Trainer runs (scripts/fixtures/make_resume_fixtures.py; versions in expected.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Level
from trainproof.parsers import read_run

FIX = Path(__file__).parent / "fixtures" / "resume"
EXPECTED = json.loads((FIX / "expected.json").read_text())


def _logged(name: str) -> dict[float, float]:
    return {float(k): v for k, v in EXPECTED[name].items()}


def test_a_resumed_hf_run_reads_as_the_run_that_happened():
    """Crashed at step 50 after checkpoint-40, resumed from it: steps 42 to 48 are written
    twice (identically: HF's resume replays the same batches); the later write stands and the
    curve is the one training followed, which passes."""
    run = read_run(FIX / "resumed.jsonl")
    s = run.series["loss"]
    first, resumed = _logged("first_run"), _logged("resumed_run")
    want = {**{k: v for k, v in first.items() if k < 42}, **resumed}
    np.testing.assert_array_equal(s.steps, sorted(want))
    np.testing.assert_allclose(s.values, [want[k] for k in sorted(want)])
    assert run.meta["resumes"]["loss"] == [{"kind": "resume", "from": 48.0, "to": 42.0, "replaced": 4}]
    rep = judge_run(run)
    resumed_f = [f for f in rep.findings if f.rule_id == "TP-RESUMED"]
    assert len(resumed_f) == 1 and resumed_f[0].level is Level.INFO
    assert "step 48 -> 42, resumed: 4 earlier point(s) replaced" in resumed_f[0].evidence
    assert rep.verdict.value == "PASS"


def test_a_restarted_counter_is_continued_in_log_order():
    """A new Trainer from the checkpoint's weights counts from 0 again: its points follow
    the first run's in the order they were written, never interleaved by step."""
    run = read_run(FIX / "restarted.jsonl")
    s = run.series["loss"]
    first, again = _logged("first_run"), _logged("restarted_run")
    np.testing.assert_allclose(s.values, [first[k] for k in sorted(first)] + [again[k] for k in sorted(again)])
    assert np.all(np.diff(s.steps) > 0) and s.steps[len(first)] == 50.0  # 48, then 2 -> 50
    assert run.meta["resumes"]["loss"] == [{"kind": "restart", "from": 48.0, "to": 2.0, "replaced": 0}]
    rep = judge_run(run)
    assert any(f.rule_id == "TP-RESUMED" and "counter restarted" in f.evidence for f in rep.findings)
    # Read in log order, the curve shows no divergence; what it does show - the schedule
    # warmed up again and the loop began again on trained weights - is the resume
    # integrity rules' (tests/test_resume_integrity.py).
    judged = {f.rule_id for f in rep.findings if f.level is not Level.INFO}
    assert judged == {"TP-RESUME-WARMUP", "TP-RESUME-REPLAY"}


def test_sorted_by_step_the_restarted_run_would_fail():
    """What the reader did before: sorted by step with the later write winning at a
    repeated step, the restarted run's steps 2-40 replace the first run's, and its steps
    42-48 follow them - the curve ends on the first run's higher losses, a false rise (read
    as no clear progress: TP-NO-PROGRESS; TP-DEAD-RUN before its resolve_se needed two
    standard errors)."""
    old = {**_logged("first_run"), **_logged("restarted_run")}
    rep = judge_run(run_from({"loss": [old[k] for k in sorted(old)]}))
    assert rep.verdict.value == "WARN" and {f.rule_id for f in rep.findings} >= {"TP-NO-PROGRESS"}
    in_order = judge_run(read_run(FIX / "restarted.jsonl"))
    assert not {f.rule_id for f in rep.findings} & {f.rule_id for f in in_order.findings}


def test_a_healthy_log_with_a_restarted_counter_passes():
    """A healthy run logged 1..40, then a restart whose counter starts again at 1 and
    keeps improving: the loss carried on, so it is one run (not a new one appended,
    rules/appended.py): one curve in log order, judged whole, with the boundary reported."""
    first = list(np.linspace(4.0, 2.0, 40))
    second = list(np.linspace(1.95, 1.5, 40))
    steps = list(range(1, 41)) * 2
    rep = judge_run(run_from({"loss": first + second, "steps": steps}))
    ids = {f.rule_id for f in rep.findings if f.level is Level.FAIL}
    assert rep.verdict.value == "PASS" and not ids
    assert "TP-RESUMED" in {f.rule_id for f in rep.findings}
    assert "TP-APPENDED-RUNS" not in {f.rule_id for f in rep.findings}


@pytest.mark.parametrize("steps,want,kinds,runs", [
    ([1, 2, 3, 2, 3, 4], [1, 2, 3, 4], ["resume"], 1),       # overlap: later write wins
    ([1, 2, 3, 3, 4], [1, 2, 3, 4], ["resume"], 1),          # a step repeated once
    ([5, 6, 7, 0, 1], [0, 1], [], 2),                        # counter back below the start: a new run
    ([-3, -2, -1, -3, -2], [-3, -2], [], 2),                 # negative steps keep log order
    ([5, 6, 7, 0], [5, 6, 7, 8], ["restart"], 1),            # one point is no run of its own: joined
])
def test_boundaries(steps, want, kinds, runs):
    """The parser keeps log order; a counter back at the log's origin starts a new run,
    of which the last is kept (rules/appended.py)."""
    run = run_from({"loss": [float(i) + 1 for i in range(len(steps))], "steps": steps})
    assert run.series["loss"].steps.tolist() == want
    assert [b["kind"] for b in run.meta.get("resumes", {}).get("loss", [])] == kinds
    assert run.meta.get("appended", {"runs": 1})["runs"] == runs


def test_every_step_repeated_stays_linear():
    """Two writers interleaved (every step twice): one boundary per point, handled in one pass."""
    n = 20_000
    steps = np.repeat(np.arange(n, dtype=float), 2)
    run = run_from({"loss": np.linspace(3, 1, 2 * n).tolist(), "steps": steps.tolist()})
    assert len(run.series["loss"]) == n
    assert run.meta["resume_counts"]["loss"] == n and len(run.meta["resumes"]["loss"]) == 40  # first, last 20
    rep = judge_run(run)
    info = next(f for f in rep.findings if f.rule_id == "TP-RESUMED")
    assert info.values["count"] == n and f"and {n - 3} more" in info.evidence
