"""The progress rules read the schedule (issue #17): they wait for warm-up ("not checked
yet" skips the report lists, and TP-TOO-EARLY as INFO: never dead, never PASS by
silence), say how much of the planned run they saw, TP-DIVERGE needs a rise held after
its floor, and the eval loss is judged as a curve in its own right (TP-EVAL-DIVERGE).
Real logs where they exist (a Trainer run stopped inside warm-up, the galleries); the
issue's named cases as minimal series."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Level, Run, Series
from trainproof.parsers import read_run
from trainproof.rules.run import divergence_measure

ROOT = Path(__file__).resolve().parents[1]
IN_WARMUP = ROOT / "tests/fixtures/schedule/in_warmup/trainer_state.json"


def _run(meta: dict | None = None, **cols) -> Run:
    run = run_from(cols)
    return replace(run, meta={**run.meta, **(meta or {})})


def _ids(run: Run, *levels: Level) -> set[str]:
    levels = levels or (Level.FAIL, Level.WARN, Level.NOT_CHECKED, Level.INFO)
    return {f.rule_id for f in judge_run(run).findings if f.level in levels}


def _finding(run: Run, rule_id: str):
    return next(f for f in judge_run(run).findings if f.rule_id == rule_id)


# ---------------------------------------------------------------- warm-up: not checked yet

def test_a_real_run_stopped_inside_warm_up_is_not_checked_yet(run_cli):
    """transformers Trainer, 40 of 2,000 steps, LR still rising (make_schedule_fixtures.py)."""
    rep = judge_run(read_run(IN_WARMUP))
    assert {f.rule_id: f.level for f in rep.findings} == {"TP-TOO-EARLY": Level.INFO, "TP-PASS": Level.PASS}
    too_early = rep.findings[0]
    assert "still rising" in too_early.evidence and "2% of a planned 2,000 steps" in too_early.evidence
    for name in ("dead-run", "flat-loss", "rise", "divergence"):
        assert rep.skipped[name].startswith("not checked yet: ")
    code, out, _ = run_cli("epoch", IN_WARMUP, "--json")
    (report,) = json.loads(out)["reports"]
    assert code == 0 and "TP-DEAD-RUN" not in {f["id"] for f in report["findings"]}
    assert report["checks"]["skipped"]["dead-run"].startswith("not checked yet: the LR is still rising")


def _dpo(n: int, last_warmup: int | None) -> dict:
    """A DPO loss at ln 2 (tiny batch noise), logged every 10 steps; the LR rises linearly
    to 2e-7 at point `last_warmup` (None: still rising at the end)."""
    rng = np.random.default_rng(0)
    loss = (np.log(2.0) * np.exp(rng.normal(0, 0.002, n))).tolist()
    peak = n - 1 if last_warmup is None else last_warmup
    lr = [2e-7 * min(i + 1, peak + 1) / (peak + 1) for i in range(n)]
    return {"steps": [10.0 * (i + 1) for i in range(n)], "loss": loss, "lr": lr}


def test_the_issue_dpo_run_4_percent_done_in_warm_up_is_not_dead():
    run = _run({"max_steps": 5000}, **_dpo(20, None))
    assert _ids(run) == {"TP-TOO-EARLY"}
    assert "4% of a planned 5,000 steps" in _finding(run, "TP-TOO-EARLY").evidence


def test_too_little_of_the_plan_past_warm_up_waits():
    run = _run({"max_steps": 5000}, **_dpo(20, 9))  # warm-up ends at step 100, log at 200
    assert _ids(run) == {"TP-TOO-EARLY"}
    assert "2.0% of a planned 5,000 steps past warm-up" in _finding(run, "TP-TOO-EARLY").evidence


def test_the_same_flat_loss_past_warm_up_is_dead_and_says_how_much_it_saw():
    run = _run({"max_steps": 1000}, **_dpo(20, 9))  # 10 % of the plan past warm-up
    assert "TP-DEAD-RUN" in _ids(run) and "TP-TOO-EARLY" not in _ids(run)
    assert "judged to step 200: 20% of a planned 1,000 steps" in _finding(run, "TP-DEAD-RUN").evidence


def test_few_points_after_warm_up_wait_without_a_plan():
    data = _dpo(12, 8)  # 3 points after warm-up, no max_steps
    assert _ids(_run(None, **data)) == {"TP-TOO-EARLY"}


def test_a_log_without_lr_or_plan_is_judged_as_before():
    data = _dpo(20, None)
    del data["lr"]
    assert "TP-DEAD-RUN" in _ids(_run(None, **data))


def test_the_real_lr_zero_run_is_still_dead_and_says_it_saw_the_whole_plan():
    run = read_run(ROOT / "examples/gallery/lr_zero/trainer_state.json")
    assert "TP-DEAD-RUN" in _ids(run)
    assert "judged to step 200: 100% of a planned 200 steps" in _finding(run, "TP-DEAD-RUN").evidence


def test_a_run_whose_warm_up_is_as_long_as_the_run_is_not_judged_for_progress():
    # Finished (max_steps reached) with its loss flat at ln 2: TP-WARMUP-NEVER-ENDED, not early
    run = _run({"max_steps": 200}, **_dpo(20, None))
    assert _ids(run) == {"TP-WARMUP-NEVER-ENDED"}
    assert "step 200 of max_steps 200" in _finding(run, "TP-WARMUP-NEVER-ENDED").evidence
    skipped = judge_run(run).skipped  # the progress checks say why they did not judge
    assert "warm-up as long as the run" in str(skipped["dead-run"])


# ---------------------------------------------------------------- TP-DIVERGE: held after the floor

def _decay(n: int, sigma: float = 0.01, seed: int = 1) -> np.ndarray:
    t = np.arange(n, dtype=np.float64)
    rng = np.random.default_rng(seed)
    return (0.05 + 2.0 * np.exp(-t / (n / 8))) * np.exp(rng.normal(0, sigma, n))


def test_a_floor_97_percent_through_is_not_a_divergence():
    """The issue's false FAIL: the floor sits at the very end and the 'rise' after it is
    a couple of points (here +60 %, many noise units on a smooth log)."""
    loss = _decay(100)
    loss[-2:] *= 1.6
    run = _run(None, loss=loss.tolist())
    fires, m = divergence_measure(run.series["loss"])
    assert m["ratio"] > 1.5 and m["gap_se"] > 4  # the old test alone fired here
    assert not fires and m["blocks_after"] < 2
    assert "TP-DIVERGE" not in _ids(run)


def test_a_late_spike_after_a_long_plateau_is_not_held():
    t = np.arange(120, dtype=np.float64)
    loss = (0.05 + 2.0 * np.exp(-t / 5)) * np.exp(np.random.default_rng(1).normal(0, 0.01, 120))
    loss[60:] *= 1.0 + 0.0003 * np.arange(60)  # a plateau from half-way, drifting 2 % up
    loss[-3:] *= 2.5  # the last block only
    fires, m = divergence_measure(_run(None, loss=loss.tolist()).series["loss"])
    assert m["ratio"] > 1.5 and m["blocks_after"] >= 2 and m["held_se"] < 4 and not fires


def test_a_rise_held_after_the_floor_is_still_a_divergence():
    loss = _decay(120)
    loss[60:] *= 1.04 ** np.arange(60)  # from 50 % through, 4 % a point
    run = _run(None, loss=loss.tolist())
    assert "TP-DIVERGE" in _ids(run, Level.FAIL)
    f = _finding(run, "TP-DIVERGE")
    assert f.values["held_se"] > 4 and f.values["blocks_after"] >= 2


# ---------------------------------------------------------------- eval loss as a curve

def _whisper(eval_end: list[float] | None = None) -> dict:
    """The issue's Whisper fine-tune at 3e-3: train 1.24 -> 2.16 -> 1.79, eval 2.55 -> 3.1-4.5."""
    train = np.interp(np.arange(40), [0, 15, 39], [1.24, 2.16, 1.79]).tolist()
    ev = eval_end or [2.55, 2.7, 3.1, 3.6, 4.5, 3.9, 4.2, 4.0, 4.3, 4.1]
    return {"steps": [25.0 * (i + 1) for i in range(40)], "loss": train,
            "eval_loss": ev + [float("nan")] * (40 - len(ev))}


def test_lr_too_high_both_curves_worse_fails_on_eval():
    run = _run(None, **_whisper())
    ids = _ids(run, Level.FAIL, Level.WARN)
    assert "TP-EVAL-DIVERGE" in ids and "TP-OVERFIT" not in ids
    assert "worse than it started" in _finding(run, "TP-EVAL-DIVERGE").evidence


@pytest.mark.parametrize("ratio", [1.49, 1.51, 1.83])
def test_a_tiny_eval_loss_rising_after_warm_up_is_judged_against_its_own_drop(ratio):
    """eval 0.219 -> 0.40 after warm-up passed at 1.49x against a 1.5x limit; here 1.49x,
    1.51x and the issue's 1.83x give one answer: far past half the curve's own drop."""
    ev = [0.9, 0.6, 0.4, 0.3, 0.25, 0.219] + [0.219 * r for r in np.linspace(1.1, ratio, 5)]
    lr = [1e-5, 2e-5, 3e-5, 4e-5] + [4e-5] * 7  # warm-up to the fourth evaluation
    run = _run(None, loss=np.linspace(0.5, 0.52, len(ev)).tolist(), eval_loss=ev, lr=lr)  # train not falling
    f = _finding(run, "TP-EVAL-DIVERGE")
    assert f.values["start"] == 0.3 and f.values["giveback"] > 0.9  # judged from the end of warm-up


def test_eval_climbing_while_train_falls_is_overfitting_not_damage():
    run = read_run(ROOT / "examples/gallery/overfit/trainer_state.json")
    ids = _ids(run, Level.FAIL, Level.WARN)
    assert "TP-OVERFIT" in ids and "TP-EVAL-DIVERGE" not in ids


def _saturated(train_level: float, seed: int = 0, noise: float = 0.9) -> Run:
    """A training set fit early: the train loss falls to `train_level` by the second
    evaluation, then scatters around a level that creeps up by half (noise near 0 is
    relative: 0.9 in log space a point; `noise`) while the eval loss bottoms at 0.043 and climbs back
    to ~0.08 (public run fresh10/iancarrasco's shape). The train loss does not fall; how far
    below the eval loss it sits says whether the climb is memorisation or damage."""
    rng = np.random.default_rng(seed)
    n = 90
    t = np.arange(n)
    level = (train_level + (0.6 - train_level) * np.exp(-t / 4)) * (1 + 0.5 * np.clip(t - 17, 0, None) / 72)
    train = level * np.exp(rng.normal(0.0, noise, n) * (t > 12))
    ev = [0.052, 0.043, *np.linspace(0.05, 0.08, 8)]
    evals = [float("nan")] * n
    for i, v in enumerate(ev):
        evals[9 * i + 8] = v
    return _run(None, steps=[float(i) for i in range(n)], loss=train.tolist(), eval_loss=evals)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("scale", [1.0, 1 / np.log(2), 100.0])
def test_an_eval_climb_beside_a_memorised_training_set_is_overfitting(seed, scale):
    """A train loss that saturated at 0.004 - a tenth of the eval loss's best - cannot keep
    falling; a climbing eval loss beside it is memorisation (WARN), whatever the train noise
    near 0 does to its medians and in any unit. At 0.7 of the eval loss's best (the public
    LR-too-high runs sit at 0.59-0.82) the same climb is damage (FAIL): both curves are on one
    level and both got worse."""
    def scaled(run: Run) -> Run:
        return replace(run, series={k: Series(s.name, s.steps, s.values * scale) for k, s in run.series.items()})

    memorised = _ids(scaled(_saturated(0.004, seed)), Level.FAIL, Level.WARN)  # 0.004 -> 0.006
    assert "TP-OVERFIT" in memorised and "TP-EVAL-DIVERGE" not in memorised
    f = _finding(scaled(_saturated(0.004, seed)), "TP-OVERFIT")
    assert f.values["limit_memorised"] == 0.25
    damaged = _ids(scaled(_saturated(0.03, seed, noise=0.1)), Level.FAIL, Level.WARN)  # 0.03 -> 0.045
    assert "TP-EVAL-DIVERGE" in damaged and "TP-OVERFIT" not in damaged


@pytest.mark.parametrize("log", ["examples/gallery/healthy/trainer_state.json",
                                 "examples/gallery2/healthy/trainer_state.json",
                                 "examples/gallery/bad_labels/trainer_state.json"])
def test_real_eval_curves_that_are_not_damaged_stay_silent(log):
    rep = judge_run(read_run(ROOT / log))
    assert "eval-curve" in rep.ran and "TP-EVAL-DIVERGE" not in {f.rule_id for f in rep.findings}


def _eval_only(tmp_path: Path, values: list[float], train: int = 0) -> Path:
    hist = [{"step": 10 * (i + 1), "loss": 2.0 - 0.1 * i, "learning_rate": 1e-4} for i in range(train)]
    hist += [{"step": 10 * (i + 1), "eval_loss": v} for i, v in enumerate(values)]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"log_history": hist, "max_steps": 330, "global_step": 330}))
    return p


@pytest.mark.parametrize("train", [0, 3])
def test_an_eval_heavy_log_is_judged_on_its_eval_curve(tmp_path, run_cli, train):
    falling = (1.5 * np.exp(-np.arange(33) / 15) + 0.5).tolist()
    code, out, _ = run_cli("epoch", _eval_only(tmp_path, falling, train), "--json")
    rep = json.loads(out)["reports"][0]
    assert code == 0 and rep["verdict"] == "PASS" and "eval-curve" in rep["checks"]["ran"]


def test_an_eval_only_log_climbing_back_fails(tmp_path, run_cli):
    ev = (1.0 * np.exp(-np.arange(20) / 5) + 0.5).tolist()  # 1.5 -> 0.51
    ev += [ev[-1] * (1 + 0.1 * i) for i in range(1, 14)]  # back up past its start
    code, out, _ = run_cli("epoch", _eval_only(tmp_path, ev), "--json")
    ids = {f["id"] for f in json.loads(out)["reports"][0]["findings"]}
    assert code == 1 and ids == {"TP-EVAL-DIVERGE"}


def test_a_metric_beside_the_eval_loss_corroborates(tmp_path):
    data = _whisper()
    wer = [30, 28, 35, 41, 50, 47, 49, 48, 52, 50] + [float("nan")] * 30
    run = _run(None, **data, eval_wer=wer)
    assert "eval_wer 30 -> 50 (also worse)" in _finding(run, "TP-EVAL-DIVERGE").evidence


def test_a_metric_beside_the_eval_loss_never_fires_alone():
    ev = [2.0, 1.8, 1.6, 1.5, 1.45, 1.4, 1.38, 1.36]
    run = _run(None, loss=[2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.45, 1.4], eval_loss=ev,
               eval_wer=[30, 35, 40, 45, 50, 55, 60, 65])
    assert _ids(run, Level.FAIL, Level.WARN) == set()


# ---------------------------------------------------------------- evidence, not lack of proof

def _dead(run: Run) -> bool:
    return "TP-DEAD-RUN" in {f.rule_id for f in judge_run(run).findings}


def test_a_noisy_per_step_log_that_learned_is_not_dead():
    """One-batch losses logged every step scatter by ~20 % per point: a 3-point start cannot
    prove a 20 % gain at 2.5 standard errors, and that is not evidence of a dead run."""
    rng = np.random.default_rng(0)
    loss = np.exp(np.log(np.linspace(0.8, 0.6, 128)) + rng.normal(0, 0.19, 128))
    loss[0] = 1.04
    assert not _dead(_run(None, loss=loss.tolist()))


def test_a_flat_noisy_log_is_still_dead():
    rng = np.random.default_rng(1)
    loss = np.exp(np.log(1.5) + rng.normal(0, 0.04, 60))
    assert _dead(_run(None, loss=loss.tolist()))


def test_the_start_is_the_first_point_so_a_fast_early_drop_is_learning():
    """A fine-tune that drops 1.57 -> 1.44 over its first logged steps and then plateaus
    learned something: a plateau, not a dead run."""
    rng = np.random.default_rng(2)
    loss = [1.571, 1.436, 1.423, *(1.41 * np.exp(rng.normal(0, 0.03, 28))).tolist()]
    assert not _dead(_run(None, loss=loss))


def test_a_lone_first_step_does_not_stand_as_the_start():
    """HF's logging_first_step: step 1 is one batch among means of 50; when it happens to be
    low it must not make a learning run look dead."""
    steps = [1, *list(range(50, 1001, 50))]
    loss = [0.9, *np.linspace(1.8, 1.2, 20).tolist()]
    def verdict(first_step: int) -> str:
        at = np.array([first_step, *steps[1:]], float)
        run = _run(None, loss=loss)
        return judge_run(replace(run, series={"loss": Series("loss", at, np.array(loss))})).verdict.value

    assert verdict(1) == "PASS"
    assert verdict(25) == "FAIL"  # the same low point averaging a whole interval is a start


def test_eval_worse_than_it_started_through_warm_up_damage_is_judged():
    """A Whisper fine-tune at 3e-3: every evaluation after the first sits above it (eval
    2.55 -> 3.1-4.5 -> 3.4) while the train loss rose; the curve's swings inflate its own
    noise, so the count decides."""
    ev = [2.55, 3.62, 3.49, 3.19, 3.96, 3.98, 3.72, 4.46, 4.0, 4.17, 3.64, 3.68, 3.93, 3.55, 3.45,
          3.32, 3.42, 3.29, 3.14, 3.42]
    run = _run(None, loss=[1.24, 2.03, 2.16, 1.98, 1.79], eval_loss=ev)
    assert "TP-EVAL-DIVERGE" in {f.rule_id for f in judge_run(run).findings}


def test_eval_that_returns_to_its_start_is_not_worse_than_it_started():
    ev = [2.55, 3.62, 3.49, 3.19, 3.96, 3.98, 3.72, 3.4, 3.0, 2.6, 2.5, 2.45]
    run = _run(None, loss=[1.24, 2.03, 2.16, 1.98, 1.79], eval_loss=ev)
    assert "TP-EVAL-DIVERGE" not in {f.rule_id for f in judge_run(run).findings}


def test_a_drift_in_the_last_digits_of_a_frozen_loss_is_not_a_steady_fall():
    """A regressor stuck far off its targets (public run fresh9/emily-rosesteyn: 3268.5, then
    3262.9 drifting to 3262.7 over 36 epochs, printed to 1e-6): its point noise is almost 0,
    so the drift is thousands of standard errors and Mann-Kendall-steady - and 6e-5 of the
    loss. A fall under trend_min_fall (1 %) is no learning: TP-DEAD-RUN fails it, at the full
    length and halved."""
    loss = [3268.54, *(3262.93 - 0.006 * np.arange(36)).tolist()]
    run = _run(None, loss=loss, eval_loss=[3132.0, *[3131.0] * 36])
    assert "TP-DEAD-RUN" in _ids(run, Level.FAIL)
    assert _finding(run, "TP-DEAD-RUN").values["limit_trend_min_fall"] == 0.01
    assert "TP-DEAD-RUN" in _ids(_run(None, loss=loss[::2], eval_loss=[3132.0, *[3131.0] * 18]), Level.FAIL)


def test_an_exact_zero_in_the_train_loss_does_not_silence_the_eval_witness(tmp_path):
    """A bounded per-step train loss (public run fresh10/hadisbn: 0.0-1.0 at 35 % a point, one
    batch at exactly 0) beside an eval loss falling 0.68 -> 0.61 at 7 standard errors: the
    eval loss says the run learned whatever the train loss's zeros. Halved, the train log's
    start lands inside its noise (5.8 %, 0.2 standard errors): with the witness heard it
    passes, as the full log does; before, the one 0.0 kept the witness out and it failed."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import public_runs as pr

    from tests.perturbations import PERTURBATIONS

    (doc,) = [d for d in pr.load_corpus() if d["id"].startswith("hadisbn__fire")]
    run = read_run(pr.rebuild(doc, tmp_path))
    assert run.series["loss"].values.min() == 0.0
    for r in (run, PERTURBATIONS["halve"](run)):
        assert "TP-DEAD-RUN" not in _ids(r, Level.FAIL)
