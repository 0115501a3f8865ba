"""`data` never passes on nothing: a dataset none of whose audio could be read (random
bytes under audio names, zero-byte files, a manifest pointing at /dev/zero or a FIFO)
is could-not-judge (exit 2, saying what was unreadable), and one whose audio is mostly
unreadable is a FAIL about the data with the counts. FIFOs and devices are never
opened, so nothing hangs."""

from __future__ import annotations

import json
import os

import pytest

from .craft import assert_clean, run_bounded
from .test_data_support import healthy_clips, write_manifest

pytest.importorskip("soundfile")


def _data(path) -> tuple[int, dict]:
    code, out, err, secs = run_bounded("data", path, "--json", "--workers", "1")
    assert_clean(code, out, err, expect=code)
    assert secs < 45
    return code, json.loads(out)


def _finding(doc: dict, rule_id: str) -> dict:
    (rep,) = doc["reports"]
    hits = [f for f in rep["findings"] if f["id"] == rule_id]
    assert hits, [f["id"] for f in rep["findings"]]
    return hits[0]


def test_only_undecodable_clips_is_not_checked(tmp_path):
    for k in range(3):
        (tmp_path / f"c{k}.wav").write_bytes(os.urandom(4000))
    (tmp_path / "c3.flac").write_bytes(os.urandom(4000))
    code, doc = _data(tmp_path)
    assert code == 2 and doc["reports"][0]["verdict"] == "NOT-CHECKED"
    assert "none of the 4 listed audio files could be read (4 undecodable)" in \
        _finding(doc, "TP-DATA-NO-DATA")["evidence"]


def test_only_zero_byte_clips_is_not_checked(tmp_path):
    for k in range(2):
        (tmp_path / f"c{k}.wav").write_bytes(b"")
    code, doc = _data(tmp_path)
    assert code == 2 and "(2 empty)" in _finding(doc, "TP-DATA-NO-DATA")["evidence"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_manifest_of_dev_zero_and_a_fifo_is_not_checked_and_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "pipe.wav")  # opening it for reading would block forever
    m = write_manifest(tmp_path / "m.jsonl", [{"audio_filepath": "/dev/zero", "text": "a"},
                                              {"audio_filepath": "pipe.wav", "text": "b"}])
    code, doc = _data(m)
    assert code == 2
    assert "(2 not a regular file)" in _finding(doc, "TP-DATA-NO-DATA")["evidence"]
    code, out, err, _ = run_bounded("data", tmp_path / "pipe.wav")
    assert_clean(code, out, err)


def test_mostly_unreadable_is_a_fail_with_counts(tmp_path):
    clips = healthy_clips(tmp_path, n=2)
    for k in range(3):
        (tmp_path / f"bad{k}.wav").write_bytes(os.urandom(2000) if k else b"")
    code, doc = _data(tmp_path)
    assert code == 1
    f = _finding(doc, "TP-DATA-MOSTLY-UNREADABLE")
    assert f["values"]["n"] == 3 and f["values"]["total"] == 5 and f["values"]["decoded"] == len(clips)
    assert f["values"]["limit_max_share"] == 0.5
    assert "TP-DATA-UNREADABLE-AUDIO" not in {x["id"] for x in doc["reports"][0]["findings"]}


def test_a_minority_unreadable_stays_a_warn(tmp_path):
    healthy_clips(tmp_path, n=3)
    (tmp_path / "bad.wav").write_bytes(os.urandom(2000))
    code, doc = _data(tmp_path)
    assert code == 0
    assert _finding(doc, "TP-DATA-UNREADABLE-AUDIO")["values"]["n"] == 1
