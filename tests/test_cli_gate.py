"""The CI gate options, run as a user runs them (a subprocess on the shipped gallery):
--exit-zero (0 on FAIL, 2 kept for could-not-judge), --fail-on warn, --quiet and
--statistics."""

from __future__ import annotations

import os
import subprocess
import sys

from trainproof.model import Finding, Level, Location, Report, ReportSet

from .conftest import ROOT

GALLERY = ROOT / "examples/gallery"
NAN = GALLERY / "nan/trainer_state.json"
OVERFIT = GALLERY / "overfit/trainer_state.json"
HEALTHY = GALLERY / "healthy/trainer_state.json"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def tp(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *map(str, args)], capture_output=True,
                          text=True, timeout=120, env={**ENV, **kw.pop("env", {})}, cwd=ROOT, **kw)


def test_exit_zero_turns_fail_into_zero_and_keeps_the_report():
    plain, zero = tp("epoch", NAN), tp("epoch", NAN, "--exit-zero")
    assert plain.returncode == 1 and zero.returncode == 0
    assert zero.stdout == plain.stdout and "VERDICT: FAIL" in zero.stdout


def test_exit_zero_keeps_could_not_judge():
    r = tp("epoch", GALLERY / "missing.json", "--exit-zero")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def _report(name: str, level: Level, required: bool = True) -> Report:
    f = Finding("TP-X", level, "m", "e", {}, Location(name))
    return Report(name, "csv", (f,), ran=() if level is Level.NOT_CHECKED else ("x",), required=required)


def test_exit_zero_does_not_hide_an_unjudged_input_behind_a_fail():
    rs = ReportSet("epoch", (_report("a", Level.FAIL), _report("b", Level.NOT_CHECKED)))
    assert rs.exit_code == 1  # FAIL outranks could-not-judge ...
    assert rs.gated_exit_code(exit_zero=True) == 2  # ... until FAIL is waived: then 2 shows
    found = ReportSet("doctor", (_report("a", Level.FAIL), _report("b", Level.NOT_CHECKED, required=False)))
    assert found.gated_exit_code(exit_zero=True) == 0  # doctor's own discoveries never force 2


def test_fail_on_warn():
    assert tp("epoch", OVERFIT).returncode == 0
    assert tp("epoch", OVERFIT, "--fail-on", "warn").returncode == 1
    assert tp("epoch", OVERFIT, "--fail-on", "warn", "--exit-zero").returncode == 0
    assert tp("epoch", HEALTHY, "--fail-on", "warn").returncode == 0


def test_quiet_prints_one_line_per_report_not_passing_and_nothing_on_pass():
    r = tp("epoch", NAN, "-q")
    assert r.returncode == 1
    assert r.stdout.splitlines() == [f"FAIL        {NAN}  TP-NAN, TP-NAN-GRAD, TP-ZERO-LOSS-ONSET"]
    ok = tp("epoch", HEALTHY, "--quiet")
    assert ok.returncode == 0 and ok.stdout == "" and ok.stderr == ""


def test_quiet_leaves_machine_formats_whole():
    import json

    r = tp("epoch", NAN, "-q", "--json")
    assert json.loads(r.stdout)["worst_verdict"] == "FAIL"


def test_statistics_counts_findings_per_rule(tmp_path):
    r = tp("doctor", GALLERY, "--statistics")
    assert r.returncode == 1
    rows = [line.split() for line in r.stdout.splitlines()]
    assert rows[0] == ["count", "level", "rule", "reports"]
    table = {row[2]: (int(row[0]), row[1], int(row[3])) for row in rows[1:]}
    assert table["TP-NAN"] == (3, "FAIL", 3)  # the nan run and its two seeds
    assert table["TP-OVERFIT"] == (3, "WARN", 3)
    assert "TP-DIVERGE" not in table and "VERDICT" not in r.stdout


def test_statistics_refuses_a_machine_format_on_stdout():
    r = tp("epoch", NAN, "--statistics", "--json")
    assert r.returncode == 2 and r.stdout == "" and "--statistics" in r.stderr
