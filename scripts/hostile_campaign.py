"""Run the hostile-input campaign (tests/hostile/test_campaign.py) and print its
figures, as SECURITY.md quotes them.

    PYTHONPATH=src python scripts/hostile_campaign.py [--json OUT.json] [--keep-crashes DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="also keep the figures as JSON here")
    ap.add_argument("--keep-crashes", metavar="DIR", help="copy every input that crashed or hung here")
    args = ap.parse_args()
    out = Path(args.json) if args.json else Path(tempfile.mkdtemp()) / "hostile.json"
    env = dict(os.environ, TP_HOSTILE_REPORT=str(out))
    if args.keep_crashes:
        env["TP_HOSTILE_KEEP"] = args.keep_crashes
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/hostile/test_campaign.py"], cwd=ROOT, env=env)
    figs = json.loads(out.read_text())
    print(f"inputs tried: {figs['inputs']} ({len(figs['skipped_inputs'])} skipped here), runs: {figs['runs']}")
    print("runs by command: " + ", ".join(f"{k} {v}" for k, v in figs["by_command"].items()))
    print(f"exit codes: {figs['exit_codes']}")
    print(f"crashes: {figs['crashes']}, hangs: {figs['hangs']}, dishonest verdicts: {figs['dishonest']}, "
          f"payloads executed: {figs['payloads_executed']}, over memory: {figs['over_memory']}, "
          f"over CPU time: {figs['slow']}, stderr over one line: {figs['stderr_over_one_line']}, "
          f"logs lost by the folder-wide doctor: {figs['lost_by_doctor']}")
    print(f"runs without a problem: worst CPU {figs['worst_cpu_s_clean']} s, "
          f"worst peak RSS {figs['worst_rss_mb_clean']} MB ({figs['worst_rss_run_clean']})")
    print(f"worst CPU time: {figs['worst_cpu_s']} s ({figs['worst_cpu_run']})")
    print(f"worst wall time: {figs['worst_time_s']} s ({figs['worst_time_run']})")
    print(f"worst peak RSS: {figs['worst_rss_mb']} MB ({figs['worst_rss_run']})")
    print(f"limits: {figs['limits']}")
    for cid, problems in figs["problems"].items():
        print(f"  {cid}: {'; '.join(problems)[:240]}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
