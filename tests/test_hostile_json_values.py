"""JSON that trainproof reads beside or inside its inputs - a safetensors header, a
shard index, a speech manifest, transcripts, a config.json beside a log, a ClearML
task.json - nested past the decoder's recursion, holding an integer of 5,000 digits
(a ValueError that is not a JSONDecodeError) or of 400 (an OverflowError in float()),
or a shape of a hundred thousand dimensions: each is a malformed part reported as
such, never "internal error", never a traceback, in bounded time."""

from __future__ import annotations

import json
import struct

import pytest

from .craft import assert_clean, run_bounded

DEEP = "[" * 5000 + "]" * 5000
HUGE = "9" * 5000
BIG = "9" * 400


def _safetensors(path, header: str, data: bytes = b"\0" * 16):
    raw = header.encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


@pytest.mark.parametrize("header", [
    '{"w": {"dtype": "F32", "shape": ' + DEEP + ', "data_offsets": [0, 16]}}',
    '{"w": {"dtype": "F32", "shape": [' + HUGE + '], "data_offsets": [0, 16]}}',
    '{"w": {"dtype": "F32", "shape": [' + ", ".join(["2"] * 100_000) + '], "data_offsets": [0, 16]}}',
    '{"w": {"dtype": "F32", "shape": [' + BIG + ', ' + BIG + '], "data_offsets": [0, ' + BIG + ']}}',
], ids=["deep", "5000-digit", "100k-dims", "400-digit"])
def test_safetensors_headers_that_lie_are_corrupt_not_internal_errors(tmp_path, header):
    p = _safetensors(tmp_path / "model.safetensors", header)
    code, out, err, secs = run_bounded("env", "--checkpoint", p, "--json")
    assert_clean(code, out, err, expect=1)
    (rep,) = [r for r in json.loads(out)["reports"] if r["kind"] == "checkpoint"]
    assert [f["id"] for f in rep["findings"]] == ["TP-ENV-CKPT-CORRUPT"] and secs < 45


@pytest.mark.parametrize("body", [DEEP, '{"weight_map": {"w": ' + HUGE + "}}"], ids=["deep", "5000-digit"])
def test_a_shard_index_that_cannot_be_decoded_is_corrupt(tmp_path, body):
    p = tmp_path / "model.safetensors.index.json"
    p.write_text(body)
    code, out, err, _ = run_bounded("env", "--checkpoint", p, "--json")
    assert_clean(code, out, err, expect=1)
    assert "shard index" in out  # not JSON (the standard library), or no weight_map (orjson)


def test_a_config_json_beside_the_log_cannot_break_the_verdict(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 3 - 0.01 * i}) + "\n" for i in range(100)))
    for config in (DEEP, '{"vocab_size": 50, "n_embd": 8, "initializer_range": ' + BIG + "}",
                   '{"vocab_size": ' + HUGE + "}"):
        (tmp_path / "config.json").write_text(config)
        code, out, err, _ = run_bounded("epoch", log, "--json")
        assert_clean(code, out, err, expect=0)


@pytest.mark.parametrize("value", [BIG, HUGE, DEEP], ids=["400-digit", "5000-digit", "deep"])
def test_a_manifest_duration_past_range_is_one_malformed_record(tmp_path, value):
    pytest.importorskip("soundfile")
    from .test_data_support import healthy_clips, manifest_for

    m = manifest_for(tmp_path, healthy_clips(tmp_path, n=3))
    with open(m, "a") as f:
        f.write('{"audio_filepath": "clip_000.wav", "text": "x", "duration": ' + value + "}\n")
    code, out, err, _ = run_bounded("data", m, "--json", "--workers", "1")
    assert_clean(code, out, err, expect=1)
    ids = {f["id"] for f in json.loads(out)["reports"][0]["findings"]}
    assert "TP-DATA-MALFORMED-RECORD" in ids


def test_transcript_durations_past_range_are_no_duration(tmp_path):
    pytest.importorskip("tokenizers")
    from .test_tokenizer import corpus, train_bpe

    tok = train_bpe(tmp_path / "tokenizer.json")
    rows = [json.dumps({"text": s, "duration": 2.0}) for s in corpus(20)]
    rows += ['{"text": "the cat", "duration": ' + BIG + "}",
             '{"text": "the dog", "start": 0, "end": ' + BIG + "}",
             '{"text": "the fox", "duration": ' + HUGE + "}"]
    tr = tmp_path / "t.jsonl"
    tr.write_text("\n".join(rows) + "\n")
    code, out, err, _ = run_bounded("tokenizer", tok, tr, "--json")
    assert_clean(code, out, err, expect=code)
    assert code in (0, 1) and json.loads(out)["error"] is None


def test_a_clearml_task_json_that_cannot_be_decoded_leaves_the_session_readable(tmp_path):
    s = tmp_path / "task123"
    s.mkdir()
    (s / "task.json").write_text('{"name": ' + DEEP + "}")
    events = [{"type": "training_stats_scalar", "metric": "loss", "variant": "train",
               "value": 3 - 0.01 * i, "iter": i} for i in range(100)]
    (s / "metrics.jsonl").write_text("".join(json.dumps([e]) + "\n" for e in events))
    code, out, err, _ = run_bounded("epoch", s, "--json")
    assert_clean(code, out, err, expect=0)
