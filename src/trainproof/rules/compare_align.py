"""How compare lines a run up with its baseline(s), and how much noise the comparison
carries. Measurement only - the verdicts are in compare.py and the compare_*.py beside it.

A run is compared over the steps it shares with every baseline: its own logged steps
inside the baselines' common step range, each baseline interpolated at those steps. A
run that is still going is therefore judged against where the baseline was at the same
step, never against the baseline's end. Several baselines (seeds of the known-good
recipe) are reduced to their per-step median, and the spread of their ends is the
envelope a run is measured against.

Whether a gap between run and baseline is real is judged in the noise of the known-good
run(s): their point-to-point scatter over the compared steps (as TP-DIVERGE measures
it), taken for both sides of the difference. The run's own scatter is not used there,
because the damage being tested for inflates it: a run wrecked in its first points
(lr x100 on a pretrained model) jumps by ~26 % per point, and measured in that "noise" its
wreck would look like chance. Under the hypothesis being tested - the run is a healthy
replica of the baseline - its scatter is the baseline's."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from trainproof import stats
from trainproof.model import Run, Series
from trainproof.rules.base import Threshold
from trainproof.rules.run import loss_blocks

MIN_POINTS = Threshold(
    5, "aligned points per side",
    "As TP-DIVERGE: a start, a floor and an end, each from more than one point. Below it a "
    "compare says NOT-CHECKED, as `epoch` does on the same log, instead of ratios of single "
    "batches.")
MIN_EVAL_POINTS = Threshold(
    3, "eval points per side",
    "Each eval point is already an average over the whole held-out set, so a start, a floor "
    "and an end need fewer of them than of per-batch train points; one or two evaluations "
    "are not a curve.")
EDGE = {
    "edge_points": Threshold(5, "points", "Start and end are medians of 5 points, as in 0.17.0: "
                             "one batch cannot decide."),
    "edge_fraction": Threshold(0.02, "of points", "On long logs the windows grow with the log "
                               "so noise cannot decide."),
}


def edge_k(n: int) -> int:
    """Points in each of the start and end windows of an n-point aligned series."""
    k = stats.edge_window(n, int(EDGE["edge_points"].value), EDGE["edge_fraction"].value)
    return min(k, n // 2) or 1


def edge_medians(values: np.ndarray) -> tuple[float, float, int]:
    """Start and end medians as the compare rules take them."""
    k = edge_k(values.size)
    return stats.robust_median(values[:k]), stats.robust_median(values[-k:]), k


def positive(run: Run, name: str) -> Series | None:
    """The finite points of a metric, when there are any and all are positive (ratios of
    losses that can be zero or negative - ELBO, RL objectives - mean nothing). How many
    are needed is MIN_POINTS / MIN_EVAL_POINTS, counted after alignment."""
    s = run.get(name)
    if s is None:
        return None
    f = s.finite_only()
    return f if len(f) and f.values.min() > 0 else None


@dataclass(frozen=True)
class Side:
    """One side's metric over the aligned steps, measured once."""

    start: float  # median of the first k aligned points
    end: float  # median of the last k
    k: int
    floor: float  # lowest block median (TP-DIVERGE's blocks)
    floor_step: float


@dataclass(frozen=True)
class Track:
    """One metric of a pair on the run's own steps inside the baselines' common range."""

    name: str
    steps: np.ndarray
    run: np.ndarray
    bases: np.ndarray  # (number of baselines, len(steps)): each interpolated at `steps`
    run_sigma: float  # the run's own log-space point noise (stats.log_noise)
    base_sigma: float  # the baselines' median point noise over the same steps
    # The run's point noise if it were a healthy replica of the baseline: base_sigma, raised
    # by sqrt(baseline spacing / run spacing) when the run logs more often than the baseline
    # (a logged loss that averages fewer batches is noisier); never lowered, so a logger
    # that does not average is only judged more leniently.
    replica_sigma: float

    @cached_property
    def base(self) -> np.ndarray:
        """The per-step median of the baselines: the curve the ratio rules read."""
        return np.median(self.bases, axis=0)

    @property
    def n(self) -> int:
        return int(self.steps.size)

    def side(self, values: np.ndarray, blocks: bool = True) -> Side:
        """Start, end and floor of `values` (the run's or `base`). Train losses are per
        batch, so their floor is a block median; eval points are whole-set averages."""
        start, end, k = edge_medians(values)
        if blocks:
            b = loss_blocks(Series(self.name, self.steps, values))
            i = int(b.medians.argmin())
            return Side(start, end, k, float(b.medians[i]), float(b.steps[i]))
        i = int(values.argmin())
        return Side(start, end, k, float(values[i]), float(self.steps[i]))

    def end_se(self) -> float:
        """Log-space standard error of (run end median - baseline end median) were the
        run a healthy replica of the baseline: both sides in the baseline's noise."""
        k = edge_k(self.n)
        return stats.MEDIAN_SE * float(np.sqrt((self.replica_sigma ** 2 + self.base_sigma ** 2) / k))

    def change_se(self, sigma: float) -> float:
        """Log-space standard error of one side's (start median - end median)."""
        return stats.MEDIAN_SE * sigma * float(np.sqrt(2.0 / edge_k(self.n)))

    def envelope(self) -> tuple[float, float]:
        """(lowest, highest) of the baselines' end medians at the same steps."""
        k = edge_k(self.n)
        ends = np.median(self.bases[:, -k:], axis=1)
        return float(ends.min()), float(ends.max())

    def width(self) -> tuple[float, str]:
        """Log-space noise width a run's end is measured in, and how it was measured:
        the envelope of several baselines when it is wider than the logs' batch noise."""
        se = self.end_se()
        lo, hi = self.envelope()
        spread = float(np.log(hi / lo))
        if self.bases.shape[0] > 1 and spread > se:
            return spread, f"the spread of {self.bases.shape[0]} baselines' ends"
        return se, "the baseline's batch noise"


def align(run: Series, bases: list[Series], name: str) -> Track | str:
    """The run's points inside every baseline's range, or why there are none."""
    lo = max(float(b.steps[0]) for b in bases)
    hi = min(float(b.steps[-1]) for b in bases)
    keep = (run.steps >= lo) & (run.steps <= hi)
    if not keep.any():
        return (f"the run's {name} steps {run.steps[0]:g}..{run.steps[-1]:g} do not overlap the "
                f"baseline's {lo:g}..{hi:g}")
    steps, values = run.steps[keep], run.values[keep]
    interp = np.stack([np.exp(np.interp(steps, b.steps, np.log(b.values))) for b in bases])
    last = float(steps[-1])
    # Each side's noise from its own logged points over the compared steps: interpolated
    # values are smoothed and would understate it.
    own = [(b.steps >= lo) & (b.steps <= last) for b in bases]
    base_sigma = float(np.median([stats.log_noise(b.values[m]) for b, m in zip(bases, own, strict=True)]))
    run_sigma = stats.log_noise(values)
    denser = float(np.median([_spacing(b.steps[m]) for b, m in zip(bases, own, strict=True)])) / _spacing(steps)
    replica = base_sigma * float(np.sqrt(denser)) if denser > 1 else base_sigma
    if not base_sigma > 0:
        # Under 3 baseline points over these steps (a sparse baseline early on): its noise
        # cannot be measured, and a zero width would call any gap real; the run's own
        # noise is the only measure left.
        replica = run_sigma
    return Track(name, steps, values, interp, run_sigma, base_sigma, replica)


def _spacing(steps: np.ndarray) -> float:
    """Median steps between successive logged points; repeated steps (a resume) are not a
    spacing, and with none left there is nothing to compare: 1."""
    d = np.diff(steps)
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


@dataclass(frozen=True)
class Pair:
    """A run and the known-good run(s) it is judged against. `baseline` is the first
    baseline given; `others` are further seeds of the same recipe."""

    baseline: Run
    run: Run
    others: tuple[Run, ...] = ()

    @property
    def baselines(self) -> tuple[Run, ...]:
        return (self.baseline, *self.others)

    def track(self, name: str, minimum: int) -> Track | str:
        """`name` aligned by step, or why it cannot be (a sentence naming the side)."""
        series = []
        for role, side in (("run", self.run), *(("baseline", b) for b in self.baselines)):
            s = positive(side, name)
            if s is None:
                what = "logs no" if side.get(name) is None else "has no positive finite"
                return f"{role} {side.path} {what} {name}"
            series.append(s)
        r, bases = series[0], series[1:]
        t = align(r, bases, name)
        if isinstance(t, Track) and t.n < minimum:
            return (f"{t.n} {name} point(s) of the run fall inside the baseline's steps "
                    f"({t.steps[0]:g}..{t.steps[-1]:g}), needs {minimum}")
        return t

    @cached_property
    def loss(self) -> Track | str:
        return self.track("loss", int(MIN_POINTS.value))

    @cached_property
    def eval(self) -> Track | str:
        return self.track("eval_loss", int(MIN_EVAL_POINTS.value))

    @cached_property
    def progress(self) -> tuple[float, float] | None:
        """(the run's last loss step, the baselines' last loss step), finite or not."""
        r = self.run.get("loss")
        bs = [b.get("loss") for b in self.baselines]
        if r is None or any(b is None for b in bs):
            return None
        return float(r.steps[-1]), min(float(b.steps[-1]) for b in bs if b is not None)


def reached(run_last: float, base_last: float) -> float:
    """How far the run got: its last step as a share of the baseline's."""
    return run_last / base_last if base_last > 0 else float("nan")
