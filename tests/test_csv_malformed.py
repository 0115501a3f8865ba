"""A CSV log with lines the csv module rejects is read around them, counted in a note:
one bad line (a stray carriage return inside a field, a field over the size limit, a
runaway line) never turns a healthy log into an internal error or unbounded memory."""

from __future__ import annotations

from pathlib import Path

from trainproof.engine import judge_run
from trainproof.parsers import read_run
from trainproof.parsers.incremental import CsvDecoder


def _log(tmp_path: Path, bad: bytes) -> Path:
    rows = [f"{i},{2.0 - 0.01 * i:.4f}\n".encode() for i in range(1, 81)]
    p = tmp_path / "metrics.csv"
    p.write_bytes(b"step,loss\n" + b"".join(rows[:40]) + bad + b"".join(rows[40:]))
    return p


def test_a_stray_carriage_return_inside_a_field_is_skipped(tmp_path):
    run = read_run(_log(tmp_path, b'41,1.5\rx\n'))  # a lone CR ends a line, as in universal newlines
    assert len(run.get("loss")) == 80 and judge_run(run).verdict.value == "PASS"


def test_lines_the_csv_module_rejects_are_skipped_and_counted(tmp_path):
    from trainproof.parsers import csvlog

    bad = [0]
    rows = list(csvlog.rows(["step,loss\n", "1,2.0\n", "2,1.9\rzz\n", "3,1.8\n"], csvlog.csv.excel, bad))
    assert rows == [["step", "loss"], ["1", "2.0"], ["3", "1.8"]] and bad == [1]


def test_a_runaway_line_is_read_past_in_bounded_memory(tmp_path):
    run = read_run(_log(tmp_path, b"41," + b"9" * (3 << 20) + b"\n"))
    assert len(run.get("loss")) == 80
    assert any("over 1 MiB" in n for n in run.notes)


def test_watch_reads_around_a_malformed_line_too():
    dec = CsvDecoder()
    dec.feed(b"step,loss\n1,2.0\n2,1.9\rzz\n3,1.8\n")
    raw = dec.raw()
    assert raw.columns["loss"][1].tolist() == [2.0, 1.9, 1.8]
