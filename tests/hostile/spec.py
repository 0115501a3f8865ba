"""What an input of the campaign is: a name, the family of commands that read it,
what an honest answer to it is, and the writer that makes it. Specs are cheap to
list (pytest parametrizes over them at collection); writing happens once per run.

Expectations:
- "unreadable": nothing in it can be judged, so the only honest exit is 2;
- "broken": it is damaged in a way the command itself judges (a corrupt checkpoint,
  a dataset whose audio does not decode): 1 or 2, never a PASS;
- "fail": it holds a readable FAIL that must not be lost (exit 1);
- "any": readable content among the damage; every exit is possible, and the
  oracle's general rules (no PASS on nothing, no FAIL without read content) judge it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Families: which commands read an input (plan.py expands them).
LOG, CHECKPOINT, DATASET, SPEECH, TOKMODEL, TRANSCRIPTS = (
    "log", "checkpoint", "dataset", "speech", "tokmodel", "transcripts")
EXPECTS = ("unreadable", "broken", "fail", "any")


@dataclass(frozen=True)
class Env:
    """Where an input is written and what its writer may use."""

    dir: Path  # a fresh folder for this input
    rng: random.Random  # seeded from the campaign seed and the input's name
    marker: Path  # a file that exists only if a payload was executed
    good: dict[str, Path] = field(default_factory=dict)  # healthy companions (baseline log, tokenizer, ...)


Writer = Callable[[Env], Path]


@dataclass(frozen=True)
class Spec:
    name: str  # "<format>/<case>", unique; pytest's id and the report's key
    family: str
    expect: str
    cls: str  # the hostile class (truncated, corrupt, bomb, payload, ...)
    write: Writer
    big: int = 0  # >0: the writer makes a file with one line this long; written lazily by the runner
    needs: str = ""  # an importable module the writer needs; the input is skipped, saying so, without it
    unreadable_mode: bool = False  # relies on mode 000: meaningless as root

    @property
    def heavy(self) -> bool:
        """A 100 MB line or a decompression bomb: seconds of reading per run, so only
        epoch and watch read it alone (the folder-wide doctor reads the bombs too)."""
        return self.big > 0 or self.cls == "bomb-ratio"

    def __post_init__(self) -> None:
        assert self.expect in EXPECTS, self.expect


def rng_for(seed: int, name: str) -> random.Random:
    return random.Random(f"{seed}:{name}")


def skip_reason(spec: Spec) -> str | None:
    """Why this input cannot be tried here, or None."""
    if spec.unreadable_mode and os.geteuid() == 0:
        return "running as root: mode 000 does not stop root from reading, so the case proves nothing"
    if spec.needs:
        import importlib.util

        if importlib.util.find_spec(spec.needs) is None:
            return f"{spec.needs} is not installed (the writer needs it to make this input)"
    if spec.cls == "fifo" and not hasattr(os, "mkfifo"):
        return "no FIFOs on this platform"
    return None
