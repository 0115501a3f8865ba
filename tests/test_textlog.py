"""The text-log reader on stdout the real libraries printed (tests/fixtures/textlog,
made by scripts/fixtures/make_textlog_fixtures.py and make_textlog_deepspeed.py) and on
SYNTHETIC_* logs built from the print formats in the frameworks' source
(make_textlog_synthetic.py): the series read equal the values each run logged."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from trainproof.model import InputError
from trainproof.parsers import detect, read_run
from trainproof.parsers.incremental import TextlogDecoder

from .conftest import ROOT

TEXT = ROOT / "tests" / "fixtures" / "textlog"
SYN = TEXT / "synthetic"


def _expected(folder: str) -> list[dict]:
    return json.loads((TEXT / folder / "expected.json").read_text())["logs"]


def _g4(v: float) -> float:
    """What ProgressCallback prints of a float: f"{v:.4g}"."""
    return float(f"{v:.4g}")


def _series(run, name: str) -> tuple[list[float], list[float]]:
    s = run.series[name]
    return s.steps.tolist(), s.values.tolist()


@pytest.mark.parametrize("folder", ["hf_trainer", "trl_sft"])
def test_hf_trainer_and_trl_stdout(folder):
    """transformers 5 prints every number as a quoted .4g string, between tqdm redraws."""
    logs = _expected(folder)
    train = [e for e in logs if "loss" in e]
    evals = [e for e in logs if "eval_loss" in e]
    run = read_run(TEXT / folder / "train.log")
    assert run.format == "textlog"
    steps, values = _series(run, "loss")
    assert values == [_g4(e["loss"]) for e in train]
    assert steps == list(range(1, len(train) + 1))  # the order of the train dicts
    assert _series(run, "lr")[1] == [_g4(e["learning_rate"]) for e in train]
    assert _series(run, "grad_norm")[1] == [_g4(e["grad_norm"]) for e in train]
    assert _series(run, "epoch")[1] == [_g4(e["epoch"]) for e in train]
    # each eval dict sits at the train dict printed before it (same global_step here)
    at = {e["global_step"]: i + 1 for i, e in enumerate(train)}
    assert _series(run, "eval_loss") == ([at[e["global_step"]] for e in evals], [_g4(e["eval_loss"]) for e in evals])
    summary = next(e for e in logs if "train_runtime" in e)
    assert run.meta["summary"]["train_loss"] == _g4(summary["train_loss"])
    assert run.records == len(train) + len(evals)
    assert any("print no step" in n for n in run.notes)


def test_hf_trainer_4x_stdout_with_nan():
    """transformers 4.57 prints the raw floats (loss rounded to 4 places by the Trainer,
    epoch to 2 by the callback); after the loss turned inf, the Trainer's NaN filter logs
    loss 0.0 and the bare `nan` gradient norms and eval loss are kept as evidence."""
    logs = _expected("hf4_nan")
    train = [e for e in logs if "loss" in e]
    evals = [e for e in logs if "eval_loss" in e]
    run = read_run(TEXT / "hf4_nan" / "train.log")
    assert _series(run, "loss")[1] == [e["loss"] for e in train]
    np.testing.assert_array_equal(run.series["grad_norm"].values, [e["grad_norm"] for e in train])
    assert _series(run, "lr")[1] == [e["learning_rate"] for e in train]
    assert _series(run, "epoch")[1] == [round(e["epoch"], 2) for e in train]
    np.testing.assert_array_equal(run.series["eval_loss"].values, [e["eval_loss"] for e in evals])
    assert np.isnan(run.series["grad_norm"].values).sum() == 5 and np.isnan(run.series["eval_loss"].values[-1])
    assert run.meta["summary"]["train_runtime"] > 0  # the summary dict is metadata, not a point


def test_two_trainer_runs_in_one_output_are_said(tmp_path):
    """Two Trainer runs in one output: the reader notes the epoch went back; the log is then
    judged as its last run (rules/appended.py), the second copy's points."""
    text = (TEXT / "hf_trainer" / "train.log").read_text()
    p = tmp_path / "train.log"
    p.write_text(text + text)
    run = read_run(p)
    one = read_run(TEXT / "hf_trainer" / "train.log").series["loss"]
    assert run.series["loss"].values.tolist() == one.values.tolist()
    assert run.meta["appended"]["runs"] == 2
    assert any("went back 1 time(s)" in n for n in run.notes)


def test_nanogpt_stdout():
    logs = _expected("nanogpt")
    iters = [e for e in logs if e["kind"] == "iter"]
    evals = [e for e in logs if e["kind"] == "step"]
    run = read_run(TEXT / "nanogpt" / "train.log")
    assert _series(run, "loss") == ([e["n"] for e in iters], [e["loss"] for e in iters])
    np.testing.assert_allclose(run.series["step_time"].values, [e["time"] / 1000 for e in iters])
    assert _series(run, "eval_loss") == ([e["n"] for e in evals], [e["val loss"] for e in evals])


def test_deepspeed_stdout():
    """`steps: N loss: X` (4 decimals) and `[Rank 0] step=N, skipped=K, lr=[...]`, which
    reports the lr after N steps (and once at start-up, step=0)."""
    by_step = {e["step"]: e for e in _expected("deepspeed")}
    run = read_run(TEXT / "deepspeed" / "train.log")
    steps, values = _series(run, "loss")
    assert steps == [s for s in sorted(by_step) if s % 5 == 0]
    assert values == [round(by_step[s]["loss"], 4) for s in steps]
    lr_steps, lrs = _series(run, "lr")
    assert lr_steps[0] == 0 and lrs[1:] == [by_step[s]["lr"] for s in lr_steps[1:]]
    assert _series(run, "skipped_iters")[1] == [0.0] * len(lr_steps)
    assert run.series["step_time"].values.min() > 0


def test_torchtune_disk_logger():
    logs = _expected("torchtune")
    path = next((TEXT / "torchtune").glob("log_*.txt"))
    assert detect(path).name == "textlog"
    run = read_run(path)
    for name in ("loss", "lr", "grad_norm"):
        assert _series(run, name) == ([e["step"] for e in logs], [e[name] for e in logs])


def _points(name: str) -> list[dict]:
    return json.loads((SYN / f"{name}.expected.json").read_text())["points"]


def _want(points: list[dict], key: str) -> tuple[list[float], list[float]]:
    rows = [p for p in points if key in p]
    return [float(p["step"]) for p in rows], [float(p[key]) for p in rows]


@pytest.mark.parametrize("name, keys", [
    ("SYNTHETIC_megatron", ("loss", "lr", "grad_norm", "step_time", "skipped_iters", "nan_iters", "eval_loss")),
    ("SYNTHETIC_nemo2", ("loss", "step_time")),
    ("SYNTHETIC_nemo1", ("loss",)),
    ("SYNTHETIC_fairseq_json", ("loss", "lr", "grad_norm", "eval_loss")),
    ("SYNTHETIC_fairseq_simple", ("loss", "lr", "grad_norm", "eval_loss")),
])
def test_synthetic_formats(name, keys):
    run = read_run(SYN / f"{name}.log")
    assert run.format == "textlog"
    points = _points(name)
    for key in keys:
        steps, values = _series(run, key)
        want_steps, want_values = _want(points, key)
        assert steps == want_steps, key
        np.testing.assert_allclose(values, want_values, rtol=1e-12, err_msg=key)


def test_megatron_counters_and_missing_nan_loss():
    """A NaN loss is left out of Megatron's line; the NaN-iteration counter says so."""
    run = read_run(SYN / "SYNTHETIC_megatron.log")
    steps, nan_iters = _series(run, "nan_iters")
    assert steps[nan_iters.index(1.0)] == 120.0
    assert 120.0 not in run.series["loss"].steps.tolist()
    assert _series(run, "skipped_iters")[1].count(2.0) == 1


def test_nonfinite_values_are_kept():
    fair = read_run(SYN / "SYNTHETIC_fairseq_json.log")
    assert np.isinf(fair.series["eval_loss"].values).sum() == 1


def test_megatron_claimed_after_a_long_argument_dump():
    path = SYN / "SYNTHETIC_megatron.log"
    first = path.read_text().index("iteration ")
    assert first > 8192  # past the 8 KiB other formats sniff
    assert detect(path).name == "textlog"


def test_readme_txt_is_not_a_log(tmp_path, run_cli):
    readme = tmp_path / "README.txt"
    readme.write_text("This run trains a model.\nExample output:\niter 10: loss 2.3, time 5.0ms, mfu 1.0%\n")
    assert detect(readme) is None  # one example line is not a log
    code, out, err = run_cli("epoch", readme)
    assert code == 2 and "no line of this text log matches" not in err  # a line did match
    prose = tmp_path / "notes.txt"
    prose.write_text("Nothing here but prose.\nAnd more prose.\n")
    code, out, err = run_cli("epoch", prose)
    assert code == 2
    assert "no line of this text log matches a known training-log pattern" in out + err
    assert "'Nothing here but prose.'" in out + err
    binary = tmp_path / "train.log"  # random bytes: said to be unreadable, not quoted back
    binary.write_bytes(bytes(range(256)) * 40 + b"\n" + bytes(range(255, -1, -1)) * 40)
    code, out, err = run_cli("epoch", binary)
    assert code == 2 and len((out + err).strip().splitlines()) == 1
    assert "not a text log: its lines are not readable text" in out + err and "\\x" not in out + err


def test_text_log_without_a_loss_is_exit_2(tmp_path, run_cli):
    p = tmp_path / "train.log"
    p.write_text("".join(f"[Rank 0] step={s}, skipped=0, lr=[0.001], mom=[(0.9, 0.999)]\n" for s in range(10)))
    code, out, _ = run_cli("epoch", p)
    assert code == 2 and "TP-NO-LOSS" in out


def test_structured_logs_are_not_stolen(tmp_path):
    jl = tmp_path / "metrics.txt"
    jl.write_text("".join(json.dumps({"step": s, "loss": 1.0 / (s + 1)}) + "\n" for s in range(5)))
    assert detect(jl).name == "jsonl"
    coqui = tmp_path / "trainer_0_log.txt"
    coqui.write_text("   --> TIME: 2026-01-01 -- STEP: 0/10 -- GLOBAL_STEP: 0\n     | > loss: 0.5  (0.5)\n")
    assert detect(coqui).name == "coqui"
    assert detect(ROOT / "tests/fixtures/core/lightning/metrics.csv").name == "csv"


def test_progress_bar_without_newlines_and_oversized_line(tmp_path):
    """tqdm redraws with carriage returns only: each redraw is its own short line. A real
    over-long line is skipped and counted, never buffered whole."""
    bar = "\r".join(f" {i}%|#| {i}/100 [00:01<00:01, 9.9it/s]" for i in range(60000))  # ~2.6 MB, no newline
    huge = "x" * (3 << 20)
    lines = [f"iter {i}: loss {3 - i / 10:.4f}, time 10.00ms, mfu 1.00%" for i in range(10)]
    p = tmp_path / "train.log"
    text = lines[0] + "\n" + bar + "\r" + "\n".join(lines[1:5]) + "\n" + huge + "\n" + "\n".join(lines[5:])
    p.write_text(text + "\n")
    run = read_run(p)
    assert run.series["loss"].steps.tolist() == list(range(10))
    assert any("over 1 MiB skipped" in n for n in run.notes)


def test_incremental_decoder_matches_read():
    """`watch` feeds appended lines to the same scanner `read` uses."""
    path = SYN / "SYNTHETIC_fairseq_simple.log"
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    dec = TextlogDecoder()
    dec.feed(data[:cut])
    dec.feed(data[cut:])
    whole = read_run(path)
    raw = dec.raw()
    for name in ("loss", "gnorm", "valid_loss"):
        np.testing.assert_array_equal(raw.columns[name][1], whole.series[
            {"loss": "loss", "gnorm": "grad_norm", "valid_loss": "eval_loss"}[name]].values)


def test_epoch_and_doctor_through_the_cli(tmp_path, run_cli):
    code, out, _ = run_cli("epoch", TEXT / "nanogpt" / "train.log", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["reports"][0]["format"] == "textlog"
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    shutil.copy(TEXT / "nanogpt" / "train.log", runs / "a" / "train.log")
    shutil.copy(SYN / "SYNTHETIC_megatron.log", runs / "a" / "stdout")
    (runs / "README.txt").write_text("How to run: python train.py > train.log\n")
    (runs / "requirements.txt").write_text("torch==2.13.0\nnumpy\n")
    code, out, _ = run_cli("doctor", runs, "--json")
    doc = json.loads(out)
    judged = sorted(Path(r["file"]).name for r in doc["reports"])
    assert judged == ["stdout", "train.log"]
    assert code == 0


def test_missing_file_and_not_finite_steps(tmp_path):
    with pytest.raises(InputError):
        read_run(tmp_path / "absent.log")
    assert math.isfinite(read_run(SYN / "SYNTHETIC_nemo1.log").series["loss"].steps.max())
