"""Benchmark: `trainproof preflight` on the shared 1,000,000-record dataset, against
references measured in the same run on the same file:

  raw-read    reading the file in 4 MiB blocks and nothing else (the floor)
  naive       json.loads per line, every text kept in a dict (what the old tool does)
  hash-set    json.loads per line, an 8-byte BLAKE2b digest per text in a set

Every contender runs as its own process, round-robin `--repeat` times; CPU time,
wall time and peak RSS are that process's (os.wait4). On a shared machine CPU time
is the steadier figure, so the best run by CPU time is reported. The planted empty
and duplicate counts are checked against the generator's truth file. Then bad
inputs (a 100 MB single line, a FIFO, /dev/zero, invalid UTF-8) are run through the
CLI with their exit code, time and peak RSS.

    python bench/bench_preflight.py                      # 1M records under /tmp
    python bench/bench_preflight.py --records 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GEN = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "gen_dataset.py"

RAW_READ = """
import sys
with open(sys.argv[1], 'rb') as f:
    while f.read(4 << 20):
        pass
"""

NAIVE = """
import json, sys
seen, empty, dup = {}, 0, 0
for i, line in enumerate(open(sys.argv[1], encoding='utf-8')):
    t = json.loads(line)['text']
    empty += not t.strip()
    if t in seen:
        dup += 1
    else:
        seen[t] = i
print(json.dumps({'empty': empty, 'dup_records': dup}))
"""

HASH_SET = """
import hashlib, json, sys
seen, empty, dup = set(), 0, 0
for line in open(sys.argv[1], 'rb'):
    t = json.loads(line)['text']
    empty += not t.strip()
    d = hashlib.blake2b(t.encode(), digest_size=8).digest()
    if d in seen:
        dup += 1
    else:
        seen.add(d)
print(json.dumps({'empty': empty, 'dup_records': dup}))
"""


def measure(argv: list[str], timeout: float = 600) -> dict:
    """Run argv as a child; its wall time, peak RSS (MB), exit code and stdout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, stdin=subprocess.DEVNULL)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                "rc": proc.returncode,
                "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace")}


def interleaved(contenders: dict[str, list[str]], repeat: int) -> dict[str, dict]:
    """Each contender `repeat` times, round-robin, so a change in machine load hits all
    of them alike; the best (lowest CPU time) run of each is kept, with median wall time."""
    runs: dict[str, list[dict]] = {k: [] for k in contenders}
    for _ in range(repeat):
        for name, argv in contenders.items():
            runs[name].append(measure(argv))
    out = {}
    for name, rs in runs.items():
        best = dict(min(rs, key=lambda r: r["cpu_s"]))
        best["median_wall_s"] = statistics.median(r["wall_s"] for r in rs)
        out[name] = best
    return out


def preflight_counts(stdout: str) -> dict:
    doc = json.loads(stdout)
    found = {f["id"]: f["values"] for r in doc["reports"] for f in r["findings"]}
    return {"empty": found.get("TP-PRE-EMPTY-TEXT", {}).get("count", 0),
            "dup_records": found.get("TP-PRE-DUPLICATE-TEXT", {}).get("dup_records_with_blank", 0),
            "distinct_duped_texts": found.get("TP-PRE-DUPLICATE-TEXT", {}).get("distinct_with_blank", 0)}


def dataset(args: argparse.Namespace) -> Path:
    path = Path(args.data_dir) / f"dataset_{args.records}.jsonl"
    if not path.is_file() or not Path(f"{path}.truth.json").is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(args.gen), "--records", str(args.records), "--out", str(path)],
                       check=True)
    return path


def main_bench(args: argparse.Namespace) -> None:
    path = dataset(args)
    truth = json.loads(Path(f"{path}.truth.json").read_text())
    py = sys.executable
    rows = interleaved({
        "raw-read": [py, "-c", RAW_READ, str(path)],
        "naive (keeps texts)": [py, "-c", NAIVE, str(path)],
        "hash-set (per line)": [py, "-c", HASH_SET, str(path)],
        "trainproof preflight": [py, "-m", "trainproof", "preflight", str(path), "--json"],
    }, args.repeat)
    size = path.stat().st_size / 1e6
    print(f"\ndataset: {path} ({size:.0f} MB, {truth['records']:,} records); {args.repeat} interleaved "
          f"run(s) each, best by CPU time; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    print(f"{'contender':<24} {'CPU s':>7} {'wall s':>7} {'med wall':>9} {'peak RSS MB':>12}  counts")
    for name, r in rows.items():
        counts = ""
        if name == "trainproof preflight":
            got = preflight_counts(r["stdout"])
            ok = all(got[k] == truth[k] for k in got)
            counts = f"{got} {'== truth' if ok else '!= truth ' + str(truth)}"
        elif r["stdout"].strip():
            got = json.loads(r["stdout"])
            ok = all(got[k] == truth[k] for k in got)
            counts = f"{got} {'== truth' if ok else '!= truth'}"
        print(f"{name:<24} {r['cpu_s']:>7.2f} {r['wall_s']:>7.2f} {r['median_wall_s']:>9.2f} "
              f"{r['rss_mb']:>12.0f}  {counts}")
    tp, naive, hs = rows["trainproof preflight"], rows["naive (keeps texts)"], rows["hash-set (per line)"]
    for ref_name, ref in (("naive", naive), ("hash-set", hs)):
        print(f"trainproof / {ref_name}: CPU {tp['cpu_s'] / ref['cpu_s']:.2f}x, wall "
              f"{tp['wall_s'] / ref['wall_s']:.2f}x, peak RSS {tp['rss_mb'] / ref['rss_mb']:.2f}x")


def bad_inputs(args: argparse.Namespace) -> None:
    py = sys.executable
    d = Path(tempfile.mkdtemp(prefix="tp-bad-", dir=args.data_dir))
    long_line = d / "one_100mb_line.jsonl"
    with open(long_line, "wb") as f:
        f.write(b'{"text": "')
        for _ in range(100):
            f.write(b"y" * (1 << 20))
        f.write(b'"}\n{"text": "after"}\n')
    bad_utf8 = d / "bad_utf8.jsonl"
    bad_utf8.write_bytes(b'{"text": "ok"}\n{"text": "\xff\xfe"}\n' * 1000)
    fifo = d / "fifo.jsonl"
    os.mkfifo(fifo)
    cases = {"100 MB single line": long_line, "invalid UTF-8 (half the lines)": bad_utf8,
             "FIFO": fifo, "/dev/zero": Path("/dev/zero")}
    print(f"\n{'bad input':<32} {'rc':>3} {'wall s':>7} {'peak RSS MB':>12}  message")
    for name, p in cases.items():
        r = measure([py, "-m", "trainproof", "preflight", str(p)], timeout=60)
        lines = (r["stderr"].strip() or r["stdout"].strip()).splitlines()
        msg = next((ln.strip() for ln in lines if "TP-PRE" in ln or "error" in ln), lines[0] if lines else "")
        print(f"{name:<32} {r['rc']:>3} {r['wall_s']:>7.2f} {r['rss_mb']:>12.0f}  {msg[:90]}")
    for p in (long_line, bad_utf8, fifo):
        p.unlink()
    d.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--data-dir", default="/tmp/trainproof-bench")
    ap.add_argument("--gen", type=Path, default=GEN, help="the shared gen_dataset.py")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-bad", action="store_true", help="skip the bad-input section")
    args = ap.parse_args()
    main_bench(args)
    if not args.skip_bad:
        bad_inputs(args)


if __name__ == "__main__":
    main()
