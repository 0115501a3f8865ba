"""doctor loses nothing: a 2,000-deep tree is walked without recursion down to a
declared depth and the cut is reported; a log it may not read and a folder it may
not list are each in not_judged with the reason, and the FAIL found elsewhere still
stands (exit 1). Tests that chmod 000 skip as root, since root reads anything."""

from __future__ import annotations

import json
import os

import pytest

from trainproof.discover import MAX_DEPTH

from .craft import assert_clean, run_bounded

ROOT_READS_ANYTHING = pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="running as root: root reads a mode-000 file or folder, so there is nothing to refuse")


def _log(path, diverge: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for i in range(200):
            loss = 2.0 + 0.2 * (i - 100) if diverge and i >= 100 else 3.0 - 0.01 * i
            f.write(json.dumps({"step": i, "loss": loss}) + "\n")


def _deep(root, levels: int, log_at: int | None = None):
    """root/deep/d/d/... `levels` deep, built through directory fds (the full path
    outgrows PATH_MAX); a healthy log at depth `log_at` when given."""
    fd = os.open(root, os.O_RDONLY)
    os.mkdir("deep", dir_fd=fd)
    cur = os.open("deep", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    for i in range(levels):
        if i == log_at:
            _log(root / "deep" / "/".join(["d"] * i) / "train.jsonl")
        os.mkdir("d", dir_fd=cur)
        nxt = os.open("d", os.O_RDONLY, dir_fd=cur)
        os.close(cur)
        cur = nxt
    os.close(cur)


def _remove_deep(top) -> None:
    """rmtree without recursion: shutil.rmtree (and pytest's cleanup of old tmp dirs)
    recurses per level and dies on this tree, so each test removes its own."""
    fds, names = [os.open(top, os.O_RDONLY)], []
    while True:
        entries = list(os.scandir(fds[-1]))
        for e in entries:
            if not e.is_dir(follow_symlinks=False):
                os.unlink(e.name, dir_fd=fds[-1])
        subs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        if not subs:
            break
        names.append(subs[0])  # the tree is one chain: one subfolder per level
        fds.append(os.open(subs[0], os.O_RDONLY, dir_fd=fds[-1]))
    while names:
        os.close(fds.pop())
        os.rmdir(names.pop(), dir_fd=fds[-1])
    os.close(fds.pop())
    os.rmdir(top)


@pytest.fixture
def deep_root(tmp_path):
    yield tmp_path
    if (tmp_path / "deep").exists():
        _remove_deep(tmp_path / "deep")


def _doctor(root) -> tuple[int, dict]:
    code, out, err, secs = run_bounded("doctor", root, "--json")
    assert_clean(code, out, err, expect=code)
    assert secs < 60
    return code, json.loads(out)


def _not_judged(doc: dict, root) -> dict[str, str]:
    return {r["file"].removeprefix(str(root) + "/"): r["reason"] for r in doc["not_judged"]}


def test_a_2000_deep_tree_is_cut_at_the_declared_depth_and_said(deep_root):
    tmp_path = deep_root
    _log(tmp_path / "a" / "diverge.jsonl", diverge=True)
    _deep(tmp_path, 2000, log_at=MAX_DEPTH + 5)
    (tmp_path / "loop").symlink_to(tmp_path)  # a symlink loop is not followed
    code, doc = _doctor(tmp_path)
    assert code == 1
    assert [(r["file"], r["verdict"]) for r in doc["reports"]] == [(str(tmp_path / "a/diverge.jsonl"), "FAIL")]
    cut = "deep/" + "/".join(["d"] * (MAX_DEPTH - 1))
    assert _not_judged(doc, tmp_path) == {
        cut: f"1 subfolder(s) more than {MAX_DEPTH} levels below the path given: not searched"}


def test_a_log_within_the_depth_is_judged(deep_root):
    tmp_path = deep_root
    _deep(tmp_path, 100, log_at=MAX_DEPTH - 2)
    code, doc = _doctor(tmp_path)
    assert code == 0 and len(doc["reports"]) == 1 and doc["reports"][0]["verdict"] == "PASS"


@ROOT_READS_ANYTHING
def test_an_unreadable_log_is_listed_and_the_fail_stands(tmp_path):
    _log(tmp_path / "a" / "diverge.jsonl", diverge=True)
    _log(tmp_path / "locked.jsonl")
    (tmp_path / "locked.jsonl").chmod(0)
    try:
        code, doc = _doctor(tmp_path)
    finally:
        (tmp_path / "locked.jsonl").chmod(0o644)
    assert code == 1
    assert _not_judged(doc, tmp_path) == {"locked.jsonl": "cannot read: Permission denied"}


@ROOT_READS_ANYTHING
def test_an_unlistable_folder_is_listed_and_the_rest_is_judged(tmp_path):
    _log(tmp_path / "a" / "diverge.jsonl", diverge=True)
    _log(tmp_path / "closed" / "x.jsonl")
    _log(tmp_path / "z" / "ok.jsonl")
    (tmp_path / "closed").chmod(0)
    try:
        code, doc = _doctor(tmp_path)
    finally:
        (tmp_path / "closed").chmod(0o755)
    assert code == 1
    assert {r["file"].removeprefix(str(tmp_path) + "/") for r in doc["reports"]} == {"a/diverge.jsonl",
                                                                                      "z/ok.jsonl"}
    assert _not_judged(doc, tmp_path) == {"closed": "cannot list this folder: Permission denied"}


@ROOT_READS_ANYTHING
def test_only_unreadable_things_is_exit_2_with_each_listed(tmp_path):
    _log(tmp_path / "locked.jsonl")
    (tmp_path / "locked.jsonl").chmod(0)
    try:
        code, doc = _doctor(tmp_path)
    finally:
        (tmp_path / "locked.jsonl").chmod(0o644)
    assert code == 2 and doc["reports"] == [] and list(_not_judged(doc, tmp_path)) == ["locked.jsonl"]
