"""Short, epoch-level logs: a 4-epoch Keras or fastai CSVLogger file and a TRL run with
4 logged points are judged by the checks that can run on so few points, and NOT-CHECKED
only when no loss-curve check could. The logs were written by the real libraries
(tests/fixtures/core/short, made by scripts/fixtures/make_{keras_csv,fastai_csv,trl}_fixtures.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Level, Location, Verdict
from trainproof.parsers import read_run
from trainproof.rules import catalogue, checks
from trainproof.rules.live import stop_grounds

from .conftest import FIXTURES

SHORT = FIXTURES / "short"
LOGS = {
    "keras_healthy": "training.csv", "keras_rising": "training.csv",
    "fastai_healthy": "history.csv", "fastai_rising": "history.csv",
    "trl_healthy": "trainer_state.json", "trl_lr_hot": "trainer_state.json",
}


def _expected_loss(case: str) -> tuple[list[float], list[float] | None]:
    exp = json.loads((SHORT / case / "expected.json").read_text())
    if case.startswith("keras"):
        return exp["history"]["loss"], exp["history"]["val_loss"]
    if case.startswith("fastai"):
        return [r[0] for r in exp["values"]], [r[1] for r in exp["values"]]
    return exp["loss"], None


@pytest.mark.parametrize("case", sorted(LOGS))
def test_the_series_read_are_what_the_library_logged(case):
    run = read_run(SHORT / case / LOGS[case])
    loss, val = _expected_loss(case)
    assert len(loss) == 4
    np.testing.assert_allclose(run.series["loss"].values, loss, rtol=1e-12)
    if val is not None:
        np.testing.assert_allclose(run.series["eval_loss"].values, val, rtol=1e-12)


@pytest.mark.parametrize("case", ["keras_healthy", "keras_rising"])
@pytest.mark.parametrize("name", ["training.log", "history.txt"])
def test_a_keras_csvlogger_file_named_as_keras_documents_it_is_read_as_csv(case, name, tmp_path, run_cli):
    """Keras documents `CSVLogger('training.log')`: the same bytes under a text name are the
    CSV log, not a stdout capture; doctor finds it in a run directory too."""
    log = tmp_path / "run" / name
    log.parent.mkdir()
    log.write_bytes((SHORT / case / LOGS[case]).read_bytes())
    run = read_run(log)
    loss, val = _expected_loss(case)
    assert run.format == "csv"
    np.testing.assert_allclose(run.series["loss"].values, loss, rtol=1e-12)
    np.testing.assert_allclose(run.series["eval_loss"].values, val, rtol=1e-12)
    code, out, _ = run_cli("doctor", log.parent, "--json")
    reports = json.loads(out)["reports"]
    assert [r["format"] for r in reports] == ["csv"]


@pytest.mark.parametrize("text", ["epoch,loss,val_loss\n", "epoch loss\n1 0.5\n", "step,loss\n1,0.5\n",
                                  "epoch,loss\nEpoch 1/3 loss: 0.5\n"])
def test_a_text_file_is_a_csv_log_only_when_it_is_csvloggers_beyond_doubt(text, tmp_path):
    from trainproof.parsers import detect

    log = tmp_path / "train.log"
    log.write_text(text)
    fmt = detect(log)
    assert fmt is None or fmt.name != "csv"


@pytest.mark.parametrize("case", sorted(k for k in LOGS if k.endswith("healthy")))
def test_a_healthy_short_run_passes_and_says_what_it_skipped(case, run_cli):
    code, out, _ = run_cli("epoch", SHORT / case / LOGS[case], "--json")
    rep = json.loads(out)["reports"][0]
    assert code == 0 and rep["verdict"] == "PASS"
    assert {"nan", "rise"} <= set(rep["checks"]["ran"])
    skipped = rep["checks"]["skipped"]
    assert skipped["divergence"] == "4 finite loss points, needs 5"
    assert skipped["dead-run"] == "4 finite loss points, needs 10"
    if not case.startswith("trl"):  # the CSVLoggers log validation loss every epoch
        assert "overfit" in rep["checks"]["ran"]


@pytest.mark.parametrize("case", sorted(k for k in LOGS if not k.endswith("healthy")))
def test_a_short_run_whose_loss_rose_fails(case, run_cli):
    code, out, _ = run_cli("epoch", SHORT / case / LOGS[case], "--json")
    rep = json.loads(out)["reports"][0]
    assert code == 1 and rep["verdict"] == "FAIL"
    rose = next(f for f in rep["findings"] if f["id"] == "TP-LOSS-ROSE")
    loss, _ = _expected_loss(case)
    assert rose["values"]["start"] == pytest.approx(loss[0]) and rose["values"]["end"] == pytest.approx(loss[-1])


def test_one_point_is_still_not_checked():
    rep = judge_run(run_from({"loss": [1.0]}))
    assert rep.verdict is Verdict.NOT_CHECKED
    assert "rise" in rep.skipped and "needs 2" in rep.skipped["rise"]


def test_not_checked_when_only_checks_of_other_things_ran():
    """nan and lr ran, but no check of the loss curve could (a loss that is not positive
    has no end/start ratio): that is not a verdict about the curve."""
    rep = judge_run(run_from({"loss": [-1.0, -2.0, -3.0], "lr": [1e-3] * 3}))
    assert {"nan", "lr"} <= set(rep.ran) and rep.verdict is Verdict.NOT_CHECKED
    assert "not positive" in rep.skipped["rise"]


def test_from_divergence_min_points_on_the_rise_is_judged_in_units_of_noise():
    """A loss that grew fivefold in five points: TP-DIVERGE's noise estimate reads a steady
    growth as noise (its gap is under 4 standard errors), but the end sits 3 standard
    errors and 300 % above the first point - TP-LOSS-ROSE's test for logs of any length
    from TP-DIVERGE's min_points on."""
    rep = judge_run(run_from({"loss": [1.0, 2.0, 3.0, 4.0, 5.0]}))
    assert {"divergence", "rise"} <= set(rep.ran)
    rose = next(f for f in rep.findings if f.rule_id == "TP-LOSS-ROSE")
    assert rose.values["k"] == 3 and rose.values["end"] == 4.0 and rose.values["gap_se"] > 2.5
    assert "standard errors of the log's own noise" in rose.evidence


def test_a_rise_that_is_also_a_divergence_is_reported_once():
    loss = [2.0, 1.5, 1.2, 1.0, 0.9, 0.85, 0.8, 1.5, 2.5, 4.0, 6.0, 8.0, 9.0, 9.5]
    ids = {f.rule_id for f in judge_run(run_from({"loss": loss})).findings}
    assert "TP-DIVERGE" in ids and "TP-LOSS-ROSE" not in ids and "TP-DEAD-RUN" not in ids


def test_every_judging_single_run_rule_declares_the_points_it_needs():
    statements = {"TP-PASS", "TP-NO-RECORDS", "TP-NO-LOSS", "TP-NOT-CHECKED"}
    judged = {r.id for c in checks("single_run") for r in c.rules}
    rules = catalogue()
    missing = sorted(i for i in judged - statements if "min_points" not in rules[i].thresholds)
    assert missing == []


def test_zero_loss_onset_points_follow_its_tail():
    r = catalogue()["TP-ZERO-LOSS-ONSET"]
    assert r.t("min_points") == r.t("min_tail") + 1


def test_the_live_callback_waits_for_patience_before_stopping_on_a_rise():
    """A rise judged on the first points of a long live run is a progress verdict: like
    TP-DEAD-RUN it stops a run only after the patience share of its schedule."""
    rep = judge_run(run_from({"loss": [2.0, 3.0, 4.0]}))
    assert rep.verdict is Verdict.FAIL
    assert stop_grounds(rep, step=3, scheduled=100) == []
    assert [f.rule_id for f in stop_grounds(rep, step=60, scheduled=100)] == ["TP-LOSS-ROSE"]
    assert all(f.level is not Level.FAIL or f.location == Location("example.jsonl", 3.0)
               for f in rep.findings)
