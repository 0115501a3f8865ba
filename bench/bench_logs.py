"""Benchmark: judging huge logs, whole process, against references run on the same
machine in the same session (so the ratios hold even on a busy machine).

    python bench/bench_logs.py                  # 1M-entry trainer_state.json, 5M-line JSONL
    python bench/bench_logs.py --repeat 3 --small   # 100k / 500k, a quick look
    python bench/bench_logs.py --naive          # also the naive json.loads reader (slow)

Inputs come from ../shared/bench (deterministic generators) and are written under
/tmp/trainproof-bench, never into the repository. For each input it reports the
median wall time, median CPU time (user + system, steadier than wall time on a machine
other jobs share) and peak RSS of:
  raw read   - reading the file's bytes once (the floor)
  naive      - the obvious Python approach: json.load / json.loads per line, then
               per-entry loops into lists (what a straightforward tool does; --naive)
  trainproof - `trainproof epoch FILE --json`, this checkout (src/ first on the path)
  0.22.0     - the same command of trainproof 0.22.0, where /tmp/venv-tp022 holds it
               (python -m venv /tmp/venv-tp022 && /tmp/venv-tp022/bin/pip install trainproof==0.22.0)
src/ is byte-compiled first, as an installed package is; `--python` runs this checkout
and the raw read under another interpreter (see bench_startup.py).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT.parent / "shared" / "bench"
OUT = Path("/tmp/trainproof-bench")
OLD = Path("/tmp/venv-tp022/bin/python")

RAW = "import sys; f=open(sys.argv[1],'rb'); [None for _ in iter(lambda: f.read(1<<24), b'')]"
NAIVE_HF = """
import json, sys
doc = json.load(open(sys.argv[1]))
cols = {}
for e in doc["log_history"]:
    for k, v in e.items():
        if isinstance(v, (int, float)):
            cols.setdefault(k, []).append((e.get("step"), v))
print(len(cols.get("loss", [])))
"""
NAIVE_JSONL = """
import json, sys
cols = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    for k, v in e.items():
        if isinstance(v, (int, float)):
            cols.setdefault(k, []).append((e.get("step"), v))
print(len(cols.get("loss", [])))
"""


def measure(cmd: list[str], py: str, src: str | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MB, CPU seconds) of one child process; `src` is the
    checkout's src/ it imports (default this one's)."""
    env = {**os.environ, "PYTHONPATH": src or str(ROOT / "src")} if cmd[0] == py else None
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def generate(small: bool) -> dict[str, Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    n_hf, n_jl = (100_000, 500_000) if small else (1_000_000, 5_000_000)
    hf = OUT / f"hf_{n_hf}" / "trainer_state.json"
    jl = OUT / f"log_{n_jl}.jsonl"
    if not hf.exists():
        subprocess.run([sys.executable, GEN / "gen_hf_state.py", "--entries", str(n_hf), "--out", hf], check=True)
    if not jl.exists():
        subprocess.run([sys.executable, GEN / "gen_jsonl_log.py", "--lines", str(n_jl), "--out", jl], check=True)
    return {"hf": hf, "jsonl": jl}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--naive", action="store_true", help="also run the naive reader")
    ap.add_argument("--old-repeat", type=int, default=1, help="runs of trainproof 0.22.0 (slow)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for this checkout and the raw read")
    ap.add_argument("--only", choices=("hf", "jsonl"), help="one input only")
    ap.add_argument("--base-src", help="another checkout's src/ (e.g. main's: git archive main src | tar -x "
                    "-C /tmp/base), run as 'base' interleaved with this one")
    args = ap.parse_args()
    py = args.python
    compileall.compile_dir(ROOT / "src", quiet=1)
    if not GEN.exists():
        raise SystemExit(f"{GEN} is absent: the generators live in ../shared/bench")
    inputs = {k: v for k, v in generate(args.small).items() if args.only in (None, k)}
    tp = [py, "-m", "trainproof", "epoch"]
    print(f"| input | size | tool | wall s (median of {args.repeat}) | CPU s | peak RSS MB | x raw read "
          "| x 0.22.0 (wall) | x 0.22.0 (CPU) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, path in inputs.items():
        naive = NAIVE_HF if kind == "hf" else NAIVE_JSONL
        tools = {"raw read": [py, "-c", RAW, path], "trainproof": [*tp, str(path), "--json"]}
        if args.naive:
            tools["naive"] = [py, "-c", naive, path]
        if args.base_src:
            compileall.compile_dir(args.base_src, quiet=1)
            tools["base"] = [*tp, str(path), "--json"]
        if OLD.exists():
            tools["0.22.0"] = [str(OLD), "-m", "trainproof", "epoch", str(path), "--json"]
        results: dict[str, list[tuple[float, float, float]]] = {k: [] for k in tools}
        for i in range(args.repeat):  # interleaved, so load changes hit every tool alike
            for name, cmd in tools.items():
                if name != "0.22.0" or i < args.old_repeat:
                    results[name].append(measure([str(c) for c in cmd], py,
                                                 args.base_src if name == "base" else None))
        med = {k: (statistics.median(r[0] for r in v), max(r[1] for r in v), statistics.median(r[2] for r in v))
               for k, v in results.items()}
        size = f"{path.stat().st_size / 1e6:.0f} MB"
        old, old_cpu = med.get("0.22.0", (0.0, 0.0, 0.0))[::2]
        for name, (wall, rss, cpu) in med.items():
            vs_old = f"{wall / old:.3f} | {cpu / old_cpu:.3f}" if old else " | "
            print(f"| {kind} | {size} | {name} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {wall / med['raw read'][0]:.1f} "
                  f"| {vs_old} |", flush=True)
    print(f"\nmachine: {os.cpu_count()} cores; {py}; load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
