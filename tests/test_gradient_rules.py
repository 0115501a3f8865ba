"""Issue #17: TP-GRAD-SPIKE, TP-NAN-GRAD, TP-ZERO-LOSS-ONSET and TP-ZERO-LR-PARTIAL read a
curve as an engineer does. For each rule: a case it must fire on and a healthy case it
must stay silent on, from real logs where there is one (the galleries, the shared
corpus, fixtures written by real libraries, and two design-half public runs kept as
their extracted series with the source cited), plus the issue's named false alarms as
minimal series."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Level, Run, Series
from trainproof.parsers import read_run
from trainproof.rules import catalogue, checks

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests/fixtures"
NAN, INF = float("nan"), float("inf")


def run_of(series: dict[str, list[float]], steps: list[float] | None = None, **meta: object) -> Run:
    """Every metric logged at the same steps (1..n unless given), as HF Trainer logs them."""
    out = {}
    for name, values in series.items():
        v = np.asarray(values, dtype=np.float64)
        s = np.asarray(steps if steps is not None else np.arange(1, v.size + 1), dtype=np.float64)[: v.size]
        out[name] = Series(name, s, v)
    return Run("t.jsonl", "example", out, max(len(s) for s in out.values()), tuple(out), (), meta)


def public(name: str) -> tuple[Run, dict]:
    """A design-half public run, kept as its extracted series (source in the file)."""
    doc = json.loads((FIX / "public_design" / f"{name}.json").read_text())
    rename = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr"}
    series = {}
    for k, pts in doc["series"].items():
        a = np.asarray(pts, dtype=np.float64)
        series[rename[k]] = Series(rename[k], a[:, 0], a[:, 1])
    return Run(name, "hf", series, len(series["loss"]), tuple(series)), doc["source"]


def found(run: Run) -> dict[str, Level]:
    return {f.rule_id: f.level for f in judge_run(run).findings}


def falling(n: int, start: float = 2.0, end: float = 1.0, noise: float = 0.01, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    curve = end + (start - end) * np.exp(-np.arange(n) / (n / 5))
    return (curve * np.exp(rng.normal(0, noise, n))).tolist()


def steady_norms(n: int, level: float = 1.5, seed: int = 1) -> list[float]:
    return (level * np.exp(np.random.default_rng(seed).normal(0, 0.1, n))).tolist()


# ---------------------------------------------------------------- where the rules live

def test_the_moved_checks_keep_their_order_and_their_ids():
    order = ["nan", "zero-loss", "flat-loss", "divergence", "zero-grad", "grad-spike", "lr", "overfit"]
    names = [c.name for c in checks("single_run")]
    assert [n for n in names if n in order] == order  # other modules may add checks between
    ids = list(catalogue())
    kept = ["TP-NAN", "TP-NAN-GRAD", "TP-ZERO-LOSS", "TP-ZERO-LOSS-ONSET", "TP-FLAT", "TP-DIVERGE",
            "TP-DIVERGE-NOISE", "TP-ZERO-GRAD", "TP-GRAD-SPIKE", "TP-ZERO-LR", "TP-ZERO-LR-PARTIAL", "TP-OVERFIT"]
    assert [i for i in ids if i in kept] == kept
    assert catalogue()["TP-NAN-GRAD-SKIPPED"].level is Level.INFO
    assert catalogue()["TP-GRAD-SPIKE-ISOLATED"].level is Level.INFO


def test_the_rule_modules_stay_small():
    for name in ("gradients", "zeros", "run"):
        assert len((ROOT / f"src/trainproof/rules/{name}.py").read_text().splitlines()) < 400, name


# ---------------------------------------------------------------- TP-NAN-GRAD

def test_nan_grad_fails_on_the_real_runs_that_blow_up():
    # gallery42 fp16_nan (QLoRA, fp16, no clipping): inf norms at steps 20 and 30, loss 1.2 -> 15.
    corpus = ROOT.parent / "shared/corpus/gallery42/fp16_nan/trainer_state.json"
    if corpus.exists():
        assert found(read_run(corpus)).get("TP-NAN-GRAD") is Level.FAIL
    # HF Trainer, real fp16 overflow, NaN filter logging 0.0 from step 26 on: 18 of 30 norms NaN.
    f = found(read_run(FIX / "core/hf_nonfinite/trainer_state.json"))
    assert f["TP-NAN-GRAD"] is Level.FAIL and f["TP-ZERO-LOSS-ONSET"] is Level.FAIL
    for seed in ("", "seed43/", "seed44/"):
        assert found(read_run(ROOT / f"examples/gallery/nan/{seed}trainer_state.json")).get("TP-NAN-GRAD") is Level.FAIL


def test_fp16_scaler_skips_in_a_public_lora_run_are_counted_not_failed():
    """ChenguangYang96UCR/KG-LLM outputs/trainer_state.json: NaN norms at steps 1, 2 and 6
    while the scaler calibrates; the loss goes 4.3 -> 0.44 regardless."""
    run, source = public("kg_llm_fp16_skips")
    assert source["repo"] == "ChenguangYang96UCR/KG-LLM"
    f = found(run)
    assert f.get("TP-NAN-GRAD-SKIPPED") is Level.INFO and "TP-NAN-GRAD" not in f
    assert judge_run(run).verdict.value == "PASS"


@pytest.mark.parametrize("bad_at", [[4], [4, 11], [3, 9, 15, 21]])
def test_isolated_non_finite_norms_with_a_falling_loss_are_info(bad_at):
    g = steady_norms(30)
    for i in bad_at:
        g[i] = INF
    f = found(run_of({"loss": falling(30), "grad_norm": g}))
    assert f.get("TP-NAN-GRAD-SKIPPED") is Level.INFO and "TP-NAN-GRAD" not in f


def test_a_skip_at_an_lr_restart_is_info():
    lr = [1e-4 * (1 - (i % 10) / 10) for i in range(30)]  # restarts at 10 and 20
    g = steady_norms(30)
    g[20] = NAN
    f = found(run_of({"loss": falling(30), "grad_norm": g, "lr": lr}))
    assert f.get("TP-NAN-GRAD-SKIPPED") is Level.INFO and "TP-NAN-GRAD" not in f


def test_repeated_non_finite_norms_fail():
    g = steady_norms(40)
    for i in range(3, 40, 6):  # 7 of 40: more than a calibrating scaler skips
        g[i] = INF
    f = found(run_of({"loss": falling(40), "grad_norm": g}))
    assert f["TP-NAN-GRAD"] is Level.FAIL and "TP-NAN-GRAD-SKIPPED" not in f


def test_a_non_finite_norm_the_loss_reacts_to_fails():
    loss, g = falling(30), steady_norms(30)
    g[15] = INF
    loss[16:19] = [x * 1.5 for x in loss[16:19]]
    f = found(run_of({"loss": loss, "grad_norm": g}))
    assert f["TP-NAN-GRAD"] is Level.FAIL
    assert "reacted" in next(x for x in judge_run(run_of({"loss": loss, "grad_norm": g})).findings
                             if x.rule_id == "TP-NAN-GRAD").evidence


def test_a_non_finite_norm_with_the_nan_filters_zero_loss_fails():
    # HF's logging_nan_inf_filter logs 0.0 for the NaN loss at the norm's own step.
    loss, g = falling(30), steady_norms(30)
    g[15], loss[15], loss[16] = NAN, 0.0, 0.0
    assert found(run_of({"loss": loss, "grad_norm": g}))["TP-NAN-GRAD"] is Level.FAIL


def test_a_non_finite_norm_at_the_end_of_the_log_fails():
    g = steady_norms(30)
    g[-1] = NAN
    assert found(run_of({"loss": falling(30), "grad_norm": g}))["TP-NAN-GRAD"] is Level.FAIL


# ---------------------------------------------------------------- TP-GRAD-SPIKE

def test_the_healthy_real_runs_have_no_spike_finding():
    for log in ("examples/gallery/healthy/trainer_state.json", "examples/gallery2/healthy/trainer_state.json"):
        f = found(read_run(ROOT / log))
        assert "TP-GRAD-SPIKE" not in f


def test_the_overfit_gallerys_first_step_maximum_is_not_a_spike():
    # max grad_norm 2.08 at the first logged step (step 5), median 0.086: issue #17's pattern.
    for seed in ("", "seed43/", "seed44/"):
        f = found(read_run(ROOT / f"examples/gallery2/overfit/{seed}trainer_state.json"))
        assert "TP-GRAD-SPIKE" not in f and "TP-GRAD-SPIKE-ISOLATED" not in f


def test_single_spikes_in_a_public_vit_run_are_counted_not_warned():
    """vuongndlst/ViT-LoRA-Demo model/trainer_state.json: 11 single grad-norm spikes up to
    90x the local median after the loss flattened at 0.22; the loss never moves."""
    run, source = public("vit_lora_cyclic_lr")
    assert source["repo"] == "vuongndlst/ViT-LoRA-Demo"
    f = found(run)
    assert f.get("TP-GRAD-SPIKE-ISOLATED") is Level.INFO and "TP-GRAD-SPIKE" not in f


def test_the_largest_norm_at_the_first_step_is_not_judged():
    g = steady_norms(30)
    g[0] = 60.0
    f = found(run_of({"loss": falling(30), "grad_norm": g}))
    assert "TP-GRAD-SPIKE" not in f and "TP-GRAD-SPIKE-ISOLATED" not in f


def test_a_spike_during_the_initial_steep_drop_is_not_judged():
    loss = [8.0, 6.5, 5.2, 4.1, 3.3, 2.7, 2.2, 1.8, *falling(40, 1.6, 1.4)]
    g = steady_norms(48)
    g[6] = 40.0
    f = found(run_of({"loss": loss, "grad_norm": g}))
    assert "TP-GRAD-SPIKE" not in f and "TP-GRAD-SPIKE-ISOLATED" not in f


def test_a_spike_in_warm_up_is_not_judged():
    lr = [1e-4 * min(1.0, (i + 1) / 10) for i in range(40)]
    g = steady_norms(40)
    g[7] = 40.0
    f = found(run_of({"loss": falling(40, 1.3, 1.2), "grad_norm": g, "lr": lr}))
    assert "TP-GRAD-SPIKE" not in f and "TP-GRAD-SPIKE-ISOLATED" not in f


def test_a_tiny_median_run_is_not_judged_by_ratio_alone():
    # GRPO-like: norms near 1e-3, "spikes" of 20-50x that stay far below any clip threshold.
    g = (np.asarray(steady_norms(60)) * 1e-3 / 1.5).tolist()
    for i in (20, 21, 22, 40):
        g[i] = 0.05
    f = found(run_of({"loss": falling(60, 0.7, 0.69), "grad_norm": g}))
    assert "TP-GRAD-SPIKE" not in f and "TP-GRAD-SPIKE-ISOLATED" not in f


def test_a_bad_batch_sharing_its_step_with_the_spike_is_not_a_reaction():
    # TrOCR pattern: the loss logged at the spike's step is 3.7x, the next one back to normal.
    loss, g = falling(40, 0.2, 0.13), steady_norms(40)
    g[25], loss[25] = 40.0, loss[25] * 3.7
    f = found(run_of({"loss": loss, "grad_norm": g}))
    assert f.get("TP-GRAD-SPIKE-ISOLATED") is Level.INFO and "TP-GRAD-SPIKE" not in f


def test_a_spike_the_loss_reacts_to_warns():
    loss, g = falling(40), steady_norms(40)
    g[25] = 40.0
    loss[26:29] = [x * 1.4 for x in loss[26:29]]
    f = found(run_of({"loss": loss, "grad_norm": g}))
    assert f["TP-GRAD-SPIKE"] is Level.WARN and "TP-GRAD-SPIKE-ISOLATED" not in f


def test_a_spike_that_persists_warns():
    g = steady_norms(40)
    g[25:28] = [30.0, 35.0, 28.0]
    f = found(run_of({"loss": falling(40), "grad_norm": g}))
    assert f["TP-GRAD-SPIKE"] is Level.WARN


# ---------------------------------------------------------------- TP-ZERO-LOSS-ONSET

HF_CLASSIFIER = [0.6931, 0.4127, 0.1893, 0.0712, 0.0214, 0.0061, 0.0019, 0.0006, 0.0002, 0.0001,
                 0.0001, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_a_converged_classifier_rounded_to_four_decimals_is_not_a_collapse():
    """Issue #17: HF rounds the logged loss to 4 decimals; the eval loss falls to 2e-5."""
    run = run_of({"loss": HF_CLASSIFIER, "eval_loss": [0.31, 0.02, 0.0004, 2e-5],
                  "grad_norm": steady_norms(18, 0.01)}, steps=list(range(10, 190, 10)))
    run.series["eval_loss"] = Series("eval_loss", np.array([40.0, 80.0, 120.0, 180.0]),
                                     np.array([0.31, 0.02, 0.0004, 2e-5]))
    assert "TP-ZERO-LOSS-ONSET" not in found(run)


def test_a_full_precision_loss_underflowing_float32_is_not_a_collapse():
    loss = [0.7 * 0.1 ** (i / 2) for i in range(14)] + [0.0] * 6  # 0.7 -> 1e-7, then 0.0
    assert "TP-ZERO-LOSS-ONSET" not in found(run_of({"loss": loss}))


def test_a_loss_that_drops_to_zero_from_its_level_fails():
    loss = falling(20, 2.0, 1.2) + [0.0] * 6
    f = found(run_of({"loss": loss}))
    assert f["TP-ZERO-LOSS-ONSET"] is Level.FAIL


def test_zeros_with_non_finite_grad_norms_fail_even_when_converging():
    g = steady_norms(18, 0.01)
    g[11:] = [NAN] * 7
    assert found(run_of({"loss": HF_CLASSIFIER, "grad_norm": g}))["TP-ZERO-LOSS-ONSET"] is Level.FAIL


def test_zeros_with_an_eval_loss_that_did_not_fall_fail():
    run = run_of({"loss": HF_CLASSIFIER})
    run.series["eval_loss"] = Series("eval_loss", np.array([4.0, 8.0, 12.0, 18.0]), np.array([0.5, 0.6, 0.8, 1.1]))
    assert found(run)["TP-ZERO-LOSS-ONSET"] is Level.FAIL


def test_zeros_beside_a_positive_gradient_norm_are_below_the_printed_precision():
    """A loss that is really 0 has no gradient; one that prints 0.0 beside a gradient norm above
    0 at every point is below the log's precision, however fast it got there. fresh16's pavan-gl
    (an HF classifier: 0.0126 at step 500, 0.0 at 4 decimals from step 1000 to 7500, grad norm
    2.5e-4 -> 1.8e-5 smoothly), labelled WARN before any tool ran, FAILed at its first scoring."""
    cliff = [0.0126] + [0.0] * 14
    g = list(np.geomspace(6.8e-4, 1.8e-5, 15))
    assert "TP-ZERO-LOSS-ONSET" not in found(run_of({"loss": cliff, "grad_norm": g}))
    # the same cliff with no gradient behind the zeros, or no gradient logged, is a collapse
    dead = g[:1] + [0.0] * 14
    assert found(run_of({"loss": cliff, "grad_norm": dead}))["TP-ZERO-LOSS-ONSET"] is Level.FAIL
    assert found(run_of({"loss": cliff}))["TP-ZERO-LOSS-ONSET"] is Level.FAIL
    # a gradient logged at only some of the zeros says nothing of the others
    sparse = run_of({"loss": cliff, "grad_norm": g})
    sparse.series["grad_norm"] = Series("grad_norm", sparse.series["grad_norm"].steps[:4],
                                        sparse.series["grad_norm"].values[:4])
    assert found(sparse)["TP-ZERO-LOSS-ONSET"] is Level.FAIL
    # the converged tail alone (the log halved without its first point): zeros from the start
    tail = {"loss": [0.0] * 7, "grad_norm": g[1::2]}
    assert "TP-ZERO-LOSS" not in found(run_of(tail))
    assert found(run_of({"loss": [0.0] * 7, "grad_norm": [0.0] * 7}))["TP-ZERO-LOSS"] is Level.FAIL


def test_the_public_classifier_that_converged_below_four_decimals():
    import tempfile

    from .test_public_runs import public_runs
    stem = ("pavan-gl__transforming-health-governance-an-nlp-approach-for-policy-enhancement__"
            "results-checkpoint-7500-trainer_state")
    doc = json.loads((ROOT / "public_runs" / "fresh16" / f"{stem}.json").read_text())
    with tempfile.TemporaryDirectory() as d:
        run = read_run(public_runs.rebuild(doc, Path(d)))
    assert run.get("loss").values[1:].max() == 0.0 and "TP-ZERO-LOSS-ONSET" not in found(run)


# ---------------------------------------------------------------- TP-ZERO-LR-PARTIAL

def test_a_cyclic_schedule_touching_zero_at_logged_steps_is_the_schedule():
    """vuongndlst/ViT-LoRA-Demo: a restarting linear schedule whose troughs land on logged
    steps - 26 of 150 LR points are exactly 0, each a single point between restarts."""
    run, _ = public("vit_lora_cyclic_lr")
    lr = run.get("lr")
    assert lr is not None and int((lr.values == 0).sum()) == 26
    assert "TP-ZERO-LR-PARTIAL" not in found(run)


def test_a_contiguous_stretch_at_zero_still_warns():
    lr = [0.0] * 8 + [1e-4] * 32  # a fifth of the run at lr 0 before the schedule starts
    assert found(run_of({"loss": falling(40), "lr": lr}))["TP-ZERO-LR-PARTIAL"] is Level.WARN


def test_zeros_that_are_most_of_the_log_count_even_as_single_points():
    lr = [1e-4, 0.0] * 20  # every other step at 0: not a schedule's trough
    assert found(run_of({"loss": falling(40), "lr": lr}))["TP-ZERO-LR-PARTIAL"] is Level.WARN


def test_a_decay_to_zero_on_the_last_point_of_a_short_log_does_not_warn():
    lr = [1e-4, 8e-5, 6e-5, 4e-5, 2e-5, 0.0]
    assert "TP-ZERO-LR-PARTIAL" not in found(run_of({"loss": [2.0, 1.8, 1.6, 1.5, 1.4, 1.35], "lr": lr}))
