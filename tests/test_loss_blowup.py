"""TP-LOSS-BLOWUP (rules/blowup.py): a logged training loss orders of magnitude above both the
points just before it and the run's starting level, even when the loss comes back.

The case that raised it is public run fresh9/catniplab (Sacred metrics.json, labelled broken by
its reader before any tool ran): single points of 5.3e9, 6.8e7, 4.6e18 among a loss near 50,
each followed by a return, then validation accuracy collapses. The real-library fixtures that
blow up in fp32 fire too (Sacred 0.8.7 runs/2 and torch.utils.tensorboard torch_diverging, both
torch 2.13 CPU loops at a learning rate that overflows; evidence/{pytorch,lightning}/diverging's
lr x100 burst). Every other real log stays silent, the PASS-labelled public runs among them."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.parsers import read_run
from trainproof.rules.blowup import BLOWUP, loss_blowup

from .conftest import ROOT
from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS
from .test_public_runs import DOCS, public_runs

RULE = "TP-LOSS-BLOWUP"
CATNIPLAB = "catniplab__ml-music-analysis__models__6__metrics"
FIX = ROOT / "tests" / "fixtures"
# the real logs it fires on: each blows up in fp32 and is labelled or made as diverging
FIRES_LOCAL = {str(FIX / "sacred/runs/2/metrics.json"), str(FIX / "dvclive/diverging"),
               str(FIX / "tfevents/torch_diverging"), str(FIX / "tfevents/torch_diverging.jsonl"),
               str(ROOT / "evidence/pytorch/diverging/metrics.jsonl"),
               str(ROOT / "evidence/lightning/diverging/tb"),
               str(ROOT / "evidence/lightning/diverging/csv/metrics.csv")}


def _run(loss: list[float] | np.ndarray, **extra: list[float]) -> Run:
    steps = np.arange(1.0, len(loss) + 1.0) * 10
    series = {"loss": Series("loss", steps, np.asarray(loss, dtype=np.float64))}
    for name, values in extra.items():
        series[name] = Series(name, steps[: len(values)], np.asarray(values, dtype=np.float64))
    return Run("generated.jsonl", "example", series, steps.size, tuple(series))


def _findings(run: Run) -> list:
    out = loss_blowup(run)
    return [] if isinstance(out, Skip) else list(out)


def _catniplab() -> Run:
    (doc,) = [d for d in DOCS if d["id"] == CATNIPLAB]
    with tempfile.TemporaryDirectory() as tmp:
        return read_run(public_runs.rebuild(doc, Path(tmp)))


def test_fires_on_the_public_run_that_raised_it() -> None:
    run = _catniplab()
    (f,) = _findings(run)
    v = f.values
    assert v["step"] == 7 and v["value"] == pytest.approx(5.3277e9, rel=1e-4)
    assert v["pre"] == pytest.approx(57.2, abs=0.05) and v["count"] == 5
    assert v["peak"] == pytest.approx(4.616e18, rel=1e-3) and v["peak_step"] == 21
    assert judge_run(run).verdict.value == "FAIL"  # it passed before this rule


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_the_public_run_fires_however_it_was_logged(name: str) -> None:
    """Five blown-up points: whichever half a thinning keeps holds some of them."""
    assert _findings(PERTURBATIONS[name](_catniplab()))


def test_fires_on_real_fp32_blowups_and_nowhere_else_locally() -> None:
    assert len(local()) >= 100
    assert fires_on(loss_blowup, local()) == FIRES_LOCAL


def test_silent_on_every_in_sample_public_run() -> None:
    assert len(public()) >= 200
    assert fires_on(loss_blowup, public()) == set()


def test_the_real_sacred_blowup_cites_where_it_left_its_level() -> None:
    """Sacred runs/2: 9.7, 11.2, 14.2, 783, 5.3e7, 1.3e22, inf - the first point 100x both its
    last five (median 14.2) and its start is the 1.3e22; TP-NAN fails the inf beside it."""
    run = read_run(FIX / "sacred/runs/2/metrics.json")
    (f,) = _findings(run)
    assert f.values["step"] == 5 and f.values["pre"] == pytest.approx(14.1696, rel=1e-4)
    assert {"TP-LOSS-BLOWUP", "TP-NAN"} <= {g.rule_id for g in judge_run(run).findings}


# ---------------------------------------------------------------- generated curves

_NEAR_50 = [62.0, 61.0, 60.0, 58.5, 57.0, 55.0, 53.0, 51.0, 49.5, 48.0, 46.0, 44.0, 43.0, 42.0]


def test_one_point_two_orders_up_fires_and_a_bad_batch_does_not() -> None:
    assert _findings(_run([*_NEAR_50[:8], 5.3e9, *_NEAR_50[8:]]))
    assert not _findings(_run([*_NEAR_50[:8], 60 * 9.9, *_NEAR_50[8:]]))  # 9.9x: a hard batch
    assert not _findings(_run([*_NEAR_50[:8], 49 * 99, *_NEAR_50[8:]]))  # just under 100x


@pytest.mark.parametrize("seed", range(5))
def test_a_from_scratch_curve_falling_1000x_never_fires(seed: int) -> None:
    """ln V at the start, 1000x lower at the end, 20 % noise per point: far below the global
    median's 100x at the start, never 100x its own last five points."""
    rng = np.random.default_rng(seed)
    curve = np.geomspace(10.8, 0.0108, 2000) * np.exp(rng.normal(0, 0.2, 2000))
    assert curve[0] / curve[-1] > 500
    assert not _findings(_run(curve))


def test_near_zero_a_hard_batch_below_the_start_is_not_a_blowup() -> None:
    """A classifier at 3e-4 meets one hard batch at 0.34 (1000x its recent level, as public
    run fresh4/priyanshisharma22 does): no worse than the untrained model, so silent."""
    loss = [0.69, 0.6, 0.45, 0.3, 0.2, 0.1, 0.03, 0.01, 0.003, 0.001, 3e-4, 3e-4, 2.9e-4, 0.34, 3e-4, 2.8e-4]
    assert not _findings(_run(loss))


@pytest.mark.parametrize("k", [1e-6, 1e-3, 1.0, 7.0, 1e4, 1e9])
def test_units_do_not_change_a_ratio(k: float) -> None:
    """Regression MSE in raw units, or the loss in bits: every test is a ratio of the log's own
    levels, so scaling the whole log keeps the same finding, value for value."""
    base = _findings(_run([*_NEAR_50[:8], 5.3e9, *_NEAR_50[8:]]))[0].values
    got = _findings(_run(np.asarray([*_NEAR_50[:8], 5.3e9, *_NEAR_50[8:]]) * k))[0].values
    assert got["ratio"] == pytest.approx(base["ratio"]) and got["step"] == base["step"]


def test_halving_the_log_keeps_or_loses_the_single_point() -> None:
    """One blown-up point is one logged step: the half that keeps it fires at the same step, the
    half without it is silent (a logging interval twice as long never saw it)."""
    loss = np.asarray([*_NEAR_50[:12], 5.3e9, *_NEAR_50[12:], 41.0, 40.0, 39.0])
    run = _run(loss)  # the blown-up point is the 13th: both halves have five points before it
    kept = [_findings(PERTURBATIONS[n](run)) for n in ("halve", "halve_drop_first")]
    assert sorted(bool(f) for f in kept) == [False, True]
    assert next(f for f in kept if f)[0].values["step"] == 130


def test_skips_a_surrogate_loss() -> None:
    """A policy-gradient loss (a reward logged) and a loss that is not positive are not ratios."""
    out = loss_blowup(_run([*_NEAR_50[:8], 5.3e9, *_NEAR_50[8:]], reward=[0.1] * 10))
    assert isinstance(out, Skip) and out.kind == SkipKind.COVERED
    out = loss_blowup(_run([0.1, -0.2, 0.05, 0.0, 0.3, 0.2, 1e6, 0.1]))
    assert isinstance(out, Skip) and out.kind == SkipKind.DEGENERATE


def test_the_first_points_are_not_judged() -> None:
    """No full baseline before the sixth point; the start level is the first five's median."""
    assert BLOWUP.t("baseline") == BLOWUP.t("start_points") == 5
    assert not _findings(_run([50.0, 49.0, 5e9, 48.0, 47.0, 46.0, 45.0, 44.0]))


# ---------------------------------------------------------------- the log's own scatter

EDOCAMPIONE = "edocampione__4yp__lightning_logs-version_9-metrics"


@pytest.mark.parametrize("seed", range(5))
def test_a_heavy_tailed_per_batch_loss_needs_more_than_100x(seed: int) -> None:
    """A per-batch MSE whose points differ by a factor of ~7 from one to the next (log noise
    ~2, public run fresh18/edocampione): one batch at 1000x its start is within what its own
    batches do, a few widths of its noise; the same batch on a log that scatters by 20 %
    stands 30+ widths out and fires."""
    rng = np.random.default_rng(seed)
    wild = 0.002 * np.exp(rng.normal(0.0, 2.0, 400))
    wild[200] = 1000 * float(np.median(wild[:5]))
    assert not _findings(_run(wild))
    calm = 0.002 * np.exp(rng.normal(0.0, 0.2, 400))
    calm[200] = 1000 * float(np.median(calm[:5]))
    (f,) = _findings(_run(calm))
    assert f.values["noise_widths"] > 20 and f.values["limit_noise_widths"] == 6


def test_the_public_heavy_tailed_run_is_silent_and_catniplab_far_out() -> None:
    (doc,) = [d for d in DOCS if d["id"] == EDOCAMPIONE]
    with tempfile.TemporaryDirectory() as tmp:
        run = read_run(public_runs.rebuild(doc, Path(tmp)))
    assert not _findings(run)
    (f,) = _findings(_catniplab())
    assert f.values["noise_widths"] > 100
