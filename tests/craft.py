"""Builders for hostile inputs the regression tests write into tmp_path: ZIPs whose
central directory says what the test wants (an entry listed many times, entries that
overlap), torch-shaped pickles written opcode by opcode (no torch needed), and a
bounded subprocess run of the CLI that reports exit code, stdout, stderr and time."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def run_bounded(*argv: object, timeout: float = 60.0) -> tuple[int, str, str, float]:
    """`python -m trainproof ARGV` in a child with a wall-clock limit; a hang fails the test."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "trainproof", *map(str, argv)], capture_output=True,
                         text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return res.returncode, res.stdout, res.stderr, time.monotonic() - t0


def assert_clean(code: int, out: str, err: str, expect: int = 2) -> None:
    """The honest exit code, no traceback, at most one line on stderr."""
    assert code == expect, (code, out[-2000:], err[-2000:])
    assert "Traceback" not in out + err
    assert len([ln for ln in err.splitlines() if ln.strip()]) <= 1, err


def _local(name: bytes, data: bytes, deflate: bool) -> tuple[bytes, tuple[int, int, int, int]]:
    comp = zlib.compress(data, 9)[2:-4] if deflate else data
    method = 8 if deflate else 0
    crc = zlib.crc32(data)
    head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(comp), len(data),
                       len(name), 0)
    return head + name + comp, (crc, len(comp), len(data), method)


def _central(name: bytes, meta: tuple[int, int, int, int], offset: int) -> bytes:
    crc, csize, usize, method = meta
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, crc, csize, usize,
                       len(name), 0, 0, 0, 0, 0, offset) + name


def write_zip(path: Path, entries: list[tuple[str, bytes, bool]],
              directory: list[tuple[str, int]] | None = None) -> Path:
    """Local entries (name, data, deflate) written in order; the central directory lists
    `directory` as (name it gives, index of the local entry it points at), by default
    each entry once."""
    body, metas = b"", []
    for name, data, deflate in entries:
        blob, meta = _local(name.encode(), data, deflate)
        metas.append((meta, len(body)))
        body += blob
    directory = directory if directory is not None else [(n, k) for k, (n, _, _) in enumerate(entries)]
    cd = b"".join(_central(name.encode(), *metas[k]) for name, k in directory)
    n = len(directory)
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), len(cd), len(body), 0)
    path.write_bytes(body + cd + eocd)
    return path


def _unicode(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def tensor_pickle(levels: int) -> bytes:
    """{"model": x_levels}, where x_0 is one float32 tensor of storage "0" and
    x_i = (x_{i-1}, x_{i-1}) through the memo: 2**levels paths to one tensor."""
    storage = (b"(" + _unicode("storage") + b"ctorch\nFloatStorage\n" + _unicode("0") + _unicode("cpu")
               + b"K\x04t" + b"Q")  # MARK ... TUPLE, BINPERSID
    args = (b"(" + storage + b"K\x00" + b"K\x04\x85" + b"K\x01\x85" + b"\x89"
            + b"ccollections\nOrderedDict\n)R" + b"t")
    tensor = b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"R"
    out = bytearray(b"\x80\x02}" + _unicode("model") + tensor + b"r\x00\x00\x00\x00" + b"0")
    for i in range(levels):
        out += b"j" + struct.pack("<I", i) * 1 + b"j" + struct.pack("<I", i) + b"\x86"
        out += b"r" + struct.pack("<I", i + 1) + b"0"
    out += b"j" + struct.pack("<I", levels) + b"s."
    return bytes(out)


def torch_zip(path: Path, pkl: bytes, storages: dict[str, bytes] | None = None) -> Path:
    """A torch.save-shaped ZIP (stored entries) holding `pkl` as data.pkl."""
    entries = [("archive/data.pkl", pkl, False), ("archive/byteorder", b"little", False)]
    entries += [(f"archive/data/{k}", v, False) for k, v in (storages or {"0": b"\0" * 16}).items()]
    entries.append(("archive/version", b"3\n", False))
    return write_zip(path, entries)
