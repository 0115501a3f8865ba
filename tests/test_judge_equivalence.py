"""The vectorised judging helpers of #14 against straightforward reference
implementations kept here: same output, value for value (NaN and the sign of zero
included), on seeded generated curves with ties, repeats, NaN/Inf, zeros of both signs
and unsorted inputs. No timing: speed is measured by bench/, never by tests."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from trainproof import curves, schedule, stats
from trainproof.curves import thin
from trainproof.engine import judge_run
from trainproof.model import Run, Series
from trainproof.parsers import build_run, read_run
from trainproof.parsers.base import RawLog
from trainproof.rules import frozen, gradients, recovery, rise
from trainproof.rules import run as run_rules
from trainproof.rules.base import overridden_thresholds
from trainproof.schedule import read_schedule

ROOT = Path(__file__).resolve().parents[1]
GALLERIES = sorted(ROOT.glob("examples/gallery*/**/trainer_state.json"))
PUBLIC = sorted(ROOT.glob("public_runs/runs/*.json"))


def _same(a: object, b: object) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a == b) & (np.signbit(a) == np.signbit(b))
                                              | (np.isnan(a) & np.isnan(b))))


def _thin_reference(steps, values, buckets, keep=()):
    """curves.thin as it was: one stable sort by (bucket, value)."""
    ok = np.isfinite(values) & np.isfinite(steps)
    steps, values = steps[ok], values[ok]
    n = int(steps.size)
    if n <= 2 * buckets:
        return tuple(steps.tolist()), tuple(values.tolist())
    lo, hi = float(steps[0]), float(steps[-1])
    col = np.minimum(((steps - lo) / ((hi - lo) or 1.0) * buckets).astype(np.int64), buckets - 1)
    order = np.lexsort((values, col))
    sorted_col = col[order]
    first = np.flatnonzero(np.r_[True, sorted_col[1:] != sorted_col[:-1]])
    last = np.r_[first[1:] - 1, n - 1]
    cited = np.searchsorted(steps, np.asarray(keep, dtype=float), side="right") - 1
    idx = np.unique(np.concatenate([order[first], order[last], [0, n - 1], cited[cited >= 0]]).astype(np.int64))
    return tuple(steps[idx].tolist()), tuple(values[idx].tolist())


def _curve(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    kind = rng.integers(5)
    if kind == 0:
        values = rng.standard_normal(n)
    elif kind == 1:
        values = rng.integers(-3, 4, n).astype(float)  # many ties
    elif kind == 2:
        values = np.round(rng.random(n), 2) * rng.choice([-1.0, 1.0], n)
        values[rng.random(n) < 0.1] = 0.0
        values[rng.random(n) < 0.1] = -0.0  # equal to 0.0, other sign
    elif kind == 3:
        values = np.exp(-np.arange(n) / max(1, n / 5)) + 0.01 * rng.standard_normal(n)
    else:
        values = np.full(n, 1.5)
    bad = rng.random(n) < 0.02
    values[bad] = rng.choice([np.nan, np.inf, -np.inf], int(bad.sum()))
    gaps = rng.choice([1.0, 1.0, 2.0, 7.0], n) if rng.random() < 0.5 else np.ones(n)
    steps = np.cumsum(gaps) + rng.integers(0, 100)
    return steps, values


@pytest.mark.parametrize("seed", range(40))
def test_thin_equals_the_sorting_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 5, 50, 999, 5_000, 40_000]))
    steps, values = _curve(rng, n)
    buckets = int(rng.choice([1, 3, 100, 720, 5_000]))
    keep = sorted(rng.choice(steps, size=min(n, 4), replace=False).tolist()) if rng.random() < 0.5 else []
    got, ref = thin(steps, values, buckets, keep), _thin_reference(steps, values, buckets, keep)
    assert _same(got[0], ref[0]) and _same(got[1], ref[1])


def test_thin_of_unsorted_steps_takes_the_sorting_path():
    rng = np.random.default_rng(7)
    steps, values = rng.random(3_000) * 100, rng.integers(0, 5, 3_000).astype(float)
    got, ref = thin(steps, values, 50), _thin_reference(steps, values, 50)
    assert _same(got[0], ref[0]) and _same(got[1], ref[1])


def _spikes_reference(run, f):
    """gradients._spikes as it was: a trailing median at every point."""
    base, count = stats.trailing_median(f.values, int(gradients._BASELINE.value))
    edges = [float(f.steps[0]), read_schedule(run).warmup_end, gradients.initial_drop_end(run)]
    start = max(e for e in edges if e is not None)
    spk = gradients._SPIKE
    spike = ((count >= spk["min_baseline"].value) & (f.steps > start)
             & (f.values > spk["ratio"].value * base) & (f.values > spk["floor"].value))
    return np.flatnonzero(spike), base, start


def _recovery_spikes_reference(run, s):
    """recovery._spikes as it was: a trailing median at every point, a loop over every point."""
    r = recovery.SPIKE_UNRECOVERED
    v = np.log(s.values)
    n = v.size
    sigma = stats.log_noise(s.values)
    if sigma <= 0:
        return []
    base, count = stats.trailing_median(v, int(r.t("baseline")))
    edges = [float(s.steps[0]), read_schedule(run).warmup_end, gradients.initial_drop_end(run)]
    start = max(e for e in edges if e is not None)
    w = max(int(r.t("min_window")), int(n * r.t("window")))
    z = (v - base) / sigma
    hot = (count >= r.t("baseline")) & (s.steps > start) & (z > r.t("spike"))
    k = int(r.t("level_points"))
    se = stats.MEDIAN_SE * sigma * np.sqrt(1.0 / r.t("baseline") + 1.0 / k)
    out = []
    i = 0
    while i < n:
        if not hot[i] or i + w >= n:
            i += 1
            continue
        after = v[i + 1: i + 1 + w]
        best = float(np.min(np.median(np.lib.stride_tricks.sliding_window_view(after, k), axis=1)))
        out.append(recovery.Spike(i, float(z[i]), float(base[i]), i + w, best, (best - float(base[i])) / se))
        i += w + 1
    return out


def _schedule_reference(run):
    """schedule._read as it was: the finite LR copied, its moves computed by each reader."""
    planned = schedule.planned_steps(run.meta)
    span = run.step_span
    last = float(span[1]) if span is not None else None
    lr = run.get("lr")
    if lr is None:
        return schedule.Schedule(None, None, (), (), planned, last)
    ok = np.isfinite(lr.values)
    steps, values = lr.steps[ok], lr.values[ok]
    if values.size == 0 or not np.any(values > 0):
        return schedule.Schedule(None, None, (), (), planned, last)
    warm_i, rising = schedule._warmup(values)
    prefix_end = warm_i if warm_i is not None else 0
    return schedule.Schedule(float(steps[warm_i]) if warm_i is not None else None, float(values.max()),
                             tuple(float(steps[i]) for i in schedule._restarts(values, prefix_end)),
                             tuple(float(steps[i]) for i in schedule._zero_touches(values)),
                             planned, last, rising)


@contextlib.contextmanager
def _reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every function #14 replaced, put back as it was, for the length of the block."""
    schedule._last = None
    with monkeypatch.context() as m:
        m.setattr(curves, "thin", _thin_reference)
        m.setattr(gradients, "_spikes", _spikes_reference)
        m.setattr(recovery, "_spikes", _recovery_spikes_reference)
        m.setattr(schedule, "_read", _schedule_reference)
        m.setattr(schedule, "_last", None)  # the schedule remembered from the run judged before
        for module in (run_rules, rise, gradients, frozen, recovery):  # memo.last_series: measured again
            for name in ("loss_blocks", "loss_noise", "loss_median", "_divergence", "measure_rise",
                         "first_point_is_full", "_drop_end"):
                fn = getattr(module, name, None)
                if fn is not None and hasattr(fn, "__wrapped__"):
                    m.setattr(module, name, fn.__wrapped__)
        yield


def _findings(rep) -> list[tuple]:
    return [(f.rule_id, f.level, f.message, f.location, repr(sorted(f.values.items()))) for f in rep.findings]


def _same_report(a, b) -> None:
    assert _findings(a) == _findings(b)
    assert a.ran == b.ran and a.skipped == b.skipped
    assert a.curves.keys() == b.curves.keys()
    for k in a.curves:
        assert _same(a.curves[k][0], b.curves[k][0]) and _same(a.curves[k][1], b.curves[k][1])


def _generated_run(seed: int) -> Run:
    """A loss, LR and grad-norm log with planted spikes (single, bursts, with and without a
    loss reaction), ties, repeats and the odd NaN/Inf."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([8, 30, 400, 3_000, 20_000]))
    steps = np.arange(1, n + 1, dtype=float) * rng.choice([1, 5])
    loss = 3 * np.exp(-np.arange(n) / max(1.0, n / rng.uniform(2, 20))) + 0.5 + 0.03 * rng.standard_normal(n)
    grad = np.abs(rng.normal(rng.choice([0.01, 1.0, 3.0]), 0.3, n))
    if rng.random() < 0.3:
        grad = np.round(grad, 1)  # ties in the windows
    for i in rng.integers(0, n, max(1, n // 200)):
        width = int(rng.choice([1, 1, 3, 5]))
        grad[i: i + width] *= rng.choice([5.0, 12.0, 40.0, 300.0])
        if rng.random() < 0.5:
            loss[i + 1: i + 4] *= rng.choice([1.01, 2.0])
    if rng.random() < 0.3:
        grad[rng.integers(0, n, 3)] = rng.choice([np.nan, np.inf], 3)
    warm = int(n * rng.uniform(0, 0.2))
    lr = np.r_[np.linspace(1e-6, 1e-4, warm), np.linspace(1e-4, 1e-6, n - warm)] if warm else np.full(n, 1e-4)
    if rng.random() < 0.3:
        lr[rng.integers(0, n, 2)] = np.nan
    if rng.random() < 0.3:  # cosine with restarts
        lr = 1e-4 * (0.5 + 0.5 * np.cos(np.linspace(0, 6 * np.pi, n)))
    raw = RawLog({"loss": (steps, loss), "grad_norm": (steps, grad), "learning_rate": (steps, lr)}, n,
                 meta={"max_steps": float(steps[-1]) * rng.choice([1.0, 1.5])}, step_column="step")
    return build_run(f"gen{seed}", "python", raw, {})


@pytest.mark.parametrize("seed", range(30))
def test_spikes_equal_the_reference_on_generated_runs(seed, monkeypatch):
    run = _generated_run(seed)
    f = gradients.grad_norms(run, 1)
    if not isinstance(f, Series):
        pytest.skip("no finite grad_norm")
    idx, base, start = gradients._spikes(run, f)
    ridx, rbase, rstart = _spikes_reference(run, f)
    assert start == rstart and np.array_equal(idx, ridx) and _same(base[idx], rbase[ridx])
    new = judge_run(run)
    with _reference(monkeypatch):
        old = judge_run(run)
    _same_report(new, old)


@pytest.mark.parametrize("seed", range(40))
def test_recovery_spikes_equal_the_reference_on_generated_runs(seed, monkeypatch):
    """TP-SPIKE-UNRECOVERED's spikes (trailing medians at candidates only, #14) against the
    loop over every point, on the generated runs and on ones with a loss that steps up to
    a plateau after a spike (recovered or not, several spikes, ties, spikes near the end)."""
    rng = np.random.default_rng(1000 + seed)
    run = _generated_run(seed)
    if seed % 2:
        n = int(rng.choice([40, 400, 5_000, 30_000]))
        loss = 2 + 0.02 * rng.standard_normal(n)
        if seed % 4 == 1:
            loss = np.round(loss, 2)  # ties in the baselines
        for i in rng.integers(10, n, int(rng.integers(1, 6))):
            # near the bar of 8 noise units (~1.1x here) as well as far above it
            loss[i] *= rng.uniform(1.05, 1.3) if rng.random() < 0.6 else rng.choice([3.0, 10.0])
            if rng.random() < 0.5:
                loss[i + 1:] *= rng.choice([1.0, 1.02, 1.3])  # a new plateau after it
        steps = np.arange(1, n + 1, dtype=float)
        raw = RawLog({"loss": (steps, loss)}, n, step_column="step")
        run = build_run(f"plateau{seed}", "python", raw, {})
    s = gradients.finite_loss(run, int(recovery.SPIKE_UNRECOVERED.t("min_points")))
    if not isinstance(s, Series) or s.values.min() <= 0:
        pytest.skip("no positive finite loss")
    got, want = recovery._spikes(run, s), _recovery_spikes_reference(run, s)
    assert got == want
    new = judge_run(run)
    with _reference(monkeypatch):
        old = judge_run(run)
    _same_report(new, old)


def _public_runs():
    """scripts/public_runs.py, which rebuilds a corpus run's log as its writer wrote it."""
    if "public_runs" not in sys.modules:
        spec = importlib.util.spec_from_file_location("public_runs", ROOT / "scripts" / "public_runs.py")
        assert spec is not None and spec.loader is not None
        sys.modules["public_runs"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["public_runs"])
    return sys.modules["public_runs"]


@pytest.mark.parametrize("path", GALLERIES + PUBLIC, ids=lambda p: p.parent.parent.name + "/" + p.parent.name
                         if p.name == "trainer_state.json" else p.stem)
def test_reports_equal_the_reference_on_the_galleries(path, monkeypatch, tmp_path):
    if path.parent.name == "runs":  # a public run: its series as JSON, rebuilt into its log
        path = _public_runs().rebuild(json.loads(path.read_text()), tmp_path)
    run = read_run(path)
    new = judge_run(run)
    with _reference(monkeypatch):
        old = judge_run(run)
    _same_report(new, old)


@pytest.mark.parametrize("seed", range(12))
def test_trailing_median_at_and_trailing_min_agree_with_trailing_median(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 9, 11, 500, 70_000]))  # 70,000 rows: more than one sorted chunk
    values = np.round(rng.standard_normal(n), int(rng.integers(0, 3)))
    values[rng.random(n) < 0.05] = np.nan
    values[rng.random(n) < 0.05] = -0.0
    window = int(rng.choice([1, 3, 10, 25]))
    med, count = stats.trailing_median(values, window)
    idx = np.sort(rng.choice(n, size=min(n, 2_000), replace=False))
    at, at_count = stats.trailing_median_at(values, window, idx)
    assert _same(at, med[idx]) and np.array_equal(at_count, count[idx])
    low = stats.trailing_min(values, window)
    assert np.all(low[count == 0] == np.inf)
    assert np.all(low[count > 0] <= med[count > 0])


def test_remembered_measurements_follow_the_thresholds_in_force():
    """The same Run judged under a configuration that moves TP-DIVERGE's limit, then
    without it: memo.last_series must not answer one with the other's measurement."""
    n = 2_000
    steps = np.arange(1, n + 1, dtype=float)
    loss = np.r_[np.linspace(3.0, 1.0, n // 2), np.linspace(1.0, 1.35, n // 2)]
    loss = loss * (1 + 0.01 * np.random.default_rng(3).standard_normal(n))
    run = build_run("m", "python", RawLog({"loss": (steps, loss)}, n, step_column="step"), {})
    ids = lambda rep: sorted({f.rule_id for f in rep.findings})  # noqa: E731
    plain = ids(judge_run(run))
    with overridden_thresholds({"TP-DIVERGE": {"ratio": 1.2, "min_block": 5.0}}):
        strict = ids(judge_run(run))
    assert ids(judge_run(run)) == plain and "TP-DIVERGE" in strict and "TP-DIVERGE" not in plain
