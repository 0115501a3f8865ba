"""`-` reads the log from standard input (epoch, compare): sniffed by content, or named
with --format; an empty or unrecognised stream is exit 2 with one line that names
standard input, not the temporary copy; the copy is removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from .conftest import FIXTURES, ROOT

G = ROOT / "examples/gallery"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def tp(*args, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *map(str, args)], input=stdin,
                          capture_output=True, timeout=120, env=ENV, cwd=ROOT)


def _copies() -> set[str]:
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("trainproof-stdin-")}


def test_a_piped_trainer_state_is_judged_like_the_file():
    before = _copies()
    piped = tp("epoch", "-", "--json", stdin=(G / "nan/trainer_state.json").read_bytes())
    named = tp("epoch", G / "nan/trainer_state.json", "--json")
    assert piped.returncode == named.returncode == 1
    a, b = json.loads(piped.stdout)["reports"][0], json.loads(named.stdout)["reports"][0]
    assert a["file"] == "-" and a["verdict"] == b["verdict"] == "FAIL"
    assert [f["id"] for f in a["findings"]] == [f["id"] for f in b["findings"]]
    assert _copies() == before  # the temporary copy is gone


def test_a_csv_needs_format_and_the_error_names_standard_input():
    data = (FIXTURES / "lightning/metrics.csv").read_bytes()
    r = tp("epoch", "-", stdin=data)
    err = r.stderr.decode()
    assert r.returncode == 2 and "standard input (-)" in err and "trainproof-stdin-" not in err
    assert tp("epoch", "-", "--format", "csv", stdin=data).returncode in (0, 1)


def test_empty_standard_input_is_exit_2():
    r = tp("epoch", "-")
    assert r.returncode == 2 and b"standard input was empty" in r.stderr


def test_stdin_beside_files_and_in_compare():
    overfit = (G / "overfit/trainer_state.json").read_bytes()
    r = tp("epoch", G / "nan/trainer_state.json", "-", "-q", stdin=overfit)
    assert r.returncode == 1 and r.stdout.decode().splitlines()[1] == "WARN        -  TP-OVERFIT"
    c = tp("compare", G / "healthy/trainer_state.json", "-", "--json", stdin=overfit)
    assert c.returncode in (0, 1) and json.loads(c.stdout)["ranking"][0]["run"] == "-"
