"""Benchmark: where a big log's time goes - reading, judging, rendering - in CPU seconds
and peak RSS, for one or more checkouts side by side (interleaved, so load changes hit
each alike). Each measurement is a fresh interpreter.

    python bench/bench_split.py LOG [LOG ...] --src src --src /tmp/base/src --rounds 2

`--src` is a checkout's src/ directory (default: this one); e.g. the main branch's, from
`git archive main src | tar -x -C /tmp/base`. Inputs: ../shared/bench generators (see
bench_logs.py). No timed tests: this is a measuring tool.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import resource, sys, time
from pathlib import Path
from trainproof.parsers import read_run
from trainproof.engine import judge_run
from trainproof.model import ReportSet
from trainproof.render import jsonout
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
cpu = time.process_time
t = cpu(); run = read_run(Path(sys.argv[1])); read, read_peak = cpu() - t, peak()
t = cpu(); rep = judge_run(run); judge = cpu() - t
t = cpu(); jsonout.render(ReportSet("epoch", (rep,))); render = cpu() - t
print(f"{read:.2f} {judge:.2f} {render:.2f} {read_peak:.0f} {peak():.0f}")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--src", action="append", help="a checkout's src/ (repeatable; default this one)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    srcs = args.src or [str(ROOT / "src")]
    print("| log | src | read CPU s | judge CPU s | render CPU s | peak RSS after read / at end MB |")
    print("|---|---|---|---|---|---|")
    for _ in range(args.rounds):
        for log in args.logs:
            for src in srcs:
                out = subprocess.run([sys.executable, "-c", CHILD, str(log)], capture_output=True, text=True,
                                     env={**os.environ, "PYTHONPATH": src}, check=True).stdout.split()
                print(f"| {log.name} | {src} | {out[0]} | {out[1]} | {out[2]} | {out[3]} / {out[4]} |", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
