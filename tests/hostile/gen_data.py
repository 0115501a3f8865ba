"""Hostile datasets: fine-tuning data for `preflight` (JSONL, JSON arrays, Parquet,
shard folders), speech datasets for `data` (clips that do not decode, WAV headers
that lie, manifests pointing at /dev/zero, FIFOs, folders and escapes, LJSpeech
metadata), and tokenizers and transcripts for `tokenizer`."""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.hostile.gen_logs import BIG, BIG_BYTES, FIXTURES
from tests.hostile.spec import DATASET, SPEECH, TOKMODEL, TRANSCRIPTS, Env, Spec

PARQUET = FIXTURES / "preflight/chat.parquet"
OGG = sorted((FIXTURES / "data/espeak").glob("*.ogg"))
WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "ran", "to", "the", "small", "red", "house", "under", "a",
         "green", "tree", "today"]


def sentence(i: int) -> str:
    return " ".join(WORDS[(i * 5 + j * 3) % len(WORDS)] for j in range(6 + i % 5)).capitalize() + "."


def text_rows(n: int = 60) -> list[str]:
    return [json.dumps({"text": sentence(i) + " " + sentence(i + 1)}) for i in range(n)]


@functools.cache
def wav(frames: int = 8000, rate: int = 16000, ch: int = 1, bits: int = 16, data_size: int | None = None,
        riff_size: int | None = None, tag: int = 1, seed: int = 0) -> bytes:
    """A PCM WAV of a 220 Hz tone, every header field overridable so it can lie."""
    pcm = struct.pack(f"<{frames * ch}h", *(int(8000 * math.sin(2 * math.pi * (220 + seed) * i / 16000))
                                           for i in range(frames) for _ in range(ch)))
    align = max(ch * bits // 8, 0)
    fmt = struct.pack("<HHIIHH", tag, ch, rate, rate * align, align, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack(
        "<I", len(pcm) if data_size is None else data_size) + pcm
    return b"RIFF" + struct.pack("<I", len(body) if riff_size is None else riff_size) + body


LYING_WAVS = {"data-size-huge": {"data_size": 0x7FFFFFF0}, "rate-zero": {"rate": 0}, "channels-zero": {"ch": 0},
              "bits-3": {"bits": 3}, "riff-size-zero": {"riff_size": 0}, "format-tag-nonsense": {"tag": 0x1234},
              "channels-huge": {"ch": 4000, "frames": 1}}


def _put(p: Path, data: bytes | str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))
    return p


def _good_clips(d: Path, n: int) -> None:
    for i in range(n):
        _put(d / f"good_{i}.wav", wav(seed=i * 37))


def _speech_dir(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        d = env.dir / "clips"
        d.mkdir()
        rng = env.rng
        if kind == "all-undecodable":
            for i, ext in enumerate((".wav", ".flac", ".ogg", ".mp3")):
                _put(d / f"bad_{i}{ext}", rng.randbytes(3000))
        elif kind == "all-zero-byte":
            for ext in (".wav", ".flac", ".ogg"):
                _put(d / f"empty{ext}", b"")
        elif kind == "mostly-undecodable":
            _good_clips(d, 1)
            for i in range(5):
                _put(d / f"bad_{i}.wav", b"RIFF" + rng.randbytes(500))
        elif kind == "one-bad":
            _good_clips(d, 4)
            _put(d / "bad.wav", wav()[:30])
        elif kind == "truncated-ogg":
            shutil.copyfile(OGG[0], d / "a.ogg")
            _put(d / "b.ogg", OGG[1].read_bytes()[:2000])
        elif kind in LYING_WAVS:
            _good_clips(d, 2)
            _put(d / "liar.wav", wav(**LYING_WAVS[kind]))
        elif kind == "only-liar-huge":
            _put(d / "liar.wav", wav(data_size=0xFFFFFFF0 - 64, riff_size=0xFFFFFFF0))
        return d

    return write


def _manifest(kind: str, env: Env) -> Path:
    d = env.dir / "ds"
    d.mkdir()
    _good_clips(d, 3)
    good = [{"audio_filepath": f"good_{i}.wav", "text": sentence(i), "duration": 0.5} for i in range(3)]
    targets = {"dev-zero": "/dev/zero", "missing": "nope.wav", "directory": ".", "escape": "../../../../etc/passwd",
               "fifo": "pipe.wav", "loop": "loop.wav"}
    if kind == "fifo":
        os.mkfifo(d / "pipe.wav")
    if kind == "loop":
        os.symlink("loop.wav", d / "loop.wav")
    if kind in targets:
        rows = [{"audio_filepath": targets[kind], "text": sentence(i), "duration": 1.0} for i in range(4)]
    elif kind == "mixed-dev-zero":
        rows = [*good, {"audio_filepath": "/dev/zero", "text": "x", "duration": 1.0}]
    elif kind in ("duration-nan", "duration-negative", "duration-string", "duration-huge"):
        val = {"duration-nan": "NaN", "duration-negative": "-5", "duration-string": '"long"',
               "duration-huge": "1e308"}[kind]
        text = "".join(json.dumps(r).replace('"duration": 0.5', f'"duration": {val}') + "\n" for r in good)
        return _put(d / "manifest.jsonl", text)
    else:
        lines = [json.dumps(r) for r in good]
        extra = {"invalid-utf8": "\udcff\udcfe bad", "bigline": f'{{"text": "{BIG}"}}',
                 "deep-nesting": "[" * 5000 + "]" * 5000, "zero-byte": None, "random-bytes": None}[kind]
        if kind == "zero-byte":
            return _put(d / "manifest.jsonl", b"")
        if kind == "random-bytes":
            return _put(d / "manifest.jsonl", env.rng.randbytes(3000))
        lines.insert(1, extra)
        return _put(d / "manifest.jsonl", "\n".join(lines) + "\n")
    return _put(d / "manifest.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def _ljspeech(kind: str, env: Env) -> Path:
    d = env.dir / "LJSpeech"
    _good_clips(d / "wavs", 3)
    for i in range(3):
        os.rename(d / "wavs" / f"good_{i}.wav", d / "wavs" / f"LJ001-000{i}.wav")
    rows = [f"LJ001-000{i}|{sentence(i)}|{sentence(i)}" for i in range(3)]
    if kind == "wrong-columns":
        rows = ["a|b|c|d|e|f", "|||", "LJ001-0000", "||" * 500]
    elif kind == "invalid-utf8":
        rows.insert(1, "LJ001-0001|\udcff\udcfe|\udcfa")
    elif kind == "bigline":
        rows.insert(1, f"LJ001-0009|{BIG}|x")
    elif kind == "ids-escape":
        rows = [f"../../../../etc/passwd|{sentence(0)}|x", f"/dev/zero|{sentence(1)}|x"]
    return _put(d / "metadata.csv", "\n".join(rows) + "\n")


def _preflight(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        rows = text_rows()
        rng = env.rng
        if kind.startswith("parquet-"):
            data = PARQUET.read_bytes()
            out = {"parquet-zero-byte": b"", "parquet-random": rng.randbytes(len(data)),
                   "parquet-truncated": data[: len(data) // 2], "parquet-magic-only": b"PAR1PAR1",
                   "parquet-footer-lies": data[:-8] + struct.pack("<I", 0x7FFFFFFF) + b"PAR1",
                   "parquet-bitflips": _flip(data, rng, 12)}[kind]
            return _put(env.dir / "train.parquet", out)
        if kind == "json-array-truncated":
            return _put(env.dir / "train.json", "[" + ",".join(rows)[:700])
        if kind == "json-array-deep":
            return _put(env.dir / "train.json", "[" * 100_000 + "]" * 100_000)
        if kind == "json-array-scalars":
            return _put(env.dir / "train.json", json.dumps(list(range(1000))))
        if kind in ("shards-one-bad", "shards-all-bad", "empty-dir"):
            d = env.dir / "shards"
            d.mkdir()
            if kind == "shards-one-bad":
                _put(d / "part-0.jsonl", "\n".join(rows) + "\n")
            if kind != "empty-dir":
                _put(d / "part-1.jsonl", rng.randbytes(2000))
                _put(d / "part-2.parquet", rng.randbytes(2000))
            return d
        text = "\n".join(rows) + "\n"
        body = _text_damage(kind, text, rng, field="text")
        return _put(env.dir / "train.jsonl", body)

    return write


def _flip(data: bytes, rng, n: int) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        buf[rng.randrange(len(buf))] ^= 0xFF
    return bytes(buf)


def _text_damage(kind: str, text: str, rng, field: str) -> bytes | str:
    lines = text.splitlines(keepends=True)
    mid = len(lines) // 2
    ins = {"invalid-utf8": "\udcff\udcfe{\udcc3(\n", "nul-bytes": "\x00" * 50 + "\n",
           "bigline": f'{{"{field}": "{BIG}"}}\n', "deep-nesting": "[" * 5000 + "]" * 5000 + "\n",
           "huge-int": f'{{"{field}": "x", "id": {"9" * 400}}}\n', "nan-field": f'{{"{field}": NaN}}\n',
           "number-text": f'{{"{field}": 12345}}\n', "bool-text": f'{{"{field}": true}}\n',
           "null-text": f'{{"{field}": null}}\n', "list-text": f'{{"{field}": [1, 2, {{"a": 3}}]}}\n'}
    if kind in ins:
        lines.insert(mid, ins[kind])
        return "".join(lines)
    if kind == "zero-byte":
        return b""
    if kind == "random-bytes":
        return rng.randbytes(len(text))
    if kind == "truncated-half":
        return text[: len(text) // 2]
    if kind == "bom":
        return "\ufeff" + text
    if kind == "crlf":
        return text.replace("\n", "\r\n")
    if kind == "not-objects":
        return "".join(f"{i}\n" for i in range(50))
    if kind == "blank-lines":
        return "\n" * 500
    raise ValueError(kind)


TEXT_KINDS = {"invalid-utf8": "any", "nul-bytes": "any", "bigline": "any", "deep-nesting": "any", "huge-int": "any",
              "nan-field": "any", "number-text": "any", "bool-text": "any", "null-text": "any", "list-text": "any",
              "zero-byte": "unreadable", "random-bytes": "unreadable", "truncated-half": "any", "bom": "any",
              "crlf": "any", "not-objects": "unreadable", "blank-lines": "unreadable"}
PREFLIGHT_OTHER = {"parquet-zero-byte": "unreadable", "parquet-random": "unreadable",
                   "parquet-truncated": "unreadable", "parquet-magic-only": "unreadable",
                   "parquet-footer-lies": "unreadable", "parquet-bitflips": "any", "json-array-truncated": "any",
                   "json-array-deep": "unreadable", "json-array-scalars": "unreadable", "shards-one-bad": "any",
                   "shards-all-bad": "unreadable", "empty-dir": "unreadable"}


def _tok_model(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        rng = env.rng
        if kind.startswith("spm-"):
            real = env.good["spm"].read_bytes()
            out = {"spm-zero-byte": b"", "spm-random": rng.randbytes(len(real)),
                   "spm-truncated": real[: len(real) // 2], "spm-huge-length": b"\x0a\xff\xff\xff\xff\x0f" + real,
                   "spm-deep": b"\x12\x04\x12\x02\x12\x00" * 20000, "spm-bitflips": _flip(real, rng, 40)}[kind]
            return _put(env.dir / "tok.model", out)
        real = json.loads(env.good["tokenizer"].read_text())
        if kind == "json-zero-byte":
            body: str | bytes = b""
        elif kind == "json-random":
            body = rng.randbytes(4000)
        elif kind == "json-truncated":
            body = json.dumps(real)[:1500]
        elif kind == "json-deep":
            body = '{"model": ' + "[" * 100_000 + "]" * 100_000 + "}"
        elif kind == "json-vocab-list":
            real["model"]["vocab"] = [1, 2, 3]
            body = json.dumps(real)
        elif kind == "json-model-unknown":
            real["model"]["type"] = "Nonsense"
            body = json.dumps(real)
        elif kind == "json-huge-ids":
            real["model"]["vocab"] = {k: v * 10**12 for k, v in real["model"]["vocab"].items()}
            body = json.dumps(real)
        elif kind == "json-not-object":
            body = "[1, 2, 3]"
        else:
            raise ValueError(kind)
        return _put(env.dir / "tokenizer.json", body)

    return write


TOK_MODELS = {"spm-zero-byte": "unreadable", "spm-random": "unreadable", "spm-truncated": "unreadable",
              "spm-huge-length": "unreadable", "spm-deep": "unreadable", "spm-bitflips": "any",
              "json-zero-byte": "unreadable", "json-random": "unreadable", "json-truncated": "unreadable",
              "json-deep": "unreadable", "json-vocab-list": "unreadable", "json-model-unknown": "unreadable",
              "json-huge-ids": "any", "json-not-object": "unreadable"}


def _transcripts(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        if kind.startswith("duration-"):
            val = {"duration-nan": "NaN", "duration-negative": "-3", "duration-string": '"x"',
                   "duration-huge": "1e308", "duration-zero": "0"}[kind]
            body = "".join(f'{{"text": {json.dumps(sentence(i))}, "duration": {val}}}\n' for i in range(30))
            return _put(env.dir / "transcripts.jsonl", body)
        if kind == "ljspeech-wrong-columns":
            return _put(env.dir / "metadata.csv", "a|b|c|d\n|||\nonly\n")
        text = "".join(json.dumps({"text": sentence(i), "duration": 2.0}) + "\n" for i in range(30))
        return _put(env.dir / "transcripts.jsonl", _text_damage(kind, text, env.rng, field="text"))

    return write


TRANSCRIPT_KINDS = {**{k: v for k, v in TEXT_KINDS.items() if k not in ("not-objects",)},
                    "duration-nan": "any", "duration-negative": "any", "duration-string": "any",
                    "duration-huge": "any", "duration-zero": "any", "ljspeech-wrong-columns": "any",
                    "random-bytes": "any"}


def specs() -> Iterator[Spec]:
    for kind, expect in TEXT_KINDS.items():
        yield Spec(f"preflight-jsonl/{kind}", DATASET, expect, _cls(kind), _preflight(kind),
                   big=BIG_BYTES if kind == "bigline" else 0)
    for kind, expect in PREFLIGHT_OTHER.items():
        yield Spec(f"preflight/{kind}", DATASET, expect, _cls(kind), _preflight(kind),
                   needs="pyarrow" if kind == "parquet-bitflips" else "")
    for kind in ("all-undecodable", "all-zero-byte", "mostly-undecodable"):
        yield Spec(f"speech-dir/{kind}", SPEECH, "broken", "undecodable", _speech_dir(kind))
    # sizes near 0xFFFFFFFF are what streaming writers leave: the frames present are read
    for kind in ("one-bad", "truncated-ogg", "only-liar-huge", *LYING_WAVS):
        yield Spec(f"speech-dir/{kind}", SPEECH, "any", "lying-header" if kind in LYING_WAVS else "truncated",
                   _speech_dir(kind))
    for kind in ("dev-zero", "missing", "directory", "escape", "fifo", "loop"):
        yield Spec(f"speech-manifest/{kind}", SPEECH, "broken", "special-file", _w(_manifest, kind))
    for kind in ("mixed-dev-zero", "duration-nan", "duration-negative", "duration-string", "duration-huge",
                 "invalid-utf8", "bigline", "deep-nesting"):
        yield Spec(f"speech-manifest/{kind}", SPEECH, "any", _cls(kind), _w(_manifest, kind),
                   big=BIG_BYTES if kind == "bigline" else 0)
    yield Spec("speech-manifest/zero-byte", SPEECH, "unreadable", "zero-byte", _w(_manifest, "zero-byte"))
    yield Spec("speech-manifest/random-bytes", SPEECH, "unreadable", "random-bytes", _w(_manifest, "random-bytes"))
    for kind in ("wrong-columns", "invalid-utf8", "bigline", "ids-escape"):
        yield Spec(f"ljspeech/{kind}", SPEECH, "broken" if kind == "ids-escape" else "any", _cls(kind),
                   _w(_ljspeech, kind), big=BIG_BYTES if kind == "bigline" else 0)
    for kind, expect in TOK_MODELS.items():
        yield Spec(f"tokenizer-model/{kind}", TOKMODEL, expect, _cls(kind), _tok_model(kind),
                   needs="sentencepiece" if kind.startswith("spm") else "tokenizers")
    for kind, expect in TRANSCRIPT_KINDS.items():
        yield Spec(f"transcripts/{kind}", TRANSCRIPTS, expect, _cls(kind), _transcripts(kind), needs="tokenizers",
                   big=BIG_BYTES if kind == "bigline" else 0)


def _w(fn: Callable[[str, Env], Path], kind: str) -> Callable[[Env], Path]:
    return lambda env: fn(kind, env)


def _cls(kind: str) -> str:
    for key, cls in (("utf8", "invalid-utf8"), ("bigline", "huge-line"), ("deep", "deep-nesting"),
                     ("zero-byte", "zero-byte"), ("random", "random-bytes"), ("truncated", "truncated"),
                     ("huge", "huge-number"), ("nan", "nonfinite"), ("bom", "bom"), ("crlf", "crlf"),
                     ("bitflips", "corrupt"), ("dev-zero", "special-file")):
        if key in kind:
            return cls
    return "wrong-type" if kind.endswith("-text") or "duration" in kind or "columns" in kind else "corrupt"


def good_companions(root: Path) -> dict[str, Path]:
    """Healthy inputs that hostile ones are paired with (a tokenizer for hostile
    transcripts, and the reverse)."""
    out: dict[str, Path] = {}
    tr = root / "transcripts.jsonl"
    tr.write_text("".join(json.dumps({"text": sentence(i), "duration": 2.0}) + "\n" for i in range(30)))
    out["transcripts"] = tr
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    except ImportError:
        pass
    else:
        tok = Tokenizer(models.BPE(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.train_from_iterator([sentence(i) for i in range(200)],
                                trainers.BpeTrainer(vocab_size=120, special_tokens=["[UNK]"], show_progress=False))
        tok.save(str(root / "tokenizer.json"))
        out["tokenizer"] = root / "tokenizer.json"
    try:
        import sentencepiece as spm
    except ImportError:
        return out
    (root / "spm.txt").write_text("\n".join(sentence(i) for i in range(300)) + "\n")
    spm.SentencePieceTrainer.train(input=str(root / "spm.txt"), model_prefix=str(root / "spm"), vocab_size=60,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2,
                                   normalization_rule_name="identity")
    out["spm"] = root / "spm.model"
    return out
