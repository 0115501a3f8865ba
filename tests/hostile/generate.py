"""The campaign's inputs and the runs made on them.

`catalogue()` lists every input (cheap: names and writers, nothing written), `build`
writes them under a folder with a fixed seed, and `plan` turns each input into the
command lines that read it: a log is judged by epoch, doctor, compare (against a
healthy baseline) and watch; a checkpoint by env; a dataset by preflight; a speech
dataset by data; tokenizers and transcripts by tokenizer; a hostile tree by doctor.
One more run points doctor at the folder of every hostile log at once. Inputs that
take seconds to read (100 MB lines, decompression bombs) are read by epoch and watch
alone: compare and doctor read a log with the same readers, and the campaign has to
fit in the normal test run.

    python -m tests.hostile.generate OUT_DIR   # write them, to look at
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tests.hostile import gen_binlogs, gen_ckpt, gen_data, gen_fs, gen_logs, gen_regressions
from tests.hostile.gen_logs import BIG, healthy_jsonl
from tests.hostile.spec import CHECKPOINT, DATASET, LOG, SPEECH, TOKMODEL, TRANSCRIPTS, Env, Spec, rng_for, skip_reason

SEED = 12
WATCH_S = "0.4"  # --max-duration of each watch run: long enough for two polls
GROUP = "group/doctor-every-log"


def catalogue() -> list[Spec]:
    specs = [*gen_logs.specs(), *gen_binlogs.specs(), *gen_ckpt.specs(), *gen_data.specs(), *gen_fs.specs(),
             *gen_regressions.specs()]
    names = [s.name for s in specs]
    assert len(names) == len(set(names)), "input names must be unique"
    return specs


@dataclass(frozen=True)
class Case:
    input: str  # the Spec's name
    command: str
    argv: tuple[str, ...]
    expect: str
    big_file: str = ""  # a file holding the BIG token, expanded to big_size bytes just before the run
    big_size: int = 0

    @property
    def id(self) -> str:
        return f"{self.input} [{self.command}]"


@dataclass(frozen=True)
class Built:
    root: Path
    markers: Path  # empty unless some payload was executed
    paths: dict[str, Path]  # input name -> what was written
    skipped: dict[str, str]  # input name -> why it was not written
    good: dict[str, Path]


def build(root: Path, seed: int = SEED, only: list[Spec] | None = None) -> Built:
    root.mkdir(parents=True, exist_ok=True)
    markers = root / "markers"  # a payload that ran would create markers/<input>
    markers.mkdir(exist_ok=True)
    good_dir = root / "good"
    good_dir.mkdir(exist_ok=True)
    good = gen_data.good_companions(good_dir)
    good["baseline"] = healthy_jsonl(good_dir / "baseline.jsonl")
    paths, skipped = {}, {}
    for spec in only if only is not None else catalogue():
        why = skip_reason(spec)
        if why is None and spec.family in (TOKMODEL, TRANSCRIPTS):
            need = "spm" if spec.name.startswith("tokenizer-model/spm") else "tokenizer"
            why = None if need in good else f"no healthy {need} to pair it with (its library is not installed)"
        if why is not None:
            skipped[spec.name] = why
            continue
        d = root / "inputs" / spec.family / spec.name.replace("/", "__")
        d.mkdir(parents=True)
        marker = markers / spec.name.replace("/", "__")
        paths[spec.name] = spec.write(Env(d, rng_for(seed, spec.name), marker, good))
    return Built(root, markers, paths, skipped, good)


def _big_file(path: Path) -> str:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    for f in files:
        if f.stat().st_size < (1 << 20) and BIG.encode() in f.read_bytes():
            return str(f)
    raise AssertionError(f"{path}: no {BIG} token to expand")


def plan(built: Built, specs: list[Spec]) -> list[Case]:
    cases = []
    for spec in specs:
        if spec.name not in built.paths:
            continue
        p = str(built.paths[spec.name])
        big = (_big_file(built.paths[spec.name]), spec.big) if spec.big else ("", 0)
        for command, argv in _commands(spec.family, p, built, spec.heavy):
            cases.append(Case(spec.name, command, (command, *argv, "--json"), spec.expect, *big))
    cases.append(Case(GROUP, "doctor", ("doctor", str(built.root / "inputs" / LOG), "--json"), "any"))
    return cases


def _commands(family: str, p: str, built: Built, heavy: bool) -> list[tuple[str, tuple[str, ...]]]:
    g = built.good
    if family == LOG:
        watch = ("watch", (p, "--max-duration", WATCH_S, "--interval", "0.1", "--stall-timeout", "0"))
        if heavy:
            return [("epoch", (p,)), watch]
        return [("epoch", (p,)), ("doctor", (p,)), ("compare", (str(g["baseline"]), p)), watch]
    if family == CHECKPOINT:
        return [("env", ("--checkpoint", p, "--output-dir", str(built.root)))]
    if family == DATASET:
        return [("preflight", (p,))]
    if family == SPEECH:
        return [("data", (p,))]
    if family == TOKMODEL:
        return [("tokenizer", (p, str(g["transcripts"])))]
    if family == TRANSCRIPTS:
        return [("tokenizer", (str(g["tokenizer"]), p))]
    if family == gen_fs.TREE:
        return [("doctor", (p,))]
    raise ValueError(family)


if __name__ == "__main__":
    b = build(Path(sys.argv[1]))
    print(f"{len(b.paths)} inputs written under {b.root}, {len(b.skipped)} skipped")
    for name, why in b.skipped.items():
        print(f"  skipped {name}: {why}")
