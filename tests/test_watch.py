"""`trainproof watch` on logs that a separate writer process is writing while it runs:
appends with half-written lines, a stalled run, trainer_state.json rewritten whole,
a missing file, Ctrl-C. Intervals are short and every watch is bounded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from trainproof.cli import main
from trainproof.parsers import FORMATS

HERE = Path(__file__).parent
WRITER = HERE / "fixtures" / "live" / "writer.py"
HF_STATE = HERE / "fixtures" / "live" / "hf_lr_hot" / "trainer_state.json"
LIGHTNING_CSV = HERE / "fixtures" / "live" / "lightning_csv" / "metrics.csv"
SRC = str(HERE.parent / "src")


def writer(*args):
    return subprocess.Popen([sys.executable, str(WRITER), *map(str, args)])


def json_lines(text):
    """JSON Lines: one document per verdict change, then the final document, one per line."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_until_fail_exits_1_at_the_first_fail_of_a_growing_log(tmp_path, capsys):
    log = tmp_path / "train.jsonl"
    log.touch()
    w = writer("jsonl", log, 60, "diverge", 0.02)
    try:
        t0 = time.monotonic()
        code = main(["watch", str(log), "--interval", "0.1", "--until-fail", "--max-duration", "30"])
        took = time.monotonic() - t0
    finally:
        w.wait(timeout=30)
    out = capsys.readouterr().out
    assert code == 1 and took < 30
    assert "records: PASS" in out  # it was watched while healthy first
    assert "FAIL - TP-DIVERGE" in out and "[FAIL] TP-DIVERGE" in out


def test_a_healthy_growing_log_passes_for_the_whole_watch(tmp_path, capsys):
    log = tmp_path / "train.jsonl"
    log.touch()
    w = writer("jsonl", log, 40, "healthy", 0.02)
    code = main(["watch", str(log), "--interval", "0.1", "--max-duration", "2.5"])
    w.wait(timeout=30)
    out = capsys.readouterr().out
    assert code == 0
    assert "step 40, 40 records: PASS" in out and "VERDICT: PASS" in out


def test_stall_is_judged_by_step_progress_not_by_file_size(tmp_path, capsys):
    log = tmp_path / "train.jsonl"
    log.touch()
    w = writer("stall", log, 12, 3)  # the file keeps growing, the step stays at 12
    code = main(["watch", str(log), "--interval", "0.1", "--stall-timeout", "0.8",
                 "--max-duration", "2", "--json"])
    w.wait(timeout=30)
    assert log.stat().st_size > 2000  # it grew throughout
    docs = json_lines(capsys.readouterr().out)
    changes = [d for d in docs if d.get("event") == "verdict"]
    verdicts = [d["worst_verdict"] for d in changes]
    assert verdicts[0] == "PASS" and verdicts[-1] == "WARN"
    assert len(changes) == len(set(verdicts)), "one line per verdict change, not per poll"
    final = docs[-1]
    assert "event" not in final and final["schema_version"] == 3
    stall = next(f for f in final["reports"][0]["findings"] if f["id"] == "TP-STALL")
    assert stall["values"]["step"] == 12 and stall["values"]["idle"] > 0.8
    assert code == 0  # a stall warns; it does not fail the run


def test_trainer_state_json_rewritten_whole_is_reread_when_it_changes(tmp_path, capsys):
    state = tmp_path / "trainer_state.json"
    w = writer("hfstate", HF_STATE, state, 0.04)
    code = main(["watch", str(state), "--interval", "0.05", "--until-fail", "--max-duration", "30",
                 "--stall-timeout", "10"])
    w.wait(timeout=30)
    out = capsys.readouterr().out
    # The lr_hot run's loss goes 5.4 -> 21 -> 31 on its first steps. Which rule names it
    # first depends on how many entries the file held at the poll that saw the rise (a
    # loaded machine polls later): the rise over the whole log, or the divergence.
    assert code == 1 and ("FAIL - TP-LOSS-ROSE" in out or "FAIL - TP-DIVERGE" in out)
    assert "Traceback" not in out


def test_a_finished_trainer_state_ends_the_watch_with_the_epoch_verdict(tmp_path, capsys):
    doc = json.loads(HF_STATE.read_text())
    doc["log_history"].append({"step": 40, "train_runtime": 3.2, "train_loss": 30.0, "total_flos": 1.0})
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps(doc))
    code = main(["watch", str(state), "--interval", "0.05", "--max-duration", "20"])
    out = capsys.readouterr().out
    assert "training finished" in out
    assert code == main(["epoch", str(state)]) == 1


def test_a_missing_log_is_exit_2_with_a_clear_message(tmp_path, capsys):
    t0 = time.monotonic()
    code = main(["watch", str(tmp_path / "nope.jsonl"), "--interval", "0.1", "--stall-timeout", "0.5"])
    assert code == 2 and time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert "nope.jsonl: no such file" in err and "waited" in err


def test_a_log_that_appears_within_the_grace_is_watched(tmp_path, capsys):
    log = tmp_path / "late.jsonl"
    w = subprocess.Popen([sys.executable, "-c", f"import time, subprocess, sys; time.sleep(0.6); "
                          f"subprocess.run([sys.executable, {str(WRITER)!r}, 'jsonl', {str(log)!r}, '20', "
                          f"'healthy', '0.01'])"])
    code = main(["watch", str(log), "--interval", "0.1", "--max-duration", "3", "--stall-timeout", "5"])
    w.wait(timeout=30)
    out = capsys.readouterr().out
    assert "waiting for" in out and code == 0 and "20 records: PASS" in out


def test_ctrl_c_prints_the_last_verdict_and_exits_with_its_code(tmp_path):
    log = tmp_path / "train.jsonl"
    writer("jsonl", log, 60, "diverge", 0).wait(timeout=30)
    env = {**os.environ, "PYTHONPATH": SRC}
    # A test runner started in the background inherits SIGINT ignored, and Python then
    # never turns SIGINT into KeyboardInterrupt: give the child the default disposition.
    p = subprocess.Popen([sys.executable, "-m", "trainproof", "watch", str(log), "--interval", "0.1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = p.stdout.readline()  # the first verdict line: it is watching
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert "FAIL - TP-DIVERGE" in first
    assert "interrupted" in out and "VERDICT: FAIL" in out and "Traceback" not in err
    assert p.returncode == 1


def test_lightning_metrics_csv_replayed_line_by_line(tmp_path, capsys):
    log = tmp_path / "metrics.csv"
    w = writer("replay", LIGHTNING_CSV, log, 0.005)
    code = main(["watch", str(log), "--interval", "0.1", "--max-duration", "2", "--stall-timeout", "10"])
    w.wait(timeout=30)
    out = capsys.readouterr().out
    assert code == main(["epoch", str(LIGHTNING_CSV)]) == 0
    assert "68 records: PASS" in out


@pytest.mark.skipif("tfevents" not in FORMATS, reason="the TensorBoard reader is not in this tree")
def test_a_tensorboard_run_directory_is_watched_through_its_files(tmp_path, capsys):
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    tb = SummaryWriter(str(tmp_path))
    tb.add_scalar("train/loss", 3.0, 1)
    tb.flush()

    def write():  # the real SummaryWriter, appending while watch polls the directory
        for step in range(2, 31):
            tb.add_scalar("train/loss", 3.0 / step ** 0.5, step)
            tb.flush()
            time.sleep(0.02)
        tb.close()

    t = threading.Thread(target=write)
    t.start()
    code = main(["watch", str(tmp_path), "--interval", "0.05", "--max-duration", "2.5"])
    t.join()
    out = capsys.readouterr().out
    assert code == 0 and "step 30, 30 records: PASS" in out
    assert out.count("records: ") > 2  # seen while it grew


def test_a_log_restarted_in_place_is_judged_from_its_new_start(tmp_path, capsys):
    log = tmp_path / "train.jsonl"
    writer("jsonl", log, 60, "diverge", 0).wait(timeout=30)  # an old, failed run

    def restart():
        time.sleep(0.6)
        log.write_text("")  # truncated by the next run, which then appends
        writer("jsonl", log, 30, "healthy", 0).wait(timeout=30)

    t = threading.Thread(target=restart)
    t.start()
    code = main(["watch", str(log), "--interval", "0.1", "--max-duration", "2.5", "--stall-timeout", "10"])
    t.join()
    out = capsys.readouterr().out
    assert "FAIL - TP-DIVERGE" in out and "log truncated: judging it from the start" in out
    assert code == 0 and "step 30, 30 records: PASS" in out


def test_a_log_that_vanishes_keeps_its_last_verdict(tmp_path, capsys):
    log = tmp_path / "train.jsonl"
    writer("jsonl", log, 60, "diverge", 0).wait(timeout=30)

    def remove():
        time.sleep(0.5)
        log.unlink()

    t = threading.Thread(target=remove)
    t.start()
    code = main(["watch", str(log), "--interval", "0.1", "--stall-timeout", "0.5", "--max-duration", "10"])
    t.join()
    out = capsys.readouterr().out
    assert code == 1 and "disappeared and did not come back" in out and "VERDICT: FAIL" in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    assert main(["watch", str(fifo), "--format", "jsonl", "--interval", "0.1"]) == 2
    assert time.monotonic() - t0 < 5 and "not a regular file" in capsys.readouterr().err


def test_bad_options_are_exit_2(tmp_path, capsys):
    assert main(["watch", str(tmp_path / "x.jsonl"), "--interval", "0"]) == 2
    assert "--interval" in capsys.readouterr().err
