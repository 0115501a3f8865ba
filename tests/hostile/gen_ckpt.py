"""Hostile checkpoints for `env --checkpoint`: torch .pt ZIPs (truncated, bad CRC,
bombs by ratio and by duplication), pickles whose payload WOULD create the marker
file if anything executed them (os.system, builtins.open, eval, subprocess via
GLOBAL/STACK_GLOBAL/INST + REDUCE/OBJ), memo-shared pickle DAGs 40 levels deep,
100,000-deep nesting, and .safetensors files whose header lies."""

from __future__ import annotations

import io
import json
import shutil
import struct
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.hostile.gen_logs import FIXTURES
from tests.hostile.spec import CHECKPOINT, Env, Spec
from tests.hostile.zipcraft import deflate_zeros, extend_zip

PT = FIXTURES / "env/hf/checkpoint-2/optimizer.pt"
SAFE = FIXTURES / "env/hf/checkpoint-2/model.safetensors"
CKPT = FIXTURES / "env/lightning/last.ckpt"


def _u4(n: int) -> bytes:
    return struct.pack("<I", n)


def payload(kind: str, marker: Path) -> bytes:
    """A pickle that creates `marker` when loaded by anything that executes pickles."""
    m = str(marker).encode()
    cmd = b"touch " + m
    if kind == "os-system-p0":
        return b"cos\nsystem\n(V" + cmd + b"\ntR."
    if kind == "posix-system-p2":
        return b"\x80\x02cposix\nsystem\nq\x00X" + _u4(len(cmd)) + cmd + b"\x85q\x01Rq\x02."
    if kind == "builtins-open-p4":
        return b"\x80\x04\x8c\x08builtins\x8c\x04open\x93X" + _u4(len(m)) + m + b"\x8c\x01w\x86R."
    if kind == "eval-in-dict":
        code = f"open({str(marker)!r}, 'w')".encode()
        return (b"\x80\x02}q\x00X\x05\x00\x00\x00modelq\x01cbuiltins\neval\nX" + _u4(len(code)) + code
                + b"\x85Rs.")
    if kind == "subprocess-inst":
        return b"((S'touch'\nS'" + m + b"'\nlisubprocess\nPopen\n."
    if kind == "exec-obj":
        code = f"open({str(marker)!r}, 'w')".encode()
        return b"\x80\x02(cbuiltins\nexec\nX" + _u4(len(code)) + code + b"o."
    raise ValueError(kind)


PAYLOADS = ("os-system-p0", "posix-system-p2", "builtins-open-p4", "eval-in-dict", "subprocess-inst", "exec-obj")


def dag_pickle(levels: int = 40) -> bytes:
    """x0 = (); x(i+1) = (x(i), x(i)) through the memo: 2**levels paths, ~6 bytes a level."""
    out = bytearray(b"\x80\x02}q\x00X\x05\x00\x00\x00modelq\x01)q\x020")
    for i in range(levels):  # each level only in the memo; the stack keeps dict and key
        out += b"h" + bytes([2 + i]) + b"h" + bytes([2 + i]) + b"\x86q" + bytes([3 + i]) + b"0"
    out += b"h" + bytes([2 + levels]) + b"s."
    return bytes(out)


def deep_pickle(depth: int = 100_000) -> bytes:
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


def _torch_zip(data_pkl: bytes) -> bytes:
    """The real optimizer.pt with its data.pkl replaced."""
    src = zipfile.ZipFile(PT)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as out:
        for info in src.infolist():
            body = data_pkl if info.filename.endswith("/data.pkl") else src.read(info)
            out.writestr(info.filename, body)
    return buf.getvalue()


def _pt(kind: str, env: Env) -> bytes:
    data = PT.read_bytes()
    rng = env.rng
    if kind == "zero-byte":
        return b""
    if kind == "truncated-half":
        return data[: len(data) // 2]
    if kind == "truncated-tiny":
        return data[:4]
    if kind == "random-bytes":
        return rng.randbytes(len(data))
    if kind == "random-after-zip-magic":
        return b"PK\x03\x04" + rng.randbytes(len(data))
    if kind == "bad-crc":
        zf = zipfile.ZipFile(PT)
        info = next(i for i in zf.infolist() if "/data/" in i.filename)
        # the local header's own name and extra lengths: torch pads the local extra field
        n, e = struct.unpack_from("<HH", data, info.header_offset + 26)
        at = info.header_offset + 30 + n + e + info.compress_size // 2
        buf = bytearray(data)
        buf[at] ^= 0xFF
        return bytes(buf)
    if kind == "bitflips":
        buf = bytearray(data)
        for _ in range(16):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        return bytes(buf)
    if kind == "bomb-duplication":
        blob, crc = deflate_zeros(1 << 20)
        prefix = zipfile.ZipFile(PT).infolist()[0].filename.split("/")[0]
        return extend_zip(data, [(f"{prefix}/data/99", blob, crc, 1 << 20)], repeat_last=2000)
    if kind == "bomb-ratio":
        blob, crc = deflate_zeros(300 << 20)
        prefix = zipfile.ZipFile(PT).infolist()[0].filename.split("/")[0]
        return extend_zip(data, [(f"{prefix}/data/99", blob, crc, 300 << 20)])
    if kind == "dag-40":
        return _torch_zip(dag_pickle())
    if kind == "deep-100k":
        return _torch_zip(deep_pickle())
    if kind == "pickle-truncated":
        return _torch_zip(dag_pickle()[:25])
    if kind == "pickle-bad-opcode":
        return _torch_zip(b"\x80\x02}q\x00\xfe\xfd\xfc.")
    if kind == "pickle-huge-bytes":
        return _torch_zip(b"\x80\x04\x8e" + struct.pack("<Q", 1 << 62) + b"xx.")
    if kind == "pickle-huge-memo":
        return _torch_zip(b"\x80\x02j\xff\xff\xff\xff.")
    if kind == "pickle-missing-storage":  # {"w": a tensor whose storage "999" the archive lacks}
        return _torch_zip(b"\x80\x02}q\x00X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n("
                          b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x03\x00\x00\x00999"
                          b"X\x03\x00\x00\x00cpuK\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtRs.")
    if kind.startswith("payload-"):
        return _torch_zip(payload(kind.removeprefix("payload-"), env.marker))
    raise ValueError(kind)


def _pt_writer(kind: str, name: str = "model.pt") -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        p = env.dir / name
        p.write_bytes(_pt(kind, env))
        return p

    return write


def _legacy(kind: str) -> Callable[[Env], Path]:
    """A raw (pre-1.6 style) pickle under a .pt/.bin name."""
    def write(env: Env) -> Path:
        body = dag_pickle() if kind == "dag-40" else deep_pickle() if kind == "deep-100k" else payload(kind, env.marker)
        p = env.dir / ("pytorch_model.bin" if kind.startswith("os") else "legacy.pt")
        p.write_bytes(body)
        return p

    return write


def _hf_dir(kind: str) -> Callable[[Env], Path]:
    """A copy of the real HF checkpoint folder with one file made hostile."""
    def write(env: Env) -> Path:
        d = env.dir / "checkpoint-2"
        shutil.copytree(FIXTURES / "env/hf/checkpoint-2", d)
        if kind == "payload-optimizer":
            (d / "optimizer.pt").write_bytes(_torch_zip(payload("posix-system-p2", env.marker)))
        elif kind == "rng-state-bomb":
            (d / "rng_state.pth").write_bytes(_pt("bomb-duplication", env))
        elif kind == "safetensors-lies":
            (d / "model.safetensors").write_bytes(_safe("past-eof", env))
        return d

    return write


def _header(data: bytes) -> tuple[dict, bytes]:
    n = struct.unpack_from("<Q", data)[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def _with_header(header: dict | bytes, body: bytes) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


def _safe(kind: str, env: Env) -> bytes:
    data = SAFE.read_bytes()
    head, body = _header(data)
    names = [k for k in head if k != "__metadata__"]
    first, second = head[names[0]], head[names[1]]
    if kind == "past-eof":
        return struct.pack("<Q", len(data) * 10) + data[8:]
    if kind == "huge-length":
        return struct.pack("<Q", (1 << 64) - 1) + data[8:]
    if kind == "zero-length":
        return struct.pack("<Q", 0) + data[8:]
    if kind == "not-json":
        return _with_header(b"\xff\xfe{not json" + b" " * 40, body)
    if kind == "overlapping":
        second["data_offsets"] = [first["data_offsets"][0], second["data_offsets"][1]]
    elif kind == "out-of-range":
        first["data_offsets"] = [0, len(body) * 1000]
    elif kind == "end-before-start":
        first["data_offsets"] = [first["data_offsets"][1], first["data_offsets"][0]]
    elif kind == "dtype-nonsense":
        first["dtype"] = "Q99"
    elif kind == "negative-shape":
        first["shape"] = [-4, 8]
    elif kind == "shape-overflow":
        first["shape"] = [1 << 40, 1 << 40, 1 << 40]
    elif kind == "offsets-strings":
        first["data_offsets"] = ["0", "x"]
    elif kind == "trailing-bytes":
        return data + b"\x00" * 1000
    elif kind == "deep-header":
        return _with_header(b"[" * 100_000 + b"]" * 100_000, body)
    elif kind == "many-tensors":
        head = {f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(100_000)}
        return _with_header(head, b"")
    elif kind == "header-is-list":
        return _with_header(b"[1, 2, 3]", body)
    elif kind == "metadata-nonsense":
        head["__metadata__"] = {"format": ["x"] * 1000, "nested": {"a": {"b": None}}}
    else:
        raise ValueError(kind)
    return _with_header(head, body)


SAFE_CASES = ("past-eof", "huge-length", "zero-length", "not-json", "overlapping", "out-of-range",
              "end-before-start", "dtype-nonsense", "negative-shape", "shape-overflow", "offsets-strings",
              "trailing-bytes", "deep-header", "header-is-list")


def _safe_writer(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        p = env.dir / "model.safetensors"
        if kind in ("zero-byte", "truncated-half", "random-bytes"):
            data = SAFE.read_bytes()
            p.write_bytes({"zero-byte": b"", "truncated-half": data[: len(data) // 2],
                           "random-bytes": env.rng.randbytes(len(data))}[kind])
        else:
            p.write_bytes(_safe(kind, env))
        return p

    return write


def _index(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        shutil.copyfile(SAFE, env.dir / "model-00001-of-00001.safetensors")
        head, _ = _header(SAFE.read_bytes())
        target = {"escape": "../../../../etc/passwd", "dev-zero": "/dev/zero", "missing": "nope.safetensors",
                  "self": "model.safetensors.index.json"}.get(kind, "model-00001-of-00001.safetensors")
        doc = {"metadata": {"total_size": 1 << 60}, "weight_map": {k: target for k in head if k != "__metadata__"}}
        p = env.dir / "model.safetensors.index.json"
        p.write_text(json.dumps(doc) if kind != "deep" else "{" + '"a":{' * 50_000 + "}" * 50_001)
        return p

    return write


def specs() -> Iterator[Spec]:
    pt_cases = {"zero-byte": "zero-byte", "truncated-half": "truncated", "truncated-tiny": "truncated",
                "random-bytes": "random-bytes", "random-after-zip-magic": "random-bytes", "bad-crc": "bad-crc",
                "bomb-duplication": "bomb-duplication", "bomb-ratio": "bomb-ratio", "dag-40": "pickle-dag",
                "deep-100k": "deep-nesting", "pickle-truncated": "truncated", "pickle-bad-opcode": "corrupt",
                "pickle-huge-bytes": "lying-length", "pickle-huge-memo": "corrupt",
                "pickle-missing-storage": "corrupt"}
    for kind, cls in pt_cases.items():
        # a DAG or deeply nested pickle is valid: what matters is bounded work, not the verdict
        expect = "any" if kind in ("bitflips", "bomb-ratio", "dag-40", "deep-100k") else "broken"
        yield Spec(f"torch-pt/{kind}", CHECKPOINT, expect, cls, _pt_writer(kind))
    yield Spec("torch-pt/bitflips", CHECKPOINT, "any", "bad-crc", _pt_writer("bitflips"))
    for p in PAYLOADS:
        yield Spec(f"torch-pt/payload-{p}", CHECKPOINT, "broken", "payload", _pt_writer(f"payload-{p}"))
        yield Spec(f"pickle-legacy/payload-{p}", CHECKPOINT, "broken", "payload", _legacy(p))
    yield Spec("lightning-ckpt/payload-posix-system-p2", CHECKPOINT, "broken", "payload",
               _pt_writer("payload-posix-system-p2", "last.ckpt"))
    yield Spec("lightning-ckpt/truncated-half", CHECKPOINT, "broken", "truncated", _ckpt_truncated)
    yield Spec("pickle-legacy/dag-40", CHECKPOINT, "broken", "pickle-dag", _legacy("dag-40"))
    yield Spec("pickle-legacy/deep-100k", CHECKPOINT, "broken", "deep-nesting", _legacy("deep-100k"))
    for kind in ("payload-optimizer", "rng-state-bomb", "safetensors-lies"):
        # env inspects the weights and optimizer of an HF folder, not rng_state.pth: a bomb there is not read
        yield Spec(f"hf-checkpoint-dir/{kind}", CHECKPOINT, "any" if kind == "rng-state-bomb" else "broken",
                   "payload" if "payload" in kind else "bomb-duplication", _hf_dir(kind))
    for kind in (*SAFE_CASES, "zero-byte", "truncated-half", "random-bytes"):
        cls = "lying-header" if kind in SAFE_CASES else kind.split("-")[0]
        yield Spec(f"safetensors/{kind}", CHECKPOINT, "broken", cls, _safe_writer(kind))
    for kind in ("metadata-nonsense", "many-tensors"):  # odd but consistent headers
        yield Spec(f"safetensors/{kind}", CHECKPOINT, "any", "lying-header", _safe_writer(kind))
    for kind in ("escape", "dev-zero", "missing", "self", "deep"):
        yield Spec(f"safetensors-index/{kind}", CHECKPOINT, "broken", "lying-header", _index(kind))


def _ckpt_truncated(env: Env) -> Path:
    p = env.dir / "last.ckpt"
    data = CKPT.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    return p
