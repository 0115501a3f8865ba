"""Property-based fuzzing of every reader through its command, in-process: raw bytes
under the reader's file name, and structured-but-wrong inputs (the right framing,
CRCs and keys around values of the wrong kind). Whatever comes in, the command
answers 0, 1 or 2 with at most one line on stderr and never an internal error.

derandomize=True: the examples are the same on every run (CI is reproducible);
max_examples stays modest so the normal run stays fast. A crash found here is
kept as a file under tests/hostile/regressions/ (test_regressions.py replays them)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile.gen_binlogs import tf_record
from trainproof.cli import main

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.integers(min_value=-(10**30), max_value=10**30), st.just(10**400), st.booleans(),
                    st.none(), st.text(max_size=8), st.lists(st.integers(), max_size=3),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
keys = st.sampled_from(["step", "loss", "eval_loss", "lr", "learning_rate", "grad_norm", "epoch", "global_step",
                        "train/loss", "iter", "value", "metric", "_step", ""])
rows = st.lists(st.dictionaries(keys, numbers, max_size=5), max_size=25)


def judge(tmp: Path, *argv: str, capsys=None) -> None:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    err = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert code in (0, 1, 2)
    assert "internal error" not in captured.err and "Traceback" not in captured.err, captured.err
    assert len(err) <= 1, err
    if code == 0:
        doc = json.loads(captured.out)
        for r in doc["reports"]:
            if r["verdict"] in ("PASS", "WARN") and r.get("kind") in ("run", "dataset"):
                assert r["records"], f"{r['verdict']} on nothing: {r}"


def put(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    for old in tmp_path.iterdir():  # one input per example: hypothesis reuses tmp_path
        if old.is_file():
            old.unlink()
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return p


def _dumps(x: object) -> str:
    return json.dumps(x, default=str)


LOG_NAMES = ["metrics.jsonl", "metrics.csv", "trainer_state.json", "train.log", "trainer_0_log.txt",
             "events.out.tfevents.1.host", "run-x.wandb", "mlflow.db", "metrics.jsonl.gz", "offline.zip",
             "history.json", "results.csv", "scalars.json", "metrics.json", "loss.tsv"]


@FUZZ
@given(name=st.sampled_from(LOG_NAMES), data=st.binary(max_size=4096))
def test_log_readers_on_bytes(tmp_path, capsys, name, data):
    judge(tmp_path, "epoch", str(put(tmp_path, name, data)), capsys=capsys)


@FUZZ
@given(rows=rows)
def test_jsonl_rows_of_wrong_values(tmp_path, capsys, rows):
    text = "".join(_dumps(r) + "\n" for r in rows)
    judge(tmp_path, "epoch", str(put(tmp_path, "metrics.jsonl", text)), capsys=capsys)


@FUZZ
@given(rows=rows)
def test_trainer_state_of_wrong_values(tmp_path, capsys, rows):
    doc = {"log_history": rows, "global_step": 10, "max_steps": 10}
    judge(tmp_path, "epoch", str(put(tmp_path, "trainer_state.json", _dumps(doc))), capsys=capsys)


@FUZZ
@given(columns=st.dictionaries(keys, st.one_of(st.lists(numbers, max_size=12), numbers,
                                             st.dictionaries(st.sampled_from(["0", "1", "2", "x"]), numbers)),
                               max_size=5),
       wrapped=st.booleans())
def test_keras_history_of_wrong_values(tmp_path, capsys, columns, wrapped):
    doc = {"history": columns} if wrapped else columns
    judge(tmp_path, "epoch", str(put(tmp_path, "history.json", _dumps(doc))), "--format", "keras", capsys=capsys)


mm_keys = st.sampled_from(["step", "iter", "epoch", "loss", "lr", "time", "data_time", "coco/bbox_mAP", "mIoU"])


@FUZZ
@given(rows=st.lists(st.dictionaries(mm_keys, numbers, max_size=6), max_size=25),
       name=st.sampled_from(["scalars.json", "metrics.json"]))
def test_mmengine_and_detectron2_rows_of_wrong_values(tmp_path, capsys, rows, name):
    if name == "metrics.json":  # detectron2's keys
        rows = [{("iteration" if k == "iter" else "total_loss" if k == "loss" else k): v for k, v in r.items()}
                for r in rows]
    fmt = "mmengine" if name == "scalars.json" else "detectron2"
    text = "".join(_dumps(r) + "\n" for r in rows)
    judge(tmp_path, "epoch", str(put(tmp_path, name, text)), "--format", fmt, capsys=capsys)


cells = st.one_of(st.floats(allow_nan=True).map(repr), st.text(alphabet=",\"\n\r\t ab1.-e", max_size=6),
                  st.sampled_from(["", "nan", "inf", "-inf", "True", "1e999", "9" * 400, "0x10"]))


@FUZZ
@given(header=st.lists(keys, min_size=1, max_size=5), body=st.lists(st.lists(cells, max_size=6), max_size=30))
def test_csv_of_wrong_cells(tmp_path, capsys, header, body):
    text = ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in body)
    judge(tmp_path, "epoch", str(put(tmp_path, "metrics.csv", text)), capsys=capsys)


@FUZZ
@given(body=st.lists(st.lists(cells, max_size=8), max_size=20))
def test_ultralytics_results_of_wrong_cells(tmp_path, capsys, body):
    header = "epoch,train/box_loss,train/cls_loss,val/box_loss,val/cls_loss,lr/pg0\n"
    text = header + "".join(",".join(r) + "\n" for r in body)
    judge(tmp_path, "epoch", str(put(tmp_path, "results.csv", text)), capsys=capsys)


@FUZZ
@given(body=st.lists(st.lists(cells, max_size=8), max_size=20))
def test_flair_loss_tsv_of_wrong_cells(tmp_path, capsys, body):
    header = "EPOCH\tTIMESTAMP\tBAD_EPOCHS\tLEARNING_RATE\tTRAIN_LOSS\tDEV_LOSS\tDEV_F1\n"
    text = header + "".join("\t".join(r) + "\n" for r in body)
    judge(tmp_path, "epoch", str(put(tmp_path, "loss.tsv", text)), capsys=capsys)


@FUZZ
@given(lines=st.lists(st.tuples(st.sampled_from(["iteration {} | lm loss: {} |", "step {}: train loss {}",
                                                 "{{'loss': '{}', 'epoch': '{}'}}",
                                                 "   --> TIME: x -- GLOBAL_STEP: {}\n     | > loss: {}",
                                                 "[x INFO] Step {}/  300; acc: 7.9; ppl: 2.0; xent: {}; 3 sec;",
                                                 "[x INFO] Validation perplexity: {}{}",
                                                 "E    #       LOSS NER  SCORE\n---  ------  --------  ------\n"
                                                 "  0  {}  {}  0.00",
                                                 "EPOCH {} done: loss {} - lr: 0.100000",
                                                 "DEV : loss {} - f1-score (micro avg)  {}"]),
                                st.text(alphabet="0123456789.-eEnaif", max_size=12),
                                st.text(alphabet="0123456789.-eEnaif", max_size=12)), max_size=30))
def test_text_logs_of_wrong_numbers(tmp_path, capsys, lines):
    text = "".join(t.format(a, b) + "\n" for t, a, b in lines)
    judge(tmp_path, "epoch", str(put(tmp_path, "train.log", text)), capsys=capsys)


@FUZZ
@given(payloads=st.lists(st.binary(max_size=120), max_size=20))
def test_tfevents_frames_with_right_crcs(tmp_path, capsys, payloads):
    """The framing checks out, so the protobuf decoder meets whatever is inside."""
    head = tf_record(b"\x09" + b"\x00" * 8 + b"\x1a\x0dbrain.Event:2")
    data = head + b"".join(tf_record(p) for p in payloads)
    judge(tmp_path, "epoch", str(put(tmp_path, "events.out.tfevents.1.host", data)), capsys=capsys)


@FUZZ
@given(payloads=st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 0, 9]), st.binary(max_size=200)), max_size=20))
def test_wandb_records_with_right_checksums(tmp_path, capsys, payloads):
    recs = b"".join(struct.pack("<IHB", zlib.crc32(bytes([t]) + p), len(p), t) + p for t, p in payloads)
    judge(tmp_path, "epoch", str(put(tmp_path, "run-x.wandb", b":W&B\xe1\xbe\x00" + recs)), capsys=capsys)


dtypes = st.sampled_from(["F32", "F16", "BF16", "I64", "U8", "BOOL", "F8_E4M3", "Q99", "", "f32"])
tensor = st.fixed_dictionaries({"dtype": dtypes, "shape": st.lists(st.integers(-2, 2**40), max_size=3),
                                "data_offsets": st.lists(st.integers(-5, 2**40), min_size=0, max_size=3)})


@FUZZ
@given(header=st.dictionaries(st.text(max_size=6), tensor, max_size=6), body=st.binary(max_size=256))
def test_safetensors_headers_that_lie(tmp_path, capsys, header, body):
    raw = _dumps(header).encode()
    data = struct.pack("<Q", len(raw)) + raw + body
    p = put(tmp_path, "model.safetensors", data)
    judge(tmp_path, "env", "--checkpoint", str(p), "--output-dir", str(tmp_path), capsys=capsys)


@FUZZ
@given(pkl=st.binary(max_size=512), name=st.sampled_from(["model.pt", "model.safetensors", "last.ckpt"]))
def test_checkpoints_on_bytes(tmp_path, capsys, pkl, name):
    p = put(tmp_path, name, pkl)
    judge(tmp_path, "env", "--checkpoint", str(p), "--output-dir", str(tmp_path), capsys=capsys)


opcodes = st.lists(st.sampled_from([b"(", b")", b"]", b"}", b"a", b"e", b"s", b"u", b"t", b"R", b"b", b"0", b"1",
                                    b"2", b"h\x00", b"q\x00", b"N", b"K\x01", b"\x85", b"\x86", b"\x87", b"\x88",
                                    b"X\x01\x00\x00\x00a", b"ctorch._utils\n_rebuild_tensor_v2\n", b"Q",
                                    b"ccollections\nOrderedDict\n", b"\x93", b"\x94", b"\x8c\x01x"]), max_size=60)


@FUZZ
@given(ops=opcodes)
def test_torch_zip_with_pickle_nonsense(tmp_path, capsys, ops):
    """A real torch ZIP layout around a data.pkl of random opcodes."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02" + b"".join(ops) + b".")
        zf.writestr("archive/version", b"3\n")
        zf.writestr("archive/byteorder", b"little")
        zf.writestr("archive/data/0", b"\x00" * 16)
    p = put(tmp_path, "model.pt", buf.getvalue())
    judge(tmp_path, "env", "--checkpoint", str(p), "--output-dir", str(tmp_path), capsys=capsys)


records = st.lists(st.dictionaries(st.sampled_from(["text", "instruction", "output", "messages", "chosen",
                                                    "rejected", "prompt", "input"]), numbers, max_size=4), max_size=20)


@FUZZ
@given(recs=records, as_array=st.booleans())
def test_preflight_records_of_wrong_types(tmp_path, capsys, recs, as_array):
    if as_array:
        p = put(tmp_path, "train.json", _dumps(recs))
    else:
        p = put(tmp_path, "train.jsonl", "".join(_dumps(r) + "\n" for r in recs))
    judge(tmp_path, "preflight", str(p), capsys=capsys)


@FUZZ
@given(data=st.binary(max_size=2048), name=st.sampled_from(["train.jsonl", "train.json", "train.parquet"]))
def test_preflight_on_bytes(tmp_path, capsys, data, name):
    judge(tmp_path, "preflight", str(put(tmp_path, name, data)), capsys=capsys)


@FUZZ
@given(head=st.binary(min_size=0, max_size=64), fields=st.tuples(st.integers(0, 70000), st.integers(0, 65535),
                                                                  st.integers(0, 2**32 - 1), st.integers(0, 64),
                                                                  st.integers(0, 2**32 - 1)))
def test_data_on_wav_headers_that_lie(tmp_path, capsys, head, fields):
    tag, ch, rate, bits, size = fields
    fmt = struct.pack("<HHIIHH", tag % 65536, ch, rate, 0, 0, bits)
    wav = b"RIFF" + struct.pack("<I", 36 + size) + b"WAVEfmt " + struct.pack("<I", 16) + fmt + b"data" + \
        struct.pack("<I", size) + head
    d = tmp_path / "clips"
    d.mkdir(exist_ok=True)
    (d / "a.wav").write_bytes(wav)
    judge(tmp_path, "data", str(d), "--workers", "1", capsys=capsys)


@FUZZ
@given(rows=st.lists(st.dictionaries(st.sampled_from(["audio_filepath", "text", "duration", "path"]), numbers,
                                     max_size=4), max_size=10))
def test_data_manifest_of_wrong_types(tmp_path, capsys, rows):
    p = put(tmp_path, "manifest.jsonl", "".join(_dumps(r) + "\n" for r in rows))
    judge(tmp_path, "data", str(p), "--workers", "1", capsys=capsys)


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory) -> Path:
    pytest.importorskip("tokenizers", reason="tokenizers is the [tokenizers] extra (ci/requirements/preflight.txt)")
    from tests.hostile.gen_data import good_companions

    return good_companions(tmp_path_factory.mktemp("tok"))["tokenizer"]


@FUZZ
@given(data=st.binary(max_size=1024), jsonl=st.booleans())
def test_tokenizer_transcripts_on_bytes(tmp_path, capsys, tokenizer_json, data, jsonl):
    p = put(tmp_path, "t.jsonl" if jsonl else "t.txt", data)
    judge(tmp_path, "tokenizer", str(tokenizer_json), str(p), capsys=capsys)


@FUZZ
@given(data=st.binary(max_size=1024), name=st.sampled_from(["tokenizer.json", "tok.model"]))
def test_tokenizer_models_on_bytes(tmp_path, capsys, tokenizer_json, data, name):
    tr = tmp_path.parent / f"{tmp_path.name}-t.txt"
    tr.write_text("the cat sat\n")
    judge(tmp_path, "tokenizer", str(put(tmp_path, name, data)), str(tr), capsys=capsys)


sql_values = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                       st.integers(min_value=-(2**63), max_value=2**63 - 1), st.text(max_size=6),
                       st.binary(max_size=6), st.none())


@FUZZ
@given(runs=st.lists(st.tuples(st.sampled_from(["r1", "r2", ""]), sql_values, sql_values, sql_values), max_size=3),
       points=st.lists(st.tuples(sql_values, sql_values, sql_values, sql_values, st.sampled_from(["r1", "r2"])),
                       max_size=30))
def test_mlflow_database_of_wrong_types(tmp_path, capsys, runs, points):
    """MLflow's tables and columns, holding any SQLite value where a number or a name goes."""
    import sqlite3

    p = tmp_path / "mlflow.db"
    p.unlink(missing_ok=True)
    con = sqlite3.connect(p)
    with con:
        con.execute("CREATE TABLE runs (run_uuid, name, status, lifecycle_stage, start_time)")
        con.execute("CREATE TABLE metrics (key, value, step, is_nan, run_uuid, timestamp)")
        con.executemany("INSERT INTO runs VALUES (?, ?, ?, 'active', ?)", runs)
        con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, 0)", points)
    con.close()
    judge(tmp_path, "epoch", str(p), capsys=capsys)


@FUZZ
@given(events=st.lists(st.fixed_dictionaries({"type": st.sampled_from(["training_stats_scalar", "log", "x"]),
                                              "iter": numbers, "metric": st.sampled_from(["loss", "Summary", ""]),
                                              "variant": st.sampled_from(["train", "eval", ""]), "value": numbers}),
                       max_size=30), batch=st.integers(1, 8))
def test_clearml_events_of_wrong_values(tmp_path, capsys, events, batch):
    """ClearML's metrics.jsonl: JSON arrays of scalar events, any value in iter and value."""
    lines = "".join(_dumps(events[i:i + batch]) + "\n" for i in range(0, len(events), batch))
    d = tmp_path / "session"
    d.mkdir(exist_ok=True)
    (d / "metrics.jsonl").write_text(lines)
    (d / "task.json").write_text('{"name": "t"}')
    judge(tmp_path, "epoch", str(d), capsys=capsys)
