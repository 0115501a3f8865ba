"""Benchmark: `epoch` on one small log, two or more checkouts against `python -c "import
numpy"`, whole processes alternated round by round, CPU seconds (user + system from
wait4) as min, quartile and median. For differences of a few milliseconds that
bench_startup.py's medians of wall time cannot resolve on a shared machine.

    python bench/bench_startup_ab.py LOG --src /tmp/base/src --src src --rounds 40 \\
        --python /tmp/venv-speed-clean/bin/python

`--src` is a checkout's src/ (e.g. main's: `git archive main src | tar -x -C /tmp/base`);
each is byte-compiled first, as an installed package is (see bench_startup.py). `--call`
times another command line instead of `epoch LOG` (then LOG is not given):

    python bench/bench_startup_ab.py --call "rule TP-NAN" --src /tmp/base/src --src src
"""

from __future__ import annotations

import argparse
import compileall
import os
import shlex
import statistics
import subprocess
import sys


def _cpu(argv: list[str], env: dict[str, str], cwd: str) -> float:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", help="the log `epoch` judges (not with --call)")
    ap.add_argument("--call", help="a trainproof command line to time instead, e.g. 'rule TP-NAN'")
    ap.add_argument("--src", action="append", required=True, help="a checkout's src/ (repeatable)")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cwd", default="/tmp", help="working directory of every run (default /tmp: no config "
                    "file; a checkout's root has a pyproject.toml to look at)")
    args = ap.parse_args()
    if (args.log is None) == (args.call is None):
        ap.error("give LOG or --call, not both")
    call = shlex.split(args.call) if args.call else ["epoch", os.path.abspath(args.log)]
    for src in args.src:
        compileall.compile_dir(src, quiet=1)
    runs: dict[str, tuple[list[str], dict[str, str]]] = {"import numpy": ([args.python, "-c", "import numpy"], {})}
    for src in args.src:
        argv = [args.python, "-m", "trainproof", *call]
        runs[src] = (argv, {"PYTHONPATH": os.path.abspath(src)})
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, (argv, extra) in runs.items():
            times[name].append(_cpu(argv, {**os.environ, **extra}, args.cwd))
    ref = times["import numpy"]
    print("| command | CPU s min | p25 | median | x import numpy (min / median) |\n|---|---|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {min(t):.3f} | {statistics.quantiles(t, n=4)[0]:.3f} | {statistics.median(t):.3f} | "
              f"{min(t) / min(ref):.2f} / {statistics.median(t) / statistics.median(ref):.2f} |")
    print(f"\n{args.rounds} rounds from {args.cwd}; {args.python}; load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
