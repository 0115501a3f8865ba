"""The rule documentation as data: what `trainproof rules` and `trainproof rule TP-X`
print, read from a committed snapshot (rules_catalogue.json) so that documenting a rule
does not import the judging code, numpy included. The declarations in rules/ stay the
single source: `python -m trainproof.ruledocs` rewrites the snapshot from them, and
tests/test_startup.py fails while the snapshot and the live catalogue disagree."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainproof.model import Level

SNAPSHOT = Path(__file__).with_name("rules_catalogue.json")


@dataclass(frozen=True)
class ThresholdDoc:
    value: float
    unit: str
    why: str


@dataclass(frozen=True)
class ExampleDoc:
    data: Any


@dataclass(frozen=True)
class RuleDoc:
    """The documented fields of a rules.Rule, under the same names (docs.py renders either)."""

    id: str
    level: Level
    group: str
    title: str
    summary: str
    why: str
    fix: str
    help_uri: str
    thresholds: Mapping[str, ThresholdDoc] = field(default_factory=dict)
    fires: ExampleDoc | None = None
    passes: ExampleDoc | None = None
    limits: str = ""

    @property
    def anchor(self) -> str:
        return self.id.lower()


def _example(ex: Any) -> Any:
    # json.dumps(default=str) is how docs.py shows an example; storing what it would
    # read back keeps the shown text identical.
    return None if ex is None else json.loads(json.dumps(ex.data, default=str))


def snapshot_of(cat: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The snapshot's content for a live catalogue (rules.catalogue())."""
    return [{"id": r.id, "level": r.level.value, "group": r.group, "title": r.title, "summary": r.summary,
             "why": r.why, "fix": r.fix, "help_uri": r.help_uri, "limits": r.limits,
             "thresholds": {k: [t.value, t.unit, t.why] for k, t in r.thresholds.items()},
             "fires": _example(r.fires), "passes": _example(r.passes)} for r in cat.values()]


def load(path: Path = SNAPSHOT) -> dict[str, RuleDoc]:
    """Every rule's documentation, in catalogue order, from the snapshot."""
    out = {}
    for d in json.loads(path.read_text(encoding="utf-8")):
        out[d["id"]] = RuleDoc(
            d["id"], Level(d["level"]), d["group"], d["title"], d["summary"], d["why"], d["fix"],
            d["help_uri"], {k: ThresholdDoc(*t) for k, t in d["thresholds"].items()},
            None if d["fires"] is None else ExampleDoc(d["fires"]),
            None if d["passes"] is None else ExampleDoc(d["passes"]), d["limits"])
    return out


def write(path: Path = SNAPSHOT) -> None:
    from trainproof.rules import catalogue

    text = json.dumps(snapshot_of(catalogue()), indent=1, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":  # python -m trainproof.ruledocs
    write()
    sys.stdout.write(f"wrote {SNAPSHOT}\n")
