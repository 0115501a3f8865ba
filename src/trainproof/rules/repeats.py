"""Single-run rule on a loss that repeats one sequence of values, point for point, epoch
after epoch (TP-LOSS-REPEATS). A model whose weights change gives a different loss on the
same batch every time it sees it; a log whose per-batch losses come back identical, in the
same order, period after period, was made by a model that no longer changed, fed the same
batches in the same order (no shuffling). TP-LOSS-FROZEN (rules/frozen.py) reads the case
of a period of one point - a loss that holds one value; this rule reads longer periods, so
each failure gives one finding. Declared once here; the judge below is the only code that
decides whether it fires."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Run, Skip
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.frozen import FROZEN
from trainproof.rules.gradients import G, finite_loss, where
from trainproof.rules.run import surrogate_loss
from trainproof.rules.zeros import printed_resolution

_EPOCH = [2.89137, 2.61274, 2.35419, 2.12365, 1.98182]  # an example run's five batches in one epoch

REPEATS = rule(
    id="TP-LOSS-REPEATS", level=Level.WARN, group=G,
    title="The loss repeats one sequence of values, point for point, period after period.",
    evidence="over its last {tail} points ({share:.0%} of the log, from step {step} on) the loss repeats "
    "the same {period} values ({cycle}) {periods} times, each point within {limit_max_rel_diff:g} of its "
    "level of the one a period before; the log resolves {resolution:.2g}",
    summary="The per-batch losses come back identical, in the same order, every period (an "
    "epoch's batches): the model no longer changed, fed the same batches in the same order.",
    why="A model whose weights change gives a different loss on the same batch each time it "
    "meets it: a loss that returns to the digit, batch for batch, for several epochs says no "
    "update reached the weights (an optimizer that is never stepped, parameters detached from "
    "the loss, a learning rate of 0 or gradients zeroed after backward) while the data loader "
    "went through the same batches in a fixed order. Public runs fresh20/maximpopov11 (the "
    "same five losses every epoch for 275 epochs), fresh18/elizaveta-terek (four, for three "
    "epochs) and fresh9/monashaim were all labelled broken by their readers.",
    fix="Check that optimizer.step() runs and that the parameters it holds are the ones the "
    "loss depends on (no .detach(), no torch.no_grad() around the forward pass, requires_grad "
    "set), and that the learning rate applied is not 0.",
    thresholds={
        "max_rel_diff": Threshold(
            FROZEN.t("max_rel_spread"), "of the repeated stretch's median loss",
            "TP-LOSS-FROZEN's band, point for point: each value within this share of the "
            "stretch's level of the value one period before. A loss of a model that changes "
            "moves by far more between two visits of the same batch (a learning rate that moves "
            "the weights at all moves a batch's loss by more than a hundredth of a percent "
            "within an epoch); the repeats of a frozen model are exact."),
        "min_periods": Threshold(
            3, "periods",
            "The sequence and at least two repeats of it: one repeat could be a log written "
            "twice (a resume that logged its overlap again)."),
        "min_matched": Threshold(
            8, "points",
            "Points matched against the one a period before: each one a batch whose loss came "
            "back to a hundredth of a percent, which noise gives with a chance near 1e-4 a "
            "point; eight is three epochs of four batches (the shortest of the public runs), "
            "far past chance."),
        "tail_share": FROZEN.thresholds["tail_share"],
        "min_points": Threshold(
            10, "points", "min_matched points and the period they repeat, for the shortest period of two."),
        "max_period": Threshold(
            4096, "points",
            "The longest period looked for: an epoch of up to 4,096 logged points. Only "
            "periods at which the log's last point repeats are followed, so the cost is one "
            "pass over the log's tail whatever this is."),
    },
    fires=Example({"loss": [3.6, 3.3, 3.1, 2.95, 2.9, *(_EPOCH * 4)]},
                  note="after one epoch that moved, the same five batch losses every epoch"),
    passes=Example({"loss": [3.6, 3.3, 3.1, 2.95, 2.9, *[round(v * 0.97 ** k, 4) for k in range(4) for v in _EPOCH]]},
                   note="the same batches in the same order, each 3 % lower every epoch: learning"),
    limits="Judged on the stretch that runs to the end of the log, over the last quarter of it or "
    "more. A period of one point (one value held) is TP-LOSS-FROZEN's; a log that cannot print "
    "a change this small (HF's 4 decimals on a loss near 1e-3) is not judged; nor where a reward "
    "is logged (a policy-gradient surrogate). A deterministic full-batch run cycling through "
    "fixed batches at a fixed point would repeat too; mini-batch training has no such point "
    "while its learning rate is above 0.",
)


class _Cycle(NamedTuple):
    period: int
    start: int  # index of the repeated stretch's first point (its first period included)


def _repeat_start(values: np.ndarray, p: int, tol: float) -> int:
    """The first index of the longest stretch running to the end in which every point is
    within `tol` of the one p points before (the stretch's first period included), scanned
    from the end a chunk at a time: a real log breaks the match within its last points, so
    a 5M-point log costs a chunk, not a pass (#14)."""
    end, size = values.size, 1024
    while end > p:
        lo = max(p, end - size)
        bad = np.flatnonzero(np.abs(values[lo:end] - values[lo - p:end - p]) > tol)
        if bad.size:
            return lo + int(bad[-1]) + 1 - p
        end, size = lo, min(2 * size, 1 << 16)
    return 0


def _repeating_tail(values: np.ndarray, tol: float, max_period: int) -> _Cycle | None:
    """The shortest period p >= 2 at which the log's end repeats as the rule asks (min_matched
    points, min_periods, the last tail_share of the log, a cycle that is not one value held),
    with the first index of that stretch; None when no period does. A period is followed only
    when the log's last point recurs that far back, so a real log costs a window, not a pass."""
    r = REPEATS
    n = values.size
    window = values[max(0, n - 1 - max_period):n - 1][::-1]  # values 1 .. max_period points back
    candidates = np.flatnonzero(np.abs(window - values[-1]) <= tol) + 1
    for p in candidates[candidates >= 2][:64].tolist():
        start = _repeat_start(values, p, tol)
        tail = n - start
        if (tail - p >= r.t("min_matched") and tail >= r.t("min_periods") * p
                and tail >= r.t("tail_share") * n and float(np.ptp(values[-p:])) > tol):
            return _Cycle(p, start)
    return None  # too short a repeat to be more than chance, or one value held (TP-LOSS-FROZEN's)


@check("loss-repeats", REPEATS, after="frozen-loss")
def loss_repeats(run: Run) -> list[Finding] | Skip:
    r = REPEATS
    if (skip := surrogate_loss(run)) is not None:
        return skip
    s = finite_loss(run, int(r.t("min_points")))
    if isinstance(s, Skip):
        return s
    v = s.values
    level = float(stats.median(np.abs(v[-min(v.size, int(r.t("max_period"))):])))
    if level == 0:
        return []  # a tail at exactly 0 is zero-loss's
    tol = r.t("max_rel_diff") * level
    c = _repeating_tail(v, tol, int(r.t("max_period")))
    if c is None:
        return []
    p, tail = c.period, v.size - c.start
    cycle = v[-p:]
    resolution = printed_resolution(v)
    if resolution > tol:
        return []  # the log cannot print a change this small: repeats are its rounding
    shown = ", ".join(f"{x:.6g}" for x in cycle[:6]) + (", ..." if p > 6 else "")
    first = c.start
    return [r.finding(where(run, float(s.steps[first])), tail=tail, share=tail / v.size,
                      step=float(s.steps[first]), period=p, cycle=shown, periods=tail // p,
                      resolution=resolution)]
