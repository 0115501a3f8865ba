"""Output robustness on hostile inputs, through a real `python -m trainproof`: a
reader that closes stdout early, report files on a full disk (/dev/full), watch
stopped by SIGTERM or Ctrl-C (SIGINT), and watch on a log that two writers append
damaged lines to at once. The behaviours themselves are unit-tested in
tests/test_outputs.py; here they meet the campaign's inputs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.generate import build, catalogue
from tests.hostile.oracle import document
from tests.hostile.test_campaign import runner_env

INPUTS = ("jsonl/nan-loss", "csv/bom", "hf/duplicate-steps", "tfevents/bad-data-crc", "wandb/truncated-half",
          "megatron/invalid-utf8", "jsonl/zero-byte")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Iterator[dict[str, Path]]:
    specs = [s for s in catalogue() if s.name in INPUTS]
    built = build(tmp_path_factory.mktemp("outputs"), only=specs)
    yield built.paths


def trainproof(*argv: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "trainproof", *argv], env=runner_env(),
                            stdout=kw.pop("stdout", subprocess.PIPE), stderr=subprocess.PIPE, text=True, **kw)


def clean_stderr(err: str) -> list[str]:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(lines) <= 1, lines
    return lines


def plain_exit(path: Path) -> int:
    proc = trainproof("epoch", str(path), "--json")
    proc.communicate(timeout=60)
    return proc.returncode


@pytest.mark.slow
@pytest.mark.parametrize("name", INPUTS[::2])
def test_closed_stdout_keeps_the_exit_code(hostile, name):
    expected = plain_exit(hostile[name])
    proc = trainproof("epoch", str(hostile[name]), "--json")
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == expected
    clean_stderr(err)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "option"), [("jsonl/nan-loss", "--junit"), ("jsonl/nan-loss", "--sarif"),
                                              ("csv/bom", "--html"), ("tfevents/bad-data-crc", "--json-out")])
def test_report_file_on_a_full_disk_is_one_line_and_exit_2(hostile, name, option):
    proc = trainproof("epoch", str(hostile[name]), option, "/dev/full")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert clean_stderr(err), "the failed write is said"


def handling(pid: int, sig: int = signal.SIGTERM, timeout: float = 60.0) -> None:
    """Wait until the process has a handler for `sig` (Linux: SigCgt in /proc), so the
    signal tests the CLI and not an interpreter still starting on a loaded machine.
    SIGTERM's handler is the CLI's own, installed while it runs; Python catches SIGINT
    from its first instant, so SIGINT tests wait for the SIGTERM handler too."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        time.sleep(5.0)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        caught = next((ln for ln in status.read_text().splitlines() if ln.startswith("SigCgt:")), "SigCgt: 0")
        if int(caught.split()[1], 16) >> (sig - 1) & 1:
            return
        time.sleep(0.05)
    raise AssertionError(f"no handler for signal {sig} after {timeout:g} s")


def _watch_then(path: Path, sig: int, after_s: float = 1.0) -> tuple[int, str, str]:
    proc = trainproof("watch", str(path), "--json", "--interval", "0.2", "--stall-timeout", "0")
    handling(proc.pid)
    time.sleep(after_s)  # a poll or two
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("name", ["jsonl/nan-loss", "tfevents/bad-data-crc", "jsonl/zero-byte"])
def test_watch_stopped_by_a_signal_gives_the_final_verdict(hostile, name, sig):
    rc, out, err = _watch_then(hostile[name], sig)
    clean_stderr(err)
    doc = document(out)
    assert doc is not None and doc["exit_code"] == rc, (rc, out[-500:])
    if doc["reports"]:
        verdict = doc["reports"][0]["verdict"]
        assert rc == {"FAIL": 1, "NOT-CHECKED": 2}.get(verdict, 0)
    else:
        assert rc == 2 and doc["error"]


@pytest.mark.slow
def test_watch_with_two_writers_appending_damage(hostile, tmp_path):
    """Two writers append to one log at once, healthy rows interleaved with torn,
    non-UTF-8 and NaN lines; watch keeps judging and ends with one verdict."""
    log = tmp_path / "metrics.jsonl"
    log.write_bytes(hostile["jsonl/nan-loss"].read_bytes()[:400])
    stop = threading.Event()

    def writer(k: int) -> None:
        i = 0
        with open(log, "ab", buffering=0) as f:
            while not stop.is_set():
                i += 1
                f.write([json.dumps({"step": 100 + i, "loss": 1.0 / i}).encode() + b"\n", b'{"step": 7, "lo',
                         b"\xff\xfe\n", b'{"step": NaN, "loss": NaN}\n'][(i + k) % 4])
                time.sleep(0.01)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (0, 1)]
    proc = trainproof("watch", str(log), "--json", "--interval", "0.1", "--stall-timeout", "0")
    handling(proc.pid, signal.SIGTERM)
    for t in threads:
        t.start()
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    clean_stderr(err)
    doc = document(out)
    assert doc is not None and doc["exit_code"] == proc.returncode and proc.returncode in (0, 1)
    assert doc["reports"][0]["records"] > 0
