"""MMEngine vis_data/scalars.json written by real Runner trainings (tests/fixtures/mmengine,
scripts/fixtures/make_mmengine_fixtures.py, mmengine 0.10.7): train lines at their global
iteration with every value equal to what LocalVisBackend was given; validation lines,
whose step is the epoch number in epoch-based training, placed at the iteration the
epoch ended; iter-based validation at its own iteration, also when its step is an epoch
count that never advances (step 0: kept at the last iteration logged before it); `time`
read as step_time; the sniff, also with a validation line first; doctor judging
scalars.json once; bad input is one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import detect, mmengine, read_run

FIX = Path(__file__).parent / "fixtures" / "mmengine"
ITERS_PER_EPOCH = 16  # 64 samples, batch 4


def scalars(kind: str) -> Path:
    return next((FIX / kind).glob("work_dirs/*/*/vis_data/scalars.json"))


def calls(kind: str) -> list[dict]:
    return json.loads((FIX / kind / "expected.json").read_text())["calls"]


def split(kind: str) -> tuple[list[dict], list[dict]]:
    train = [c for c in calls(kind) if "iter" in c["scalars"]]
    val = [c for c in calls(kind) if "iter" not in c["scalars"]]
    return train, val


@pytest.mark.parametrize("kind", ("epoch", "iter"))
def test_train_lines_equal_what_mmengine_logged(kind):
    raw = mmengine.read(scalars(kind))
    train, _ = split(kind)
    steps = [c["step"] for c in train]
    for key, name in (("loss", "loss"), ("lr", "lr"), ("data_time", "data_time"), ("time", "step_time")):
        got_s, got_v = raw.columns[name]
        np.testing.assert_array_equal(got_s, steps, err_msg=key)
        np.testing.assert_array_equal(got_v, [c["scalars"][key] for c in train], err_msg=key)
    assert "time" not in raw.columns and raw.step_column == "step"
    assert any("seconds per iteration" in n for n in raw.notes)


def test_epoch_based_validation_at_the_iteration_its_epoch_ended():
    raw = mmengine.read(scalars("epoch"))
    _, val = split("epoch")
    assert [c["step"] for c in val] == [1, 2, 3, 4]  # what mmengine wrote: epoch numbers
    for key in ("toy/mse", "toy/mae"):
        steps, values = raw.columns[key]
        np.testing.assert_array_equal(steps, [ITERS_PER_EPOCH * c["step"] for c in val])
        np.testing.assert_array_equal(values, [c["scalars"][key] for c in val])
    # the validation loop's own timings are not the training loop's
    np.testing.assert_array_equal(raw.columns["val/time"][1], [c["scalars"]["time"] for c in val])
    assert any("epochs of 16 iterations" in n for n in raw.notes)
    run = read_run(scalars("epoch"))
    assert run.series["loss"].steps.tolist() == [c["step"] for c in split("epoch")[0]]
    assert run.notes and not any("resum" in n or "restart" in n for n in run.notes)
    assert "resumes" not in run.meta


def test_iter_based_validation_at_its_own_iteration():
    raw = mmengine.read(scalars("iter"))
    _, val = split("iter")
    assert [c["step"] for c in val] == [25, 50, 75, 100]
    steps, values = raw.columns["toy/mse"]
    np.testing.assert_array_equal(steps, [25, 50, 75, 100])
    np.testing.assert_array_equal(values, [c["scalars"]["toy/mse"] for c in val])


def test_train_lines_without_epoch_yet_epoch_steps(tmp_path):
    """Validation steps below the iterations already logged count epochs even when the
    train lines carry no `epoch`: each goes to the last iteration logged before it."""
    lines = [{"lr": 0.02, "data_time": 0.01, "loss": 2.0 - i / 10, "time": 0.4, "iter": 50 * i, "step": 50 * i}
             for i in range(1, 9)]
    lines.insert(4, {"coco/bbox_mAP": 0.1, "data_time": 0.01, "time": 0.1, "step": 1})
    lines.append({"coco/bbox_mAP": 0.2, "data_time": 0.01, "time": 0.1, "step": 2})
    log = tmp_path / "scalars.json"
    log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    raw = mmengine.read(log)
    assert raw.columns["coco/bbox_mAP"][0].tolist() == [200.0, 400.0]
    assert raw.columns["loss"][0].tolist() == [50.0 * i for i in range(1, 9)]


def test_sniff_claims_mmengine_logs_and_nothing_else():
    # iter_epochstep_sparse's first line is a validation line (written before the first train line)
    assert "iter" not in json.loads(scalars("iter_epochstep_sparse").read_text().splitlines()[0])
    for kind in ("epoch", "iter", "iter_epochstep", "iter_epochstep_sparse"):
        for log in scalars(kind).parent.glob("*.json"):
            assert detect(log).name == "mmengine", log
    fixtures = Path(__file__).parent / "fixtures"
    for log in fixtures.rglob("*.json*"):
        if "mmengine" not in log.parts and log.is_file():
            fmt = detect(log)
            assert fmt is None or fmt.name != "mmengine", log


def test_doctor_judges_scalars_json_once(run_cli, tmp_path):
    shutil.copytree(FIX / "epoch" / "work_dirs", tmp_path / "work_dirs")
    code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    assert [Path(r["file"]).name for r in doc["reports"]] == ["scalars.json"]
    assert doc["reports"][0]["verdict"] == "PASS" and code == 0
    assert [Path(n["file"]).name for n in doc["not_judged"]] == [scalars("epoch").parent.parent.name + ".json"]


@pytest.mark.parametrize("body", [b"", b"\x00\x01\x02 not json\n", b'{"step": 1, "iter": 1\n',
                                  b'["step", "iter"]\n'])
def test_bad_input_is_exit_2(run_cli, tmp_path, body):
    """As for any JSON-lines log: nothing readable is TP-NO-RECORDS, exit 2, no traceback."""
    log = tmp_path / "scalars.json"
    log.write_bytes(body)
    code, out, err = run_cli("epoch", log, "--format", "mmengine", "--json")
    assert code == 2, (out, err)
    assert "Traceback" not in err + out
    assert json.loads(out)["reports"][0]["verdict"] == "NOT-CHECKED"


@pytest.mark.parametrize("kind", ("iter_epochstep", "iter_epochstep_sparse"))
def test_iter_based_validation_with_an_epoch_step_is_kept_where_it_ran(kind):
    """An IterBasedTrainLoop with the by-epoch defaults (scripts/fixtures/make_mmengine_fixtures.py):
    runner.epoch never advances, so every validation line says step 0 while the train lines say
    epoch 1. Each is kept, at the last train iteration logged before it - the iteration it ran
    at when that iteration was logged, 0 when it came before the first train line - in the
    order written, between the train lines it was written between."""
    raw = mmengine.read(scalars(kind))
    train, val = split(kind)
    assert {c["step"] for c in val} == {0} and {c["scalars"]["epoch"] for c in train} == {1}
    ran = [c["runner_iter"] for c in val]
    assert ran == [25, 50, 75, 100]
    logged = [c["step"] for c in train]
    before = [max((s for s in logged if s <= at), default=0) for at in ran]
    for key in ("toy/mse", "toy/mae", "val/time"):
        steps, values = raw.columns[key]
        assert steps.tolist() == before, key
        np.testing.assert_array_equal(values, [c["scalars"][key.removeprefix("val/")] for c in val])
    if kind == "iter_epochstep":  # logged every 5: each validation at the very iteration it ran
        assert before == ran
    else:  # logged every 30: the first validation (25) came before any train line
        assert before == [0, 30, 60, 90]
    assert not any("ignored" in n for n in raw.notes)
    assert any("4 validation line(s)" in n and "inside an epoch" in n for n in raw.notes)
    run = read_run(scalars(kind))
    assert run.series["loss"].steps.tolist() == logged


def test_validation_for_an_epoch_without_logged_training_is_kept(tmp_path):
    """A validation whose epoch no train line names (a log cut or edited by hand: mmengine
    logs an epoch's last iteration when the epoch is shorter than the interval) goes to the
    last iteration logged before it, not nowhere."""
    lines = []
    for e, its in ((1, (50, 100)), (2, (150, 200)), (3, ())):
        lines += [{"lr": 0.02, "data_time": 0.01, "loss": 2.0 - i / 100, "time": 0.4, "epoch": e, "iter": i,
                   "step": i} for i in its]
        lines.append({"coco/bbox_mAP": 0.1 * e, "data_time": 0.01, "time": 0.1, "step": e})
    log = tmp_path / "scalars.json"
    log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    raw = mmengine.read(log)
    steps, values = raw.columns["coco/bbox_mAP"]
    assert steps.tolist() == [100.0, 200.0, 200.0]
    np.testing.assert_allclose(values, [0.1, 0.2, 0.3])
