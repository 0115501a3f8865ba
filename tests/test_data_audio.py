"""The audio probe on real files written by soundfile: what it measures agrees with a
plain whole-array computation, across formats, channel layouts, sample types and block
boundaries; the quiet-run search agrees with a per-sample reference."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings
from hypothesis import strategies as st

from trainproof.probes.audio import (
    BLOCK_FRAMES,
    QUIET_CHUNK,
    AudioProblem,
    AudioStats,
    Levels,
    _quiet_runs,
    identical_groups,
    measure_audio,
    measure_many,
)
from trainproof.probes.audio_header import wav_missing_bytes

from .test_data_support import SR, tone, write

LEVELS = Levels(clip=0.99, quiet=0.005)


def reference(x: np.ndarray) -> tuple[float, int, int, int]:
    """Peak, clipped samples, longest quiet run and its start, by a per-frame loop."""
    x = x.reshape(len(x), -1).astype(np.float64)
    mag = np.abs(x).max(axis=1)
    best, run = (0, 0), 0
    for i, quiet in enumerate((mag <= LEVELS.quiet).tolist()):
        run = run + 1 if quiet else 0
        if run > best[0]:
            best = (run, i - run + 1)
    return float(mag.max()), int(np.count_nonzero(np.abs(x) >= LEVELS.clip)), *best


def signal(seconds: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = [tone(1.0, amp=0.5), np.zeros(int(0.7 * SR)), 0.002 * rng.standard_normal(int(0.4 * SR)),
             np.clip(4 * tone(0.5), -1, 1), 0.05 * rng.standard_normal(int((seconds - 2.6) * SR))]
    return np.concatenate(parts).astype(np.float32)


@pytest.mark.parametrize("fmt,subtype", [("WAV", "PCM_16"), ("WAV", "PCM_24"), ("WAV", "FLOAT"),
                                         ("FLAC", "PCM_16"), ("OGG", "VORBIS")])
def test_measurement_matches_reference(tmp_path, fmt, subtype):
    path = write(tmp_path / f"x.{fmt.lower()}", signal(5.0), format=fmt, subtype=subtype)
    decoded, _ = sf.read(path, dtype="float32")
    got = measure_audio(str(path), LEVELS)
    assert isinstance(got, AudioStats) and got.frames == len(decoded) and got.samplerate == SR
    peak, clipped, longest, start = reference(decoded)
    assert got.peak == pytest.approx(peak, abs=1 / 32768)
    if subtype != "VORBIS":  # lossy: the rounding of samples near the levels differs by decoder path
        assert (got.clipped, got.longest_quiet, got.quiet_start) == (clipped, longest, start)
    else:
        assert got.longest_quiet == pytest.approx(longest, rel=0.05)


def test_int16_full_scale_negative_sample_is_a_peak_not_silence(tmp_path):
    x = np.zeros(SR, dtype=np.int16)
    x[100] = -32768  # abs() of this overflows int16
    got = measure_audio(str(write(tmp_path / "x.wav", x, subtype="PCM_16")), LEVELS)
    assert got.peak == 1.0 and got.clipped == 1
    assert got.longest_quiet == SR - 101 and got.quiet_start == 101


def test_stereo_is_quiet_only_where_every_channel_is(tmp_path):
    left = np.concatenate([np.zeros(3 * SR), tone(1.0)])
    right = np.concatenate([tone(1.0), np.zeros(3 * SR)])
    got = measure_audio(str(write(tmp_path / "x.flac", np.stack([left, right], 1))), LEVELS)
    assert got.channels == 2 and got.quiet_start == SR
    assert got.longest_quiet == 2 * SR + 1  # + the left tone's first sample, sin(0) = 0


def test_silence_across_block_boundaries_and_at_the_end(tmp_path):
    n = 3 * BLOCK_FRAMES
    x = np.full(n, 0.3, dtype=np.float32)
    x[BLOCK_FRAMES - 500: 2 * BLOCK_FRAMES + 700] = 0
    x[-(BLOCK_FRAMES // 2 + 10):] = 0  # the file ends quiet, mid-block
    got = measure_audio(str(write(tmp_path / "x.wav", x, subtype="PCM_16")), LEVELS)
    assert (got.longest_quiet, got.quiet_start) == (BLOCK_FRAMES + 1200, BLOCK_FRAMES - 500)


def test_truncated_wav_decodes_shorter_and_reports_missing_bytes(tmp_path):
    path = write(tmp_path / "x.wav", tone(1.0), subtype="PCM_16")
    whole = path.read_bytes()
    path.write_bytes(whole[:20_000])
    got = measure_audio(str(path), LEVELS)
    assert got.missing_bytes == len(whole) - 20_000
    assert got.frames == (20_000 - 44) // 2
    assert wav_missing_bytes(whole[:64], len(whole)) == 0


def test_problems_missing_text_and_directory(tmp_path):
    (tmp_path / "t.wav").write_text("not audio")
    results = measure_many([str(tmp_path / "nope.wav"), str(tmp_path / "t.wav"), str(tmp_path)], LEVELS, 2)
    assert [type(r) for r in results] == [AudioProblem] * 3
    assert results[0].missing and not results[1].missing and results[2].detail == "not a regular file"


def test_threads_and_processes_measure_the_same(tmp_path):
    paths = [str(write(tmp_path / f"{i}.wav", signal(3.0, i), subtype="PCM_16")) for i in range(4)]
    assert measure_many(paths, LEVELS, 2, "thread") == measure_many(paths, LEVELS, 2, "process") \
        == measure_many(paths, LEVELS, 1)


def test_identical_groups_hash_only_same_sized_files(tmp_path):
    a = write(tmp_path / "a.wav", tone(1.0), subtype="PCM_16")
    (tmp_path / "b.wav").write_bytes(a.read_bytes())
    c = write(tmp_path / "c.wav", tone(1.0, freq=300), subtype="PCM_16")  # same size, other bytes
    d = write(tmp_path / "d.wav", tone(2.0), subtype="PCM_16")
    hashed = []

    def digest(p):
        hashed.append(p)
        return open(p, "rb").read()[40:].hex()

    files = [(0, str(a), a.stat().st_size), (1, str(tmp_path / "b.wav"), a.stat().st_size),
             (2, str(c), c.stat().st_size), (3, str(d), d.stat().st_size), (4, str(a), a.stat().st_size)]
    assert identical_groups(files, 2, digest) == [[0, 1, 4]]
    assert str(d) not in hashed


def naive_runs(q: list[bool]) -> tuple[int, int]:
    best, run = (0, 0), 0
    for i, v in enumerate(q):
        run = run + 1 if v else 0
        if run > best[0]:
            best = (run, i - run + 1)
    return best


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 300)), min_size=1, max_size=30), st.integers(1, 700))
def test_quiet_run_search_matches_per_sample_reference(segments, block):
    q = np.concatenate([np.full(n, v) for v, n in segments])
    open_run, best = (0, 0), (0, 0)
    for off in range(0, q.size, block):
        open_run, best = _quiet_runs(q[off:off + block], off, open_run, best)
    want = naive_runs(q.tolist())
    if want[0] >= 2 * QUIET_CHUNK - 1:
        assert best == want
    else:  # shorter runs may go unmeasured, never over-measured
        assert best[0] <= want[0] and q[best[1]:best[1] + best[0]].all()


def test_progress_reports_every_file_in_order(tmp_path):
    paths = [str(write(tmp_path / f"{i}.wav", tone(0.2), subtype="PCM_16")) for i in range(5)]
    seen = []
    measure_many(paths, LEVELS, 2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i, 5) for i in range(1, 6)]
