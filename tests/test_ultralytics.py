"""Ultralytics YOLO results.csv written by real CPU trainings (tests/fixtures/ultralytics,
scripts/fixtures/make_ultralytics_fixtures.py, ultralytics 8.4.190): every column read
equals what the trainer passed to save_metrics, step = epoch; loss / eval_loss are the
sums of the train/*_loss and val/*_loss components (detect, segment), classify's own
train/loss and val/loss otherwise; lr = lr/pg0; older releases' space-padded cells;
the sniff; doctor on runs/<task>/train/; bad input is one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import detect, read_run, ultralytics

FIX = Path(__file__).parent / "fixtures" / "ultralytics"
TASKS = ("detect", "segment", "classify")


def results(task: str) -> Path:
    return FIX / task / "runs" / task / "train" / "results.csv"


def logged(task: str) -> list[dict[str, float]]:
    return json.loads((FIX / task / "expected.json").read_text())["epochs"]


@pytest.mark.parametrize("task", TASKS)
def test_columns_equal_what_the_trainer_logged(task):
    raw = ultralytics.read(results(task))
    rows = logged(task)
    epochs = [r["epoch"] for r in rows]
    for key in rows[0]:
        if key == "epoch":
            continue
        steps, values = raw.columns[key]
        np.testing.assert_array_equal(steps, epochs, err_msg=key)
        # save_metrics writes "%.6g": six significant digits of what it was given
        np.testing.assert_allclose(values, [r[key] for r in rows], rtol=5e-6, err_msg=key)
    assert raw.step_column == "epoch"


@pytest.mark.parametrize("task", ("detect", "segment"))
def test_loss_is_the_sum_of_the_components(task):
    run = read_run(results(task))
    assert run.format == "ultralytics"
    rows = logged(task)
    for canon, split in (("loss", "train"), ("eval_loss", "val")):
        parts = [k for k in rows[0] if k.startswith(f"{split}/") and k.endswith("_loss")]
        assert len(parts) >= 3
        want = [sum(r[k] for k in parts) for r in rows]
        np.testing.assert_array_equal(run.series[canon].steps, [r["epoch"] for r in rows])
        # each component went through "%.6g": the (positive) sum is within 5e-6 of it relatively
        np.testing.assert_allclose(run.series[canon].values, want, rtol=5e-6)
    np.testing.assert_allclose(run.series["lr"].values, [r["lr/pg0"] for r in rows], rtol=5e-6)
    assert any(n.startswith("loss = train/box_loss + ") for n in run.notes)


def test_classify_reads_its_own_loss_columns():
    run = read_run(results("classify"))
    rows = logged("classify")
    np.testing.assert_allclose(run.series["loss"].values, [r["train/loss"] for r in rows])
    np.testing.assert_allclose(run.series["eval_loss"].values, [r["val/loss"] for r in rows])
    assert "loss" not in ultralytics.read(results("classify")).columns  # nothing summed


def test_space_padded_cells_of_older_releases(tmp_path):
    """Releases before the `time` column wrote every cell right-aligned in 23 columns ("%23s")."""
    lines = results("detect").read_text().splitlines()
    padded = tmp_path / "results.csv"
    padded.write_text("".join(",".join(f"{c:>23}" for c in ln.split(",")) + "\n" for ln in lines))
    assert detect(padded).name == "ultralytics"
    a, b = ultralytics.read(padded).columns, ultralytics.read(results("detect")).columns
    assert set(a) == set(b)
    for key in a:
        np.testing.assert_array_equal(a[key][0], b[key][0])
        np.testing.assert_array_equal(a[key][1], b[key][1])


def test_sniff_claims_results_csv_and_nothing_else():
    for task in TASKS:
        assert detect(results(task)).name == "ultralytics"
    fixtures = Path(__file__).parent / "fixtures"
    for log in fixtures.rglob("*.csv"):
        if "ultralytics" not in log.parts:
            fmt = detect(log)
            assert fmt is None or fmt.name != "ultralytics", log


def test_doctor_finds_each_run(run_cli, tmp_path):
    for task in TASKS:
        shutil.copytree(FIX / task / "runs", tmp_path / "runs", dirs_exist_ok=True)
    code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    got = {str(Path(r["file"]).relative_to(tmp_path)): r["verdict"] for r in doc["reports"]}
    # Every run is a 6-epoch smoke run whose optimizer never stepped: batch 4 on 8 images is 12
    # batches, and Ultralytics accumulates gradients up to its nominal batch of 64 (16 batches)
    # before its first step. So each val loss repeats to the last printed digit and every score
    # with it (TP-EVAL-METRIC-FROZEN: the evaluation stood still because the weights did);
    # classify's loss also sits at ln 2 with top-1 0.5 (TP-PRIOR-ONLY).
    want = {f"runs/{t}/train/results.csv": "WARN" for t in TASKS}
    assert got == want
    assert code == 0


@pytest.mark.parametrize("body", ["epoch,train/box_loss,lr/pg0\n", "time,train/box_loss,lr/pg0\n1,0.5,0.01\n",
                                  "epoch,train/box_loss,lr/pg0\nx,y,z\n",
                                  "epoch,train/box_loss,train/cls_loss,lr/pg0\n0,0.5,0.3\n1,0.4,0.2\n"])
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, body):
    log = tmp_path / "results.csv"
    log.write_text(body)
    code, out, err = run_cli("epoch", log, "--format", "ultralytics")
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    if body.count("\n") == 3:  # every row shorter than its header: said as such
        assert "no row holds every column of its header (2 row(s) with fewer cells than the header)" in err, err


def test_yolov5_results_csv_synthetic():
    """YOLOv5's results.csv (SYNTHETIC, its Loggers' "%20s"/"%20.5g" format): obj_loss is a
    component too, lr = x/lr0, epochs from 0."""
    log = FIX / "SYNTHETIC_yolov5" / "results.csv"
    want = json.loads((FIX / "SYNTHETIC_yolov5" / "expected.json").read_text())
    rows = [dict(zip(want["keys"], r, strict=True)) for r in want["rows"]]
    assert detect(log).name == "ultralytics"
    run = read_run(log)
    np.testing.assert_array_equal(run.series["loss"].steps, range(12))
    parts = ("train/box_loss", "train/obj_loss", "train/cls_loss")
    np.testing.assert_allclose(run.series["loss"].values, [sum(r[k] for k in parts) for r in rows], rtol=5e-5)
    np.testing.assert_allclose(run.series["lr"].values, [r["x/lr0"] for r in rows], rtol=5e-5)
    assert "eval_loss" in run.series


ROOFTOP = ("asiful-haque__rooftop-detection-size-estimation-and-eco-friendly-infrastructure-planning-using-"
           "deep-learning__rooftop-detection-yolov5-exp2-results")


def test_a_yolov5_row_shorter_than_the_header_is_skipped_not_read_by_position():
    """A real YOLOv5 segmenter's results.csv (public run fresh42/asiful-haque, rebuilt byte for
    byte): epochs 0-24 fill all 20 columns, then a row '25' of 13 cells - the final validation's 8
    metrics and 4 val losses, written from the left under the header's first names. Read by
    position it put mAP50 0.908 where the box loss is and the summed train loss jumped 0.16 ->
    3.43 at its last point; the writer writes every cell of an epoch row, so the short row is not
    one, and it is skipped with a note."""
    import tempfile

    from .test_public_runs import DOCS, public_runs
    (doc,) = [d for d in DOCS if d["id"] == ROOFTOP]
    with tempfile.TemporaryDirectory() as tmp:
        log = public_runs.rebuild(doc, Path(tmp))
        last = log.read_text().splitlines()[-1].split(",")
        header = log.read_text().splitlines()[0].split(",")
        assert (len(header), len(last), int(last[0])) == (20, 13, 25)
        run = read_run(log)
    assert run.series["loss"].steps.tolist() == list(range(25))
    assert run.series["loss"].values.max() < 0.5  # 0.16-0.41 at every epoch the trainer wrote
    assert any("1 row(s) with fewer cells than the header skipped" in n for n in run.notes)


def test_a_short_row_in_another_csv_is_still_padded(tmp_path):
    """Only the writers that write every cell of every row drop a short row: a hand-written CSV
    log that leaves trailing cells out keeps the cells it has."""
    log = tmp_path / "train_log.csv"
    log.write_text("step,loss,val_loss\n1,0.9,0.8\n2,0.7\n3,0.6,0.7\n")
    run = read_run(log)
    assert run.series["loss"].values.tolist() == [0.9, 0.7, 0.6]
    assert run.series["eval_loss"].steps.tolist() == [1.0, 3.0]
