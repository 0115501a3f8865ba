"""The rule documentation as data: what `trainproof rules` and `trainproof rule TP-X`
print, read from a committed snapshot (rules_catalogue.json) so that documenting a rule
does not import the judging code, numpy included. The declarations in rules/ stay the
single source: `python -m trainproof.ruledocs` rewrites the snapshot from them, and
tests/test_startup.py fails while the snapshot and the live catalogue disagree."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

# Plain classes and os.path, not dataclasses, the model's Level or pathlib: printing one
# rule's text should cost little more than starting Python.
SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules_catalogue.json")


class RuleDoc(SimpleNamespace):
    """The documented fields of a rules.Rule, under the same names (docs.py renders either):
    id, level (.value), group, title, summary, why, fix, thresholds (name ->
    .value/.unit/.why), fires and passes (.data, or None), limits."""

    id: str

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
             "why": r.why, "fix": r.fix, "limits": r.limits,
             "thresholds": {k: [t.value, t.unit, t.why] for k, t in r.thresholds.items()},
             "fires": _example(r.fires), "passes": _example(r.passes)} for r in cat.values()]


def _example_doc(data: Any) -> SimpleNamespace | None:
    return None if data is None else SimpleNamespace(data=data)


def load(path: str = SNAPSHOT) -> dict[str, RuleDoc]:
    """Every rule's documentation, in catalogue order, from the snapshot."""
    with open(path, encoding="utf-8") as fh:
        rules = json.load(fh)
    out = {}
    for d in rules:
        d["level"] = SimpleNamespace(value=d["level"])
        d["thresholds"] = {k: SimpleNamespace(value=v, unit=u, why=w) for k, (v, u, w) in d["thresholds"].items()}
        d["fires"], d["passes"] = _example_doc(d["fires"]), _example_doc(d["passes"])
        out[d["id"]] = RuleDoc(**d)
    return out


def write(path: str = SNAPSHOT) -> None:
    from trainproof.rules import catalogue

    text = json.dumps(snapshot_of(catalogue()), indent=1, ensure_ascii=False)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")


if __name__ == "__main__":  # python -m trainproof.ruledocs
    write()
    sys.stdout.write(f"wrote {SNAPSHOT}\n")
