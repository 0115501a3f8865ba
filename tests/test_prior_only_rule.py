"""TP-PRIOR-ONLY (rules/run_prior.py): a classifier whose train loss starts near ln K
(K <= 4) and never leaves the band a constant prediction of the class prior can reach, eval
loss included; FAIL past 1.5 epochs, WARN before.

The real cases are fresh3's two binary classifiers stuck at the prior, labelled broken by
their reader before any tool ran: vacantfury (train 0.717 -> 0.67-0.68 for 8 epochs, eval
0.667-0.691) and revyu (0.686 -> 0.679 over 3 epochs, eval 0.669 -> 0.663, accuracy 0.60 =
the majority share). Every other real log stays silent (fresh3's surely-zoe at ln 3 and
fresh2's yuanhuanghuang at ln 4 are TP-DEAD-RUN's, which owns a loss that never moved);
generated curves pin each bar and skip."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import Level, Run, Series, Skip, SkipKind
from trainproof.rules.run_prior import PRIOR_ONLY, prior_only

from .real_logs import fires_on, local, public
from .test_invariance import PERTURBATIONS, thin

RULE = "TP-PRIOR-ONLY"
VACANTFURY = "vacantfury__cs6140-mugc-project__results-checkpoint-71792-trainer_state"
REVYU = "revyu__base_bert_cased_enmix__results-checkpoint-3000-trainer_state"
# fresh5 (in-sample since #17's rokibol review): labelled FAIL, and the rule's one finding there
MACYRM = "macyrm__buildanything__results-checkpoint-5-trainer_state"
UNIT_FREE = [n for n in PERTURBATIONS if not n.startswith(("x", "nats"))]  # ln K is in nats


def _real(name: str) -> Run:
    return dict(public())[name]


def _fires(run: Run) -> Level | None:
    out = prior_only(run)
    return None if isinstance(out, Skip) or not out else out[0].level


def test_fails_the_two_binary_classifiers_that_learned_only_the_prior() -> None:
    for name in (VACANTFURY, REVYU):
        (f,) = prior_only(_real(name))
        assert f.rule_id == RULE and f.level is Level.FAIL and f.values["k"] == 2
        assert 0.95 < f.values["lo_share"] <= f.values["hi_share"] < 1.0


def test_silent_on_every_other_real_log() -> None:
    assert len(public()) >= 250 and len(local()) >= 100  # the logs were found
    assert fires_on(prior_only, public()) == {VACANTFURY, REVYU, MACYRM}
    # The one local log it fires on is not healthy: ultralytics' classify fixture is a 6-epoch
    # smoke run on random images (tests/fixtures/ultralytics), loss 0.70 -> 0.69, val loss 0.69334
    # at every epoch and top-1 accuracy 0.5 throughout - two balanced classes, nothing learned.
    classify = {p for p in fires_on(prior_only, local()) if "ultralytics/classify" in p}
    assert fires_on(prior_only, local()) == classify and len(classify) == 1


def test_the_real_verdict_survives_how_it_was_logged() -> None:
    """At every perturbation that keeps the units the run still FAILs on the prior: this
    rule's finding, or TP-DEAD-RUN's where dropping, blurring or thinning the first points
    leaves no early fall for it to read as learning (which is when this rule stands aside)."""
    run = _real(VACANTFURY)
    perturbed = {name: PERTURBATIONS[name](run) for name in UNIT_FREE}
    perturbed.update({f"thin{k}": thin(k)(run) for k in (2, 5)})
    for name, p in perturbed.items():
        ids = {f.rule_id for f in judge_run(p).findings if f.level is Level.FAIL}
        assert ids & {RULE, "TP-DEAD-RUN"}, name


# ---------------------------------------------------------------- generated curves

def _run(level: float = 0.675, start: float = 0.717, n: int = 150, epochs: float | None = 8.0,
         evals: list[float] | None = None, drift: float = 0.0, sigma: float = 0.01, seed: int = 0) -> Run:
    """A classifier logged every 500 steps: the first point at `start`, then noise `sigma`
    (log space) around `level` drifting down by `drift` (a share) over the run; seven
    evaluations at `evals` (default: the same noise around the level); the epoch counter reaching `epochs`."""
    rng = np.random.default_rng(seed)
    steps = 500.0 * np.arange(1, n + 1)
    curve = level * (1 - drift * np.arange(n) / (n - 1))
    loss = curve * np.exp(rng.normal(0, sigma, n))
    loss[0] = start
    # The eval loss of a constant predictor still wobbles with the bias (fresh3's: 0.667-0.691)
    ev = np.asarray(evals if evals is not None else level * np.exp(rng.normal(0, sigma, 7)), dtype=np.float64)
    at = np.linspace(0, n - 1, ev.size + 1)[1:].astype(int)
    series = {"loss": Series("loss", steps, loss), "eval_loss": Series("eval_loss", steps[at], ev)}
    if epochs is not None:
        series["epoch"] = Series("epoch", steps, epochs * steps / steps[-1])
    return Run("generated.json", "example", series, n, tuple(series))


def test_the_generated_prior_plateau_fails() -> None:
    assert _fires(_run()) is Level.FAIL


@pytest.mark.parametrize(("level", "k"), [(1.09, 3), (1.37, 4)])
def test_three_and_four_classes(level: float, k: int) -> None:
    (f,) = prior_only(_run(level=level, start=level * 1.06))
    assert f.values["k"] == k


def test_five_classes_are_not_judged() -> None:
    """ln 5 = 1.61 is where LM fine-tunes sit: a level there says nothing about classes."""
    assert _fires(_run(level=1.60, start=1.62)) is None


def test_a_start_far_from_ln_k_is_not_a_fresh_head() -> None:
    """An LM that fell from 2.0 to the level of ln 3 is not judged."""
    assert _fires(_run(level=1.09, start=2.0)) is None


@pytest.mark.parametrize(("level", "fires"), [(0.63, True), (0.61, False), (0.75, True), (0.77, False)])
def test_the_band(level: float, fires: bool) -> None:
    """+/-10 % of ln 2 = 0.624-0.762, for the block medians and every evaluation."""
    got = _fires(_run(level=level, start=0.70, sigma=0.002))
    assert (got is not None) is fires


def test_every_evaluation_must_sit_in_the_band() -> None:
    assert _fires(_run(evals=[0.68, 0.67, 0.66, 0.60, 0.67, 0.66, 0.67])) is None


def test_a_classifier_that_learned_passes() -> None:
    assert _fires(_run(level=0.675, drift=0.6, evals=[0.62, 0.5, 0.45, 0.4, 0.38, 0.36, 0.35])) is None


def test_a_steady_fall_beyond_a_settling_bias_is_learning() -> None:
    assert _fires(_run(drift=0.03, sigma=0.002)) is Level.FAIL  # 3 %: the bias settling
    assert _fires(_run(level=0.74, start=0.75, drift=0.12, sigma=0.002)) is None  # 12 %: learning


def test_before_an_epoch_and_a_half_it_is_a_warning() -> None:
    assert _fires(_run(epochs=1.4)) is Level.WARN
    assert _fires(_run(epochs=1.6)) is Level.FAIL
    assert _fires(_run(epochs=None)) is Level.WARN


def test_without_an_eval_loss_it_is_not_judged() -> None:
    run = _run()
    run = replace(run, series={k: v for k, v in run.series.items() if k != "eval_loss"})
    out = prior_only(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA


def test_one_evaluation_is_not_a_level() -> None:
    out = prior_only(_run(evals=[0.67]))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW


def test_a_loss_that_never_moved_is_dead_runs() -> None:
    out = prior_only(_run(start=0.675, sigma=0.0005))
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED
    assert "TP-DEAD-RUN" in {f.rule_id for f in judge_run(_run(start=0.675, sigma=0.0005)).findings}


def test_a_preference_objective_is_not_judged() -> None:
    run = _run()
    out = prior_only(replace(run, columns=(*run.columns, "rewards/chosen")))
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED


@pytest.mark.parametrize("seed", range(5))
def test_a_generated_verdict_survives_how_it_was_logged(seed: int) -> None:
    """FAIL at every perturbation that keeps the units: this rule's, or TP-DEAD-RUN's where
    the early fall it reads as learning is dropped or blurred; a classifier that learned
    never fires it."""
    for name in UNIT_FREE:
        stuck = judge_run(PERTURBATIONS[name](_run(seed=seed))).findings
        assert {f.rule_id for f in stuck if f.level is Level.FAIL} & {RULE, "TP-DEAD-RUN"}, name
        assert _fires(PERTURBATIONS[name](_run(drift=0.6, seed=seed))) is None, name


def test_declared_thresholds_are_the_ones_used() -> None:
    assert PRIOR_ONLY.t("band") == 0.10 and PRIOR_ONLY.t("max_classes") == 4
    assert PRIOR_ONLY.t("fail_epochs") == 1.5 and PRIOR_ONLY.t("max_drift") == 0.05


NAMANAU9 = "namanau9__face-emo-detector-v2__saved_model-training_log"


@pytest.mark.parametrize("cut", [0, 1, 2, 3])
def test_a_short_steady_fall_is_read_through_every_point(cut: int) -> None:
    """fresh48's namanau9 (labelled PASS: a resumed 7-class emotion classifier, twelve epochs,
    loss 1.167 -> 1.076 falling nearly every epoch, val accuracy 0.560 -> 0.583): its loss sits
    at ln 3 by coincidence. Cut by one point, the line through its three whole block medians spans
    6 of 10 intervals and read a 3 % fall, inside the 5 % a settling bias reaches, and it failed;
    through every point it falls 7 %, which a bias settling cannot, so it is not judged at any cut."""
    from dataclasses import replace as _replace

    from .real_logs import public_run
    run = public_run(NAMANAU9)
    if cut:
        run = _replace(run, series={k: type(v)(v.name, v.steps[:-cut], v.values[:-cut]) for k, v in run.series.items()})
    out = prior_only(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW and "not judged" in out.detail, out
