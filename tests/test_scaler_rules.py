"""The loss-scaler rules on Megatron-LM's printed counters (the line format of
tests/fixtures/textlog/synthetic/SYNTHETIC_megatron.log, from Megatron's training_log),
at several logging intervals: a verdict must not depend on how often the run printed."""

from __future__ import annotations

import json

import pytest


def _megatron(path, skipped_at, nan_at=frozenset(), iters=2000, interval=10):
    """A Megatron stdout: `skipped_at(i)` says whether iteration i was skipped."""
    lines = []
    for end in range(interval, iters + 1, interval):
        span = range(end - interval + 1, end + 1)
        skipped = sum(1 for i in span if skipped_at(i))
        nan = sum(1 for i in span if i in nan_at)
        loss = 8.0 * (0.999 ** end) + 2.0
        loss_part = f" lm loss: {loss:E} |" if skipped < interval else ""
        lines.append(f" iteration {end:8d}/{iters:8d} | consumed samples: {end * 32:12d} | elapsed time per "
                     f"iteration (ms): 850.0 | learning rate: 3.000000E-04 | global batch size:    32 |"
                     f"{loss_part} loss scale: 65536.0 | grad norm: 1.300 | number of skipped iterations: "
                     f"{skipped:3d} | number of nan iterations: {nan:3d} |")
    path.write_text("\n".join(lines) + "\n")
    return path


def _judge(run_cli, path):
    code, out, _ = run_cli("epoch", path, "--json")
    [report] = json.loads(out)["reports"]
    return code, {f["id"] for f in report["findings"]}


INTERVALS = [1, 10, 100]


@pytest.mark.parametrize("interval", INTERVALS)
def test_calibration_skips_at_the_start_are_not_news(run_cli, tmp_path, interval):
    log = _megatron(tmp_path / "train.log", lambda i: i <= 40, interval=interval)
    code, ids = _judge(run_cli, log)
    assert code == 0 and not ids & {"TP-SKIPPED-ITERS", "TP-UPDATES-STOPPED"}


@pytest.mark.parametrize("interval", INTERVALS)
def test_a_scaler_that_keeps_overflowing_warns(run_cli, tmp_path, interval):
    log = _megatron(tmp_path / "train.log", lambda i: i % 10 == 0, interval=interval)  # 10 % skipped
    code, ids = _judge(run_cli, log)
    assert code == 0 and "TP-SKIPPED-ITERS" in ids and "TP-UPDATES-STOPPED" not in ids


@pytest.mark.parametrize("interval", INTERVALS)
def test_a_run_that_skips_every_step_at_its_end_fails(run_cli, tmp_path, interval):
    log = _megatron(tmp_path / "train.log", lambda i: i > 1800, nan_at=frozenset(range(1801, 2001)),
                    interval=interval)
    code, ids = _judge(run_cli, log)
    assert code == 1 and "TP-UPDATES-STOPPED" in ids


@pytest.mark.parametrize("interval", INTERVALS)
def test_isolated_nan_iterations_are_counted_not_failed(run_cli, tmp_path, interval):
    nan = frozenset({700, 1300})
    log = _megatron(tmp_path / "train.log", lambda i: i in nan, nan_at=nan, interval=interval)
    code, ids = _judge(run_cli, log)
    assert code == 0 and "TP-NAN-ITERS" in ids and "TP-UPDATES-STOPPED" not in ids


def test_a_collapse_shorter_than_the_calibration_allowance_is_not_a_stop(run_cli, tmp_path):
    log = _megatron(tmp_path / "train.log", lambda i: i > 1950, interval=10)  # last 50 iterations
    _code, ids = _judge(run_cli, log)
    assert "TP-UPDATES-STOPPED" not in ids
