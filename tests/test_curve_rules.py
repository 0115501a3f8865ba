"""The curve-shape rules of issue #16 on the real runs in evidence/curve/ (made by
scripts/make_evidence_curve.py with torch 2.13.0 CPU): each fault run gets its rule, its
healthy twin gets nothing new, and the verdicts survive how the run was logged (thinned
x2 and x5, steps rescaled and offset). The read series are checked against the JSON
Lines the loop wrote. Healthy galleries, public runs and the corpus are swept by their
own tests (test_gallery*, test_public_runs, test_corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Level, Run, Series
from trainproof.parsers import read_run
from trainproof.rules import dataorder, recovery, scaler

ROOT = Path(__file__).resolve().parents[1]
CURVE = ROOT / "evidence" / "curve"
NEW = {"TP-LOSS-SCALE-COLLAPSE", "TP-SPIKE-UNRECOVERED", "TP-EPOCH-SAWTOOTH", "TP-STUCK-BATCH"}

# run -> (verdict, the rule IDs of its WARN/FAIL findings)
EXPECTED = {
    "amp_healthy": ("PASS", set()),
    "amp_scale_collapse": ("FAIL", {"TP-LOSS-SCALE-COLLAPSE"}),
    "spike_recovers": ("PASS", set()),
    "spike_unrecovered": ("WARN", {"TP-SPIKE-UNRECOVERED"}),
    "epochs_shuffled": ("PASS", set()),
    # the sorted order ends every epoch on its hardest batches: the end of the log sits far
    # above the floor, and TP-DIVERGE says so; the sawtooth says why
    "epochs_sorted": ("FAIL", {"TP-EPOCH-SAWTOOTH", "TP-DIVERGE"}),
    "batches_fresh": ("PASS", set()),
    # the same batch every step: the eval loss never beats its first evaluation either
    "stuck_batch": ("WARN", {"TP-STUCK-BATCH", "TP-EVAL-NEVER-BETTER"}),
}


def _run(name: str) -> Run:
    return read_run(CURVE / name / "metrics.jsonl")


def _ids(run: Run) -> tuple[str, set[str]]:
    rep = judge_run(run)
    return rep.verdict.value, {f.rule_id for f in rep.findings if f.level in (Level.WARN, Level.FAIL)}


def test_every_evidence_run_is_listed():
    assert {p.name for p in CURVE.iterdir() if p.is_dir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_evidence_verdict(name):
    assert _ids(_run(name)) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_series_read_are_what_the_loop_wrote(name):
    rows = [json.loads(line) for line in (CURVE / name / "metrics.jsonl").read_text().splitlines()]
    run = _run(name)
    for col in ("loss", "loss_scale", "epoch"):
        want = [(r["step"], r[col]) for r in rows if col in r]
        if not want:
            assert run.get(col) is None
            continue
        got = run.get(col)
        steps, values = zip(*want, strict=True)
        np.testing.assert_array_equal(got.steps, steps)
        np.testing.assert_array_equal(got.values, values)
    meta = json.loads((CURVE / name / "run_meta.json").read_text())
    assert meta["seed"] == 42 and meta["versions"]["torch"].startswith("2.13.0")


def _thin(k: int):
    def apply(run: Run) -> Run:
        keep = run.series["loss"].steps[k - 1::k]
        return _map(run, lambda s: Series(s.name, s.steps[np.isin(s.steps, keep)], s.values[np.isin(s.steps, keep)]))
    return apply


def _steps(scale: float, shift: float):
    return lambda run: _map(run, lambda s: Series(s.name, s.steps * scale + shift, s.values))


def _map(run: Run, fn) -> Run:
    return Run(run.path, run.format, {k: fn(s) for k, s in run.series.items()}, run.records, run.columns,
               run.notes, run.meta)


PERTURB = {"thin2": _thin(2), "thin5": _thin(5), "steps x10": _steps(10.0, 0.0), "steps +1000": _steps(1.0, 1000.0)}


# A 60-point log thinned five times keeps 12 points: fewer than a ten-point pre-spike
# baseline and a window after it (TP-SPIKE-UNRECOVERED's min_points), so it is not judged.
TOO_SHORT = {("spike_unrecovered", "thin5")}


@pytest.mark.parametrize("how", sorted(PERTURB))
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_new_rules_survive_how_the_run_was_logged(name, how):
    run = PERTURB[how](_run(name))
    rep = judge_run(run)
    ids = {f.rule_id for f in rep.findings if f.level in (Level.WARN, Level.FAIL)}
    want_verdict, want_ids = EXPECTED[name]
    if (name, how) in TOO_SHORT:
        assert "spike-recovery" in rep.skipped and not ids & NEW
        return
    assert ids & NEW == want_ids & NEW, (name, how, ids)
    if want_ids <= NEW and how != "thin5":  # the older rules' verdicts on a thinned log are theirs
        assert rep.verdict.value == want_verdict


# ---------------------------------------------------------------- edges of each rule

def _series(**cols) -> Run:
    n = len(next(iter(cols.values())))
    steps = np.arange(1, n + 1, dtype=float) * 10
    series = {k: Series(k, steps, np.asarray(v, dtype=float)) for k, v in cols.items()}
    return Run("x.jsonl", "example", series, n, tuple(series))


def test_a_constant_scale_of_one_is_bf16_not_a_collapse():
    run = _series(loss=[3.0 - 0.01 * i for i in range(100)], loss_scale=[1.0] * 100)
    assert scaler.loss_scale_collapse(run) == []


def test_a_scale_that_dipped_to_one_and_regrew_is_not_a_collapse():
    scale = [65536.0] * 40 + [1.0] * 20 + [2.0 ** min(i, 16) for i in range(1, 41)]
    run = _series(loss=[3.0 - 0.01 * i for i in range(100)], loss_scale=scale)
    assert scaler.loss_scale_collapse(run) == []


def test_megatron_loss_scale_is_read(tmp_path):
    lines = [f" iteration {i * 10:8d}/    2000 | consumed samples: {i * 320:12d} | elapsed time per iteration "
             f"(ms): 850.0 | learning rate: 3.000000E-04 | global batch size:    32 | lm loss: "
             f"{2.0 + 1.0 / i:E} | loss scale: {max(65536.0 / 4 ** i, 1.0):.1f} | grad norm: 1.300 | number "
             f"of skipped iterations:   0 | number of nan iterations:   0 |" for i in range(1, 41)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    run = read_run(log)
    assert run.get("loss_scale").values[0] == 16384.0
    [f] = scaler.loss_scale_collapse(run)
    assert f.rule_id == "TP-LOSS-SCALE-COLLAPSE" and f.values["since"] == 80.0


def test_a_spike_near_the_end_waits_for_its_window():
    loss = [2.0 * 0.99 ** i for i in range(40)] + [8.0, 5.0, 4.0]
    assert recovery.spike_recovery(_series(loss=loss)) == []


def test_a_loss_rounded_near_zero_is_not_judged_for_scatter():
    loss = [round(1.6 * 0.7 ** i + 2e-4, 4) for i in range(60)]
    got = dataorder.stuck_batch(_series(loss=loss))
    assert not isinstance(got, list) and "decimals" in got.detail


def test_odd_epoch_values_are_not_read():
    loss = [3.0 * 0.99 ** i for i in range(60)]
    for epoch in ([1e30] * 60, [float(i) for i in range(60)]):
        got = dataorder.epoch_sawtooth(_series(loss=loss, epoch=epoch))
        assert not isinstance(got, list)


def test_the_epoch_from_trainer_state_meta():
    per, epochs = 10, 5
    loss = [1.0 + 2.0 * (k % per) / (per - 1) for k in range(per * epochs)]
    run = _series(loss=loss)
    run = Run(run.path, run.format, run.series, run.records, run.columns, run.notes,
              {"num_train_epochs": epochs, "max_steps": per * epochs * 10})
    [f] = dataorder.epoch_sawtooth(run)
    assert "num_train_epochs" in f.evidence


def test_a_zero_loss_at_a_nonfinite_grad_norm_is_already_tp_nan_grad():
    """Issue #16's `loss == 0.0` with a non-finite gradient norm (HF's NaN filter logging 0.0
    for the skipped step) is TP-NAN-GRAD's: its reaction test reads the 0.0 as non-finite."""
    loss, grad = [2.0 - 0.02 * i for i in range(30)], [1.0] * 30
    loss[20], grad[20] = 0.0, float("nan")
    rep = judge_run(_series(loss=loss, grad_norm=grad))
    assert "TP-NAN-GRAD" in {f.rule_id for f in rep.findings if f.level is Level.FAIL}


def test_fairseq_loss_scale_is_read():
    run = read_run(ROOT / "tests" / "fixtures" / "textlog" / "synthetic" / "SYNTHETIC_fairseq_json.log")
    scale = run.get("loss_scale")
    assert scale is not None and scale.values[0] == 128.0
    assert scaler.loss_scale_collapse(run) == []
