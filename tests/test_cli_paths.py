"""Several paths per command and --exclude, run as a user runs them on the gallery:
`epoch A B C` gives one report per log and the worst exit code; `doctor A B` searches
each; an unreadable log among several is its own NOT-CHECKED report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import ROOT, read_terminal

G = "examples/gallery"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def tp(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *map(str, args)], capture_output=True,
                          text=True, timeout=180, env=ENV, cwd=ROOT)


def _verdicts(r: subprocess.CompletedProcess) -> dict[str, str]:
    return {rep["file"]: rep["verdict"] for rep in json.loads(r.stdout)["reports"]}


def test_epoch_judges_each_log_and_exits_with_the_worst():
    healthy, overfit, nan = (f"{G}/{d}/trainer_state.json" for d in ("healthy", "overfit", "nan"))
    assert _verdicts(tp("epoch", healthy, overfit, "--json")) == {healthy: "PASS", overfit: "WARN"}
    assert tp("epoch", healthy, overfit).returncode == 0
    r = tp("epoch", healthy, overfit, nan, "--json")
    assert r.returncode == 1 and _verdicts(r) == {healthy: "PASS", overfit: "WARN", nan: "FAIL"}
    assert list(_verdicts(r)) == [nan, overfit, healthy]  # triaged


def test_epoch_an_unreadable_log_among_several_is_not_checked_and_exit_2():
    healthy = f"{G}/healthy/trainer_state.json"
    r = tp("epoch", healthy, f"{G}/missing.json", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["error"] is None
    missing = next(rep for rep in doc["reports"] if rep["file"].endswith("missing.json"))
    assert missing["verdict"] == "NOT-CHECKED" and missing["findings"][0]["id"] == "TP-NO-RECORDS"
    assert "no such file" in missing["findings"][0]["evidence"]


def test_epoch_one_unreadable_log_is_still_the_command_error():
    r = tp("epoch", f"{G}/missing.json")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1


def test_epoch_exclude_drops_matching_logs():
    logs = [f"{G}/{d}/trainer_state.json" for d in ("healthy", "nan", "overfit")]
    r = tp("epoch", *logs, "--exclude", "nan", "--json")
    assert r.returncode == 0 and set(_verdicts(r)) == {logs[0], logs[2]}
    everything = tp("epoch", *logs, "--exclude", "*.json")
    assert everything.returncode == 2 and "excluded" in everything.stderr


def test_doctor_searches_every_path_as_one_report_set():
    one, two = tp("doctor", G, "--json"), tp("doctor", "examples/gallery2", "--json")
    both = tp("doctor", G, "examples/gallery2", "--json")
    assert both.returncode == 1
    assert _verdicts(both) == {**_verdicts(one), **_verdicts(two)} and len(_verdicts(both)) == 36


def test_doctor_a_missing_path_stops_before_any_work():
    r = tp("doctor", G, "no/such/dir")
    assert r.returncode == 2 and r.stdout == "" and "no/such/dir: no such file or directory" in r.stderr


def test_doctor_exclude_lists_what_it_skipped():
    r = tp("doctor", G, "--exclude", "seed4?", "--json")
    doc = json.loads(r.stdout)
    assert len(doc["reports"]) == 6
    skipped = {item["file"]: item["reason"] for item in doc["not_judged"]}
    assert skipped[f"{G}/nan/seed43/trainer_state.json"] == "excluded by --exclude seed4?"
    assert sum(reason.startswith("excluded") for reason in skipped.values()) == 12


def test_text_never_splits_a_long_path(tmp_path):
    deep = tmp_path / ("very-long-folder-name-" * 3) / "and-another-long-one" / "run-2024-01-01" / "missing.json"
    r = tp("epoch", f"{G}/healthy/trainer_state.json", deep)
    assert r.returncode == 2
    evidence = [line for line in r.stdout.splitlines() if "Evidence:" in line and "TP-" not in line]
    assert any(line.strip() == f"Evidence: {deep}:" for line in evidence)  # whole, past the width


def test_doctor_progress_only_on_a_terminal():
    import pty

    piped = tp("doctor", "examples", "-q")
    assert piped.stderr == ""  # a pipe never sees progress
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "trainproof", "doctor", "examples", "-q"],
                              stdout=subprocess.PIPE, stderr=follower, env=ENV, cwd=ROOT, timeout=180)
        os.close(follower)
        err = read_terminal(leader)
    finally:
        os.close(leader)
    assert proc.stdout.decode() == piped.stdout  # standard output unchanged
    assert err.count(b"judging") == 36 and b"[36/36] judging " in err
    assert err.endswith(b"\r")  # the line is erased at the end
