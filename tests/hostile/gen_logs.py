"""Hostile text logs: every row-based format trainproof reads (JSONL, CSV, Keras and
Lightning CSV, trainer_state.json, HF Trainer stdout, Coqui, ClearML metrics.jsonl,
MLflow's file store) with wrong values in numeric fields and wrong steps, and every
text log (those and the committed Megatron, nanoGPT, DeepSpeed, torchtune captures)
with its bytes damaged: truncated, random, flipped, invalid UTF-8, BOM, CRLF, NUL,
deep nesting, one 100 MB line."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.hostile.spec import LOG, Env, Spec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BIG = "@@BIG@@"  # the runner replaces this token by the 100 MB filler just before the run
BIG_BYTES = 100 << 20
N = 40


def curve(n: int = N) -> list[tuple[float, float]]:
    """A healthy, decreasing loss: (step, loss)."""
    return [(float(i + 1), 3.0 * math.exp(-i / 12) + 0.5 + 0.01 * ((i * 7) % 5)) for i in range(n)]


Row = tuple[str, str]  # (step token, loss token) as they appear in the file


def _fmt(rows: list[tuple[float, float]]) -> list[Row]:
    return [(f"{s:g}", repr(v)) for s, v in rows]


# Renderers: rows of (step token, loss token) -> the file's text. A token is written
# verbatim, so a test can put NaN, a string or a 400-digit integer where a number goes.
def r_jsonl(rows: list[Row]) -> str:
    return "".join(f'{{"step": {s}, "loss": {v}, "lr": 0.001, "grad_norm": 1.5}}\n' for s, v in rows)


def r_csv(rows: list[Row]) -> str:
    return "step,loss,lr\n" + "".join(f"{s},{_unquote(v)},0.001\n" for s, v in rows)


def r_keras(rows: list[Row]) -> str:
    return "epoch,loss,val_loss\n" + "".join(f"{s},{_unquote(v)},{_unquote(v)}\n" for s, v in rows)


def r_hf(rows: list[Row]) -> str:
    hist = ",\n".join(f'    {{"epoch": 0.1, "grad_norm": 1.2, "learning_rate": 0.001, "loss": {v}, "step": {s}}}'
                      for s, v in rows)
    return ('{\n  "global_step": 40,\n  "max_steps": 40,\n  "logging_steps": 1,\n  "log_history": [\n'
            + hist + '\n  ],\n  "trial_name": null\n}\n')


def r_hf_stdout(rows: list[Row]) -> str:
    return "".join(f"{{'loss': '{_unquote(v)}', 'grad_norm': '1.1', 'learning_rate': '0.001', "
                   f"'epoch': '{s}'}}\n" for s, v in rows)


def r_coqui(rows: list[Row]) -> str:
    out = [" > Training Environment:\n", " | > Num. of GPUs: 1\n"]
    for s, v in rows:
        out.append(f"\n   --> TIME: 2026-12-03 10:00:00 -- STEP: {s}/40 -- GLOBAL_STEP: {s}\n")
        out.append(f"     | > loss: {_unquote(v)}  (1.0)\n     | > grad_norm: 1.5  (1.5)\n")
    return "".join(out)


def r_clearml(rows: list[Row]) -> str:
    events = [f'{{"timestamp": 1796286408276, "type": "training_stats_scalar", "task": "t", "iter": {s}, '
              f'"metric": "loss", "variant": "train", "value": {v}}}' for s, v in rows]
    return "".join("[" + ", ".join(events[i:i + 8]) + "]\n" for i in range(0, len(events), 8))


def r_mlflow(rows: list[Row]) -> str:
    return "".join(f"1796286408{i:03d} {_unquote(v)} {s}\n" for i, (s, v) in enumerate(rows))


def _unquote(v: str) -> str:
    return v[1:-1] if v.startswith('"') and v.endswith('"') else v


# (format, renderer, file name inside the input folder)
ROW_FORMATS: dict[str, tuple[Callable[[list[Row]], str], str]] = {
    "jsonl": (r_jsonl, "metrics.jsonl"),
    "csv": (r_csv, "metrics.csv"),
    "keras": (r_keras, "training.csv"),
    "hf": (r_hf, "trainer_state.json"),
    "hf-stdout": (r_hf_stdout, "train.log"),
    "coqui": (r_coqui, "trainer_0_log.txt"),
    "clearml": (r_clearml, "metrics.jsonl"),
    "mlflow-files": (r_mlflow, "mlruns/1/abc/metrics/loss"),
}


def _write(env: Env, rel: str, data: str | bytes) -> Path:
    p = env.dir / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data)
    return p


def _mlflow_tree(env: Env, text: str) -> Path:
    """A one-run MLflow file store whose loss file holds `text`; the store folder is the input."""
    root = env.dir / "mlruns"
    (root / "1" / "abc" / "metrics").mkdir(parents=True)
    (root / "1" / "meta.yaml").write_text("artifact_location: x\nexperiment_id: '1'\nlifecycle_stage: active\n"
                                          "name: exp\n")
    (root / "1" / "abc" / "meta.yaml").write_text("run_id: abc\nexperiment_id: '1'\nstatus: 3\n"
                                                  "lifecycle_stage: active\nrun_name: r\n")
    (root / "1" / "abc" / "metrics" / "loss").write_bytes(text.encode("utf-8", "surrogateescape"))
    return root


def _row_writer(fmt: str, tokens: Callable[[list[Row]], list[Row]]) -> Callable[[Env], Path]:
    render, rel = ROW_FORMATS[fmt]

    def write(env: Env) -> Path:
        text = render(tokens(_fmt(curve())))
        return _mlflow_tree(env, text) if fmt == "mlflow-files" else _write(env, rel, text)

    return write


def _at(rows: list[Row], idx: list[int], step: str | None = None, value: str | None = None) -> list[Row]:
    out = list(rows)
    for i in idx:
        s, v = out[i]
        out[i] = (step if step is not None else s, value if value is not None else v)
    return out


# Numeric-field damage, as tokens. JSON-based formats take JSON tokens; the CSV-like
# renderers strip the quotes of string tokens.
VALUE_CASES: dict[str, tuple[str, Callable[[list[Row]], list[Row]]]] = {
    "nan-loss": ("nonfinite", lambda r: _at(r, [10, 20, 30], value="NaN")),
    "inf-loss": ("nonfinite", lambda r: _at(r, [15], value="Infinity")),
    "all-nan-loss": ("nonfinite", lambda r: _at(r, list(range(len(r))), value="NaN")),
    "string-loss": ("wrong-type", lambda r: _at(r, [3, 4, 5], value='"n/a"')),
    "bool-loss": ("wrong-type", lambda r: _at(r, [7, 8], value="true")),
    "null-loss": ("wrong-type", lambda r: _at(r, [9], value="null")),
    "huge-loss": ("huge-number", lambda r: _at(r, [12], value="1e308")),
    "overflow-loss": ("huge-number", lambda r: _at(r, [12], value="1e999")),
    "digits400-loss": ("huge-number", lambda r: _at(r, [12], value="9" * 400)),
    "digits400-step": ("huge-number", lambda r: _at(r, [5], step="7" * 400)),
    "negative-steps": ("steps", lambda r: [(f"-{s}", v) for s, v in r]),
    "duplicate-steps": ("steps", lambda r: [(r[i // 2][0], v) for i, (_, v) in enumerate(r)]),
    "decreasing-steps": ("steps", lambda r: [(r[len(r) - 1 - i][0], v) for i, (_, v) in enumerate(r)]),
    "same-step": ("steps", lambda r: [("5", v) for _, v in r]),
    "nan-steps": ("steps", lambda r: _at(r, [2, 3, 4], step="NaN")),
}


def _bytes_of(fmt: str) -> tuple[bytes, str]:
    render, rel = ROW_FORMATS[fmt]
    return render(_fmt(curve())).encode(), rel


# Captured logs committed by other tests: damaged copies.
CAPTURES = {
    "megatron": "textlog/synthetic/SYNTHETIC_megatron.log",
    "nanogpt": "textlog/nanogpt/train.log",
    "deepspeed": "textlog/deepspeed/train.log",
    "torchtune": "textlog/torchtune/log_1796284613.txt",
    "lightning-csv": "core/lightning/metrics.csv",
    # the writers read since (real library output, except detectron2's SYNTHETIC one)
    "keras-fit": "textlog/keras_fit/healthy_v1.log",
    "mlx-lm": "textlog/mlx_lm/v0_31_healthy.log",
    "keras-history": "keras_history/healthy/history.json",
    "keras-csvlogger-log": "core/short/keras_healthy/training.csv",
    "ultralytics": "ultralytics/detect/runs/detect/train/results.csv",
    "mmengine": "mmengine/iter/work_dirs/iter/20261203_160308/vis_data/scalars.json",
    "mmcv": "mmcv/epoch_healthy.log.json",
    "detectron2": "detectron2/SYNTHETIC_metrics.json",
    "sacred": "sacred/runs/1/metrics.json",
    "spacy": "textlog/spacy/ner.log",
    "opennmt": "textlog/opennmt/train.log",
    "flair-log": "flair/textclassifier/training.log",
    "flair-tsv": "flair/textclassifier/loss.tsv",
}
# a capture kept under another name than its fixture's: Keras documents CSVLogger('training.log')
CAPTURE_NAMES = {"keras-csvlogger-log": "training.log"}


def _source(fmt: str) -> tuple[bytes, str]:
    if fmt in CAPTURES:
        p = FIXTURES / CAPTURES[fmt]
        return p.read_bytes(), CAPTURE_NAMES.get(fmt, p.name)
    return _bytes_of(fmt)


def _lines_damage(data: bytes, env: Env, kind: str) -> bytes:
    lines = data.splitlines(keepends=True)
    mid = len(lines) // 2
    if kind == "invalid-utf8":
        lines.insert(mid, b"\xff\xfe\xc3\x28 \xed\xa0\x80 garbage \x80\n")
    elif kind == "nul-bytes":
        lines.insert(mid, b"\x00" * 64 + b"\n")
    elif kind == "deep-nesting":
        lines.insert(mid, b"[" * 1000 + b"]" * 1000 + b"\n")
    elif kind == "deep-object":
        lines.insert(mid, b'{"loss": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001 + b"\n")
    elif kind == "bigline":
        lines.insert(mid, f'{{"note": "{BIG}"}}\n'.encode())
    return b"".join(lines)


def _byte_writer(fmt: str, kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        data, name = _source(fmt)
        rng = env.rng
        if kind == "zero-byte":
            data = b""
        elif kind == "truncated-half":
            data = data[: len(data) // 2]
        elif kind == "truncated-tiny":
            data = data[:7]
        elif kind == "random-bytes":
            data = rng.randbytes(max(len(data), 64))
        elif kind == "bitflips":
            buf = bytearray(data)
            for _ in range(24):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            data = bytes(buf)
        elif kind == "bom":
            data = b"\xef\xbb\xbf" + data
        elif kind == "crlf":
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        elif kind == "cr-only":
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
        elif kind == "header-only":
            data = data.splitlines(keepends=True)[0]
        else:
            data = _lines_damage(data, env, kind)
        if fmt == "mlflow-files":
            return _mlflow_tree(env, data.decode("utf-8", "surrogateescape"))
        return _write(env, name, data)

    return write


BYTE_CASES = {  # kind -> (class, expectation)
    "zero-byte": ("zero-byte", "unreadable"),
    "truncated-half": ("truncated", "any"),
    "truncated-tiny": ("truncated", "unreadable"),
    "random-bytes": ("random-bytes", "unreadable"),
    "bitflips": ("corrupt", "any"),
    "invalid-utf8": ("invalid-utf8", "any"),
    "bom": ("bom", "any"),
    "crlf": ("crlf", "any"),
    "cr-only": ("crlf", "any"),
    "nul-bytes": ("nul-bytes", "any"),
    "header-only": ("no-records", "unreadable"),
}
JSON_LINE_FORMATS = ("jsonl", "clearml", "mmengine", "mmcv", "detectron2")  # one JSON document per line
LINE_READERS = ("jsonl", "csv", "hf-stdout", "coqui", "clearml", "mlflow-files", "megatron", "flair-tsv")


def specs() -> Iterator[Spec]:
    for fmt in ROW_FORMATS:
        for case, (cls, tokens) in VALUE_CASES.items():
            if fmt == "mlflow-files" and case in ("nan-steps",):
                continue
            yield Spec(f"{fmt}/{case}", LOG, "any", cls, _row_writer(fmt, tokens))
    for fmt in (*ROW_FORMATS, *CAPTURES):
        for kind, (cls, expect) in BYTE_CASES.items():
            if kind == "header-only" and fmt not in ("csv", "keras", "lightning-csv", "ultralytics",
                                                     "keras-csvlogger-log", "flair-tsv"):
                continue
            if kind == "truncated-tiny" and fmt == "lightning-csv":
                continue
            yield Spec(f"{fmt}/{kind}", LOG, expect, cls, _byte_writer(fmt, kind))
    for fmt in JSON_LINE_FORMATS:
        yield Spec(f"{fmt}/deep-nesting", LOG, "any", "deep-nesting", _byte_writer(fmt, "deep-nesting"))
        yield Spec(f"{fmt}/deep-object", LOG, "any", "deep-nesting", _byte_writer(fmt, "deep-object"))
    yield Spec("hf/deep-nesting", LOG, "unreadable", "deep-nesting", _hf_deep)
    for fmt in LINE_READERS:
        yield Spec(f"{fmt}/bigline-100MB", LOG, "any", "huge-line", _byte_writer(fmt, "bigline"), big=BIG_BYTES)


def _hf_deep(env: Env) -> Path:
    return _write(env, "trainer_state.json", '{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}")


def healthy_jsonl(path: Path) -> Path:
    path.write_text(r_jsonl(_fmt(curve())))
    return path


def fail_jsonl(path: Path) -> Path:
    """A log with a clear FAIL (NaN loss from step 20 on)."""
    rows = _fmt(curve())
    path.write_text(r_jsonl(_at(rows, list(range(20, len(rows))), value="NaN")))
    return path

