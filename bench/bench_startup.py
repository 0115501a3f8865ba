"""Benchmark: start-up, whole processes, against references run in the same session.

    python bench/bench_startup.py                 # 15 interleaved rounds
    python bench/bench_startup.py --repeat 31

Times `trainproof --version`, `--help`, `rule TP-NAN`, `rules` and `epoch` on a 60-point
trainer_state.json (this checkout, through `python -m trainproof` with src/ first on the
path), next to `python -c pass`, `python -c "import numpy"` and, where it is installed
in /tmp/venv-tp022 (`python -m venv /tmp/venv-tp022 && /tmp/venv-tp022/bin/pip install
trainproof==0.22.0`), trainproof 0.22.0 doing the same. Rounds are interleaved so that
load changes hit every command alike; the table gives medians and the load average.
The small input is written under /tmp/trainproof-bench, never into the repository.

src/ is byte-compiled first, as an installed package is (pip compiles it): where
PYTHONDONTWRITEBYTECODE is set, as on the project's VMs, every run would otherwise
compile the modules it imports, which 0.22.0's install does not. `--python` runs this
checkout and the `python -c` references under another interpreter, e.g. a venv without
the system site-packages, whose .pth files may import modules at start-up (0.22.0's venv
has none):

    python -m venv /tmp/venv-clean && /tmp/venv-clean/bin/pip install numpy msgspec orjson
    python bench/bench_startup.py --python /tmp/venv-clean/bin/python
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


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def small_state() -> Path:
    path = OUT / "hf_60" / "trainer_state.json"
    if not path.exists():
        subprocess.run([sys.executable, GEN / "gen_hf_state.py", "--entries", "60", "--eval-every", "20",
                        "--out", path], check=True)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--python", default=sys.executable, help="interpreter for this checkout and the references")
    args = ap.parse_args()
    py = args.python
    compileall.compile_dir(ROOT / "src", quiet=1)
    state = str(small_state())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    calls = {"--version": ["--version"], "--help": ["--help"], "rule TP-NAN": ["rule", "TP-NAN"],
             "rules": ["rules"], "epoch (60 points)": ["epoch", state, "--json"]}
    cmds: dict[str, tuple[list[str], dict[str, str]]] = {
        "python -c pass": ([py, "-c", "pass"], env),
        "python -c 'import numpy'": ([py, "-c", "import numpy"], env),
    }
    for name, argv in calls.items():
        cmds[f"trainproof {name}"] = ([py, "-m", "trainproof", *argv], env)
        if OLD.exists():
            cmds[f"0.22.0 {name}"] = ([str(OLD), "-m", "trainproof", *argv], dict(os.environ))
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(args.repeat):
        for name, (cmd, e) in cmds.items():
            times[name].append(run(cmd, e))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    numpy_s = med["python -c 'import numpy'"]
    print(f"| command | median wall s ({args.repeat} rounds) | CPU s | x `import numpy` (wall / CPU) | x 0.22.0 |")
    print("|---|---|---|---|---|")
    for name, (s, cpu) in med.items():
        old = med.get(name.replace("trainproof ", "0.22.0 ", 1)) if name.startswith("trainproof ") else None
        ratio = f"{s / old[0]:.2f}" if old else ""
        print(f"| {name} | {s:.3f} | {cpu:.3f} | {s / numpy_s[0]:.2f} / {cpu / numpy_s[1]:.2f} | {ratio} |")
    print(f"\nmachine: {os.cpu_count()} cores; {py}; load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
