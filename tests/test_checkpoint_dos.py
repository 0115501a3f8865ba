"""Tiny checkpoints that ask for unbounded work: a pickle whose memo names one tensor
2**40 ways, a ZIP directory that lists one deflated entry 2,000 times or points two
names at the same bytes, a ratio bomb, more entries or inflation than the caps. Each
is refused in bounded time as "cannot read checkpoint" (NOT-CHECKED, exit 2), never
TP-ENV-CKPT-OK; sharing that a real save produces (tied weights) is still read."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from trainproof.probes.checkpoint import inspect_checkpoint
from trainproof.probes.checkpoint_model import Integrity
from trainproof.probes.pickle_scan import Storage, TensorRef, scan_pickle
from trainproof.probes.pickle_walk import WalkLimit, walk_tensors
from trainproof.rules.env_checkpoint import read_caps

from .craft import assert_clean, run_bounded, tensor_pickle, torch_zip, write_zip

PKL = b"\x80\x02}q\x00."  # an empty dict: a valid data.pkl


def _ckpt_finding(out: str) -> dict:
    doc = json.loads(out)
    (rep,) = [r for r in doc["reports"] if r["kind"] == "checkpoint"]
    assert rep["verdict"] == "NOT-CHECKED"
    (f,) = rep["findings"]
    return f


def _refused(path, *words: str) -> None:
    code, out, err, secs = run_bounded("env", "--checkpoint", path, "--json")
    assert_clean(code, out, err)
    f = _ckpt_finding(out)
    assert f["id"] == "TP-ENV-CKPT-UNREADABLE" and f["evidence"].startswith("cannot read checkpoint: ")
    for w in words:
        assert w in f["evidence"]
    assert secs < 45


def _compressible(n: int) -> bytes:
    """Bytes deflate shrinks about 40x: under the per-entry ratio cap."""
    rnd = random.Random(0)
    data = bytearray(n)
    for i in range(0, n, 97):
        data[i] = rnd.randrange(256)
    return bytes(data)


def test_memo_dag_naming_one_tensor_2_40_ways_is_refused(tmp_path):
    p = torch_zip(tmp_path / "dag.pt", tensor_pickle(40))
    _refused(p, "reached more than 1000000 ways")


def _none_dag(levels: int) -> bytes:
    """{"model": x_levels} with x_0 = None and x_i = (x_{i-1}, x_{i-1}): no tensor at all."""
    body = bytearray(b"\x80\x02}X\x05\x00\x00\x00modelN" + b"r\x00\x00\x00\x000")
    for i in range(levels):
        body += b"j" + i.to_bytes(4, "little") + b"j" + i.to_bytes(4, "little") + b"\x86r"
        body += (i + 1).to_bytes(4, "little") + b"0"
    body += b"j" + levels.to_bytes(4, "little") + b"s."
    return bytes(body)


def test_memo_dag_without_tensors_is_refused_too(tmp_path):
    # the 680-byte checkpoint of issue 12: nothing to name, but no torch.save shares like this
    p = torch_zip(tmp_path / "dag.pt", _none_dag(40))
    _refused(p, "reached more than")
    assert walk_tensors(scan_pickle(_none_dag(8)).root, max_nodes=1000) == []  # 256 ways: fine


def test_shared_tensors_keep_every_name_within_the_budget():
    root = scan_pickle(tensor_pickle(3)).root
    names = [n for n, _ in walk_tensors(root, max_nodes=1000)]
    assert len(names) == 8 and names[0] == "model.0.0.0" and names[-1] == "model.1.1.1"
    with pytest.raises(WalkLimit, match="reached more than 1000 ways"):
        walk_tensors(scan_pickle(tensor_pickle(12)).root, max_nodes=1000)


def test_walking_shared_containers_again_is_budgeted_too():
    st = Storage("0", "float32", "cpu", 4)
    shared = {f"w{k}": TensorRef(st, 0, (4,), (1,), "float32") for k in range(10)}
    root = {"copies": [shared] * 500}  # reached 500 ways (under 1000), 500 x 11 items walked again
    with pytest.raises(WalkLimit, match="walked again"):
        walk_tensors(root, max_nodes=1000)
    assert len(walk_tensors({"a": shared, "b": shared}, max_nodes=1000)) == 20  # a dict saved twice


def test_dict_keys_and_globals_built_from_the_dag_are_not_hashed_or_printed():
    # {x40: 1} and STACK_GLOBAL(x40, x40): hashing or str() of x40 walks 2**40 paths
    body = bytearray(b"\x80\x04}N\x940")
    for i in range(40):
        body += b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86\x940"
    body += b"h" + bytes([40]) + b"K\x01s" + b"h" + bytes([40]) + b"h" + bytes([40]) + b"\x93" + b"0."
    scan = scan_pickle(bytes(body))
    assert list(scan.root) == ["<tuple>"] and scan.globals == ["<tuple>.<tuple>"]


def test_one_deflated_entry_listed_2000_times_is_refused(tmp_path):
    entries = [("archive/data.pkl", PKL, False), ("archive/data/0", _compressible(1 << 20), True)]
    p = write_zip(tmp_path / "dup.pt", entries, [("archive/data.pkl", 0)] + [("archive/data/0", 1)] * 2000)
    _refused(p, "listed 2000 times")


def test_two_names_for_the_same_bytes_are_refused(tmp_path):
    entries = [("archive/data.pkl", PKL, False), ("archive/data/0", b"\0" * 64, False)]
    p = write_zip(tmp_path / "overlap.pt", entries,
                  [("archive/data.pkl", 0), ("archive/data/0", 1), ("archive/data/1", 1)])
    _refused(p, "overlap")


def test_ratio_bomb_stops_at_the_cap(tmp_path):
    p = write_zip(tmp_path / "bomb.pt", [("archive/data.pkl", PKL, False),
                                         ("archive/data/0", b"\0" * (32 << 20), True)])
    _refused(p, "not inflated")


def test_total_inflation_and_entry_count_are_capped(tmp_path):
    entries = [("archive/data.pkl", PKL, False)]
    entries += [(f"archive/data/{k}", _compressible(1 << 16), True) for k in range(4)]
    p = write_zip(tmp_path / "many.pt", entries)
    assert inspect_checkpoint(str(p), read_caps()).intact
    small = dataclasses.replace(read_caps(), inflated_bytes=3 << 16)
    (f,) = inspect_checkpoint(str(p), small).files
    assert f.integrity is Integrity.UNREADABLE and "inflate to more than" in f.detail
    few = dataclasses.replace(read_caps(), zip_entries=3)
    (f,) = inspect_checkpoint(str(p), few).files
    assert f.integrity is Integrity.UNREADABLE and "lists 5 entries" in f.detail


def test_clearml_session_zip_gets_the_same_directory_checks(tmp_path):
    line = b'[{"type": "training_stats_scalar", "metric": "loss", "variant": "train", "value": 1.0, "iter": 1}]\n'
    metrics = line * 20_000
    p = write_zip(tmp_path / "offline.zip", [("task.json", b"{}", False), ("metrics.jsonl", metrics, True)],
                  [("task.json", 0)] + [("metrics.jsonl", 1)] * 2000)
    code, out, err, secs = run_bounded("epoch", p)
    assert_clean(code, out, err)
    assert "listed 2000 times" in err and secs < 45
