#!/usr/bin/env python3
"""Benchmark: reading a large TensorBoard event file, whole process, against
references measured in the same run.

    python bench/bench_tfevents.py                      # 1M steps x 4 tags, 219 MB
    python bench/bench_tfevents.py --steps 100000 --accumulator

Generates the input with ../shared/bench/gen_tfevents.py (torch's SummaryWriter)
under /tmp unless it is already there, then times, each in a fresh process:
  raw read      the file read in 16 MiB blocks (the floor)
  reader        trainproof.parsers.tfevents.read (CRCs verified, every point kept)
  epoch         `python -m trainproof epoch FILE --json` (read + judge + render)
  accumulator   tensorboard's EventAccumulator with every scalar kept (--accumulator)
  data-server   tensorboard-data-server (Rust), one load cycle with --checksum and every
                scalar kept: wall time to its "Finished load cycle" line, peak RSS from
                /proc (when the tensorboard_data_server package is installed)
Reports the median wall time, CPU time and peak RSS of each, the ratio to the
raw read, and the memory budget (100 MB + 50 B per kept point).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GEN = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "gen_tfevents.py"
TAGS = 4

_MEASURE = r"""
import resource, sys, time
t = time.perf_counter()
{body}
ru = resource.getrusage(resource.RUSAGE_SELF)
print("BENCH", ru.ru_maxrss, ru.ru_utime + ru.ru_stime, file=sys.stderr)
"""
BODIES = {
    "raw read": "f = open(sys.argv[1], 'rb')\nwhile f.read(16 << 20): pass",
    "reader": "from pathlib import Path\nfrom trainproof.parsers import tfevents\n"
              "r = tfevents.read(Path(sys.argv[1]))\nassert not r.notes, r.notes",
    "epoch": "from trainproof.cli import main\nimport io, contextlib\n"
             "with contextlib.redirect_stdout(io.StringIO()): main(['epoch', sys.argv[1], '--json'])",
    "accumulator": "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
                   "ea = EventAccumulator(sys.argv[1], size_guidance={'scalars': 0})\nea.Reload()",
}


def run_once(name: str, path: Path) -> tuple[float, float, float]:
    """(wall s, cpu s, peak RSS MB) of one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _MEASURE.format(body=BODIES[name]), str(path)],
                         capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - t
    line = next(ln for ln in out.stderr.splitlines() if ln.startswith("BENCH"))
    _, rss_kb, cpu = line.split()
    return wall, float(cpu), int(rss_kb) / 1024


def data_server_once(path: Path) -> tuple[float, float, float] | None:
    """(wall s, cpu s, peak RSS MB) of tensorboard-data-server loading the run once."""
    try:
        import tensorboard_data_server
    except ImportError:
        return None
    cmd = [tensorboard_data_server.server_binary(), "--logdir", str(path.parent), "--reload", "once",
           "--checksum", "--samples-per-plugin", "scalars=all", "--port", "0", "-v"]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if "Finished load cycle" in line:
                wall = time.perf_counter() - t
                status = Path(f"/proc/{proc.pid}/status").read_text()
                stat = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
                hwm = next(ln for ln in status.splitlines() if ln.startswith("VmHWM"))
                return wall, cpu, int(hwm.split()[1]) / 1024
    finally:
        proc.kill()
        proc.wait()
    return None


def generate(steps: int) -> Path:
    out = Path(f"/tmp/tfevents_{steps}")
    files = list(out.glob("events.out.tfevents.*")) if out.exists() else []
    if not files:
        subprocess.run([sys.executable, str(GEN), "--steps", str(steps), "--out", str(out)], check=True)
        files = list(out.glob("events.out.tfevents.*"))
    return files[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--accumulator", action="store_true", help="also time EventAccumulator (slow)")
    ap.add_argument("--no-data-server", dest="data_server", action="store_false",
                    help="skip tensorboard-data-server")
    args = ap.parse_args()
    path = generate(args.steps)
    points = args.steps * TAGS
    names = ["raw read", "reader", "epoch"] + (["accumulator"] if args.accumulator else [])
    results = {}
    for name in names:
        runs = [run_once(name, path) for _ in range(1 if name == "accumulator" else args.repeat)]
        results[name] = tuple(statistics.median(r[i] for r in runs) for i in range(3))
    if args.data_server:
        runs = [r for r in (data_server_once(path) for _ in range(args.repeat)) if r is not None]
        if runs:
            results["data-server"] = tuple(statistics.median(r[i] for r in runs) for i in range(3))
    raw_wall = results["raw read"][0]
    budget = 100 + 50 * points / 1e6
    print(f"input: {path} ({path.stat().st_size / 1e6:.0f} MB, {points:,} scalars), "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'':12} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'x raw':>7}")
    for name, (wall, cpu, rss) in results.items():
        print(f"{name:12} {wall:8.2f} {cpu:8.2f} {rss:8.0f} {wall / raw_wall:7.1f}")
    print(f"memory budget: {budget:.0f} MB (100 MB + 50 B x {points:,} points)")
    print(json.dumps({k: {"wall_s": round(v[0], 3), "cpu_s": round(v[1], 3), "peak_mb": round(v[2], 1)}
                      for k, v in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
