#!/usr/bin/env python3
"""Benchmark: reading a large W&B run log (`run-*.wandb`), whole process, against
a raw read of the same file.

    python bench/bench_wandb.py                  # 1M history rows x 6 values, 290 MB
    python bench/bench_wandb.py --rows 100000

Writes the input under /tmp unless it is already there: one history record per row
in the exact layout wandb 0.31.0 writes (a `nested_key` and a `value_json` per item,
`_step`, `_runtime` and `_timestamp` in every row; tests/fixtures/wandb holds real
ones), framed in 32 KiB blocks with CRC-32 checksums, plus a summary record every
row as wandb writes them. Then times, each in a fresh process:
  raw read   the file read in 1 MiB blocks (the floor)
  reader     trainproof.parsers.wandb.read (every checksum verified, every point kept)
  epoch      `python -m trainproof epoch RUN_DIR --json` (read + judge + render)
Reports the median wall time, CPU time and peak RSS of each and the ratio to the raw read.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = 32 * 1024

_MEASURE = r"""
import resource, sys, time
{body}
ru = resource.getrusage(resource.RUSAGE_SELF)
print("BENCH", ru.ru_maxrss, ru.ru_utime + ru.ru_stime, file=sys.stderr)
"""
BODIES = {
    "raw read": "import glob\nf = open(glob.glob(sys.argv[1] + '/*.wandb')[0], 'rb')\nwhile f.read(1 << 20): pass",
    "reader": "from pathlib import Path\nfrom trainproof.parsers import wandb\n"
              "r = wandb.read(Path(sys.argv[1]))\nassert not r.notes[1:], r.notes",
    "epoch": "from trainproof.cli import main\nimport io, contextlib\n"
             "with contextlib.redirect_stdout(io.StringIO()): main(['epoch', sys.argv[1], '--json'])",
}


def _ld(num: int, body: bytes) -> bytes:
    """A length-delimited protobuf field."""
    key, n, out = num << 3 | 2, len(body), bytearray()
    while key >= 0x80:
        out.append(key & 0x7F | 0x80)
        key >>= 7
    out.append(key)
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + body


def _items(values: dict[str, str]) -> bytes:
    return b"".join(_ld(1, _ld(2, k.encode()) + _ld(16, v.encode())) for k, v in values.items())


def _rows(n: int):
    for i in range(n):
        loss = 2.5 * math.exp(-i / (n / 4)) + 0.1 * math.sin(i)
        values = {"loss": repr(loss), "lr": repr(3e-4 * min(1.0, i / 1000)), "grad_norm": repr(1.0 + (i % 7) / 10),
                  "_timestamp": repr(1.7e9 + i * 0.25), "_runtime": repr(i * 0.25), "_step": str(i)}
        yield _ld(2, _items(values) + _ld(2, b"")), _ld(3, b"".join(_ld(1, _ld(2, k.encode()) + _ld(16, v.encode()))
                                                                     for k, v in values.items()))


def write(path: Path, n: int) -> None:
    out = bytearray(b":W&B\xe1\xbe\x00")
    with open(path, "wb") as fh:
        for history, summary in _rows(n):
            for data in (history, summary):
                first = True
                while True:
                    left = BLOCK - len(out) % BLOCK
                    if left < 7:
                        out += bytes(left)
                        left = BLOCK
                    piece, data = data[:left - 7], data[left - 7:]
                    kind = (1 if first else 4) if not data else (2 if first else 3)
                    out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + piece), len(piece), kind) + piece
                    first = False
                    if not data:
                        break
            if len(out) > 64 * BLOCK:  # flush whole blocks, keep the offset within the block
                cut = len(out) - len(out) % BLOCK
                fh.write(out[:cut])
                del out[:cut]
        fh.write(out)


def run_once(name: str, run_dir: Path) -> tuple[float, float, float]:
    """(wall s, cpu s, peak RSS MB) of one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _MEASURE.format(body=BODIES[name]), str(run_dir)],
                         capture_output=True, text=True, env=env, check=name != "epoch")
    wall = time.perf_counter() - t
    line = next(ln for ln in out.stderr.splitlines() if ln.startswith("BENCH"))
    _, rss_kb, cpu = line.split()
    return wall, float(cpu), int(rss_kb) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    run_dir = Path(f"/tmp/trainproof-bench/wandb-{args.rows}/offline-run-20260101_000000-bench")
    log = run_dir / "run-bench.wandb"
    if not log.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        write(log, args.rows)
    size = log.stat().st_size / 1e6
    print(f"{log}: {args.rows:,} history rows, {size:.0f} MB")
    results = {}
    for name in BODIES:
        runs = [run_once(name, run_dir) for _ in range(args.repeat)]
        results[name] = tuple(statistics.median(r[i] for r in runs) for i in range(3))
    floor = results["raw read"][0]
    print(f"{'':10} {'wall s':>8} {'cpu s':>8} {'RSS MB':>8} {'x raw':>7} {'rows/s':>9}")
    for name, (wall, cpu, rss) in results.items():
        print(f"{name:10} {wall:8.2f} {cpu:8.2f} {rss:8.0f} {wall / floor:7.1f} {args.rows / wall:9,.0f}")


if __name__ == "__main__":
    main()
