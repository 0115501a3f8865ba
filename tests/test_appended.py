"""A log that holds several training runs appended one after another is judged as its last
run, and TP-APPENDED-RUNS (INFO) says so (rules/appended.py, applied by build_run). Real
writers' files: Keras 3 CSVLogger(append=True) over two fit() processes
(scripts/fixtures/make_appended_keras_fixtures.py), the stdout of two HF Trainer runs
appended to one file (make_appended_hf_fixtures.py); detectron2 does not install here,
so its metrics.json is built from two copies of the SYNTHETIC one
(make_appended_detectron2_fixtures.py). Resumes stay joined (tests/test_resume.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainproof.cli import main
from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Level
from trainproof.parsers import read_run

FIX = Path(__file__).parent / "fixtures" / "appended"
RESUME = Path(__file__).parent / "fixtures" / "resume"


def _appended(rep) -> dict:
    found = [f for f in rep.findings if f.rule_id == "TP-APPENDED-RUNS"]
    assert len(found) == 1 and found[0].level is Level.INFO
    return dict(found[0].values)


def test_keras_csvlogger_append_is_judged_as_its_last_fit():
    """Two fit() calls appended to one training.csv: epoch 0..7, then 0..4. The judged
    series are the second fit's, as Keras logged them, at its own epochs."""
    want = json.loads((FIX / "keras_appended" / "expected.json").read_text())
    run = read_run(FIX / "keras_appended" / "training.csv")
    np.testing.assert_allclose(run.series["loss"].values, want["second"]["history"]["loss"], rtol=1e-6)
    np.testing.assert_allclose(run.series["eval_loss"].values, want["second"]["history"]["val_loss"], rtol=1e-6)
    assert run.series["loss"].steps.tolist() == [0, 1, 2, 3, 4]
    assert run.meta["appended"]["runs"] == 2 and run.meta["appended"]["counter"] == "epoch"
    rep = judge_run(run)
    assert rep.verdict.value == "PASS"
    info = _appended(rep)
    assert info["count"] == 2 and "0-7, 8 point(s); 0-4, 5 point(s)" in info["ranges"]
    assert any("only the last" in n and "earlier runs are not" in n for n in rep.notes)


def test_keras_runs_read_as_one_curve_were_a_false_failure():
    """What the log gave before: both fits joined as one curve, the second's fresh start a
    rise far over the first's floor."""
    want = json.loads((FIX / "keras_appended" / "expected.json").read_text())
    h1, h2 = want["first"]["history"], want["second"]["history"]
    joined = judge_run(run_from({"loss": h1["loss"] + h2["loss"], "eval_loss": h1["val_loss"] + h2["val_loss"]}))
    assert joined.verdict.value == "FAIL"


def test_hf_trainer_stdout_of_two_trainings_is_judged_as_the_second():
    """Two Trainer runs' printed dicts in one file: the epoch starts over at the second.
    Values are printed to 4 significant digits."""
    want = json.loads((FIX / "hf_appended" / "expected.json").read_text())["second"]["logs"]
    run = read_run(FIX / "hf_appended" / "train.log")
    losses = [d["loss"] for d in want if "loss" in d]
    evals = [d["eval_loss"] for d in want if "eval_loss" in d]
    np.testing.assert_allclose(run.series["loss"].values, losses, rtol=1e-3)
    np.testing.assert_allclose(run.series["eval_loss"].values, evals, rtol=1e-3)
    assert run.series["loss"].steps[0] == 1.0  # the second run's first train dict
    rep = judge_run(run)
    assert rep.verdict.value == "PASS"
    assert _appended(rep)["count"] == 2


def test_detectron2_rerun_from_scratch_is_judged_as_the_rerun():
    """An aborted run (iterations 19..119), then the same training in full, appended to one
    metrics.json: the rerun's iterations, in its own counter, and its losses."""
    lines = json.loads((Path(__file__).parent / "fixtures" / "detectron2" / "expected.json").read_text())["lines"]
    train = [d for d in lines if "total_loss" in d]
    run = read_run(FIX / "detectron2" / "SYNTHETIC_metrics.json")
    s = run.series["loss"]
    assert s.steps.tolist() == [d["iteration"] for d in train]
    np.testing.assert_allclose(s.values, [d["total_loss"] for d in train])
    rep = judge_run(run)
    info = _appended(rep)
    assert info["count"] == 2 and info["counter"] == "step"
    assert "19-119, 6 point(s); 19-199, 10 point(s)" in info["ranges"]
    assert "TP-RESUMED" not in {f.rule_id for f in rep.findings}


def test_a_real_resumed_hf_run_stays_joined():
    """A resume goes back to its checkpoint's step, not to the origin: one run."""
    rep = judge_run(read_run(RESUME / "resumed.jsonl"))
    ids = {f.rule_id for f in rep.findings}
    assert "TP-RESUMED" in ids and "TP-APPENDED-RUNS" not in ids and rep.verdict.value == "PASS"


def test_trained_weights_beginning_the_loop_again_stay_joined():
    """A new Trainer from a checkpoint's weights: counter and schedule from the start, the
    loss carried on - TP-RESUME-REPLAY's case, not a fresh run."""
    rep = judge_run(read_run(RESUME / "restarted.jsonl"))
    ids = {f.rule_id for f in rep.findings}
    assert {"TP-RESUME-REPLAY", "TP-RESUME-WARMUP"} <= ids and "TP-APPENDED-RUNS" not in ids


_FALL = [round(3.0 * 0.9 ** i, 4) for i in range(8)]


@pytest.mark.parametrize("steps,runs,kept", [
    ([10, 20, 30, 40, 50, 60, 70, 80, 50, 100, 150], 2, [50, 100, 150]),  # a rerun logging every 50
    ([10, 20, 30, 40, 50, 60, 70, 80, 60, 70, 80], 1, None),              # resumed from step 50
    ([10, 20, 30, 40, 50, 60, 70, 80, 20, 30, 40], 1, None),              # resumed from step 10
    ([0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2], 2, [0, 1, 2]),                    # counted from 0 again
])
def test_a_new_run_starts_at_the_origin_a_resume_at_its_checkpoint(steps, runs, kept):
    n = len(steps)
    run = run_from({"loss": (_FALL + _FALL)[:n], "steps": steps})
    assert run.meta.get("appended", {"runs": 1})["runs"] == runs
    if kept is not None:
        assert run.series["loss"].steps.tolist() == kept


def test_an_epoch_back_to_a_checkpoint_is_a_resume():
    """Rows in order, the epoch back from 1.6 to 1.0 (a checkpoint), logged every 0.2."""
    epoch = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.0, 1.2, 1.4]
    run = run_from({"loss": (_FALL + _FALL)[:11], "epoch": epoch, "steps": list(range(11))})
    assert "appended" not in run.meta and len(run.series["loss"]) == 11


def test_an_epoch_back_at_its_origin_splits_rows_but_not_a_counted_step():
    """The same epoch back at 0.2: rows numbered in order hold a new run; a log whose step
    column counts on (a trainer_state.json's global step) went on with its weights."""
    from trainproof.parsers import build_run
    from trainproof.parsers.base import RawLog

    epoch = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 0.2, 0.4, 0.6]
    s = np.arange(11, dtype=float)
    cols = {"loss": (s, np.asarray((_FALL + _FALL)[:11])), "epoch": (s, np.asarray(epoch))}
    rows = build_run("x.csv", "example", RawLog(dict(cols), 11), {})
    assert rows.meta["appended"]["runs"] == 2 and rows.series["loss"].steps.tolist() == [0, 1, 2]
    counted = build_run("x.json", "example", RawLog(dict(cols), 11, step_column="step"), {})
    assert "appended" not in counted.meta and len(counted.series["loss"]) == 11


def test_a_second_fit_of_the_same_keras_model_stays_joined():
    """Real Keras 3 (scripts/fixtures/make_keras_two_phase_fixtures.py): one model, fit() at
    lr 1e-2 then fit() again at 1e-4 into one CSVLogger(append=True) file - the epoch column
    reads 0..7, 0..7, but the loss carries on (0.163 -> 0.139), so it is one run, judged whole."""
    want = json.loads((FIX / "keras_two_phase" / "expected.json").read_text())["phases"]
    run = read_run(FIX / "keras_two_phase" / "training.csv")
    assert "appended" not in run.meta
    logged = want["head"]["history"]["loss"] + want["fine_tune"]["history"]["loss"]
    assert np.allclose(run.series["loss"].values, logged, rtol=1e-6)
    assert "TP-APPENDED-RUNS" not in {f.rule_id for f in judge_run(run).findings}


def test_the_carried_level_is_measured_in_log_space():
    """A run that fell 1.63 -> 0.0016 and a second that starts at 0.03 kept almost all of the
    first's fall in absolute terms, a quarter of it by factors: a new run (fresh8's eshaubale,
    two Trainer runs on different tasks in one stdout), split; one that starts where the
    first ended (fresh11's dimitricalmand: 0.190 -> 0.189 at a 100x lower LR) is joined."""
    from trainproof.parsers import build_run
    from trainproof.parsers.base import RawLog

    def rows(loss: list[float], epoch: list[int]):  # a CSV's rows, numbered in order
        s = np.arange(len(loss), dtype=float)
        cols = {"loss": (s, np.asarray(loss)), "epoch": (s, np.asarray(epoch, dtype=float))}
        return build_run("training.csv", "example", RawLog(cols, len(loss)), {})

    fall = [1.63, 0.072, 0.022, 0.012, 0.0076, 0.005, 0.0038, 0.0032, 0.0027, 0.0022, 0.0016]
    new = rows([*fall, 0.137, 0.0276, 0.0147, 0.01], [*range(11), 0, 1, 2, 3])
    assert new.meta["appended"]["runs"] == 2
    on = rows([0.266, 0.206, 0.201, 0.199, 0.198, 0.190, 0.189, 0.188, 0.186, 0.187], [0, 1, 2, 3, 4, 5, 0, 1, 2, 3])
    assert "appended" not in on.meta and len(on.series["loss"]) == 10


def test_a_new_run_that_drops_within_its_first_intervals_is_a_new_run():
    """Detectron2 re-runs from scratch appended to one metrics.json (public run
    fresh19/kim-seong-rok): each starts at the log's start level, ~3.7, at its first logged
    iteration and is at ~1.7 by its second - the median of its first three points looks
    carried on, its first point does not. Trained weights carried on start at the carried
    level from their first point and stay joined."""
    steps = [float(s) for s in range(19, 320, 20)]
    fall = [3.9, 1.7, 1.65, 1.6, 1.55, 1.5, 1.45, 1.42, 1.4, 1.38, 1.35, 1.33, 1.3, 1.28, 1.26, 1.25]
    again = run_from({"loss": fall + fall, "steps": steps + steps})
    assert again.meta["appended"]["runs"] == 2 and len(again.series["loss"]) == len(fall)
    on = run_from({"loss": [*fall, 1.27, 1.26, 1.25, 1.24], "steps": steps + steps[:4]})
    assert "appended" not in on.meta


def test_an_evaluation_at_the_end_of_each_run_is_split_with_it():
    """One eval point per run, at the same step both times: it goes with its run."""
    steps = [*range(1, 9), *range(1, 9)]
    loss = _FALL + _FALL
    s = np.asarray(steps, dtype=float)
    run = run_from({"loss": loss, "steps": steps})  # the loss alone, then with the eval column
    from trainproof.parsers import build_run
    from trainproof.parsers.base import RawLog

    cols = {"loss": (s, np.asarray(loss)), "eval_loss": (np.array([8.0, 8.0]), np.array([2.5, 2.4]))}
    run = build_run("x.jsonl", "example", RawLog(cols, s.size), {})
    assert run.series["eval_loss"].values.tolist() == [2.4]
    assert run.series["loss"].values.tolist() == _FALL


def test_a_column_that_cannot_be_placed_is_left_out_with_a_note():
    """An LR logged in the first run only: which run it belongs to is not told by steps."""
    from trainproof.parsers import build_run
    from trainproof.parsers.base import RawLog

    s = np.asarray([*range(1, 9), *range(1, 9)], dtype=float)
    cols = {"loss": (s, np.asarray(_FALL + _FALL)), "lr": (s[:8], np.full(8, 1e-3))}
    run = build_run("x.jsonl", "example", RawLog(cols, s.size), {})
    assert "lr" not in run.series and any("'lr' could not be split" in n for n in run.notes)


def test_compare_reads_the_last_run_and_says_so(capsys):
    """compare reads logs through the same reader: the last runs are compared (epochs 0..4
    on both sides here), and its report says each side was cut."""
    log = str(FIX / "keras_appended" / "training.csv")
    assert main(["compare", log, log]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "steps 0..4" in out and "run " in out and "baseline " in out
    assert out.count("this log holds 2 training runs appended") == 2


def test_many_appended_runs_keep_the_last_and_say_at_least():
    """Fifty runs of 8 steps: the parser describes the first and last 20 boundaries, so the
    count is a lower bound; the run judged is still the last."""
    run = run_from({"loss": _FALL * 50, "steps": list(range(1, 9)) * 50})
    assert run.series["loss"].steps.tolist() == list(range(1, 9)) and run.series["loss"].values.tolist() == _FALL
    info = _appended(judge_run(run))
    assert info["how_many"].startswith("at least ") and "the last (step 1-8, 8 point(s))" in \
        next(f.evidence for f in judge_run(run).findings if f.rule_id == "TP-APPENDED-RUNS")


def test_keras_fit_stdout_of_two_fits_is_judged_as_the_second(tmp_path):
    """`python train.py >> train.log` twice: two real Keras 3 model.fit printouts (the hot-LR
    run, then the healthy one) in one file. The step counts on across fits; the printed
    `Epoch N` starts over, so the healthy fit alone is judged, equal to its History as printed."""
    keras = Path(__file__).parent / "fixtures" / "textlog" / "keras_fit"
    log = tmp_path / "train.log"
    log.write_bytes((keras / "hot_v2.log").read_bytes() + (keras / "healthy_v2.log").read_bytes())
    want = json.loads((keras / "healthy_v2.expected.json").read_text())["history"]
    run = read_run(log)
    assert run.meta["appended"]["runs"] == 2
    np.testing.assert_allclose(run.series["loss"].values, want["loss"], rtol=1e-3)
    rep = judge_run(run)
    assert rep.verdict.value == "PASS" and _appended(rep)["count"] == 2
    assert judge_run(read_run(keras / "hot_v2.log")).verdict.value == "FAIL"  # the first fit alone
