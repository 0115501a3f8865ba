"""Hostile binary and packed logs: TensorBoard event files (bad CRCs, lying lengths,
records whose CRCs are right and whose protobuf is nonsense), W&B .wandb record logs,
MLflow's SQLite store, ClearML session zips, and compressed logs (.gz/.bz2/.xz/.zst:
truncated, bad CRC, ratio bombs, tarballs)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sqlite3
import struct
import tarfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.hostile.gen_logs import FIXTURES, healthy_jsonl
from tests.hostile.spec import LOG, Env, Spec
from tests.hostile.zipcraft import deflate_zeros, duplicated_zip, ratio_zip

TFEVENTS = FIXTURES / "tfevents/torch_default/events.out.tfevents.1796225768.vm.29100.0"
WANDB = FIXTURES / "wandb/hf/offline-run-20261203_075710-yr7iu05b/run-yr7iu05b.wandb"
MLFLOW_DB = FIXTURES / "mlflow/mlflow.db.gz"
TF_NAME = "events.out.tfevents.1796225768.vm.29100.0"


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    c = _crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def tf_record(payload: bytes) -> bytes:
    """One TFRecord frame with correct CRCs."""
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", _masked(head)) + payload + struct.pack("<I", _masked(payload))


def _nested(depth: int) -> bytes:
    """Protobuf field 1, length-delimited, nested `depth` levels."""
    inner = b""
    for _ in range(depth):
        inner = b"\x0a" + _varint(len(inner)) + inner
    return inner


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _tf(kind: str, env: Env) -> bytes:
    data = TFEVENTS.read_bytes()
    rng = env.rng
    if kind == "bad-length-crc":
        buf = bytearray(data)
        buf[8] ^= 0xFF
        return bytes(buf)
    if kind == "bad-data-crc":
        buf = bytearray(data)
        for _ in range(8):  # a few payload bytes without fixing their CRCs
            buf[rng.randrange(40, len(buf) - 40)] ^= 0x5A
        return bytes(buf)
    if kind == "huge-length":
        head = struct.pack("<Q", 1 << 62)
        return data + head + struct.pack("<I", _masked(head)) + b"\x00" * 32
    if kind == "length-past-eof":
        head = struct.pack("<Q", 10_000_000)
        return data + head + struct.pack("<I", _masked(head)) + b"\x00" * 100
    if kind == "crc-ok-garbage":
        return data + b"".join(tf_record(rng.randbytes(rng.randrange(1, 200))) for _ in range(200))
    if kind == "varint-bomb":
        bad = [b"\x08" + b"\xff" * 10 + b"\x01", b"\x12\xff\xff\xff\xff\x0f" + b"x",
               b"\x1a\x05\x0a\x64\x00", b"\x0d\x00\x00", b"\x22" + _varint(1 << 40)]
        return data + b"".join(tf_record(p) for p in bad)
    if kind == "deep-proto":
        return data + tf_record(_nested(20_000))
    if kind == "zero-records":
        return data + b"\x00" * 4096
    raise ValueError(kind)


def _wandb(kind: str, env: Env) -> bytes:
    data = WANDB.read_bytes()
    rng = env.rng
    if kind == "bad-magic":
        return b":W&B\x00\x00\x00" + data[7:]
    if kind == "bad-version":
        return data[:6] + b"\x07" + data[6 + 1:]
    if kind == "length-lies":
        buf = bytearray(data)
        struct.pack_into("<H", buf, 7 + 4, 0xFFFF)  # the first record's length
        return bytes(buf)
    if kind == "crc-ok-garbage":
        recs = []
        for _ in range(60):
            payload = rng.randbytes(rng.randrange(1, 300))
            recs.append(struct.pack("<IHB", zlib.crc32(b"\x01" + payload), len(payload), 1) + payload)
        return data[:7] + b"".join(recs)
    if kind == "deep-proto":
        payload = _nested(3000)
        return data[:7] + struct.pack("<IHB", zlib.crc32(b"\x01" + payload), len(payload), 1) + payload
    if kind == "bad-types":
        recs = [struct.pack("<IHB", zlib.crc32(bytes([t]) + b"xx"), 2, t) + b"xx" for t in (0, 5, 9, 255, 3, 4)]
        return data[:7] + b"".join(recs)
    raise ValueError(kind)


def _damage_file(src: Path, name: str, kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        data = src.read_bytes()
        if kind == "zero-byte":
            data = b""
        elif kind == "truncated-half":
            data = data[: len(data) // 2]
        elif kind == "truncated-tiny":
            data = data[:5]
        elif kind == "random-bytes":
            data = env.rng.randbytes(len(data))
        elif kind == "bitflips":
            buf = bytearray(data)
            for _ in range(32):
                buf[env.rng.randrange(len(buf))] ^= 1 << env.rng.randrange(8)
            data = bytes(buf)
        elif name == TF_NAME:
            data = _tf(kind, env)
        else:
            data = _wandb(kind, env)
        p = env.dir / name
        p.write_bytes(data)
        return p

    return write


GENERIC = {"zero-byte": ("zero-byte", "unreadable"), "truncated-half": ("truncated", "any"),
           "truncated-tiny": ("truncated", "unreadable"), "random-bytes": ("random-bytes", "unreadable"),
           "bitflips": ("bad-crc", "any")}
TF_CASES = {"bad-length-crc": "bad-crc", "bad-data-crc": "bad-crc", "huge-length": "lying-length",
            "length-past-eof": "lying-length", "crc-ok-garbage": "corrupt", "varint-bomb": "corrupt",
            "deep-proto": "deep-nesting", "zero-records": "corrupt"}
WANDB_CASES = {"bad-magic": ("corrupt", "unreadable"), "bad-version": ("corrupt", "unreadable"),
               "length-lies": ("lying-length", "any"), "crc-ok-garbage": ("corrupt", "unreadable"),
               "deep-proto": ("deep-nesting", "unreadable"), "bad-types": ("corrupt", "unreadable")}


def _mlflow(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        p = env.dir / "mlflow.db"
        p.write_bytes(gzip.decompress(MLFLOW_DB.read_bytes()))
        con = sqlite3.connect(p)
        with con:
            if kind == "text-values":
                con.execute("UPDATE metrics SET value = 'abc' WHERE step % 3 = 0")
            elif kind == "text-steps":
                con.execute("UPDATE metrics SET step = 'abc' WHERE step % 2 = 0")
            elif kind == "huge-steps":
                con.execute("UPDATE metrics SET step = 9223372036854775807 WHERE step % 5 = 0")
            elif kind == "blob-values":
                con.execute("UPDATE metrics SET value = x'00ff00ff' WHERE step % 4 = 0")
            elif kind == "no-metrics":
                con.execute("DROP TABLE metrics")
        con.close()
        return p

    return write


def _zip_session(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        p = env.dir / "offline-task.zip"
        src = (FIXTURES / "clearml/healthy/metrics.jsonl").read_bytes()
        if kind == "ratio-bomb":
            p.write_bytes(ratio_zip("metrics.jsonl", 300 << 20, prefix=src))
        elif kind == "duplicated-entries":
            p.write_bytes(duplicated_zip("metrics.jsonl", deflate_zeros(1 << 20), 1 << 20, 2000))
        elif kind == "truncated":
            p.write_bytes((FIXTURES / "clearml/nonfinite.zip").read_bytes()[:300])
        elif kind == "traversal-names":
            import zipfile

            with zipfile.ZipFile(p, "w") as zf:
                zf.writestr("../../../metrics.jsonl", src)
                zf.writestr("/abs/metrics.jsonl", src)
        return p

    return write


def _packed(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        good = healthy_jsonl(env.dir / "plain.jsonl")
        raw = good.read_bytes()
        good.unlink()
        if kind == "gz-truncated":
            return _put(env, "metrics.jsonl.gz", gzip.compress(raw)[:-30])
        if kind == "gz-bad-crc":
            z = bytearray(gzip.compress(raw))
            z[-8] ^= 0xFF
            return _put(env, "metrics.jsonl.gz", bytes(z))
        if kind == "gz-random":
            return _put(env, "metrics.jsonl.gz", b"\x1f\x8b\x08\x00" + env.rng.randbytes(2000))
        if kind == "gz-zero-byte":
            return _put(env, "metrics.jsonl.gz", b"")
        if kind == "gz-ratio-bomb":
            return _put(env, "metrics.jsonl.gz", raw_gzip_bomb(raw, 300 << 20))
        if kind == "gz-members":
            return _put(env, "metrics.jsonl.gz", gzip.compress(raw[:500]) + gzip.compress(raw[500:]))
        if kind == "gz-binary-inside":
            return _put(env, "metrics.jsonl.gz", gzip.compress(env.rng.randbytes(5000)))
        if kind == "bz2-ratio-bomb":
            return _put(env, "metrics.jsonl.bz2", raw_bz2_bomb(raw, 300 << 20))
        if kind == "xz-truncated":
            return _put(env, "metrics.jsonl.xz", lzma.compress(raw)[:-20])
        if kind == "zst-truncated":
            import zstandard

            return _put(env, "metrics.jsonl.zst", zstandard.ZstdCompressor().compress(raw)[:-10])
        if kind == "tarball":
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as tf:
                info = tarfile.TarInfo("metrics.jsonl")
                info.size = len(raw)
                tf.addfile(info, io.BytesIO(raw))
            return _put(env, "metrics.tar.gz", buf.getvalue())
        raise ValueError(kind)

    return write


def _put(env: Env, name: str, data: bytes) -> Path:
    p = env.dir / name
    p.write_bytes(data)
    return p


def raw_gzip_bomb(head: bytes, size: int) -> bytes:
    """A healthy head, then `size` bytes of newlines as repeated gzip members (~1000:1)."""
    member = gzip.compress(b"\n" * (1 << 20), 9)
    return gzip.compress(head) + member * (size >> 20)


def raw_bz2_bomb(head: bytes, size: int) -> bytes:
    """The same as repeated bzip2 streams."""
    stream = bz2.compress(b"\n" * (1 << 20), 9)
    return bz2.compress(head) + stream * (size >> 20)


PACKED = {"gz-truncated": ("truncated", "any"), "gz-bad-crc": ("bad-crc", "any"),
          "gz-random": ("random-bytes", "unreadable"), "gz-zero-byte": ("zero-byte", "unreadable"),
          "gz-ratio-bomb": ("bomb-ratio", "any"), "gz-members": ("corrupt", "any"),
          "gz-binary-inside": ("random-bytes", "unreadable"), "bz2-ratio-bomb": ("bomb-ratio", "any"),
          "xz-truncated": ("truncated", "any"), "zst-truncated": ("truncated", "any"),
          "tarball": ("archive", "unreadable")}


def specs() -> Iterator[Spec]:
    for kind, (cls, expect) in GENERIC.items():
        yield Spec(f"tfevents/{kind}", LOG, expect, cls, _damage_file(TFEVENTS, TF_NAME, kind))
        yield Spec(f"wandb/{kind}", LOG, expect, cls, _damage_file(WANDB, WANDB.name, kind))
        yield Spec(f"mlflow-sqlite/{kind}", LOG, expect, cls, _sqlite_damage(kind))
    for kind, cls in TF_CASES.items():
        yield Spec(f"tfevents/{kind}", LOG, "any", cls, _damage_file(TFEVENTS, TF_NAME, kind))
    for kind, (cls, expect) in WANDB_CASES.items():
        yield Spec(f"wandb/{kind}", LOG, expect, cls, _damage_file(WANDB, WANDB.name, kind))
    for kind in ("text-values", "text-steps", "huge-steps", "blob-values"):
        yield Spec(f"mlflow-sqlite/{kind}", LOG, "any", "wrong-type", _mlflow(kind))
    yield Spec("mlflow-sqlite/no-metrics-table", LOG, "unreadable", "corrupt", _mlflow("no-metrics"))
    yield Spec("clearml-zip/ratio-bomb", LOG, "any", "bomb-ratio", _zip_session("ratio-bomb"))
    yield Spec("clearml-zip/duplicated-entries", LOG, "unreadable", "bomb-duplication",
               _zip_session("duplicated-entries"))
    yield Spec("clearml-zip/truncated", LOG, "unreadable", "truncated", _zip_session("truncated"))
    yield Spec("clearml-zip/traversal-names", LOG, "any", "path-traversal", _zip_session("traversal-names"))
    for kind, (cls, expect) in PACKED.items():
        yield Spec(f"compressed/{kind}", LOG, expect, cls, _packed(kind),
                   needs="zstandard" if kind.startswith("zst") else "")


def _sqlite_damage(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        tmp = env.dir / "src.db"
        tmp.write_bytes(gzip.decompress(MLFLOW_DB.read_bytes()))
        p = _damage_file(tmp, "mlflow.db", kind)(env)
        tmp.unlink()
        return p

    return write

