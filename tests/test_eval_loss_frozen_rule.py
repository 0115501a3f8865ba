"""TP-EVAL-LOSS-FROZEN (rules/eval_frozen.py): an eval loss within TP-FLAT's band of its median
(or the log's printed precision) at every one of five or more evaluations - the evaluated model
never changed its outputs on held-out data.

Real cases: fresh17's alptigingorkem (a Lightning stock regressor whose val loss is
0.016369-0.016371 at all 11 validations and val RMSE identical, labelled FAIL before any tool
ran, passed at its first scoring), the galleries' LR-0 runs, and every other public run whose
eval loss held still (each labelled broken). Where a held-out score froze beside it,
TP-EVAL-METRIC-FROZEN reports both and this rule steps aside."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from trainproof.examples import run_from
from trainproof.model import Skip, SkipKind
from trainproof.parsers import read_run
from trainproof.rules.eval_frozen import EVAL_LOSS_FROZEN, eval_loss_frozen, eval_metric_frozen

from .conftest import ROOT
from .real_logs import DOCS, fires_on, local, public, public_runs

RULE = "TP-EVAL-LOSS-FROZEN"
REGRESSOR = "alptigingorkem-coder__bist30_ai_trader__lightning_logs-version_7-metrics"


def _fires(run) -> bool:
    out = eval_loss_frozen(run)
    return not isinstance(out, Skip) and bool(out)


def _run(eval_loss: list[float], loss: list[float] | None = None):
    n = len(eval_loss)
    return run_from({"steps": list(range(1, n + 1)), "val_loss": eval_loss,
                     "loss": loss if loss is not None else list(np.geomspace(2.0, 1.0, n))})


def test_fires_on_the_regressor_that_predicts_a_constant() -> None:
    doc = next(d for d in DOCS if d["id"] == REGRESSOR)
    with tempfile.TemporaryDirectory() as tmp:
        out = eval_loss_frozen(read_run(public_runs.rebuild(doc, Path(tmp))))
    assert isinstance(out, list) and [f.rule_id for f in out] == [RULE]
    v = out[0].values
    assert v["n"] == 11 and v["spread"] < 3e-6 and v["band"] == pytest.approx(1.637e-5, rel=1e-3)


def test_on_the_real_logs_it_fires_only_where_the_evaluation_stood_still() -> None:
    """In-sample public runs: each one it fires on was labelled broken by its reader. Local logs:
    the galleries' LR-0 runs (the Ultralytics fixtures whose optimizer never stepped, and the
    Lightning run without its bias, are TP-EVAL-METRIC-FROZEN's: a score froze beside)."""
    labels = {d["id"]: d["label"] for d in DOCS}
    fired = fires_on(eval_loss_frozen, public())
    assert fired and all(labels[i]["broken"] for i in fired), fired
    paths = {str(Path(p).relative_to(ROOT)) for p in fires_on(eval_loss_frozen, local())}
    assert paths and all("/lr_zero/" in p for p in paths), paths
    assert {p.split("/")[1] for p in paths} == {"gallery", "gallery2"}


def test_the_catalogue_examples() -> None:
    assert _fires(run_from(dict(EVAL_LOSS_FROZEN.fires.data)))
    assert not _fires(run_from(dict(EVAL_LOSS_FROZEN.passes.data)))


def test_the_band_is_flats_share_of_the_median_or_the_printed_precision() -> None:
    assert _fires(_run([0.75, 0.7502, 0.7504, 0.7501, 0.7503, 0.7505, 0.7504, 0.7506]))  # 0.08 %
    assert not _fires(_run([0.75, 0.752, 0.754, 0.751, 0.753, 0.755, 0.754, 0.756]))  # 0.8 %
    # printed at 2 decimals: one step of the last digit is all the log can show
    assert _fires(_run([0.75, 0.76, 0.75, 0.76, 0.75, 0.75]))
    assert not _fires(_run([0.75, 0.77, 0.75, 0.76, 0.75, 0.74]))


def test_too_few_evaluations_an_appended_log_and_no_eval_loss_are_skips() -> None:
    out = eval_loss_frozen(_run([0.75] * 4))
    assert isinstance(out, Skip) and out.kind is SkipKind.TOO_FEW
    assert _fires(_run([0.75] * 5))
    run = _run([0.75] * 8)
    out = eval_loss_frozen(replace(run, meta={**run.meta, "appended": {"runs": 2}}))
    assert isinstance(out, Skip) and out.kind is SkipKind.DEGENERATE
    out = eval_loss_frozen(run_from({"loss": [1.0, 0.9, 0.8, 0.7, 0.6]}))
    assert isinstance(out, Skip) and out.kind is SkipKind.NO_DATA


def test_a_frozen_score_beside_it_is_left_to_tp_eval_metric_frozen() -> None:
    data = {"steps": list(range(1, 9)), "loss": list(np.geomspace(2.0, 1.0, 8)), "val_loss": [0.75] * 8,
            "val_accuracy": [0.5] * 8}
    run = run_from(data)
    assert eval_metric_frozen(run)
    out = eval_loss_frozen(run)
    assert isinstance(out, Skip) and out.kind is SkipKind.COVERED


@pytest.mark.parametrize("factor", [1 / np.log(2), 1000.0, 1e-3])
def test_the_verdict_survives_other_units_and_thinning(factor: float) -> None:
    still = [0.016369, 0.01637, 0.01637, 0.016371, 0.01637, 0.016369, 0.01637, 0.01637, 0.016371, 0.01637]
    moving = list(np.geomspace(0.0164, 0.0137, 10))
    for ev, want in ((still, True), (moving, False)):
        assert _fires(_run([x * factor for x in ev])) is want
        assert _fires(_run(ev[::2])) is want


def test_the_public_regressor_file_is_the_one_cited() -> None:
    doc = json.loads((ROOT / "public_runs" / "fresh17" / f"{REGRESSOR}.json").read_text())
    assert doc["label"]["broken"] and doc["source"]["writer"] == "lightning_csv"
