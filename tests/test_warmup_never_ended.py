"""TP-WARMUP-NEVER-ENDED (issue #17, fresh5's jeevakrishna): a finished run whose LR was
still rising at its end, and whose loss made no clear gain, is a WARN; a checkpoint cut
mid-run with the same LR curve stays TP-TOO-EARLY; a finished run in warm-up that learned
anyway keeps TP-TOO-EARLY's INFO. The real public-run series, the plan read from max_steps
(global_step) or num_train_epochs, and the generated boundaries."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Level, Run, Series
from trainproof.parsers import read_run
from trainproof.rules.warmup_end import warmup_never_ended

from .real_logs import fires_on, local, public
from .test_public_runs import DOCS, public_runs

JEEVA = "jeevakrishna__food-focus-api__results-checkpoint-60-trainer_state"


def _public(name: str) -> Run:
    doc = next(d for d in DOCS if d["id"] == name)
    with tempfile.TemporaryDirectory() as tmp:
        return read_run(public_runs.rebuild(doc, Path(tmp)))


def _ids(run: Run) -> dict[str, Level]:
    return {f.rule_id: f.level for f in judge_run(run).findings}


def test_the_finished_run_whose_warm_up_never_ended_warns():
    run = _public(JEEVA)
    report = judge_run(run)
    ids = {f.rule_id: f for f in report.findings}
    assert ids["TP-WARMUP-NEVER-ENDED"].level == Level.WARN and "TP-TOO-EARLY" not in ids
    ev = ids["TP-WARMUP-NEVER-ENDED"].evidence
    assert "global_step 60 of max_steps 60" in ev and "1e-06 to 6e-06" in ev and "a 1.7% gain" in ev
    assert report.verdict.value == "WARN"


def test_the_same_curve_cut_mid_run_is_too_early():
    run = _public(JEEVA)
    cut = replace(run, meta={**run.meta, "global_step": 40, "max_steps": 60})
    assert warmup_never_ended(cut) == []
    assert _ids(cut).get("TP-TOO-EARLY") == Level.INFO and "TP-WARMUP-NEVER-ENDED" not in _ids(cut)
    longer = replace(run, meta={**run.meta, "max_steps": 600})
    assert warmup_never_ended(longer) == [] and "TP-TOO-EARLY" in _ids(longer)


def _warm(gain: float, meta: dict, n: int = 10, epochs: float | None = None) -> Run:
    rng = np.random.default_rng(0)
    loss = 3.0 * np.linspace(1.0, 1.0 - gain, n) * np.exp(rng.normal(0, 0.003, n))
    cols = {"loss": loss.tolist(), "lr": [1e-6 * (i + 1) for i in range(n)]}
    run = run_from(cols)
    if epochs is not None:
        steps = run.series["loss"].steps
        run = replace(run, series={**run.series, "epoch": Series("epoch", steps, steps / n * epochs)})
    return replace(run, meta={**run.meta, **meta})


def test_the_plan_from_max_steps_or_epochs():
    assert warmup_never_ended(_warm(0.02, {"max_steps": 10}))
    assert not warmup_never_ended(_warm(0.02, {"max_steps": 11}))
    assert warmup_never_ended(_warm(0.02, {"num_train_epochs": 5}, epochs=4.99))  # HF's 4.99
    assert not warmup_never_ended(_warm(0.02, {"num_train_epochs": 5}, epochs=4.5))
    assert not warmup_never_ended(_warm(0.02, {}))  # no plan: in progress as far as anyone knows


def test_a_clear_gain_learned_anyway_and_keeps_the_info():
    assert warmup_never_ended(_warm(0.09, {"max_steps": 10}))
    learned = _warm(0.11, {"max_steps": 10})
    assert warmup_never_ended(learned) == []
    ids = _ids(learned)
    assert ids.get("TP-TOO-EARLY") == Level.INFO and "TP-WARMUP-NEVER-ENDED" not in ids


def test_which_real_logs_it_finds():
    # Finished in warm-up with under 10 % gain: the broken jeevakrishna, fresh2's WARN-labelled
    # mohamedyoussef06 ("ends inside warm-up, under-trained"), fresh5's broken macyrm (its FAIL is
    # TP-PRIOR-ONLY's) and design's raiff1982 (labelled PASS, "just short": 7.7 % in a 50-step
    # run whose LR rose to its last step - arguable). Every run labelled PASS that finished out
    # of warm-up is silent; so is every local log.
    assert fires_on(warmup_never_ended, public()) == {
        JEEVA, "mohamedyoussef06__ai201-project3-takemeter__trainer_state",
        "macyrm__buildanything__results-checkpoint-5-trainer_state",
        "raiff1982__theai__codette_trained_model-checkpoint-50-trainer_state"}
    assert fires_on(warmup_never_ended, local()) == set()
