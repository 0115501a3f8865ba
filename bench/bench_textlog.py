"""Benchmark: training stdout through the text-log scanner, plain and gzip-compressed,
and a pathological 100 MB line, whole process, against a raw read and a naive regex
loop run in the same session.

    python bench/bench_textlog.py                # 1M Megatron lines (~320 MB)
    python bench/bench_textlog.py --lines 200000 --repeat 3

Inputs are generated here (deterministic) under /tmp/trainproof-bench, never into the
repository:
  megatron.log     - `iteration N/M | ... | lm loss: X | ...` lines as Megatron-LM prints them
  megatron.log.gz  - the same, gzip -6
  hf_tqdm.log      - HF Trainer dicts between tqdm redraws (carriage returns), 1 dict per 10 redraws
  oneline.log      - 100 MB with no newline between two metric lines
For each it reports the median wall time and peak RSS of:
  raw read   - reading (and for .gz decompressing) the bytes once
  naive      - for line in file: one regex for the loss, floats into a list
  trainproof - `trainproof epoch FILE --json`
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_logs import measure  # the shared wait4 timer

OUT = Path("/tmp/trainproof-bench")
RAW = ("import sys, gzip; p=sys.argv[1]; f=gzip.open(p) if p.endswith('.gz') else open(p,'rb'); "
       "[None for _ in iter(lambda: f.read(1<<24), b'')]")
NAIVE = """
import re, sys, gzip
p = sys.argv[1]
f = gzip.open(p, 'rt') if p.endswith('.gz') else open(p)
rx = re.compile(r"(?:lm loss|'loss'|loss): '?([0-9.eE+-]+)")
out = [float(m.group(1)) for line in f for m in [rx.search(line)] if m]
print(len(out))
"""


def generate(lines: int) -> dict[str, Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    meg = OUT / f"megatron_{lines}.log"
    if not meg.exists():
        with open(meg, "w") as fh:
            for i in range(1, lines + 1):
                fh.write(f" [2026-12-03 08:00:00.{i % 999999:06d}] iteration {i:8d}/{lines:8d} | consumed samples: "
                         f"{i * 32:12d} | elapsed time per iteration (ms): {850 + i % 97:.1f} | learning rate: "
                         f"{3e-4 * min(1, i / 2000):.6E} | global batch size:    32 | "
                         f"lm loss: {2 + 8 / (1 + i / 500):.6E}"
                         f" | loss scale: 65536.0 | grad norm: {1 + (i % 13) / 10:.3f} | number of skipped "
                         "iterations:   0 | number of nan iterations:   0 |\n")
    gz = meg.with_suffix(".log.gz")
    if not gz.exists():
        with open(meg, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
            while chunk := src.read(1 << 24):
                dst.write(chunk)
    hf = OUT / f"hf_tqdm_{lines}.log"
    if not hf.exists():
        with open(hf, "w") as fh:
            for k in range(lines // 10):
                fh.write("".join(f"\r {j}%|#| {k * 10 + j}/{lines} [00:01<00:01, 9.9it/s]" for j in range(10)))
                fh.write(f"\r{' ' * 40}\r{{'loss': '{2 + 8 / (1 + k / 50):.4g}', 'grad_norm': '0.5', "
                         f"'learning_rate': '4e-05', 'epoch': '{k / 1000:.4g}'}}\n")
    one = OUT / "oneline_100mb.log"
    if not one.exists():
        with open(one, "wb") as fh:
            fh.write(b"".join(b"iter %d: loss 2.0, time 1.00ms, mfu 1.00%%\n" % i for i in range(5)))
            for _ in range(100):
                fh.write(b"x" * (1 << 20))
            fh.write(b"\niter 5: loss 1.9, time 1.00ms, mfu 1.00%\n")
    return {"megatron": meg, "megatron.gz": gz, "hf_tqdm": hf, "oneline": one}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    inputs = generate(args.lines)
    tools = {"raw read": [sys.executable, "-c", RAW], "naive": [sys.executable, "-c", NAIVE],
             "trainproof": [sys.executable, "-m", "trainproof", "epoch", "--json"]}
    print(f"{'input':14} {'MB':>7} {'tool':11} {'wall s':>7} {'RSS MB':>7}")
    for name, path in inputs.items():
        size = path.stat().st_size / 1e6
        for tool, cmd in tools.items():
            runs = [measure([*cmd, str(path)]) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            rss = statistics.median(r[1] for r in runs)
            print(f"{name:14} {size:7.1f} {tool:11} {wall:7.2f} {rss:7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
