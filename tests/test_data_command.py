"""`trainproof data` through the CLI on real audio written by soundfile: each audio rule
fires on the defect it names, a clean dataset passes and says what it checked, and the
exit code follows the contract (FAIL 1, WARN 0, could not judge 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainproof.cli import main

from .test_data_support import SR, finding, healthy_clips, ids, manifest_for, run_json, tone, write, write_manifest

FIXTURES = Path(__file__).parent / "fixtures" / "data"


@pytest.fixture
def clean(tmp_path: Path) -> tuple[Path, list[tuple[str, str]]]:
    return tmp_path, healthy_clips(tmp_path)


def test_clean_manifest_passes_and_lists_checks(capsys, clean):
    root, clips = clean
    code, doc = run_json(capsys, str(manifest_for(root, clips)))
    assert code == 0
    report = doc["reports"][0]
    assert report["verdict"] == "PASS" and report["kind"] == "dataset" and report["records"] == 12
    assert ids(doc) == {"TP-DATA-PASS"}
    assert {"sample-rate", "silence", "clipping", "char-rate", "normalisation"} <= set(report["checks"]["ran"])


def test_directory_without_transcripts_skips_text_checks_with_reason(capsys, clean):
    root, _ = clean
    code, doc = run_json(capsys, str(root))
    assert code == 0
    skipped = doc["reports"][0]["checks"]["skipped"]
    assert skipped["empty-transcript"] == "the dataset gives no transcripts"


def test_sidecar_transcripts_are_read(capsys, tmp_path):
    write(tmp_path / "a" / "x.wav", tone(1.0))
    (tmp_path / "a" / "x.normalized.txt").write_text("on 3/4/2021", encoding="utf-8")
    code, doc = run_json(capsys, str(tmp_path))
    assert code == 0 and "TP-DATA-UNNORMALIZED" in ids(doc)


def test_mixed_sample_rates_fail(capsys, clean):
    root, clips = clean
    write(root / clips[3][0], tone(2.0, 22050), 22050)
    code, doc = run_json(capsys, str(manifest_for(root, clips)))
    assert code == 1
    f = finding(doc, "TP-DATA-INCONSISTENT-SR")
    assert f["values"]["n"] == 1 and f["values"]["common"] == SR
    assert f["location"]["line"] == 4 and "clip_003.wav" in f["evidence"]


def test_mixed_channels_fail(capsys, clean):
    root, clips = clean
    write(root / clips[0][0], tone(2.0, channels=2))
    code, doc = run_json(capsys, str(root))
    assert code == 1 and "TP-DATA-INCONSISTENT-CHANNELS" in ids(doc)


def test_missing_audio_fails(capsys, clean):
    root, clips = clean
    (root / clips[5][0]).unlink()
    code, doc = run_json(capsys, str(manifest_for(root, clips)))
    assert code == 1
    f = finding(doc, "TP-DATA-MISSING-AUDIO")
    assert f["values"]["n"] == 1 and f["location"]["line"] == 6


def test_durations_out_of_bounds_warn(capsys, clean):
    root, clips = clean
    write(root / clips[0][0], tone(26.0, amp=0.2), subtype="PCM_16")
    write(root / clips[1][0], tone(0.3), subtype="PCM_16")
    code, doc = run_json(capsys, str(root))
    assert code == 0
    assert finding(doc, "TP-DATA-DURATION-LONG")["values"]["longest"] == pytest.approx(26.0)
    assert finding(doc, "TP-DATA-DURATION-SHORT")["values"]["shortest"] == pytest.approx(0.3)


def test_clipping_counts_samples_at_full_scale(capsys, clean):
    root, clips = clean
    x = np.clip(5 * tone(2.0), -1, 1)  # a 0.3 tone driven 14 dB into the rails
    write(root / clips[2][0], x, subtype="PCM_16")
    code, doc = run_json(capsys, str(root))
    f = finding(doc, "TP-DATA-CLIPPING")
    assert code == 0 and f["values"]["n"] == 1
    assert "samples" in f["evidence"] and "clip_002.wav" in f["evidence"]


def test_long_silence_is_located(capsys, clean):
    root, clips = clean
    x = np.concatenate([tone(1.0), np.zeros(int(2.5 * SR), np.float32), tone(1.0)])
    write(root / clips[4][0], x, subtype="PCM_16")
    code, doc = run_json(capsys, str(root))
    f = finding(doc, "TP-DATA-SILENCE")
    assert code == 0 and f["values"]["longest"] == pytest.approx(2.5, abs=0.01)
    assert "at 1.0 s" in f["evidence"]


def test_quiet_noise_floor_counts_as_silence_but_speech_level_noise_does_not(capsys, tmp_path):
    rng = np.random.default_rng(0)
    floor = (0.001 * rng.standard_normal(3 * SR)).astype(np.float32)
    write(tmp_path / "floor.flac", np.concatenate([tone(1.0), floor]))
    write(tmp_path / "noise.flac", (0.05 * rng.standard_normal(4 * SR)).astype(np.float32))
    code, doc = run_json(capsys, str(tmp_path))
    assert code == 0 and "floor.flac" in finding(doc, "TP-DATA-SILENCE")["evidence"]
    assert "noise.flac" not in finding(doc, "TP-DATA-SILENCE")["evidence"]


def test_byte_identical_files_and_a_file_listed_twice(capsys, clean):
    root, clips = clean
    (root / "copy.wav").write_bytes((root / clips[0][0]).read_bytes())
    rows = [{"audio_filepath": a, "text": t} for a, t in clips]
    rows += [{"audio_filepath": "copy.wav", "text": clips[0][1]}, rows[7]]
    code, doc = run_json(capsys, str(write_manifest(root / "m.jsonl", rows)))
    f = finding(doc, "TP-DATA-DUPLICATES")
    assert code == 0 and f["values"]["groups"] == 2 and f["values"]["extra"] == 2


def test_ljspeech_layout_reads_the_normalized_column(capsys, tmp_path):
    for i in range(3):
        write(tmp_path / "wavs" / f"LJ001-000{i}.wav", tone(2.0, freq=300 + 20 * i))
    (tmp_path / "metadata.csv").write_text(
        "LJ001-0000|In 1868 he left.|In eighteen sixty-eight he left.\n"
        "LJ001-0001|Dr. Jones at 10:30|Doctor Jones at ten thirty\n"
        "LJ001-0002|The MRI scan|the MRI scan\n", encoding="utf-8")
    code, doc = run_json(capsys, str(tmp_path))
    assert code == 0 and doc["reports"][0]["format"] == "ljspeech"
    f = finding(doc, "TP-DATA-UNNORMALIZED")
    assert f["values"]["n"] == 1 and f["location"]["line"] == 3


def test_ljspeech_missing_wavs_fail(capsys, tmp_path):
    (tmp_path / "metadata.csv").write_text("LJ9|text|text\n", encoding="utf-8")
    code, doc = run_json(capsys, str(tmp_path / "metadata.csv"))
    assert code == 1 and "TP-DATA-MISSING-AUDIO" in ids(doc)


def test_committed_espeak_fixture_real_speech(capsys):
    code, doc = run_json(capsys, str(FIXTURES / "espeak" / "manifest.jsonl"))
    assert code == 0
    assert ids(doc) == {"TP-DATA-UNNORMALIZED"}
    assert "ten thirty" in finding(doc, "TP-DATA-UNNORMALIZED")["evidence"]


def test_text_output_and_sarif(capsys, clean, tmp_path):
    root, clips = clean
    write(root / clips[3][0], tone(2.0, 22050), 22050)
    sarif = tmp_path / "out.sarif"
    code = main(["data", str(manifest_for(root, clips)), "--sarif", str(sarif)])
    out = capsys.readouterr().out
    assert code == 1 and "[FAIL] TP-DATA-INCONSISTENT-SR" in out
    assert '"ruleId": "TP-DATA-INCONSISTENT-SR"' in sarif.read_text()


def test_stale_manifest_durations_warn(capsys, clean):
    root, clips = clean
    rows = [{"audio_filepath": a, "text": t, "duration": 2.0} for a, t in clips[:4]]
    code, doc = run_json(capsys, str(write_manifest(root / "m.jsonl", rows)))
    f = finding(doc, "TP-DATA-DURATION-MISMATCH")  # the clips last 1.5, 2.0, 2.5 and 3.0 s
    assert code == 0 and f["values"]["n"] == 3 and f["values"]["total"] == 4
    assert f["values"]["worst"] == pytest.approx(1.0) and f["location"]["line"] == 4


@pytest.mark.parametrize("row", [
    {"audio_filepath": "clip_000.wav", "text": "the quick brown fox"},  # NeMo
    {"audio": {"path": "clip_000.wav"}, "sentence": "the quick brown fox"},  # HF datasets / Common Voice
    {"audio_path": "clip_000.wav", "transcript": "the quick brown fox", "duration": 1.5},
    {"path": "clip_000.wav", "transcription": "the quick brown fox"},
])
def test_manifest_key_spellings(capsys, clean, row):
    root, _ = clean
    code, doc = run_json(capsys, str(write_manifest(root / "m.jsonl", [row])))
    assert code == 0 and ids(doc) == {"TP-DATA-PASS"}
    assert "empty-transcript" in doc["reports"][0]["checks"]["ran"]


def test_ljspeech_two_columns_crlf_and_bom(capsys, tmp_path):
    write(tmp_path / "wavs" / "a.wav", tone(2.0))
    write(tmp_path / "wavs" / "b.wav", tone(2.0, freq=330))
    (tmp_path / "metadata.csv").write_bytes("\ufeffa|hello there\r\nb|\r\n".encode())
    code, doc = run_json(capsys, str(tmp_path / "metadata.csv"))
    assert code == 0 and ids(doc) == {"TP-DATA-EMPTY-TRANSCRIPT"}
    assert finding(doc, "TP-DATA-EMPTY-TRANSCRIPT")["location"]["line"] == 2


def test_directory_beside_a_manifest_says_how_to_check_transcripts(capsys, clean):
    root, clips = clean
    manifest_for(root, clips)
    code, doc = run_json(capsys, str(root))
    assert code == 0 and "pass it instead: manifest.jsonl" in doc["reports"][0]["notes"][0]
