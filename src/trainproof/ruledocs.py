"""The rule documentation as data: what `trainproof rules` and `trainproof rule TP-X`
print, read from a committed snapshot (rules_catalogue.json) so that documenting a rule
does not import the judging code, numpy included. The declarations in rules/ stay the
single source: `python -m trainproof.ruledocs` rewrites the snapshot from them, and
tests/test_startup.py fails while the snapshot and the live catalogue disagree.

The snapshot is a JSON array written one rule to a line, each line's object beginning
with the rule's id, level, group and title: `trainproof rule TP-X` decodes the one line
it prints and `trainproof rules` the heads of the lines, not the whole 300 kB (~4 ms of
each call, #14); `rules --markdown` reads it all."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

from trainproof import TYPE_CHECKING

if TYPE_CHECKING:  # typing costs ~4 ms of a documentation call (#14)
    from collections.abc import Mapping
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
    import json

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


HEAD = ("id", "level", "group", "title")  # the members each line begins with, in this order


def _lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [line.removesuffix(",") for line in fh.read().split("\n") if line.startswith("{")]


def _doc(line: str) -> RuleDoc:
    import json

    d = json.loads(line)
    d["level"] = SimpleNamespace(value=d["level"])
    d["thresholds"] = {k: SimpleNamespace(value=v, unit=u, why=w) for k, (v, u, w) in d["thresholds"].items()}
    d["fires"], d["passes"] = _example_doc(d["fires"]), _example_doc(d["passes"])
    return RuleDoc(**d)


def _head(line: str) -> dict[str, str]:
    """The line's first members (HEAD), read as JSON reads them: each is a string, and one
    without a backslash is the text between its quotes; with one, the line is decoded."""
    out: dict[str, str] = {}
    pos = 0
    for key in HEAD:
        start = f'{"{" if key == HEAD[0] else ", "}"{key}": "'
        if not line.startswith(start, pos):
            break
        pos += len(start)
        end = line.index('"', pos)
        if "\\" in line[pos:end]:
            break
        out[key], pos = line[pos:end], end + 1
    else:
        return out
    import json

    d = json.loads(line)
    return {k: d[k] for k in HEAD}


def load(path: str = SNAPSHOT) -> dict[str, RuleDoc]:
    """Every rule's documentation, in catalogue order, from the snapshot."""
    docs = (_doc(line) for line in _lines(path))
    return {d.id: d for d in docs}


def heads(path: str = SNAPSHOT) -> list[dict[str, str]]:
    """Every rule's id, level (its value), group and title, in catalogue order: what
    `trainproof rules` lists, without decoding the rest."""
    return [_head(line) for line in _lines(path)]


def load_one(rule_id: str, path: str = SNAPSHOT) -> RuleDoc | None:
    """One rule's documentation (None: no such rule), decoding its line alone."""
    for line in _lines(path):
        if _head(line)["id"] == rule_id:
            return _doc(line)
    return None


def text_of(rows: list[dict[str, Any]]) -> str:
    """The snapshot file's text for snapshot_of's rows: a JSON array, one rule a line."""
    import json

    for row in rows:
        if tuple(row)[:len(HEAD)] != HEAD:
            raise ValueError(f"{row.get('id')}: a snapshot row begins with {', '.join(HEAD)}")
    return "[\n" + ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n]\n"


def write(path: str = SNAPSHOT) -> None:
    from trainproof.rules import catalogue

    text = text_of(snapshot_of(catalogue()))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":  # python -m trainproof.ruledocs
    write()
    sys.stdout.write(f"wrote {SNAPSHOT}\n")
