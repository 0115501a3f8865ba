"""Runs a rule's documented fires/passes examples through the engine. The log rule
groups' example data (metric -> values, steps 1..n) becomes a Run (or a baseline/run
pair) here; every other group builds its own example subject in its rule module."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from trainproof.engine import apply, judge
from trainproof.model import Run, Series
from trainproof.parsers import build_run
from trainproof.parsers.base import RawLog
from trainproof.probes.vocab import Vocabulary
from trainproof.rules.base import Example, Rule, example_for, example_subject
from trainproof.rules.compare import Pair


def run_from(data: Mapping[str, Sequence[float]], path: str = "example.jsonl") -> Run:
    if "steps" in data:  # steps as a log wrote them: through the parser's ordering
        steps = np.asarray(data["steps"], dtype=np.float64)
        cols = {k: (steps, np.asarray(v, dtype=np.float64)) for k, v in data.items() if k != "steps"}
        return build_run(path, "example", RawLog(cols, steps.size), {})
    series = {}
    for name, values in data.items():
        v = np.asarray(values, dtype=np.float64)
        series[name] = Series(name, np.arange(1, v.size + 1, dtype=np.float64), v)
    records = max((len(s) for s in series.values()), default=0)
    return Run(path=path, format="example", series=series, records=records, columns=tuple(series))


@example_subject("single_run")
def _single(data: Mapping[str, Any]) -> tuple[str, Run]:
    """Metric series; "vocab" (and "width") say what a config.json would, "meta" what the
    reader and the files beside the log put in the Run's meta (parsers/beside.py), "format"
    which reader read it (rules that know how a writer logs ask it)."""
    series = {k: v for k, v in data.items() if k not in ("vocab", "width", "meta", "format")}
    run = run_from(series)
    if "format" in data:
        run = replace(run, format=data["format"])
    if "meta" in data:
        run = replace(run, meta={**run.meta, **data["meta"]})
    if "vocab" in data:
        vocab = Vocabulary(data["vocab"], "tokens", "example", data.get("width"), None, "example")
        run = replace(run, meta={**run.meta, "vocabulary": vocab})
    return "single_run", run


@example_subject("compare")
def _compare(data: Mapping[str, Any]) -> tuple[str, Pair]:
    return "compare", Pair(run_from(data["baseline"], "baseline.jsonl"), run_from(data["run"], "run.jsonl"))


def run_example(r: Rule, ex: Example) -> set[str]:
    """The rule IDs a documented example makes fire, judged as the commands judge."""
    scope, subject = example_for(r, ex)
    if scope == "compare":  # the ratio checks alone: an example pair states no outcome
        return {f.rule_id for f in apply("compare", subject).findings}
    return {f.rule_id for f in judge(scope, subject).findings}
