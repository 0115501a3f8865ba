"""Hostile file-system objects under the names trainproof looks for: FIFOs, links to
/dev/zero, symlink loops, unreadable files and folders, and trees for `doctor`
(2,000 levels deep, looping links, thousands of files) that hide a real FAIL."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.hostile.gen_logs import fail_jsonl, healthy_jsonl
from tests.hostile.spec import CHECKPOINT, DATASET, LOG, SPEECH, TOKMODEL, TRANSCRIPTS, Env, Spec

TREE = "tree"  # a folder that only `doctor` is pointed at
NAMES = {  # family -> the file names to impersonate
    LOG: ("trainer_state.json", "metrics.jsonl", "train.log", "events.out.tfevents.1.host", "run-x.wandb",
          "mlflow.db", "metrics.csv.gz"),
    CHECKPOINT: ("model.pt", "model.safetensors"),
    DATASET: ("train.jsonl", "train.parquet"),
    TOKMODEL: ("tokenizer.json", "tok.model"),
    TRANSCRIPTS: ("transcripts.jsonl",),
}


def _special(kind: str, name: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        p = env.dir / name
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "dev-zero":
            os.symlink("/dev/zero", p)
        elif kind == "symlink-loop":
            os.symlink(p.name + ".b", p)
            os.symlink(p.name, env.dir / (p.name + ".b"))
        elif kind == "unreadable":
            p.write_text('{"step": 1, "loss": 2.0}\n')
            p.chmod(0)
        return p

    return write


def _speech_special(kind: str) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        d = env.dir / "clips"
        d.mkdir()
        _special(kind, "clip.wav")(Env(d, env.rng, env.marker, env.good))
        return d

    return write


def _deep(levels: int, fail_on_top: bool) -> Callable[[Env], Path]:
    def write(env: Env) -> Path:
        root = env.dir / "runs"
        root.mkdir()
        if fail_on_top:
            fail_jsonl(root / "a_failing.jsonl")
        # Built one level at a time through directory descriptors: the deepest path is
        # longer than PATH_MAX, so it cannot be named from the root in one call.
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(levels):
                os.mkdir("d", dir_fd=fd)
                nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = nxt
            out = os.open("deep.jsonl", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            with os.fdopen(out, "w") as f:
                f.write(healthy_jsonl(env.dir / "deep.jsonl").read_text())
        finally:
            os.close(fd)
        (env.dir / "deep.jsonl").unlink()
        return root

    return write


def _beside_fail(kind: str) -> Callable[[Env], Path]:
    """A folder with one log that FAILs beside a hostile object: the FAIL must survive."""
    def write(env: Env) -> Path:
        root = env.dir / "runs"
        root.mkdir()
        fail_jsonl(root / "failing.jsonl")
        if kind == "dir-loop":
            (root / "sub").mkdir()
            os.symlink("..", root / "sub" / "up")
            os.symlink(".", root / "self")
        elif kind == "unreadable-dir":
            (root / "locked").mkdir()
            healthy_jsonl(root / "locked" / "metrics.jsonl")
            (root / "locked").chmod(0)
        elif kind == "unreadable-log":
            healthy_jsonl(root / "hidden.jsonl").chmod(0)
        elif kind == "many-files":
            junk = root / "junk"
            junk.mkdir()
            for i in range(2000):
                (junk / f"f{i}.txt").touch()
        else:
            _special(kind, "metrics.jsonl")(Env(root, env.rng, env.marker, env.good))
        return root

    return write


def _dir_log(kind: str) -> Callable[[Env], Path]:
    """Directory formats whose one file is hostile."""
    def write(env: Env) -> Path:
        d = env.dir / "run"
        d.mkdir()
        if kind == "tfevents-fifo":
            os.mkfifo(d / "events.out.tfevents.1796225768.vm.1.0")
        elif kind == "clearml-dev-zero":
            (d / "task.json").write_text('{"name": "t"}')
            os.symlink("/dev/zero", d / "metrics.jsonl")
        return d

    return write


def specs() -> Iterator[Spec]:
    for family, names in NAMES.items():
        expect = "broken" if family == CHECKPOINT else "unreadable"
        for name in names:
            for kind in ("fifo", "dev-zero", "symlink-loop", "unreadable"):
                if kind == "unreadable" and name not in names[:1]:
                    continue  # one mode-000 file per family is enough: the others only run as non-root
                yield Spec(f"fs-{family}/{kind}-{name}", family, expect, kind, _special(kind, name),
                           unreadable_mode=kind == "unreadable")
    for kind in ("fifo", "dev-zero", "symlink-loop"):
        yield Spec(f"fs-speech/{kind}-clip", SPEECH, "broken", kind, _speech_special(kind))
    yield Spec("fs-log/tfevents-dir-fifo", LOG, "unreadable", "fifo", _dir_log("tfevents-fifo"))
    yield Spec("fs-log/clearml-dir-dev-zero", LOG, "unreadable", "dev-zero", _dir_log("clearml-dev-zero"))
    yield Spec("tree/deep-2000-fail-on-top", TREE, "fail", "deep-tree", _deep(2000, True))
    yield Spec("tree/deep-2000-only", TREE, "any", "deep-tree", _deep(2000, False))
    for kind in ("dir-loop", "fifo", "dev-zero", "symlink-loop", "many-files"):
        yield Spec(f"tree/fail-beside-{kind}", TREE, "fail", kind, _beside_fail(kind))
    for kind in ("unreadable-dir", "unreadable-log"):
        yield Spec(f"tree/fail-beside-{kind}", TREE, "fail", "unreadable", _beside_fail(kind), unreadable_mode=True)
