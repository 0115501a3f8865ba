"""mlx-lm fine-tuning stdout read by the text-log scanner (mlx_lm* patterns in
parsers/textlog_patterns.py).

mlx_lm/*.log are the real stdout of `mlx_lm.lora` (mlx 0.32.4 on this Linux CPU, a tiny
llama built locally) under mlx-lm 0.32.2 (table UI) and 0.31.3 (`Iter N: ...` lines),
written by scripts/fixtures/make_mlx_lm_fixtures.py with the train_info / val_info dicts
mlx-lm reported beside each; the values read must be those, as printed."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from trainproof.model import InputError
from trainproof.parsers import detect, read_run, textlog
from trainproof.parsers.incremental import TextlogDecoder

from .conftest import ROOT

MLX = ROOT / "tests" / "fixtures" / "textlog" / "mlx_lm"


def _doc(name: str) -> dict:
    return json.loads((MLX / f"{name}.expected.json").read_text())


def _col(raw, key: str) -> tuple[list[float], list[float]]:
    steps, values = raw.columns[key]
    return steps.tolist(), values.tolist()


def _f(v: float, spec: str) -> float:
    return float(format(v, spec))


@pytest.mark.parametrize("name", ["v0_31_healthy", "v0_31_hot"])
def test_iter_lines_equal_what_mlx_lm_reported(name):
    doc, raw = _doc(name), textlog.read(MLX / f"{name}.log")
    train, val = doc["train"], doc["val"]
    steps = [float(t["iteration"]) for t in train]
    assert _col(raw, "Train loss") == (steps, [_f(t["train_loss"], ".3f") for t in train])
    assert _col(raw, "Learning Rate") == (steps, [_f(t["learning_rate"], ".3e") for t in train])
    assert _col(raw, "Tokens/sec") == (steps, [_f(t["tokens_per_second"], ".3f") for t in train])
    assert _col(raw, "Trained Tokens") == (steps, [float(t["trained_tokens"]) for t in train])
    assert _col(raw, "Peak mem") == (steps, [_f(t["peak_memory"], ".3f") for t in train])  # GB
    # It/sec -> seconds per iteration
    np.testing.assert_allclose(raw.columns["step_time"][1],
                               [1.0 / _f(t["iterations_per_second"], ".3f") for t in train], rtol=1e-12)
    # the print says `Iter it`; the callback is given it - 1 for validations
    vsteps = [float(v["iteration"] + 1) for v in val]
    assert _col(raw, "Val loss") == (vsteps, [_f(v["val_loss"], ".3f") for v in val])
    assert _col(raw, "Val took") == (vsteps, [_f(v["val_time"], ".3f") for v in val])
    assert raw.meta["patterns"] == {"mlx_lm": len(train) + len(val)}
    assert detect(MLX / f"{name}.log").name == "textlog"


@pytest.mark.parametrize("name", ["v0_32_healthy", "v0_32_hot"])
def test_table_rows_equal_what_mlx_lm_reported(name):
    doc, raw = _doc(name), textlog.read(MLX / f"{name}.log")
    train, val = doc["train"], doc["val"]
    steps = [float(t["iteration"]) for t in train]
    assert _col(raw, "train_loss") == (steps, [_f(t["train_loss"], ".3f") for t in train])
    assert _col(raw, "tok/s") == (steps, [_f(t["tokens_per_second"], ".0f") for t in train])
    assert _col(raw, "tokens") == (steps, [_f(t["trained_tokens"] / 1000, ".1f") * 1000 for t in train])
    vsteps = [float(v["iteration"] + 1) for v in val]
    assert _col(raw, "val_loss") == (vsteps, [_f(v["val_loss"], ".3f") for v in val])
    assert _col(raw, "val_time") == (vsteps, [_f(v["val_time"], ".2f") for v in val])
    assert raw.meta["patterns"] == {"mlx_lm_table": len(train), "mlx_lm_table_val": len(val)}
    assert detect(MLX / f"{name}.log").name == "textlog"


def test_canonical_series():
    run = read_run(MLX / "v0_31_healthy.log")
    doc = _doc("v0_31_healthy")
    assert run.series["loss"].values.tolist() == [_f(t["train_loss"], ".3f") for t in doc["train"]]
    assert run.series["eval_loss"].steps.tolist()[0] == 1.0  # the validation before training
    assert "lr" in run.series and "step_time" in run.series
    new = read_run(MLX / "v0_32_healthy.log")
    assert new.series["loss"].values.tolist() == run.series["loss"].values.tolist()  # same seed, same run
    assert new.series["eval_loss"].values.tolist() == run.series["eval_loss"].values.tolist()


def test_oldest_format_and_nan_through_the_cli(tmp_path, run_cli):
    """mlx-lm 0.0.x / mlx-examples print no LR or memory; `nan` is printed as such."""
    p = tmp_path / "train.log"
    p.write_text("Starting training..., iters: 40\n"
                 + "".join(f"Iter {i}: Train loss {3 - i / 20:.3f}, It/sec 0.512, Tokens/sec 210.123\n"
                           for i in range(10, 31, 10))
                 + "Iter 40: Train loss nan, It/sec 0.000, Tokens/sec 0.000\n"
                 + "Iter 40: Val loss nan, Val took 11.100s\n")
    raw = textlog.read(p)
    assert _col(raw, "Train loss")[0] == [10.0, 20.0, 30.0, 40.0]
    assert math.isnan(raw.columns["Train loss"][1][-1])
    assert _col(raw, "step_time") == ([10.0, 20.0, 30.0], [1 / 0.512] * 3)  # 0 it/sec: no time
    code, out, _ = run_cli("epoch", p)
    assert code == 1 and "TP-NAN" in out


def test_table_rows_without_their_heading_are_not_claimed(tmp_path):
    rows = "".join(f"  {i:>4}    {3 - i / 100:>5.3f} \u25bc    1,234      0.{i}k\n" for i in range(1, 9))
    p = tmp_path / "out.log"
    p.write_text(rows + "     8    val 2.100    0.01s\n")
    assert detect(p) is None
    with pytest.raises(InputError, match="no line of this text log matches"):
        textlog.read(p)


def test_incremental_decoder_matches_read():
    data = (MLX / "v0_32_healthy.log").read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    dec = TextlogDecoder()
    dec.feed(data[:cut])
    dec.feed(data[cut:])
    whole = textlog.read(MLX / "v0_32_healthy.log")
    for key in ("train_loss", "val_loss"):
        np.testing.assert_array_equal(dec.raw().columns[key][1], whole.columns[key][1])


def test_cut_mid_line_keeps_the_points_before(tmp_path, run_cli):
    data = (MLX / "v0_31_healthy.log").read_bytes()
    cut = data.index(b"Learning Rate", data.index(b"Iter 30: Train")) + 5
    p = tmp_path / "train.log"
    p.write_bytes(data[:cut])
    raw = textlog.read(p)
    assert _col(raw, "Train loss")[0] == [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    assert _col(raw, "Learning Rate")[0] == [5.0, 10.0, 15.0, 20.0, 25.0]
    code, out, err = run_cli("epoch", p)
    assert code == 0 and "Traceback" not in out + err


def test_doctor_finds_train_log(tmp_path, run_cli):
    run = tmp_path / "runs" / "lora"
    run.mkdir(parents=True)
    shutil.copy(MLX / "v0_32_healthy.log", run / "train.log")
    code, out, _ = run_cli("doctor", tmp_path / "runs", "--json")
    assert [r["format"] for r in json.loads(out)["reports"]] == ["textlog"]
    assert code == 0
