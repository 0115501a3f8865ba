"""Which raw column stands for a metric when several name it (parsers/columns.choose): the
alias table's preference (per-step before per-epoch), unless the preferred column holds fewer
than half the points of another. Raised by public run fresh26/yn0226 (a real Lightning
CSVLogger file: 50 steps, logged every 50, so `train_loss_step` holds one point beside a
ten-point `train_loss_epoch`), where the one point was read as the train curve and a run
labelled 'overfitting' failed TP-EVAL-DIVERGE because its train loss 'did not fall'."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from trainproof.engine import judge_run
from trainproof.parsers import build_run, read_run
from trainproof.parsers.base import RawLog
from trainproof.parsers.columns import choose

from .conftest import ROOT
from .real_logs import public_run
from .test_public_runs import DOCS, public_runs


def _cols(**points: int) -> dict:
    return {name: (np.arange(float(n)), np.linspace(2.0, 1.0, n)) for name, n in points.items()}


def test_the_per_step_column_wins_when_it_holds_the_curve() -> None:
    cols = _cols(train_loss_step=120, train_loss_epoch=10)
    run = build_run("metrics.csv", "lightning", RawLog(cols, 130), {})
    assert len(run.series["loss"]) == 120


def test_a_per_step_column_logged_once_gives_way() -> None:
    cols = _cols(train_loss_step=1, train_loss_epoch=10)
    run = build_run("metrics.csv", "lightning", RawLog(cols, 11), {})
    assert len(run.series["loss"]) == 10
    assert choose(cols, {}, {k: len(v) for k, (_, v) in cols.items()})["loss"] == "train_loss_epoch"
    assert choose(cols, {})["loss"] == "train_loss_step"  # by name alone, the table's preference


def test_map_still_decides() -> None:
    cols = _cols(train_loss_step=1, train_loss_epoch=10)
    run = build_run("metrics.csv", "lightning", RawLog(cols, 11), {"loss": "train_loss_step"})
    assert len(run.series["loss"]) == 1


def test_the_public_run_reads_its_epoch_curve_and_no_longer_fails() -> None:
    (doc,) = [d for d in DOCS if d["id"] == "yn0226__npapp__lightning_logs-version_16-metrics"]
    with tempfile.TemporaryDirectory() as tmp:
        run = read_run(public_runs.rebuild(doc, Path(tmp)))
    assert len(run.series["loss"]) == 10
    assert abs(run.series["loss"].values[0] - 1.08) < 1e-3  # the first epoch's mean, not the one batch
    assert "TP-EVAL-DIVERGE" not in {f.rule_id for f in judge_run(run).findings}


def test_the_real_lightning_fixture_keeps_its_per_step_curve() -> None:
    """The real Lightning fixture: 40 train_loss_step points beside 4 train_loss_epoch ones."""
    path = ROOT / "tests" / "fixtures" / "core" / "lightning" / "metrics.csv"
    rows = [line.split(",") for line in path.read_text().splitlines()]
    at = rows[0].index("train_loss_step")
    assert len(read_run(path).series["loss"]) == sum(1 for r in rows[1:] if r[at]) == 40


# ---------------------------------------------------------------- a held-out loss per validation batch

VAL_STEP = ROOT / "tests" / "fixtures" / "core" / "val_step"


def test_a_per_batch_validation_loss_never_stands_for_the_eval_loss() -> None:
    """Lightning's `val_loss_step` (on_step inside validation) is one validation batch's loss,
    counted by a validation-batch index: however many points it holds, `val_loss_epoch` is the
    evaluation. Before, the size rule above let the 36 batches win over the 6 validations."""
    cols = _cols(val_loss_step=2136, val_loss_epoch=8, train_loss_step=4312)
    assert choose(cols, {}, {k: len(v) for k, (_, v) in cols.items()})["eval_loss"] == "val_loss_epoch"
    only = _cols(val_loss_step=30, train_loss=30)  # nothing else names it: read, as before
    assert choose(only, {}, {k: len(v) for k, (_, v) in only.items()})["eval_loss"] == "val_loss_step"
    assert choose(cols, {"eval_loss": "val_loss_step"})["eval_loss"] == "val_loss_step"  # --map decides


def test_the_real_lightning_file_reads_its_validations() -> None:
    """A real Lightning 2.6 run (scripts/fixtures/make_val_step_lightning_fixture.py) logging
    val_loss on_step and on_epoch: the eval loss read is the six validations the run's own
    callback saw, at the training steps they were taken."""
    expected = json.loads((VAL_STEP / "expected.json").read_text())["validations"]
    ev = read_run(VAL_STEP / "lightning_logs" / "version_0" / "metrics.csv").series["eval_loss"]
    assert ev.steps.tolist() == [p["step"] for p in expected]
    assert np.allclose(ev.values, [p["val_loss_epoch"] for p in expected], rtol=1e-6)


def test_the_public_run_no_longer_fails_on_its_validation_batches() -> None:
    """fresh41's germankoch (labelled WARN: val_loss_epoch flat at 0.233-0.245 over 8
    validations) failed TP-EVAL-DIVERGE at its first scoring on 2,136 validation batches
    (0.11 -> 0.29, the last batches of each pass the hardest)."""
    run = public_run("germankoch__red-hack-time-series-analyzer__notebooks-lightning_logs-version_0-metrics")
    assert len(run.series["eval_loss"]) == 8
    assert "TP-EVAL-DIVERGE" not in {f.rule_id for f in judge_run(run).findings}
