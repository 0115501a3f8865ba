"""Damaged event files: a bad record is counted and reported, never a data point; a
file cut mid-record is read up to the cut and says so; garbage is exit 2."""

from __future__ import annotations

import struct
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainproof.cli import main
from trainproof.parsers import tfevents
from trainproof.parsers.tfevents_crc import crc32c, mask

FIX = Path(__file__).parent / "fixtures" / "tfevents"
DEFAULT = tfevents.event_files(FIX / "torch_default")[0]  # simple_value records (vectorised path)
NEW_STYLE = tfevents.event_files(FIX / "torch_new_style")[0]  # tensor records (general path)


def spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every record of a clean file, by plain framing."""
    out, pos = [], 0
    while pos < len(data):
        n = struct.unpack_from("<Q", data, pos)[0]
        out.append((pos, pos + n + 16))
        pos += n + 16
    return out


def points(raw) -> Counter:
    return Counter((tag, s, v) for tag, (steps, values) in raw.columns.items()
                   for s, v in zip(steps.tolist(), values.tolist(), strict=True))


def read_bytes(tmp_path: Path, data: bytes):
    f = tmp_path / "events.out.tfevents.1.damaged"
    f.write_bytes(data)
    return tfevents.read(f)


def records_points(data: bytes, tmp_path: Path, keep: list[tuple[int, int]]) -> Counter:
    """The points of the given records, read from a file holding only them."""
    return points(read_bytes(tmp_path, b"".join(data[a:b] for a, b in keep)))


@pytest.mark.parametrize("source", [DEFAULT, NEW_STYLE])
@pytest.mark.parametrize("where", ["body", "crc"])
def test_bad_data_crc_is_counted_not_read(tmp_path, source, where):
    data = source.read_bytes()
    recs = spans(data)
    k = len(recs) // 2
    a, b = recs[k]
    broken = bytearray(data)
    broken[a + 20 if where == "body" else b - 2] ^= 0x40
    raw = read_bytes(tmp_path, bytes(broken))
    assert raw.notes == [f"{'events.out.tfevents.1.damaged'}: 1 record(s) failed their data CRC and were not read"]
    expected = records_points(data, tmp_path, recs[:k] + recs[k + 1:])
    assert points(raw) == expected


@pytest.mark.parametrize("source", [DEFAULT, NEW_STYLE])
def test_bad_length_field_resumes_at_the_next_record(tmp_path, source):
    data = source.read_bytes()
    recs = spans(data)
    k = len(recs) // 3
    a, b = recs[k]
    broken = bytearray(data)
    broken[a + 1] ^= 0x01  # the length field: its CRC fails, so the length is not trusted
    raw = read_bytes(tmp_path, bytes(broken))
    assert len(raw.notes) == 1
    assert f"1 record header(s) failed their CRC; reading resumed at the next valid record ({b - a} bytes" \
        in raw.notes[0]
    assert points(raw) == records_points(data, tmp_path, recs[:k] + recs[k + 1:])


def test_every_cut_point_reads_up_to_the_cut(tmp_path):
    data = tfevents.event_files(FIX / "torch_steps")[0].read_bytes()
    recs = spans(data)
    for cut in range(len(data) + 1):
        raw = read_bytes(tmp_path, data[:cut])
        whole = [r for r in recs if r[1] <= cut]
        partial = cut - (whole[-1][1] if whole else 0)
        assert points(raw) == records_points(data, tmp_path, whole), cut
        if partial:
            assert raw.notes == [f"events.out.tfevents.1.damaged: file ends inside a record ({partial} bytes): "
                                 "the writer stopped mid-write; read up to the cut"], cut
        else:
            assert raw.notes == [], cut


def test_huge_length_at_the_end_is_a_cut_record(tmp_path):
    data = DEFAULT.read_bytes()
    length = struct.pack("<Q", 1 << 40)
    forged = data + length + struct.pack("<I", mask(crc32c(length))) + b"x" * 100
    raw = read_bytes(tmp_path, forged)
    assert points(raw) == points(tfevents.read(DEFAULT))
    assert len(raw.notes) == 1 and "file ends inside a record (112 bytes)" in raw.notes[0]


def test_records_over_the_size_limit_are_skipped_unread(tmp_path, monkeypatch):
    """Histograms and images here are the long records; every scalar record is short."""
    from trainproof.parsers import tfevents_frame
    data = DEFAULT.read_bytes()
    long = [r for r in spans(data) if r[1] - r[0] - 16 > 200]
    monkeypatch.setattr(tfevents_frame, "MAX_RECORD", 200)
    monkeypatch.setattr(tfevents_frame, "BLOCK", 512)
    raw = read_bytes(tmp_path, data)
    assert points(raw) == points(tfevents.read(DEFAULT))
    assert raw.notes == [f"events.out.tfevents.1.damaged: {len(long)} record(s) larger than 200 bytes skipped unread"]


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.integers(0, DEFAULT.stat().st_size - 1), st.integers(1, 255), min_size=1, max_size=6))
def test_random_damage_never_invents_a_point(flips):
    data = bytearray(DEFAULT.read_bytes())
    for pos, bits in flips.items():
        data[pos] ^= bits
    with tempfile.TemporaryDirectory() as d:
        raw = read_bytes(Path(d), bytes(data))
    clean = points(tfevents.read(DEFAULT))
    got = points(raw)
    assert not (got - clean), "a damaged record became a data point"
    assert raw.notes  # damage is always reported


@pytest.mark.parametrize("content", [b"", b"\x00" * 7, bytes(range(256)) * 40])
def test_empty_or_garbage_file_is_exit_2(tmp_path, content, capsys):
    f = tmp_path / "events.out.tfevents.123.host"
    f.write_bytes(content)
    assert main(["epoch", str(f)]) == 2


def test_garbage_is_reported_as_skipped_bytes(tmp_path):
    rng = np.random.default_rng(0)
    raw = read_bytes(tmp_path, rng.integers(0, 256, 5000, dtype=np.uint8).tobytes())
    assert raw.columns == {}
    assert raw.notes and "failed their CRC" in raw.notes[0]


@pytest.mark.parametrize("block", [13, 64, 97, 1000])
def test_block_size_does_not_change_what_is_read(tmp_path, monkeypatch, block):
    """Records and damage that straddle block boundaries are read as in one block."""
    data = DEFAULT.read_bytes()
    recs = spans(data)
    broken = bytearray(data)
    broken[recs[10][0] + 3] ^= 0x08  # a bad length field
    broken[recs[40][0] + 30] ^= 0x08  # a bad body
    cases = [data, bytes(broken), bytes(broken[:-7])]
    expected = [read_bytes(tmp_path, c) for c in cases]
    from trainproof.parsers import tfevents_frame
    monkeypatch.setattr(tfevents_frame, "BLOCK", block)
    for case, want in zip(cases, expected, strict=True):
        got = read_bytes(tmp_path, case)
        assert points(got) == points(want) and got.notes == want.notes
