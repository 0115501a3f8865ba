"""Whether one run of the campaign was well-behaved and honest, and the figures.

Every run: exit 0, 1 or 2; at most one line on stderr, never a traceback or an
"internal error"; within CPU_LIMIT_S and MEMORY_LIMIT_MB (and done before the
runner's wall-clock TIME_LIMIT_S, past which it is a hang); its payload (if any)
never ran; stdout is the JSON document (the last line of it for watch) and its
exit_code is the process's. Honesty:
- an "unreadable" input exits 2, a "broken" one never 0, a "fail" one exits 1;
- exit 0 never rests on nothing: each PASS or WARN report about a log or a dataset
  read at least one record;
- exit 1 rests on a FAIL finding (a TP-* rule at level FAIL); about a log, in a
  report that read records (a run that could not be read is never blamed).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile.runner import TIME_LIMIT_S

MEMORY_LIMIT_MB = 400.0  # peak RSS of one run
CPU_LIMIT_S = 20.0  # CPU seconds of one run; wall time on a shared 2-CPU runner says more about the neighbours
LOG_COMMANDS = ("epoch", "compare", "watch", "doctor")
COUNTED = ("run", "compare", "dataset")  # report kinds whose `records` says what was read


def document(stdout: str) -> dict | None:
    """The JSON document a run printed (watch prints one per line; the last one counts)."""
    text = stdout.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return json.loads(text.splitlines()[-1])
    except ValueError:
        return None


def problems(case, result: dict, marker: Path) -> list[str]:
    out = Path(result["stdout"]).read_text(errors="replace")
    err = Path(result["stderr"]).read_text(errors="replace")
    rc = result["rc"]
    found = []
    if result["timed_out"]:
        found.append(f"hang: killed after {TIME_LIMIT_S:g} s")
    if rc not in (0, 1, 2):
        found.append(f"exit code {rc}")
    if "Traceback" in out + err:
        found.append("traceback: " + err.strip().splitlines()[-1][:300] if err.strip() else "traceback on stdout")
    elif "internal error" in err:
        found.append("crash: " + err.strip()[:300])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if len(lines) > 1:
        found.append(f"{len(lines)} lines on stderr: {lines[:3]}")
    if result["cpu_s"] > CPU_LIMIT_S:
        found.append(f"slow: {result['cpu_s']:.1f} CPU s > {CPU_LIMIT_S:g} s")
    if result["peak_rss_mb"] > MEMORY_LIMIT_MB:
        found.append(f"peak RSS {result['peak_rss_mb']:.0f} MB > {MEMORY_LIMIT_MB:g} MB")
    if marker.exists():
        found.append("PAYLOAD EXECUTED: the marker file exists")
    if found or rc not in (0, 1, 2):
        return found
    doc = document(out)
    if doc is None:
        return [f"stdout is not a JSON document: {out[:200]!r}"]
    if doc.get("exit_code") != rc:
        found.append(f"document says exit_code {doc.get('exit_code')}, the process exited {rc}")
    found.extend(_expected(case.expect, rc, err))
    found.extend(_honest(case.command, rc, doc))
    return found


def _expected(expect: str, rc: int, err: str) -> list[str]:
    why = f" ({err.strip()[:160]})" if err.strip() else ""
    if expect == "unreadable" and rc != 2:
        return [f"nothing in it can be judged, yet exit {rc}{why}"]
    if expect == "broken" and rc == 0:
        return ["damaged input passed (exit 0)"]
    if expect == "fail" and rc != 1:
        return [f"a readable FAIL was lost: exit {rc}{why}"]
    return []


def _honest(command: str, rc: int, doc: dict) -> list[str]:
    found = []
    reports = doc.get("reports") or []
    for r in reports:
        counted = r.get("kind") in COUNTED
        if r["verdict"] in ("PASS", "WARN") and counted and not r.get("records"):
            found.append(f"{r['verdict']} on nothing: {r['file']} read 0 records")
    if rc == 1:
        blamed = [r for r in reports if r["verdict"] == "FAIL"]
        cited = [r for r in blamed if any(f["level"] == "FAIL" and f["id"].startswith("TP-") for f in r["findings"])]
        if not cited:
            found.append("exit 1 without a FAIL finding")
        if command in LOG_COMMANDS:
            for r in blamed:
                if not r.get("records"):
                    ids = [f["id"] for f in r["findings"] if f["level"] == "FAIL"]
                    found.append(f"FAIL about a run that could not be read: {r['file']} {ids}")
    return found


def figures(cases: list, results: dict[str, dict], found: dict[str, list[str]], inputs: int) -> dict:
    """The campaign's figures, as SECURITY.md states them."""
    runs = [results[c.id] for c in cases if c.id in results]
    worst_t = max(runs, key=lambda r: r["wall_s"])
    worst_m = max(runs, key=lambda r: r["peak_rss_mb"])
    worst_c = max(runs, key=lambda r: r["cpu_s"])
    flat = [(cid, p) for cid, ps in found.items() for p in ps]

    def count(*keys: str) -> int:
        return sum(1 for _, p in flat if p.startswith(keys))

    return {
        "inputs": inputs,
        "runs": len(runs),
        "by_command": {cmd: sum(1 for c in cases if c.command == cmd) for cmd in sorted({c.command for c in cases})},
        "crashes": count("traceback", "crash", "exit code"),
        "hangs": count("hang"),
        "dishonest": count("nothing in it", "damaged input passed", "a readable FAIL", "PASS on", "WARN on",
                           "FAIL about", "exit 1 without", "document says", "stdout is not"),
        "payloads_executed": count("PAYLOAD"),
        "over_memory": count("peak RSS"),
        "stderr_over_one_line": sum(1 for _, p in flat if "lines on stderr" in p),
        "lost_by_doctor": count("judged alone"),
        "worst_rss_mb_clean": max(r["peak_rss_mb"] for r in runs if not found.get(r["id"])),
        "worst_rss_run_clean": max((r for r in runs if not found.get(r["id"])), key=lambda r: r["peak_rss_mb"])["id"],
        "worst_cpu_s_clean": max(r["cpu_s"] for r in runs if not found.get(r["id"])),
        "runs_with_problems": sum(1 for ps in found.values() if ps),
        "slow": count("slow"),
        "limits": {"cpu_s": CPU_LIMIT_S, "wall_s": TIME_LIMIT_S, "peak_rss_mb": MEMORY_LIMIT_MB},
        "worst_cpu_s": worst_c["cpu_s"], "worst_cpu_run": worst_c["id"],
        "worst_time_s": worst_t["wall_s"], "worst_time_run": worst_t["id"],
        "worst_rss_mb": worst_m["peak_rss_mb"], "worst_rss_run": worst_m["id"],
        "exit_codes": {str(k): sum(1 for r in runs if r["rc"] == k) for k in sorted({r["rc"] for r in runs})},
        "problems": {cid: ps for cid, ps in found.items() if ps},
    }
