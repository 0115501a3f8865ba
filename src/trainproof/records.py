"""Several records of one training run: Lightning's metrics.csv beside its event file,
a W&B run that also synced TensorBoard. Owns when two records hold the same run (their
loss values agree) and how they become one Run to judge. It never judges.

Writers store the same loss differently: TensorBoard as float32, a CSV as the printed
float, W&B as JSON. Two records of one run agree to float32 precision; two different
runs (another seed, another learning rate) differ far above it from the first steps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from trainproof.model import Run

# float32 keeps ~7 significant digits and printers keep at least 6: two copies of one
# loss differ by well under 1e-5 of its value; two runs differ by far more than that.
AGREE_REL_TOL = 1e-5


def loss_disagreement(a: Run, b: Run) -> str | None:
    """Why two records do not hold the same loss curve, or None when they do.
    Values are compared in order (writers number steps differently: a CSV's row step
    and an event file's global step), non-finite values must sit at the same places."""
    la, lb = a.get("loss"), b.get("loss")
    if la is None or lb is None:
        return "a record has no loss series"
    if len(la) != len(lb):
        return f"{len(la)} vs {len(lb)} loss points"
    for i, (x, y) in enumerate(zip(la.values.tolist(), lb.values.tolist(), strict=True)):
        fx, fy = math.isfinite(x), math.isfinite(y)
        if fx != fy or (fx and not math.isclose(x, y, rel_tol=AGREE_REL_TOL)):
            return f"loss point {i + 1} is {x!r} in one record and {y!r} in the other"
    return None


def primary_first(runs: Sequence[Run]) -> list[Run]:
    """The record to judge first: the one with the most loss points, then the most
    series (an event file usually carries lr and grad_norm a CSV may lack)."""
    def richness(r: Run) -> tuple[int, int]:
        loss = r.get("loss")
        return (len(loss) if loss is not None else -1, len(r.series))
    return sorted(runs, key=richness, reverse=True)


def merge_records(primary: Run, others: Sequence[Run], shown: str) -> Run:
    """One Run from records that agree: the primary's series, plus the series only the
    others carry (eval loss logged to the CSV alone, say), each note saying where from."""
    series = dict(primary.series)
    notes = list(primary.notes)
    names = [primary.path]
    for other in others:
        names.append(other.path)
        extra = sorted(k for k in other.series if k not in series and len(other.series[k]))
        for k in extra:
            series[k] = other.series[k]
        if extra:
            notes.append(f"series {', '.join(extra)} read from {other.path}")
        notes.extend(f"{other.path}: {n}" for n in other.notes)
    n = len(primary.get("loss") or ())
    notes.insert(0, f"one run, {len(names)} records that hold the same {n} loss values: "
                    + ", ".join(names))
    columns = tuple(sorted({c for r in (primary, *others) for c in r.columns}))
    return replace(primary, path=shown, series=series, notes=tuple(notes), columns=columns)
