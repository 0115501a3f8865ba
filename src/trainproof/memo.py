"""Measurements of a series remembered while the series lives: several rules of one
report ask for the same reading of the loss (its block medians, TP-DIVERGE's and
TP-LOSS-ROSE's tests, its noise), each a median of the whole series - six passes over a
5M-point loss where one does. Series are frozen values; the memory is keyed by the
object itself (a weak reference, so nothing is kept alive for the cache's sake), as
schedule.read_schedule keys the last Run, and by the threshold overrides in force (a
configuration judges with other thresholds: nothing measured under one is reused under
another)."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

from trainproof.model import Series
from trainproof.rules.base import thresholds_in_force

T = TypeVar("T")


KEPT = 4  # series remembered per function: the loss, and the few views rules cut from it


def last_series(fn: Callable[[Series], T]) -> Callable[[Series], T]:
    """`fn`, answering again from memory when asked about one of the last KEPT Series
    objects it measured. Only for pure functions of the series whose result nobody mutates."""
    kept: list[tuple[weakref.ref[Series], object, T]] = []

    @functools.wraps(fn)
    def remembered(s: Series) -> T:
        limits = thresholds_in_force()
        for ref, under, out in kept:
            if ref() is s and under is limits:
                return out
        out = fn(s)
        kept[:] = [(weakref.ref(s), limits, out), *kept[: KEPT - 1]]
        return out

    return remembered
