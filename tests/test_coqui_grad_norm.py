"""Coqui's gradient norm as its trainer logs it (coqui-tts-trainer 0.4.0, real runs):
with grad_clip 0 the norm is never computed and every step logs a bare `grad_norm: 0.0`
(tests/fixtures/coqui/grad_clip_zero, made by scripts/fixtures/make_coqui_fixtures.py);
a computed norm is logged as `tensor(...)` (evidence/coqui)."""

from __future__ import annotations

from pathlib import Path

from trainproof.engine import judge_run
from trainproof.parsers import read_run

ROOT = Path(__file__).resolve().parents[1]


def test_a_norm_coqui_never_computed_is_not_read_as_zero_gradients():
    run = read_run(ROOT / "tests" / "fixtures" / "coqui" / "grad_clip_zero" / "trainer_0_log.txt")
    assert "grad_norm" not in run.series
    assert any("grad_clip 0" in n for n in run.notes)
    assert len(run.series["loss"]) == 12  # the loss is still read, every logged step
    report = judge_run(run)
    assert "TP-ZERO-GRAD" not in {f.rule_id for f in report.findings}
    assert report.verdict.name == "PASS"


def test_a_computed_norm_is_kept():
    run = read_run(ROOT / "evidence" / "coqui" / "best_saved" / "trainer_0_log.txt")
    g = run.series["grad_norm"].values
    assert len(g) > 0 and (g > 0).all()
    assert not any("grad_clip 0" in n for n in run.notes)
