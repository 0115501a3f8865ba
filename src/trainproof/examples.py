"""Example runners for the log rule groups: a rule's fires/passes data (metric ->
values, steps 1..n) becomes a Run (or a baseline/run pair) judged by the engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from trainproof.engine import apply, judge_run
from trainproof.model import Run, Series
from trainproof.parsers import build_run
from trainproof.parsers.base import RawLog
from trainproof.rules.base import example_runner
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


@example_runner("single_run")
def _single(data: Mapping[str, Any]) -> set[str]:
    return {f.rule_id for f in judge_run(run_from(data)).findings}


@example_runner("compare")
def _compare(data: Mapping[str, Any]) -> set[str]:
    pair = Pair(run_from(data["baseline"], "baseline.jsonl"), run_from(data["run"], "run.jsonl"))
    return {f.rule_id for f in apply("compare", pair).findings}
