"""TP-EVAL-NEVER-BETTER (rules/eval_no_gain.py): the eval loss never got materially below
its first evaluation and ended well above it, in its own noise and a declared share, while
the train loss fell.

No climb is needed: an eval loss that holds its first level while the train loss falls is the
same finding (fresh14's Keras crop classifier: val at ln 5 throughout, train 1.14 -> 0.028;
fresh38's YOLO classifier prithvi-bagul: val 4.23-4.28 for 64 epochs, train halved).

The real case is fresh3's medimind LM (shivamgoyal03, labelled broken by its reader: train
9.76 -> 7.40, eval 9.76 -> 9.705 -> 10.4-10.7), which TP-OVERFIT's 20 % ratio to the eval
minimum under-reads. It also finds fresh3's yongshuaiy (labelled WARN: eval 1.061 -> 1.052
-> 1.18 while train fell 36 %), fresh's anda-researchers (labelled WARN, overfits: eval 1.906
-> 1.881 -> 2.128 while train fell 29 %; found once the train loss at the first evaluation is a
median of five points, not one noisy batch) and the galleries' shuffled-label runs (bad_labels, every
seed: eval 7-13 % above its first evaluation, train down 13-25 %), all broken or worth a
look; no run labelled PASS in any half. Generated curves pin each bar."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Run, Series, Skip, SkipKind
from trainproof.rules.eval_no_gain import EVAL_NEVER_BETTER, eval_never_better

from .real_logs import local, public
from .test_invariance import PERTURBATIONS, assert_invariant

RULE = "TP-EVAL-NEVER-BETTER"
MEDIMIND = "shivamgoyal03__medimind__results-checkpoint-2300-trainer_state"
YONG = "yongshuaiy__llms-final__output-checkpoint-669-trainer_state"
ANDA = "anda-researchers__mcfed_drl__trainer_state"
AL_REZA = "al-reza89__thesis-web__outputs-trainer_state"  # labelled WARN: eval held, train -26 %
SID = "sid-diamond__multi-functional-nlp-__results-checkpoint-20-trainer_state"  # labelled WARN


def _fires(run: Run) -> bool:
    out = eval_never_better(run)
    return not isinstance(out, Skip) and bool(out)


def test_warns_on_the_lm_that_never_generalised() -> None:
    (f,) = eval_never_better(dict(public())[MEDIMIND])
    v = f.values
    assert f.rule_id == RULE and v["n"] == 23 and v["gain"] < 0.01
    assert 0.08 < v["rise"] < 0.1 and v["train_fall"] > 0.2


def _arms(runs: tuple) -> dict[str, set[str]]:
    """The runs it fires on, by arm: the train loss fell ('fell') or did not fall ('neither')."""
    out: dict[str, set[str]] = {"fell": set(), "neither": set()}
    for name, run in runs:
        got = eval_never_better(run)
        if not isinstance(got, Skip) and got:
            out["neither" if "neither" in got[0].values["arm"] else "fell"].add(name)
    return out


def test_which_real_logs_it_finds() -> None:
    assert len(public()) >= 250 and len(local()) >= 100
    arms = _arms(public())
    assert arms["fell"] == {MEDIMIND, YONG, ANDA, AL_REZA, SID}
    # neither curve improved: four runs labelled broken, each already failed by TP-DEAD-RUN,
    # TP-FLAT or TP-EVAL-DIVERGE (two Whisper fine-tunes whose eval loss climbed from its first
    # evaluation, a frozen reading-comprehension baseline, a book-review LM whose loss never moved)
    assert arms["neither"] == {"byerenozer__whisper_finetune__trainer_state",
                               "tanisha-anshu__openai-whisper-small-braj__trainer_state",
                               "yuanhuanghuang__quality__baselines-lrqa-__init__-py",
                               "tradingwithme__ai_book_review_generator__results-checkpoint-11-trainer_state"}
    found = _arms(local())
    gallery = {p.split("/examples/")[-1].split("/")[1] for p in found["fell"] if "/examples/" in p}
    assert gallery == {"bad_labels"} and len([p for p in found["fell"] if "/examples/" in p]) == 6
    # the galleries' LR-0 runs: eval loss frozen, train loss flat - neither improved (TP-ZERO-LR fails them)
    assert {p.split("/examples/")[-1].split("/")[1] for p in found["neither"] if "/examples/" in p} == {"lr_zero"}
    # besides the galleries: the stuck-batch evidence run (eval 7.19 -> 7.92 while train -> 0), a
    # real Flair text classifier of five epochs whose dev loss never got below its first
    # evaluation (0.742, then 0.748-1.08) and a real YOLO run whose val losses are identical at
    # all six epochs (its optimizer never stepped: TP-EVAL-LOSS-FROZEN's too)
    assert sorted(p.split("/")[-2] + "/" + p.split("/")[-1] for p in found["fell"] if "/examples/" not in p) == [
        "stuck_batch/metrics.jsonl", "train/results.csv", "v0_12_textclassifier/loss.tsv"]
    # and two real YOLO fixtures whose optimizer never stepped (a nominal batch of 64 over too few
    # images): val losses identical at every epoch, train loss not falling
    assert sorted(p.split("/fixtures/")[-1] for p in found["neither"] if "/examples/" not in p) == [
        "ultralytics/classify/runs/classify/train/results.csv", "ultralytics/segment/runs/segment/train/results.csv"]


def test_the_real_finding_survives_how_it_was_logged() -> None:
    run = dict(public())[MEDIMIND]
    assert {name for name, p in PERTURBATIONS.items() if not _fires(p(run))} == set()


# ---------------------------------------------------------------- generated curves

def _run(ev: list[float], train_fall: float = 0.24, n: int = 200, seed: int = 0) -> Run:
    """200 train points every 10 steps falling by `train_fall` at 1 % noise, and the eval
    values spread over the run, the first at step 10."""
    rng = np.random.default_rng(seed)
    steps = 10.0 * np.arange(1, n + 1)
    loss = 9.76 * (1 - train_fall * (1 - np.exp(-steps / 600))) * np.exp(rng.normal(0, 0.01, n))
    at = np.linspace(0, n - 1, len(ev)).astype(int)
    series = {"loss": Series("loss", steps, loss), "eval_loss": Series("eval_loss", steps[at], np.asarray(ev))}
    return Run("generated.json", "example", series, n, tuple(series))


def _climb(rise: float, dip: float = 0.006, n: int = 12, seed: int = 1) -> list[float]:
    """Eval from 9.76, a best `dip` below it at the second evaluation, then rising to
    `rise` above the start, with 0.3 % noise."""
    rng = np.random.default_rng(seed)
    base = np.concatenate([[1.0, 1.0 - dip], 1.0 + rise * np.linspace(0.3, 1.0, n - 2)])
    return (9.76 * base * np.exp(np.r_[0.0, 0.0, rng.normal(0, 0.003, n - 2)])).tolist()


def test_the_generated_curve_warns() -> None:
    assert _fires(_run(_climb(0.09)))


@pytest.mark.parametrize("rise", [0.0, 0.02, 0.065, 0.12])
def test_wherever_the_eval_loss_ended(rise: float) -> None:
    """Held at its first level or climbing from it: either way nothing after the first
    evaluation reached held-out data (a climb TP-OVERFIT reports is left to it, below)."""
    assert _fires(_run(_climb(rise)))


@pytest.mark.parametrize(("dip", "fires"), [(0.015, True), (0.03, False)])
def test_a_best_materially_below_the_start_is_not_this_rule(dip: float, fires: bool) -> None:
    assert _fires(_run(_climb(0.09, dip=dip))) is fires


def test_a_noisy_curve_whose_draws_beat_the_start_is_not_this_rule() -> None:
    """A level the eval loss wobbles around by 8 % has draws more than 2 % below its first
    evaluation: it is not 'never better', whatever its trend (TP-EVAL-DIVERGE reads those)."""
    rng = np.random.default_rng(5)
    noisy = (9.76 * np.r_[1.0, np.exp(rng.normal(0, 0.08, 11))]).tolist()
    assert min(noisy[1:]) < 0.98 * noisy[0]
    assert not _fires(_run(noisy))


@pytest.mark.parametrize(("fall", "fires"), [(-0.2, True), (0.0, True), (0.03, True), (0.07, False), (0.2, True)])
def test_the_train_loss_fell_or_did_not_fall_at_all(fall: float, fires: bool) -> None:
    """Two readings: the train loss fell 10 % or more (never generalised), or it did not fall
    beyond 5 % (neither curve improved); a slow fall between the two beside an eval loss inside
    the 2 % band is not judged."""
    assert _fires(_run(_climb(0.09), train_fall=fall)) is fires


NJRUN = "njrun1804__unity-tft__logs-lstm-version_2-metrics"


def test_the_short_log_where_neither_curve_improved_warns() -> None:
    """fresh47's njrun1804 (labelled broken; passed at its first scoring): seven train points
    3.80 -> 4.71, too few for TP-DEAD-RUN's ten, and thirty evaluations 5.454 -> 6.314 never
    0.4 % below the first, 9.3 % above their best (TP-EVAL-DIVERGE's bar is 10 %)."""
    from .real_logs import public_run
    (f,) = eval_never_better(public_run(NJRUN))
    v = f.values
    assert v["n"] == 30 and v["gain"] < 0.005 and v["train_fall"] < 0 and "neither" in v["arm"]


def test_five_evaluations_at_least() -> None:
    out = eval_never_better(_run(_climb(0.09, n=4)))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW
    assert _fires(_run(_climb(0.09, n=5)))


def test_a_climb_tp_overfit_reports_is_left_to_it() -> None:
    run = _run(_climb(0.4))
    out = eval_never_better(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED
    assert "TP-OVERFIT" in {f.rule_id for f in judge_run(run).findings}


def test_without_a_train_loss_it_is_not_judged() -> None:
    run = _run(_climb(0.09))
    out = eval_never_better(replace(run, series={"eval_loss": run.series["eval_loss"]}))
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA


@pytest.mark.parametrize("seed", range(4))
def test_a_generated_verdict_survives_how_it_was_logged(seed: int) -> None:
    run = _run(_climb(0.09, seed=seed), seed=seed)
    assert assert_invariant(run, f"seed={seed}") == ("WARN", frozenset())  # (FAIL IDs only)
    assert all(_fires(p(run)) for p in PERTURBATIONS.values())


def test_declared_thresholds_are_the_ones_used() -> None:
    r = EVAL_NEVER_BETTER
    assert (r.t("min_points"), r.t("max_gain"), r.t("min_train_fall"), r.t("flat_train_fall")) == (5, 0.02, 0.10, 0.05)
    assert set(r.thresholds) == {"min_points", "max_gain", "min_train_fall", "flat_train_fall"}


# ---------------------------------------------------------------- an eval loss that held its level

CROP = "abhishek07-web__cropdiseaseprediction__results-history"


def test_the_classifier_whose_val_loss_never_left_chance_warns() -> None:
    """fresh14's Keras crop classifier (labelled broken before any tool ran; passed at its first
    scoring): train 1.14 -> 0.028 while val sits at ln 5 (1.600 -> 1.584) and val accuracy at 1/5."""
    import tempfile
    from pathlib import Path

    from trainproof.parsers import read_run

    from .real_logs import DOCS, public_runs
    doc = next(d for d in DOCS if d["id"] == CROP)
    with tempfile.TemporaryDirectory() as tmp:
        (f,) = eval_never_better(read_run(public_runs.rebuild(doc, Path(tmp))))
    v = f.values
    assert v["gain"] < 0.02 and v["rise"] < 0 and v["train_fall"] > 0.95
    assert "eval_accuracy 0.4 -> 0.2" in v["corroboration"]


def _flat(level: float = 1.6, n: int = 12, seed: int = 3) -> list[float]:
    rng = np.random.default_rng(seed)
    return (level * np.exp(np.r_[0.0, -0.004 * np.linspace(0.2, 1.0, n - 1) + rng.normal(0, 0.002, n - 1)])).tolist()


@pytest.mark.parametrize(("fall", "fires"), [(0.05, False), (0.15, True), (0.5, True), (0.95, True)])
def test_a_flat_eval_loss_beside_a_falling_train_loss(fall: float, fires: bool) -> None:
    assert _fires(_run(_flat(), train_fall=fall)) is fires


PRITHVI = "prithvi-bagul__dsps-competition-2024__runs-classify-train11-results"


def test_the_classifier_whose_val_loss_held_its_level_warns() -> None:
    """fresh38's YOLO classifier (labelled broken before any tool ran; passed at its first
    scoring): val 4.26 -> 4.23-4.28 for 64 epochs, top-1 flat at 0.35-0.38, train 0.94 -> 0.5."""
    from .real_logs import public_run
    (f,) = eval_never_better(public_run(PRITHVI))
    v = f.values
    assert v["n"] == 64 and v["gain"] < 0.01 and abs(v["rise"]) < 0.01 and 0.4 < v["train_fall"] < 0.6


def test_no_run_labelled_pass_is_warned() -> None:
    """Over every public run of every half that reads: the runs it warns are labelled WARN or
    FAIL by the engineer who read their curves (the closest runs labelled PASS sit at 2.7 % and
    3.1 % below their first evaluation, outside the 2 % bar)."""
    from .real_logs import labelled_runs
    warned = [doc for doc, run in labelled_runs() if _fires(run)]
    assert len(warned) >= 10
    assert {d["label"]["verdict"] for d in warned} <= {"WARN", "FAIL"}


def test_a_flat_eval_loss_that_got_better_is_not_this_rule() -> None:
    better = (1.6 * np.r_[1.0, np.geomspace(0.97, 0.9, 11)]).tolist()
    assert not _fires(_run(better, train_fall=0.95))
