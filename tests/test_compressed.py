"""Compressed logs (.gz, .bz2, .xz, .zst) read through the one opener every text format
uses: a compressed copy reads exactly as the plain file, damage is one exit-2 line, an
early end is read up to the cut, a decompression bomb is refused, and `doctor` finds
compressed logs but never opens archives."""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import json
import lzma
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from trainproof.model import InputError
from trainproof.parsers import compressed, detect, read_run

from .conftest import ROOT

CORE = ROOT / "tests" / "fixtures" / "core"
TEXT = ROOT / "tests" / "fixtures" / "textlog"
PACK = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}
HAVE_ZSTD = importlib.util.find_spec("zstandard") is not None


def _zstd(data: bytes) -> bytes:
    import zstandard

    # the zstd command line writes a content checksum by default; without one, damage
    # inside a frame can decode to wrong bytes that only the format's reader notices
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


SOURCES = [
    (CORE / "jsonl" / "train_log.jsonl", "jsonl"),
    (CORE / "lightning" / "metrics.csv", "csv"),
    (CORE / "hf_nonfinite" / "trainer_state.json", "hf"),
    (TEXT / "nanogpt" / "train.log", "textlog"),
    (TEXT / "hf_trainer" / "train.log", "textlog"),
]


def _same(a, b) -> None:
    assert a.format == b.format and a.records == b.records and a.columns == b.columns
    assert set(a.series) == set(b.series)
    for name, s in a.series.items():
        np.testing.assert_array_equal(s.steps, b.series[name].steps)
        np.testing.assert_array_equal(s.values, b.series[name].values)


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
@pytest.mark.parametrize("src, fmt", SOURCES, ids=[f"{p.parent.name}/{p.name}" for p, _ in SOURCES])
def test_compressed_copy_reads_like_the_plain_file(tmp_path, src, fmt, suffix):
    if suffix == ".zst" and not HAVE_ZSTD:
        pytest.skip("zstandard is not installed (the [zstd] extra)")
    pack = _zstd if suffix == ".zst" else PACK[suffix]
    dest = tmp_path / (src.name + suffix)
    dest.write_bytes(pack(src.read_bytes()))
    assert detect(dest).name == fmt  # the sniff sees the decompressed head, the inner name
    _same(read_run(src), read_run(dest))


def test_coqui_log_compressed(tmp_path):
    text = ("   --> TIME: 2026-01-01 -- STEP: 0/10 -- GLOBAL_STEP: 0\n     | > loss: 0.5  (0.5)\n"
            "   --> TIME: 2026-01-01 -- STEP: 1/10 -- GLOBAL_STEP: 50\n     | > loss: 0.4  (0.45)\n")
    plain = tmp_path / "trainer_0_log.txt"
    plain.write_text(text)
    packed = tmp_path / "trainer_0_log.txt.bz2"
    packed.write_bytes(bz2.compress(text.encode()))
    assert detect(packed).name == "coqui"
    _same(read_run(plain), read_run(packed))


def test_csv_longer_than_its_dialect_sample(tmp_path):
    """A decompressing stream cannot seek back to the start after the dialect sample."""
    rows = ["step,train_loss,lr"] + [f"{s},{1 / (s + 1):.6f},0.001" for s in range(20000)]
    plain = tmp_path / "metrics.csv"
    plain.write_text("\n".join(rows) + "\n")
    packed = tmp_path / "metrics.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert plain.stat().st_size > 65536
    _same(read_run(plain), read_run(packed))


def test_multi_member_gzip_and_multi_frame_zstd(tmp_path):
    data = (CORE / "jsonl" / "train_log.jsonl").read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    p = tmp_path / "log.jsonl.gz"
    p.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))  # `cat a.gz b.gz`
    _same(read_run(CORE / "jsonl" / "train_log.jsonl"), read_run(p))
    if HAVE_ZSTD:
        z = tmp_path / "log.jsonl.zst"
        z.write_bytes(_zstd(data[:cut]) + _zstd(data[cut:]))
        _same(read_run(CORE / "jsonl" / "train_log.jsonl"), read_run(z))


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_truncated_stream_is_read_up_to_the_cut(tmp_path, suffix, run_cli):
    """A stream that stops early (a copy cut short, `| gzip` still running) keeps what it
    holds, as a half-written JSONL line or a cut event file does, and says so."""
    if suffix == ".zst" and not HAVE_ZSTD:
        pytest.skip("zstandard is not installed (the [zstd] extra)")
    pack = _zstd if suffix == ".zst" else PACK[suffix]
    # bz2 decodes whole 900 kB blocks: enough lines that the cut leaves complete blocks
    lines = [json.dumps({"step": s, "loss": 3.0 - s / 1e5 + (s % 7) / 100}) for s in range(60000)]
    blob = pack(("\n".join(lines) + "\n").encode())
    p = tmp_path / ("metrics.jsonl" + suffix)
    p.write_bytes(blob[: int(len(blob) * 0.6)])
    run = read_run(p)
    assert 0 < len(run.series["loss"]) < 60000
    assert any("stream ends early" in n for n in run.notes)
    code, out, _ = run_cli("epoch", p, "--json")
    assert code in (0, 1) and "stream ends early" in out


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_corrupt_stream_is_one_line_exit_2(tmp_path, suffix, run_cli):
    if suffix == ".zst" and not HAVE_ZSTD:
        pytest.skip("zstandard is not installed (the [zstd] extra)")
    pack = _zstd if suffix == ".zst" else PACK[suffix]
    data = "".join(json.dumps({"step": s, "loss": 1 / (s + 1), "note": f"r{s * 7919 % 10007}"}) + "\n"
                   for s in range(5000)).encode()
    blob = bytearray(pack(data))
    for i in range(len(blob) // 2, len(blob) // 2 + 64):
        blob[i] ^= 0x5A
    p = tmp_path / ("metrics.jsonl" + suffix)
    p.write_bytes(bytes(blob))
    with pytest.raises(InputError, match="corrupt"):
        read_run(p)
    code, out, err = run_cli("epoch", p)
    assert code == 2 and "Traceback" not in out + err


def test_decompression_bomb_is_refused(tmp_path, monkeypatch, run_cli):
    monkeypatch.setattr(compressed, "MIN_CAP", 1 << 20)
    line = json.dumps({"step": 1, "loss": 1.0}) + "\n"
    p = tmp_path / "metrics.jsonl.gz"
    p.write_bytes(gzip.compress(line.encode() * 400_000))  # ~10 MB from ~30 KB: over 200x
    assert p.stat().st_size * compressed.MAX_RATIO < 10 << 20
    code, out, err = run_cli("epoch", p)
    assert code == 2 and "decompression bomb" in out + err
    ok = tmp_path / "small.jsonl.gz"
    ok.write_bytes(gzip.compress(line.encode() * 1000))  # under the floor: read
    assert len(read_run(ok).series["loss"]) == 1


def test_default_limits_admit_real_logs():
    """Every compressed fixture-sized log is far below the cap; the ratio leaves room for
    repetitive JSON lines (measured ~10-40x with gzip -9)."""
    assert compressed.MAX_RATIO >= 100 and compressed.MIN_CAP >= 64 << 20
    data = (CORE / "jsonl" / "train_log.jsonl").read_bytes() * 50
    assert len(data) / len(gzip.compress(data, 9)) < compressed.MAX_RATIO


def test_zst_without_zstandard_is_one_line(tmp_path, monkeypatch, run_cli):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails as when not installed
    p = tmp_path / "metrics.jsonl.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 16)
    code, out, err = run_cli("epoch", p)
    assert code == 2 and "zstandard" in out + err and "Traceback" not in out + err
    found = tmp_path / "runs"
    found.mkdir()
    shutil.copy(p, found / "metrics.jsonl.zst")
    shutil.copy(CORE / "jsonl" / "train_log.jsonl", found / "train_log.jsonl")
    code, out, _ = run_cli("doctor", found, "--json")
    doc = json.loads(out)
    assert any("zstandard" in why for _, why in [(d["file"], d["reason"]) for d in doc["not_judged"]])


def test_doctor_finds_compressed_logs_but_never_opens_archives(tmp_path, monkeypatch, run_cli):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "metrics.jsonl.gz").write_bytes(gzip.compress((CORE / "jsonl" / "train_log.jsonl").read_bytes()))
    (runs / "train.log.xz").write_bytes(lzma.compress((TEXT / "nanogpt" / "train.log").read_bytes()))
    for name in ("data.tar.gz", "bundle.tgz", "model.bin.gz", "weights.pt.xz"):
        (runs / name).write_bytes(gzip.compress((CORE / "jsonl" / "train_log.jsonl").read_bytes()))
    opened: list[str] = []
    real = compressed.open_log

    def spy(path: Path):
        opened.append(path.name)
        return real(path)

    monkeypatch.setattr(compressed, "open_log", spy)
    code, out, _ = run_cli("doctor", runs, "--json")
    doc = json.loads(out)
    assert sorted(Path(r["file"]).name for r in doc["reports"]) == ["metrics.jsonl.gz", "train.log.xz"]
    assert not {"data.tar.gz", "bundle.tgz", "model.bin.gz", "weights.pt.xz"} & set(opened)
    assert code in (0, 1)


def test_explicit_archive_is_not_read_as_a_log(tmp_path, run_cli):
    p = tmp_path / "logs.tar.gz"
    p.write_bytes(gzip.compress((CORE / "jsonl" / "train_log.jsonl").read_bytes()))
    code, out, err = run_cli("epoch", p)
    assert code == 2 and "not a recognised log format" in out + err


def test_watch_rereads_a_compressed_log_whole(tmp_path):
    """Appended bytes of a compressed stream are not lines: `watch` re-reads it through the
    registry (and follows a plain log line by line)."""
    from trainproof.parsers.incremental import LineSource, RereadSource, open_source

    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress((TEXT / "nanogpt" / "train.log").read_bytes()))
    source = open_source(packed, "textlog", str(packed), {})
    assert isinstance(source, RereadSource)
    assert source.update().changed and len(source.run().series["loss"]) == 41
    plain = open_source(TEXT / "nanogpt" / "train.log", "textlog", "train.log", {})
    assert isinstance(plain, LineSource)
