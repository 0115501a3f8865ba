"""Evidence for a storage decision (#14), not a benchmark: would keeping series as float32
(half the memory of a 5M-line log's points) change what trainproof says? Judges every
gallery run and every public run as read, then with each series' values (and, second,
its steps too) rounded through float32 - exactly what float32 storage would hand the
rules - and counts the reports whose findings (rule IDs and levels) or messages move.

    PYTHONPATH=src python bench/float32_verdicts.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from trainproof.engine import judge_run
from trainproof.model import Run, Series
from trainproof.parsers import read_run

ROOT = Path(__file__).resolve().parents[1]


def rounded(run: Run, steps_too: bool) -> Run:
    def f32(a: np.ndarray) -> np.ndarray:
        return a.astype(np.float32).astype(np.float64)

    return replace(run, series={k: Series(s.name, f32(s.steps) if steps_too else s.steps, f32(s.values))
                                for k, s in run.series.items()})


def logs(tmp: Path) -> list[Path]:
    spec = importlib.util.spec_from_file_location("public_runs", ROOT / "scripts" / "public_runs.py")
    assert spec is not None and spec.loader is not None
    public = importlib.util.module_from_spec(spec)
    sys.modules["public_runs"] = public
    spec.loader.exec_module(public)
    out = sorted(ROOT.glob("examples/gallery*/**/trainer_state.json"))
    for p in sorted(ROOT.glob("public_runs/runs/*.json")):
        (tmp / p.stem).mkdir()
        out.append(public.rebuild(json.loads(p.read_text()), tmp / p.stem))
    return out


def main() -> int:
    def ids(run: Run) -> tuple[list[tuple[str, str]], list[str]]:
        rep = judge_run(run)
        return sorted((f.rule_id, f.level.value) for f in rep.findings), [f.message for f in rep.findings]

    with tempfile.TemporaryDirectory() as tmp:
        paths = logs(Path(tmp))
        moved = {"values": [], "values and steps": []}
        text = 0
        for path in paths:
            run = read_run(path)
            base, words = ids(run)
            for label, steps_too in (("values", False), ("values and steps", True)):
                got, got_words = ids(rounded(run, steps_too))
                if got != base:
                    moved[label].append(f"{path.parent.name}: {sorted(set(base) ^ set(got))}")
                text += not steps_too and got_words != words
    print(f"{len(paths)} runs judged; a message changed on {text} with float32 values")
    for label, runs in moved.items():
        print(f"float32 {label}: findings moved on {len(runs)}")
        for line in runs:
            print("   ", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
