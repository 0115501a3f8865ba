"""The real runs in ../shared/corpus judged as its README expects (the held-out seeds
are judged the same way, so these are not thresholds fitted to six files)."""

from __future__ import annotations

import json

import pytest

EXPECTED_EPOCH = {
    "healthy": ("PASS", set()),
    # The 2650 spike comes after warm-up with the loss already wrecked and unmoved by it:
    # counted (INFO); the run's failure is the loss's (#17: spikes need a consequence).
    "lr_hot": ("FAIL", {"TP-DIVERGE", "TP-GRAD-SPIKE-ISOLATED"}),
    "lr_zero": ("FAIL", {"TP-DEAD-RUN", "TP-ZERO-LR"}),
    "fp16_nan": ("FAIL", {"TP-DIVERGE", "TP-NAN-GRAD"}),
    "bad_labels": ("WARN", set()),
    "overfit": ("WARN", {"TP-OVERFIT"}),
}
EXPECTED_COMPARE = {"lr_hot": "FAIL", "lr_zero": "FAIL", "fp16_nan": "FAIL",
                    "bad_labels": "FAIL", "overfit": "PASS"}


def _doc(run_cli, *argv):
    code, out, _ = run_cli(*argv, "--json")
    return code, json.loads(out)


# bad_labels' README verdict (WARN) was TP-GRAD-SPIKE's on its largest norm, 23.3 at step 25:
# the last warm-up step, in the initial steep drop (loss 18.9 -> 6.4), with 4 points of
# baseline before it and the loss falling on - the false alarm issue #17 removes. Kept as
# a strict expected failure until the corpus README's verdict is revisited (or a rule
# that reads its 18.9-nat start without a vocabulary gives it a WARN of its own).
_README_DISAGREES = {"bad_labels"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason="README verdict rested on a warm-up grad spike (#17)")) if n in _README_DISAGREES
    else n for n in EXPECTED_EPOCH])
def test_epoch_verdicts(corpus, run_cli, name):
    verdict, must_fire = EXPECTED_EPOCH[name]
    code, doc = _doc(run_cli, "epoch", corpus / "gallery42" / name / "trainer_state.json")
    report = doc["reports"][0]
    ids = {f["id"] for f in report["findings"]}
    assert report["verdict"] == verdict
    assert must_fire <= ids
    assert code == {"PASS": 0, "WARN": 0, "FAIL": 1}[verdict]
    if verdict != "FAIL":
        assert not any(f["level"] == "FAIL" for f in report["findings"])


def test_lr_hot_evidence_names_floor_and_raw_min(corpus, run_cli):
    _, doc = _doc(run_cli, "epoch", corpus / "gallery42/lr_hot/trainer_state.json")
    div = next(f for f in doc["reports"][0]["findings"] if f["id"] == "TP-DIVERGE")
    assert div["values"]["raw_min"] == pytest.approx(1.398, abs=1e-3)
    assert div["values"]["raw_end"] == pytest.approx(7.492, abs=1e-3)
    assert div["values"]["ratio"] > 1.5
    assert "step" in div["evidence"] and "through the run" in div["evidence"]


def test_healthy_pass_lists_ran_and_skipped(corpus, run_cli):
    _, doc = _doc(run_cli, "epoch", corpus / "gallery42/healthy/trainer_state.json")
    checks = doc["reports"][0]["checks"]
    assert {"divergence", "dead-run", "grad-spike", "lr", "nan"} <= set(checks["ran"])
    assert "overfit" in checks["skipped"] and "eval_loss" in checks["skipped"]["overfit"]


@pytest.mark.parametrize("name", EXPECTED_COMPARE)
def test_compare_against_healthy(corpus, run_cli, name):
    g = corpus / "gallery42"
    code, doc = _doc(run_cli, "compare", g / "healthy/trainer_state.json", g / name / "trainer_state.json")
    assert doc["reports"][0]["verdict"] == EXPECTED_COMPARE[name]
    assert code == (1 if EXPECTED_COMPARE[name] == "FAIL" else 0)


def test_bad_labels_is_caught_by_its_floor(corpus, run_cli):
    g = corpus / "gallery42"
    _, doc = _doc(run_cli, "compare", g / "healthy/trainer_state.json", g / "bad_labels/trainer_state.json")
    f = {x["id"]: x for x in doc["reports"][0]["findings"]}
    assert f["TP-FLOOR-RATIO"]["values"]["ratio"] > 5
    assert "TP-END-RATIO" in f


def test_compare_n_way_ranks_every_run(corpus, run_cli):
    g = corpus / "gallery42"
    runs = [g / n / "trainer_state.json" for n in ("overfit", "lr_hot", "bad_labels")]
    code, doc = _doc(run_cli, "compare", g / "healthy/trainer_state.json", *runs)
    assert code == 1
    ranked = [row["run"].split("/")[-2] for row in doc["ranking"]]
    assert ranked[0] == "overfit" and set(ranked) == {"overfit", "lr_hot", "bad_labels"}


def test_coqui_log_is_read_and_judged(corpus, run_cli):
    """The XTTS log's raw end/min ratio (1.62) is one lucky batch; block medians show no
    divergence, and the report says so with TP-DIVERGE-NOISE (see RULES.md, README)."""
    code, doc = _doc(run_cli, "epoch", corpus / "coqui_xtts_diverged/trainer_0_log.txt")
    rep = doc["reports"][0]
    assert rep["format"] == "coqui" and rep["records"] >= 1459
    noise = next(f for f in rep["findings"] if f["id"] == "TP-DIVERGE-NOISE")
    assert noise["values"]["raw_ratio"] == pytest.approx(1.62, abs=0.01)
    assert noise["values"]["raw_min_step"] == 48350
    assert code == 0


def test_doctor_judges_all_seven(corpus, run_cli):
    code, doc = _doc(run_cli, "doctor", corpus)
    assert len(doc["reports"]) == 7
    assert doc["worst_verdict"] == "FAIL" and code == 1
    order = [r["verdict"] for r in doc["reports"]]
    rank = {"FAIL": 0, "WARN": 1, "NOT-CHECKED": 2, "PASS": 3}
    assert order == sorted(order, key=rank.__getitem__)
    assert doc["not_judged"] == []
