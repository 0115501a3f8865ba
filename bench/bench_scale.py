"""Benchmark: `trainproof preflight` on the shared 1,000,000-record dataset in one
process, with `--workers 1` and `--workers 2`, and (with --baseline-src) the same
command from another checkout, to show what the piece/summary design costs the
single process.

Every contender runs as its own process, round-robin `--repeat` times. Wall time is
the command's; CPU time and peak RSS are those of the whole process tree: /proc is
sampled every 20 ms and the RSS of the command and all its descendants summed (peak
of the sum), and CPU is taken from os.wait4 (the child plus the workers it reaped).
The reports' findings must be identical across contenders. Then, in this process,
the merge is timed on its own: the summaries of --workers 2 are parsed and merged
(`DatasetSummary.from_bytes` + `merge`) and the duplicates counted from the merge.

    python bench/bench_scale.py --repeat 3 --baseline-src /work/main/src
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT.parent / "shared" / "bench" / "gen_dataset.py"


def tree_rss(pid: int) -> int:
    """Resident bytes of pid and all its descendants (psutil when installed)."""
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for q in procs:
        with contextlib.suppress(psutil.Error):
            total += q.memory_info().rss
    return total


def measure(argv: list[str], src: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            stdin=subprocess.DEVNULL)
    peak = 0
    out_chunks: list[bytes] = []
    os.set_blocking(proc.stdout.fileno(), False)
    while True:
        pid, _status, usage = os.wait4(proc.pid, os.WNOHANG)
        chunk = proc.stdout.read()
        if chunk:
            out_chunks.append(chunk)
        if pid:
            break
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    rest = proc.stdout.read()
    if rest:
        out_chunks.append(rest)
    doc = json.loads(b"".join(out_chunks))
    findings = [(f["id"], f["values"]) for r in doc["reports"] for f in r["findings"]]
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "rss_mb": max(peak / 1e6, usage.ru_maxrss / 1024), "findings": findings}


def merge_overhead(path: Path, workers: int) -> dict:
    """Measure the pieces as --workers would (here, one after another), then time the
    driver's share on its own: parse + merge the summaries, count duplicates."""
    sys.path.insert(0, str(ROOT / "src"))
    from trainproof.probes.dataset import PieceSpec, measure_piece
    from trainproof.probes.dataset_engines import Engine, merge_blobs
    from trainproof.probes.dataset_read import file_kind, shard_files
    from trainproof.probes.dataset_shape import Shape
    from trainproof.probes.dataset_summary import stable_hash_name
    from trainproof.rules.preflight import OVERSIZED

    class Here(Engine):
        def map(self, fn, args):
            return [fn(*a) for a in args]

    files = shard_files(path)
    kinds = [file_kind(f) for f in files]
    eng = Here(workers)
    pieces = eng.plan(files, kinds)
    spec = PieceSpec(Shape("text", ("text",)), int(OVERSIZED.t("max_bytes")), stable_hash_name())
    tm = time.process_time()
    blobs = [measure_piece(p, spec).to_bytes() for p in pieces]
    measure_cpu = time.process_time() - tm
    t0 = time.perf_counter()
    summary = merge_blobs(blobs, spec.hash_name)
    t1 = time.perf_counter()
    dups = summary.duplicates()
    t2 = time.perf_counter()
    return {"pieces": len(pieces), "measure_cpu_s": measure_cpu, "summary_mb": sum(map(len, blobs)) / 1e6,
            "parse_merge_s": t1 - t0, "duplicates_s": t2 - t1, "dup_records": dups.records, "hash": spec.hash_name}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--data", type=Path, help="the dataset (default: generated under /tmp/ds)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-src", type=Path, help="src/ of another checkout to compare one process against")
    ap.add_argument("--workers", type=int, nargs="*", default=[2], help="worker counts to run (none: skip)")
    ap.add_argument("--dask", type=int, default=0, metavar="N", help="also a Dask LocalCluster of N workers")
    args = ap.parse_args()
    path = args.data or Path(f"/tmp/ds/dataset_{args.records // 1000}k.jsonl".replace("1000k", "1m"))
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(GEN), "--records", str(args.records), "--out", str(path)], check=True)
    cmd = [sys.executable, "-m", "trainproof", "preflight", str(path), "--json"]
    here = ROOT / "src"
    contenders = {"one process": (cmd, here)}
    contenders.update({f"--workers {n}": ([*cmd, "--workers", str(n)], here) for n in args.workers})
    if args.dask:
        contenders[f"--engine dask --workers {args.dask}"] = ([*cmd, "--engine", "dask", "--workers",
                                                               str(args.dask)], here)
    if args.baseline_src:
        contenders = {"one process (baseline)": (cmd, args.baseline_src), **contenders}
    runs: dict[str, list[dict]] = {k: [] for k in contenders}
    for _ in range(args.repeat):
        for name, (argv, src) in contenders.items():
            runs[name].append(measure(argv, src))
    print(f"dataset: {path} ({path.stat().st_size / 1e6:.0f} MB); {args.repeat} interleaved runs, best by "
          f"CPU; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    print(f"{'contender':<26} {'CPU s':>7} {'wall s best/median':>19} {'peak RSS MB (tree)':>19}")
    ref = None
    for name, rs in runs.items():
        best = min(rs, key=lambda r: r["cpu_s"])
        med = statistics.median(r["wall_s"] for r in rs)
        print(f"{name:<26} {best['cpu_s']:>7.2f} {min(r['wall_s'] for r in rs):>9.2f} / {med:<7.2f} "
              f"{max(r['rss_mb'] for r in rs):>12.0f}")
        ref = ref or best["findings"]
        assert all(r["findings"] == ref for r in rs), f"{name}: findings differ"
    print("findings identical across all contenders and runs")
    for n in args.workers:
        print(f"merge overhead (driver, {n} workers' pieces):", json.dumps(merge_overhead(path, n)))


if __name__ == "__main__":
    main()
