"""The incremental reading under `watch`: a Tail hands out complete lines only and
notices truncation, replacement and in-place rewrites; feeding a real log through it
in small pieces gives exactly the Run a whole read gives."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import read_run
from trainproof.parsers.incremental import LineSource, RereadSource, open_source
from trainproof.tail import Tail

from .conftest import need_shared

HERE = Path(__file__).parent
CORPUS = HERE.parent.parent / "shared" / "corpus"
LOGS = [
    ("jsonl", HERE / "fixtures" / "core" / "jsonl" / "train_log.jsonl"),
    ("jsonl", HERE / "fixtures" / "core" / "jsonl" / "nested_metrics.jsonl"),
    ("csv", HERE / "fixtures" / "core" / "lightning" / "metrics.csv"),
    ("csv", HERE / "fixtures" / "live" / "lightning_csv" / "metrics.csv"),
    ("coqui", CORPUS / "coqui_xtts_diverged" / "trainer_0_log.txt"),
]


def grow(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def test_a_half_written_line_is_not_handed_out_until_its_newline_arrives(tmp_path):
    log = tmp_path / "a.jsonl"
    grow(log, b'{"step": 1, "loss": 2.0}\n{"step": 2, "lo')
    tail = Tail(log)
    assert tail.poll().data == b'{"step": 1, "loss": 2.0}\n'
    assert tail.poll().data == b""
    grow(log, b'ss": 1.9}\n')
    assert tail.poll().data == b'{"step": 2, "loss": 1.9}\n'


def test_a_half_written_record_is_never_a_data_point(tmp_path):
    log = tmp_path / "a.jsonl"
    grow(log, b"".join(b'{"step": %d, "loss": %d.5}\n' % (i, 9 - i) for i in range(1, 6)) + b'{"step": 6, "loss": 1')
    source = LineSource(log, "jsonl", str(log), {})
    source.update()
    run = source.run()
    assert run.records == 5 and run.series["loss"].steps[-1] == 5
    grow(log, b'2.25}\n')  # the same bytes completed: 12.25, not 1
    source.update()
    assert source.run().series["loss"].values[-1] == 12.25


def test_truncation_replacement_and_rewrite_restart_the_tail(tmp_path):
    log = tmp_path / "m.csv"
    log.write_bytes(b"step,loss\n1,2.0\n2,1.9\n3,1.8\n")
    tail = Tail(log)
    assert tail.poll().restarted is None
    log.write_bytes(b"step,loss\n1,5.0\n")  # same inode, shorter: a restarted run
    chunk = tail.poll()
    assert chunk.restarted == "truncated" and chunk.data == b"step,loss\n1,5.0\n"
    log.write_bytes(b"step,loss,val_loss\n1,5.0,\n2,4.0,3.0\n")  # header rewritten (CSVLogger)
    chunk = tail.poll()
    assert chunk.restarted == "rewritten" and chunk.data.startswith(b"step,loss,val_loss\n")
    new = tmp_path / "m.csv.new"
    new.write_bytes(b"step,loss,val_loss\n7,1.0,\n")
    os.replace(new, log)  # rotation / atomic replace: a new inode
    chunk = tail.poll()
    assert chunk.restarted == "replaced" and chunk.data == b"step,loss,val_loss\n7,1.0,\n"
    log.unlink()
    assert tail.poll().missing


def test_a_line_longer_than_a_block_is_skipped_not_buffered(tmp_path):
    log = tmp_path / "a.jsonl"
    grow(log, b'{"step": 1, "loss": 2}\n' + b"x" * 100 + b'\n{"step": 2, "loss": 1}\n')
    tail = Tail(log, block=32)
    got = b""
    for _ in range(20):
        got += tail.poll().data
    assert got == b'{"step": 1, "loss": 2}\n{"step": 2, "loss": 1}\n' and tail.skipped_long == 1


@pytest.mark.parametrize(("fmt", "path"), LOGS, ids=lambda v: getattr(v, "name", v))
def test_reading_in_pieces_gives_the_run_a_whole_read_gives(fmt, path, tmp_path):
    if not path.exists():
        if CORPUS in path.parents:
            need_shared(path)  # the corpus log: skips, saying why, in a clone without ../shared
        pytest.skip(f"{path} is not present in this checkout")
    whole = read_run(path, fmt)
    data = path.read_bytes()
    log = tmp_path / path.name
    log.touch()
    source = LineSource(log, fmt, str(path), {})
    rng = np.random.default_rng(0)
    cuts = np.sort(rng.choice(len(data), size=min(40, len(data) - 1), replace=False))
    for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True):
        grow(log, data[a:b])
        source.update()
    if not data.endswith(b"\n"):
        grow(log, b"\n")
        source.update()
    piecewise = source.run()
    assert piecewise.records == whole.records
    assert set(piecewise.series) == set(whole.series)
    for name, s in whole.series.items():
        np.testing.assert_array_equal(piecewise.series[name].steps, s.steps)
        np.testing.assert_array_equal(piecewise.series[name].values, s.values)


def test_whole_file_formats_are_reread_only_when_they_change(tmp_path):
    state = HERE / "fixtures" / "live" / "hf_lr_hot" / "trainer_state.json"
    target = tmp_path / "trainer_state.json"
    target.write_bytes(state.read_bytes())
    source = open_source(target, "hf", str(target), {})
    assert isinstance(source, RereadSource)
    assert source.update().changed and not source.update().changed
    target.write_bytes(state.read_bytes()[:500])  # caught half-way through a rewrite
    upd = source.update()
    assert not upd.changed and "trainer_state.json" in upd.problem and source.run().records == 40
