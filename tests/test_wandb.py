"""W&B run logs (`run-*.wandb`) written by wandb 0.31.0 (scripts/fixtures/make_wandb_fixtures.py):
the series read equal what the script passed to wandb.log, every record's checksum
verifies, and cut or damaged files are read up to the damage and say so."""

from __future__ import annotations

import io
import json
import math
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from trainproof.model import InputError
from trainproof.parsers import FORMATS, detect, read_run
from trainproof.parsers import wandb as wb
from trainproof.parsers.wandb_frame import BLOCK, Damage, read_payloads
from trainproof.parsers.wandb_records import Tally, decode, json_value

FIX = Path(__file__).parent / "fixtures" / "wandb"
PLAIN_DIR = next((FIX / "plain").glob("offline-run-*"))
HF_DIR = next((FIX / "hf").glob("offline-run-*"))
PLAIN = next(PLAIN_DIR.glob("*.wandb"))
HF = next(HF_DIR.glob("*.wandb"))


def calls(name: str) -> list[dict]:
    return json.loads((FIX / name / "expected.json").read_text())["calls"]


def _flat(row: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}/"))
        else:
            out[prefix + k] = v
    return out


def _number(v: object) -> float | None:
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


def expected_series(name: str, step_key: str | None, n: int | None = None) -> dict[str, tuple[list, list]]:
    """key -> (steps, values) of the numbers logged by the first n wandb.log calls."""
    out: dict[str, tuple[list, list]] = {}
    for i, row in enumerate(calls(name)[:n]):
        row = _flat(row)
        step = float(row[step_key]) if step_key else float(i)
        for k, v in row.items():
            x = _number(v)
            if x is not None and k != step_key:
                out.setdefault(k, ([], []))[0].append(step)
                out[k][1].append(x)
    return out


def assert_series_equal(raw, expected: dict) -> None:
    logged = {k: v for k, v in raw.columns.items() if not k.startswith("_")}
    assert sorted(logged) == sorted(expected)
    for k, (steps, values) in expected.items():
        got_steps, got_values = raw.columns[k]
        assert got_steps.tolist() == steps, k
        assert np.array_equal(got_values, np.array(values), equal_nan=True), k


def record_spans(path: Path) -> list[tuple[int, int, int]]:
    """(start, end, type) of every record in the file, walked independently of the reader."""
    b = path.read_bytes()
    pos, out = 7, []
    while pos + 7 <= len(b):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        crc, length, kind = struct.unpack_from("<IHB", b, pos)
        assert zlib.crc32(bytes([kind]) + b[pos + 7:pos + 7 + length]) == crc
        out.append((pos, pos + 7 + length, kind))
        pos += 7 + length
    assert pos == len(b)
    return out


# --- the real files ---------------------------------------------------------------

@pytest.mark.parametrize("path", [PLAIN, HF], ids=["plain", "hf"])
def test_every_record_of_the_real_files_passes_its_crc32(path):
    """wandb's checksum is zlib CRC-32 of the type byte then the data (checked independently)."""
    spans = record_spans(path)
    damage = Damage()
    with open(path, "rb") as fh:
        payloads = list(read_payloads(fh, damage, path.name))
    assert damage == Damage()
    assert len(payloads) == sum(1 for _, _, kind in spans if kind in (1, 4))


def test_the_plain_fixture_spans_blocks_with_every_fragment_type():
    kinds = {kind for _, _, kind in record_spans(PLAIN)}
    assert kinds == {1, 2, 3, 4}


def test_plain_loop_series_equal_what_wandb_log_was_given():
    raw = wb.read(PLAIN_DIR)
    assert raw.records == len(calls("plain"))
    assert raw.meta["step_column"] == "_step"
    assert_series_equal(raw, expected_series("plain", None))
    assert math.isnan(raw.columns["loss"][1][12]) and raw.columns["grad_norm"][1][18] == math.inf
    assert "val/mae" in raw.columns  # a nested dict's path
    assert any("4 non-numeric history value(s) ignored (1 boolean, 1 list, 2 string" in n for n in raw.notes)
    assert raw.meta["finished"] is True and raw.meta["exit_code"] == 0
    assert str(raw.meta["wandb_version"]).startswith("0.31.0")


def test_hf_trainer_series_equal_what_the_wandb_callback_logged():
    raw = wb.read(HF_DIR)
    assert raw.meta["step_column"] == "train/global_step"
    assert any("define_metric" in n for n in raw.notes)
    assert_series_equal(raw, expected_series("hf", "train/global_step"))
    run = read_run(HF_DIR)
    assert run.format == "wandb"
    assert set(run.series) >= {"loss", "eval_loss", "lr", "grad_norm"}
    assert run.series["eval_loss"].steps.tolist() == [5, 10, 15, 20]


def test_hf_run_reads_as_its_own_trainer_state():
    """The same HF run, from the .wandb log and from HF's trainer_state.json."""
    from_wandb, from_hf = read_run(HF_DIR), read_run(FIX / "hf" / "trainer_state.json")
    for name in ("loss", "eval_loss", "lr", "grad_norm"):
        a, b = from_wandb.series[name], from_hf.series[name]
        assert a.steps.tolist() == b.steps.tolist(), name
        assert np.allclose(a.values, b.values, rtol=1e-12, atol=0), name


def test_the_file_alone_reads_as_its_directory():
    a, b = wb.read(PLAIN), wb.read(PLAIN_DIR)
    assert a.columns.keys() == b.columns.keys() and a.notes == b.notes


# --- sniffing -----------------------------------------------------------------------

def test_sniffed_by_name_header_and_run_directory(tmp_path):
    assert detect(PLAIN) is FORMATS["wandb"]
    assert detect(PLAIN_DIR) is FORMATS["wandb"]
    renamed = tmp_path / "copy.bin"
    renamed.write_bytes(PLAIN.read_bytes()[:4096])
    assert detect(renamed) is FORMATS["wandb"]  # by the :W&B header
    other = tmp_path / "holds-a-log"
    other.mkdir()
    (other / PLAIN.name).write_bytes(PLAIN.read_bytes())
    assert detect(other) is None  # not named as wandb names run directories
    assert detect(FIX / "plain") is None


# --- cut and damaged files ------------------------------------------------------------

def _cut(tmp_path: Path, size: int) -> Path:
    p = tmp_path / PLAIN.name
    p.write_bytes(PLAIN.read_bytes()[:size])
    return p


def _history_rows_before(size: int) -> int:
    """How many complete history records end at or before `size` bytes."""
    tally, n = Tally(), 0
    with open(PLAIN, "rb") as fh:
        b = fh.read()
    spans = record_spans(PLAIN)
    first = None
    for start, end, kind in spans:
        if kind in (1, 2):
            first = start
        if kind in (1, 4) and end <= size:
            payload = _payload(b, spans, first, end)
            n += decode(payload, tally) is not None
    return n


def _payload(b: bytes, spans, first: int, end: int) -> bytes:
    return b"".join(b[s + 7:e] for s, e, _ in spans if first <= s and e <= end)


CUTS = {
    "block boundary inside a split record": BLOCK,
    "two blocks, inside the MIDDLE fragment's record": 2 * BLOCK - 100,
    "mid-record": 20_000,
    "inside a record header": None,  # computed: 3 bytes into the 50th record
    "at a record boundary": None,  # computed: the end of the 50th record
}


@pytest.mark.parametrize("where", list(CUTS))
def test_a_cut_file_is_read_up_to_the_cut(tmp_path, where):
    spans = record_spans(PLAIN)
    size = CUTS[where]
    if where == "inside a record header":
        size = spans[50][0] + 3
    elif where == "at a record boundary":
        size = spans[50][1]
    raw = wb.read(_cut(tmp_path, size))
    n = _history_rows_before(size)
    assert raw.records == n
    assert_series_equal(raw, expected_series("plain", None, n))
    cut_noted = any("file ends inside a record" in note for note in raw.notes)
    assert cut_noted == (where != "at a record boundary")
    assert raw.meta["finished"] is False


def _flip(tmp_path: Path, offset: int) -> Path:
    b = bytearray(PLAIN.read_bytes())
    b[offset] ^= 0x5A
    p = tmp_path / PLAIN.name
    p.write_bytes(bytes(b))
    return p


def _history_record_index(k: int) -> tuple[int, int]:
    """(start, _step) of the k-th history record written whole (FULL)."""
    b, found = PLAIN.read_bytes(), -1
    tally = Tally()
    for start, end, kind in record_spans(PLAIN):
        row = decode(b[start + 7:end], tally) if kind == 1 else None
        if row is not None:
            found += 1
            if found == k:
                return start, int(row["_step"])
    raise AssertionError(k)


def test_a_flipped_data_byte_fails_its_checksum_and_that_row_alone_is_lost(tmp_path):
    start, row = _history_record_index(40)
    raw = wb.read(_flip(tmp_path, start + 20))
    assert any("1 record(s) failed their CRC-32 checksum" in n for n in raw.notes)
    assert raw.records == len(calls("plain")) - 1
    steps = raw.columns["loss"][0]
    assert row not in steps.tolist() and len(steps) == len(calls("plain")) - 1


@pytest.mark.parametrize("k", [40, 118])  # a full block, and the file's last, partial one
def test_a_flipped_length_byte_loses_that_record_and_reading_resumes(tmp_path, k):
    start, row = _history_record_index(k)
    raw = wb.read(_flip(tmp_path, start + 5))  # the length's high byte: the record runs off
    assert any("impossible (type or length)" in n or "failed their CRC-32" in n for n in raw.notes)
    assert any("reading resumed at the next record that checks out" in n for n in raw.notes)
    assert not any("file ends inside a record" in n for n in raw.notes)
    assert raw.records == len(calls("plain")) - 1
    assert row not in raw.columns["loss"][0].tolist()


def _split_records() -> list[tuple[int, bool]]:
    """(FIRST fragment's start, holds a history row) of each record split across blocks."""
    b, spans, first, out = PLAIN.read_bytes(), record_spans(PLAIN), 0, []
    for start, end, kind in spans:
        first = start if kind == 2 else first
        if kind == 4:
            out.append((first, decode(_payload(b, spans, first, end), Tally()) is not None))
    return out


@pytest.mark.parametrize("what", ["history", "summary"])
def test_a_damaged_fragment_loses_its_whole_record_only(tmp_path, what):
    """wandb 0.31.0 writes the 40,000-character string in a summary record (FIRST, MIDDLE,
    LAST) and then in a history record (FIRST, LAST): damage either one's FIRST fragment."""
    first = next(s for s, history in _split_records() if history == (what == "history"))
    raw = wb.read(_flip(tmp_path, first + 100))
    assert any("1 record(s) failed their CRC-32 checksum" in n for n in raw.notes)
    lost = 1 if what == "history" else 0
    assert raw.records == len(calls("plain")) - lost  # every other row is read
    assert not any("lost a fragment" in n for n in raw.notes)  # counted once, as the CRC failure


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (bytes(range(256)) * 8, "not a W&B run log"),
    (b":W&B\x00\x00\x00", "magic"),
    (b":W&B\xe1\xbe\x07", "version 7"),
    (b":W", "not a W&B run log"),
])
def test_not_a_wandb_log_is_an_input_error(tmp_path, content, message):
    p = tmp_path / "run-x.wandb"
    p.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_run(p)


def test_a_header_alone_is_an_empty_run(tmp_path):
    p = tmp_path / "run-x.wandb"
    p.write_bytes(PLAIN.read_bytes()[:7])
    raw = wb.read(p)
    assert raw.records == 0 and raw.columns == {}


# --- framing and decoding in isolation -------------------------------------------------

def frame(payloads: list[bytes], pad_to: int | None = None) -> bytes:
    """A W&B log as the writer lays it out: fragments at block ends, zero trailers."""
    out = bytearray(b":W&B\xe1\xbe\x00")
    for data in payloads:
        first = True
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < 7:
                out += b"\0" * left
                left = BLOCK
            room = left - 7
            piece, data = data[:room], data[room:]
            kind = (1 if first else 4) if not data else (2 if first else 3)
            out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + piece), len(piece), kind) + piece
            first = False
            if not data:
                break
    return bytes(out)


def _payloads(blob: bytes) -> tuple[list[bytes], Damage]:
    damage = Damage()
    return list(read_payloads(io.BytesIO(blob), damage, "x")), damage


@pytest.mark.parametrize("sizes", [[10, 20], [BLOCK - 14], [BLOCK - 15, 5], [3 * BLOCK], [0, 0, BLOCK * 2 + 1]])
def test_frames_round_trip(sizes):
    payloads = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    got, damage = _payloads(frame(payloads))
    assert got == payloads and damage == Damage()


def raw_frames(frames: list[tuple[int, bytes]]) -> bytes:
    """Records of the given types, as they are (a writer's bugs or a splice)."""
    out = bytearray(b":W&B\xe1\xbe\x00")
    for kind, piece in frames:
        out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + piece), len(piece), kind) + piece
    return bytes(out)


@pytest.mark.parametrize("frames, read, broken", [
    ([(2, b"a"), (1, b"b")], [b"b"], 1),  # a FIRST that never got its LAST
    ([(4, b"a"), (1, b"b")], [b"b"], 1),  # a LAST with no FIRST
    ([(3, b"a"), (3, b"a"), (4, b"a"), (1, b"b")], [b"b"], 1),  # one lost record, counted once
    ([(2, b"a"), (3, b"b"), (4, b"c")], [b"abc"], 0),
    ([(1, b"x"), (2, b"a")], [b"x"], 0),  # cut after a FIRST: truncated, not broken
])
def test_fragment_sequences(frames, read, broken):
    got, damage = _payloads(raw_frames(frames))
    assert got == read and damage.broken == broken
    assert damage.truncated == (frames[-1][0] == 2)


def test_a_zero_filled_tail_is_not_damage():
    blob = frame([b"abc"]) + b"\0" * 100
    got, damage = _payloads(blob)
    assert got == [b"abc"] and damage == Damage()


@pytest.mark.parametrize("raw, value", [
    (b"1.5", 1.5), (b"NaN", math.nan), (b"Infinity", math.inf), (b"-Infinity", -math.inf),
    (b"2", 2.0), (b"1.796284385136587e+09", 1.796284385136587e09), (b'"x"', "string"),
    (b"[1]", "list"), (b'{"_type": "image-file"}', "dict"), (b"true", "boolean"), (b"null", None),
    (b"", "malformed"), (b"@", "malformed"),
])
def test_json_values(raw, value):
    got = json_value(raw)
    if isinstance(value, float) and math.isnan(value):
        assert isinstance(got, float) and math.isnan(got)
    else:
        assert got == value


def _field(num: int, wt: int, body: bytes) -> bytes:
    key = bytes([num << 3 | wt]) if num < 16 else bytes([(num << 3 | wt) & 0x7F | 0x80, (num << 3 | wt) >> 7])
    if wt == 2:
        return key + bytes([len(body)]) + body
    return key + body


def test_typed_history_values_are_read_too():
    """The HistoryItem oneof (number, integer, text) that newer writers may use instead of value_json."""
    items = [
        _field(1, 2, _field(1, 2, b"loss") + _field(6, 1, struct.pack("<d", 0.25))),
        _field(1, 2, _field(2, 2, b"train") + _field(2, 2, b"n") + _field(5, 0, bytes([5]))),  # zigzag -3
        _field(1, 2, _field(1, 2, b"tag") + _field(7, 2, b"hello")),
        _field(1, 2, _field(1, 2, b"_step") + _field(16, 2, b"7")),
    ]
    tally = Tally()
    row = decode(_field(2, 2, b"".join(items)), tally)
    assert row == {"loss": 0.25, "train/n": -3.0, "_step": 7.0}
    assert tally.ignored == {"string": 1}


def test_a_payload_that_is_not_a_record_is_counted():
    tally = Tally()
    assert decode(b"\x12\x50abc", tally) is None  # a history field running past its payload
    assert tally.undecodable == 1


@pytest.mark.parametrize("keys, declared, step", [
    ({"_step", "train/global_step", "train/loss"}, {"*": "train/global_step"}, "train/global_step"),
    ({"_step", "epoch", "acc"}, {"acc": "epoch"}, "epoch"),  # one step metric for all it names
    ({"_step", "global_step", "loss"}, {}, "global_step"),  # the run's own step, undeclared
    ({"_step", "loss"}, {"*": "missing"}, "_step"),  # declared but never logged
    ({"loss"}, {}, None),
])
def test_the_step_column_choice(keys, declared, step):
    got, why = wb.choose_step(keys, declared)
    assert got == step and why
