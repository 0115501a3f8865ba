"""Bad input to `trainproof data`: a clear one-line reason, the honest exit code, bounded
memory and no hang — FIFOs and devices are never opened, long lines are never held."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from trainproof.cli import main
from trainproof.probes.speech_manifest import read_listing

from .test_data_support import finding, healthy_clips, ids, manifest_for, run_json, write_manifest

BROKEN = Path(__file__).parent / "fixtures" / "data" / "broken"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real console path in a subprocess, so a hang fails the test instead of the run."""
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run([sys.executable, "-m", "trainproof", "data", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_missing_path_is_exit_2_not_1(capsys, tmp_path):
    code, doc = run_json(capsys, str(tmp_path / "nope.jsonl"))
    assert code == 2
    assert ids(doc) == {"TP-DATA-INVALID-INPUT"}
    assert "no such file or directory" in finding(doc, "TP-DATA-INVALID-INPUT")["evidence"]


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_fifo_or_device_as_dataset_is_refused_without_opening(tmp_path, target):
    path = tmp_path / "pipe.jsonl"
    if target == "fifo":
        os.mkfifo(path)  # nobody writes: opening it would block forever
    else:
        path = Path(target)
    p = _cli(str(path), "--json", timeout=30)
    assert p.returncode == 2
    assert "not a regular file or a directory" in p.stdout


def test_fifo_and_device_as_audio_are_unreadable_not_hangs(tmp_path):
    clips = healthy_clips(tmp_path, n=3)
    os.mkfifo(tmp_path / "pipe.wav")
    (tmp_path / "zero.wav").symlink_to("/dev/zero")
    rows = [{"audio_filepath": a, "text": t} for a, t in clips]
    rows += [{"audio_filepath": "pipe.wav", "text": "a"}, {"audio_filepath": "zero.wav", "text": "b"}]
    p = _cli(str(write_manifest(tmp_path / "m.jsonl", rows)), "--json", timeout=30)
    assert p.returncode == 0, p.stderr
    assert '"TP-DATA-UNREADABLE-AUDIO"' in p.stdout and "not a regular file" in p.stdout


def test_invalid_utf8_line_is_a_malformed_record_and_the_rest_is_judged(capsys, tmp_path):
    clips = healthy_clips(tmp_path)
    m = manifest_for(tmp_path, clips)
    with open(m, "ab") as fh:
        fh.write(b'{"audio_filepath": "clip_000.wav", "text": "caf\xe9"}\n')
    code, doc = run_json(capsys, str(m))
    assert code == 1
    f = finding(doc, "TP-DATA-MALFORMED-RECORD")
    assert f["location"]["line"] == 13 and "not valid UTF-8" in f["evidence"]
    assert doc["reports"][0]["records"] == 12


def test_100_mb_line_costs_bounded_memory(tmp_path):
    clips = healthy_clips(tmp_path, n=2)
    m = manifest_for(tmp_path, clips)
    with open(m, "ab") as fh:
        block = b"x" * (1 << 20)
        fh.write(b'{"text": "')
        for _ in range(100):
            fh.write(block)
        fh.write(b'"}\n{"audio_filepath": "clip_001.wav", "text": "after the long line"}\n')
    tracemalloc.start()
    listing = read_listing(m, 1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak / 2**20:.0f} MiB while reading a 100 MB line"
    assert [e.text for e in listing.entries][-1] == "after the long line"
    assert listing.bad_lines == 1 and "longer than 1048576 bytes" in listing.bad_examples[0][1]


def test_binary_file_as_manifest_is_invalid_input(capsys, tmp_path):
    path = tmp_path / "weights.jsonl"
    path.write_bytes(os.urandom(200_000))
    code, doc = run_json(capsys, str(path))
    assert code == 2 and ids(doc) == {"TP-DATA-INVALID-INPUT"}


def test_deeply_nested_json_is_malformed_not_a_crash(capsys, tmp_path):
    clips = healthy_clips(tmp_path, n=2)
    m = manifest_for(tmp_path, clips)
    with open(m, "a") as fh:
        fh.write("[" * 200_000 + "]" * 200_000 + "\n")
        fh.write('{"audio_filepath": 5, "text": "x"}\n')
    code, doc = run_json(capsys, str(m))
    f = finding(doc, "TP-DATA-MALFORMED-RECORD")
    assert code == 1 and f["values"]["n"] == 2


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_empty_manifest_is_no_data(capsys, tmp_path, content):
    m = tmp_path / "m.jsonl"
    m.write_text(content)
    code, doc = run_json(capsys, str(m))
    assert code == 2 and ids(doc) == {"TP-DATA-NO-DATA"}


def test_empty_directory_is_no_data(capsys, tmp_path):
    code, doc = run_json(capsys, str(tmp_path))
    assert code == 2 and ids(doc) == {"TP-DATA-NO-DATA"}


def test_lying_header_and_text_named_wav(capsys):
    code, doc = run_json(capsys, str(BROKEN))
    assert code == 0
    truncated = finding(doc, "TP-DATA-TRUNCATED-AUDIO")
    assert "truncated.wav" in truncated["evidence"] and "bytes short" in truncated["evidence"]
    unreadable = finding(doc, "TP-DATA-UNREADABLE-AUDIO")
    assert "notaudio.wav" in unreadable["evidence"] and "Format not recognised" in unreadable["evidence"]


def test_negative_workers_is_a_usage_error(capsys, tmp_path):
    assert main(["data", str(tmp_path), "--workers", "-1"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_missing_soundfile_is_one_line_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "soundfile", None)  # what `import soundfile` sees uninstalled
    assert main(["data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pip install soundfile" in err and len(err.strip().splitlines()) == 1
