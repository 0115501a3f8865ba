"""mmcv 1.x TextLoggerHook `.log.json` files written by mmcv 1.7.2's own runners
(tests/fixtures/mmcv, scripts/fixtures/make_mmcv_fixtures.py): every value read equals
what the hook logged, at the runner's own count of iterations completed (epoch-based
and iter-based), val lines where their evaluation ran, the documented shortfall when
an epoch's last interval is not logged; sniffing takes these files and nothing else's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.discover import discover
from trainproof.parsers import detect, mmcv, read_run

FIX = Path(__file__).parent / "fixtures" / "mmcv"
EXPECTED = json.loads((FIX / "expected.json").read_text())
_NOT_SERIES = {"mode", "epoch", "iter", "global_iter"}


def logged(name: str) -> dict[str, list[tuple[int, float]]]:
    """Column -> (runner's iterations completed, value) as the hook logged them."""
    out: dict[str, list[tuple[int, float]]] = {}
    for rec in EXPECTED[name]:
        for k, v in rec.items():
            if k in _NOT_SERIES:
                continue
            col = ("step_time" if k == "time" else k) if rec["mode"] == "train" else f"val/{k}"
            out.setdefault(col, []).append((rec["global_iter"], float(v)))
    return out


@pytest.mark.parametrize("name", ["epoch_healthy", "iter_healthy"])
def test_series_equal_what_the_hook_logged(name):
    raw = mmcv.read(FIX / f"{name}.log.json")
    want = logged(name)
    assert set(raw.columns) - {"epoch"} == set(want)
    for key, pts in want.items():
        steps, values = raw.columns[key]
        np.testing.assert_array_equal(steps, [p[0] for p in pts], err_msg=key)
        np.testing.assert_array_equal(values, [p[1] for p in pts], err_msg=key)
    assert raw.meta == {"exp_name": "toy_regression.py", "seed": 0}
    assert raw.records == len(EXPECTED[name])


def test_epoch_based_steps_and_epoch_progress():
    raw = mmcv.read(FIX / "epoch_healthy.log.json")
    assert raw.notes[0].startswith("epoch-based log: step = (epoch - 1) x 20 + the iteration")
    steps, epochs = raw.columns["epoch"]
    np.testing.assert_array_equal(epochs, steps / 20)  # epochs completed, as HF logs them
    assert "epoch" not in mmcv.read(FIX / "iter_healthy.log.json").columns  # loader passes, not epochs


def test_unlogged_last_interval_shifts_later_epochs_by_what_it_misses():
    """16 iterations an epoch, logged at 5, 10, 15: L is read as 15, so epoch E's steps
    are (E - 1) short of the runner's count, and the note says the length may be more."""
    raw = mmcv.read(FIX / "epoch_nan.log.json")
    assert "the true length may be a little more" in raw.notes[0]
    want = logged("epoch_nan")["loss"]
    epochs = [r["epoch"] for r in EXPECTED["epoch_nan"] if r["mode"] == "train"]
    steps, values = raw.columns["loss"]
    np.testing.assert_array_equal(steps, [s - (e - 1) for (s, _), e in zip(want, epochs, strict=True)])
    np.testing.assert_array_equal(values, [v for _, v in want])


def test_canonical_run_and_verdict_inputs():
    run = read_run(FIX / "epoch_healthy.log.json")
    assert run.format == "mmcv"
    assert {"loss", "lr", "grad_norm", "step_time", "loader_time", "epoch"} <= set(run.series)
    diverged = read_run(FIX / "epoch_nan.log.json")
    assert diverged.series["loss"].values[-1] > 1e20 and np.isposinf(diverged.series["grad_norm"].values).any()


def test_sniff_and_doctor(tmp_path):
    for f in FIX.glob("*.log.json"):
        assert detect(f).name == "mmcv", f
    work = tmp_path / "work_dirs" / "toy"
    work.mkdir(parents=True)
    shutil.copyfile(FIX / "epoch_healthy.log.json", work / "20260101_120000.log.json")
    found = discover(tmp_path, 50)
    assert [(p.name, f.name) for p, f in found.logs] == [("20260101_120000.log.json", "mmcv")]
    # mmengine's scalars.json and detectron2's metrics.json stay theirs
    for d in ("mmengine", "detectron2"):
        for f in (Path(__file__).parent / "fixtures" / d).rglob("*.json"):
            if f.name != "expected.json" and detect(f) is not None:
                assert detect(f).name != "mmcv", f


def test_truncated_and_odd_lines(tmp_path):
    text = (FIX / "epoch_healthy.log.json").read_bytes()
    cut = tmp_path / "cut.log.json"
    cut.write_bytes(text[: text.index(b'{"mode": "train", "epoch": 2, "iter": 10') + 30])
    raw = mmcv.read(cut)
    assert raw.columns["loss"][0].tolist() == [5, 10, 15, 20, 25]  # the points before the cut
    assert any("half-written last line" in n for n in raw.notes)
    cut.write_bytes(b'{"mode": "train", "epoch": "one", "iter": 5, "loss": 1.0}\n'
                    b'{"mode": "train", "epoch": 1, "iter": 5, "loss": 1.0}\nnot json\n')
    raw = mmcv.read(cut)
    assert raw.columns["loss"][0].tolist() == [5]
    assert "1 line(s) without an integer epoch and iter skipped" in raw.notes
    assert "1 non-object line(s) (banners, plain text) skipped" in raw.notes


def test_iter_zero_everywhere_is_not_epoch_based(tmp_path):
    f = tmp_path / "zero.log.json"
    f.write_text("".join(f'{{"mode": "train", "epoch": {e}, "iter": 0, "loss": 1.0}}\n' for e in (1, 2, 3)))
    raw = mmcv.read(f)  # no division by an epoch length of 0
    assert raw.columns["loss"][0].tolist() == [0, 0, 0] and "epoch" not in raw.columns
