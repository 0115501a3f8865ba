"""Single-run rule on a loss that stopped changing: its tail repeats one value to the
digits the log prints (TP-LOSS-FROZEN). A loss computed on fresh minibatches scatters
from batch to batch; one that agrees with itself to a hundredth of a percent over many
logging intervals no longer depends on the data or the weights. What it shares with its
neighbours: a loss frozen from the first point is TP-FLAT's (rules/run.py), a tail frozen
at exactly 0 is TP-ZERO-LOSS-ONSET's (rules/zeros.py, whose reading of the log's printed
precision this rule reuses), so each failure gives one finding. Declared once here; the
judge below is the only code that decides whether it fires."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Run, Series, Skip
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, finite_loss, where
from trainproof.rules.run import FLAT, loss_median, surrogate_loss
from trainproof.rules.zeros import printed_resolution

FROZEN = rule(
    id="TP-LOSS-FROZEN", level=Level.WARN, group=G,
    title="The loss stopped changing: its tail repeats one value.",
    evidence="over its last {tail} points ({share:.0%} of the log, from step {step} on) the loss stays "
    "at {level}, its range {spread:.3g} ({rel:.2g} of it, < {limit_max_rel_spread:g}), after moving from "
    "{start}; the log resolves {resolution:.2g}",
    summary="After moving, the loss holds one value - to a hundredth of a percent, in a log that "
    "prints that finely - over the last quarter of the log or more.",
    why="A loss computed on fresh minibatches scatters from batch to batch, by percents on small "
    "batches and still by tenths of a percent as a mean over a long logging interval. A logged "
    "loss that repeats itself to the digit over dozens of intervals no longer depends on the "
    "data or the weights: the output collapsed to a constant whose loss is the same for every "
    "sample (a two-class sigmoid stuck at 0.5 under MSE gives 0.25 on every batch: public run "
    "fresh7/diogoferreira7, 0.25 to five digits for 11,000 steps), dead activations, a "
    "saturated loss, or updates that stopped (lr 0, every gradient clipped or skipped).",
    fix="Print the model's outputs on a few different batches: identical outputs mean a "
    "collapsed or dead network (check the inputs reach the model, the loss's targets, the "
    "activations' scale); different outputs with the same loss mean the updates stopped "
    "(check the lr, the optimizer step and the loss scaler).",
    thresholds={
        "max_rel_spread": Threshold(
            1e-4, "of the tail's median loss",
            "The tail's range (largest minus smallest value) must be below this share of its "
            "level. Measured on the last max(20, a quarter) points of the 454 real logs with 20 "
            "loss points or more (every public run, both galleries, evidence/, tests/fixtures, "
            "../shared/corpus): the quietest one this rule can judge ranges over 0.37 % of its "
            "level (fresh2/atulav7, an LLM at 7.4), the quietest PASS over 0.51 %: 37x above "
            "this bar. The collapsed public run fresh7/diogoferreira7 ranges over 8e-6 of its "
            "level, 12x below it; the dead-ReLU fixture repeats 0.5 exactly."),
        "min_tail": Threshold(
            20, "points",
            "Twenty logging intervals in a row inside the band: a loss that merely paused, or a "
            "few lucky batches, does not hold a hundredth of a percent that long."),
        "min_points": Threshold(
            21, "points", "min_tail frozen points after at least one that moved: a freeze needs "
            "a before."),
        "tail_share": Threshold(
            0.25, "of the loss points",
            "...and at least the last quarter of the log, so a run that converged in its last "
            "few intervals is not judged on them."),
    },
    fires=Example({"loss": [1.75, 1.3, 0.9, 0.6, 0.4, 0.3] + [0.25 + 1e-6 * (i % 3) for i in range(30)]},
                  note="an output collapsed to 0.5 under MSE: 0.25 on every batch"),
    passes=Example({"loss": [0.9, 0.3, 0.05, 0.004, 0.0008, 0.0002] + [0.0001] * 30},
                   note="HF's 4-decimal loss converged to 0.0001: the log cannot print a change"),
    limits="Full-batch training that converged to a fixed point (L-BFGS, a deterministic "
    "full-batch toy or PINN run) repeats its loss too and is flagged: the log cannot tell it "
    "from a collapse, hence a WARN. Not judged where the log cannot print a change that small "
    "(HF rounds to 4 decimals: a converged 0.0001 repeated is rounding; a full-precision loss "
    "below ~1e-3 is quantised by float32), on a tail at exactly 0 (TP-ZERO-LOSS-ONSET), on a loss "
    "flat from its first point (TP-FLAT), or where a reward is logged (a policy-gradient "
    "surrogate; TP-RL-REWARD-FLAT reads the reward).",
)


class _Tail(NamedTuple):
    start: int  # index of the tail's first point
    level: float  # median of the tail
    spread: float  # largest minus smallest value in it


def _frozen_tail(values: np.ndarray, rel: float) -> _Tail:
    """The longest suffix whose range is within `rel` of its smallest magnitude, all of one
    sign (a run of exact zeros counts: the caller leaves those to zero-loss). Growing a
    suffix only widens its range and lowers its smallest magnitude, so the suffixes that
    qualify are exactly the first ones: counted with running extremes from the end, a
    chunk at a time (growing from 1,024 points), stopping at the first suffix that does not
    qualify - a loss that moves is settled within its last points, with no 5M-point
    temporaries (#14). Each chunk's running extremes start from the last ones of the chunk
    before, so every extreme is the same sequence of pairwise max/min as over the whole."""
    total, end, size = values.size, values.size, _FIRST_CHUNK
    hi_end = lo_end = hi = lo = np.empty(0)
    while end > 0:
        lo_i = max(0, end - size)
        back = values[lo_i:end][::-1]
        hi = np.maximum.accumulate(np.concatenate((hi_end, back)))[hi_end.size:]
        lo = np.minimum.accumulate(np.concatenate((lo_end, back)))[lo_end.size:]
        broken = (hi * lo < 0) | (hi - lo > rel * np.minimum(np.abs(hi), np.abs(lo)))
        if broken.any():
            k = int(np.argmax(broken))
            n = total - end + k
            if k == 0:  # the suffix before this chunk was the longest; its extremes are the carry
                hi, lo, k = hi_end, lo_end, 1
            break
        hi_end, lo_end, end, size = hi[-1:], lo[-1:], lo_i, min(2 * size, _MAX_CHUNK)
    else:
        n, k = total, hi.size
    start = total - n
    if n == 0:  # only when the last point alone does not qualify (not for finite values)
        return _Tail(start, float(stats.median(values[start:])), float(values.max() - values.min()))
    return _Tail(start, float(stats.median(values[start:])), float(hi[k - 1] - lo[k - 1]))


_FIRST_CHUNK = 1024  # points of the tail tested first; each next chunk twice the size...
_MAX_CHUNK = 1 << 16  # ...up to this


@check("frozen-loss", FROZEN, after="flat-loss")
def loss_frozen(run: Run) -> list[Finding] | Skip:
    r = FROZEN
    if (skip := surrogate_loss(run)) is not None:
        return skip
    s = finite_loss(run, int(r.t("min_points")))
    if isinstance(s, Skip):
        return s
    t = _frozen_tail(s.values, r.t("max_rel_spread"))
    n_tail = len(s) - t.start
    if t.level == 0 or n_tail < r.t("min_tail") or n_tail < r.t("tail_share") * len(s):
        return []  # a tail at exactly 0 is zero-loss's; a short one is a pause
    if _flat_from_start(s):
        return []  # never moved: TP-FLAT's
    resolution = printed_resolution(s.values)
    if resolution > r.t("max_rel_spread") * abs(t.level):
        return []  # the log cannot print a change this small: repeats are its rounding
    return [r.finding(where(run, float(s.steps[t.start])), tail=n_tail, share=n_tail / len(s),
                      step=float(s.steps[t.start]), spread=t.spread, level=t.level,
                      rel=t.spread / abs(t.level), start=float(s.values[0]), resolution=resolution)]


def _flat_from_start(s: Series) -> bool:
    """TP-FLAT's own measure: the whole loss within its band."""
    med = loss_median(s)
    return bool(med) and float(s.values.max() - s.values.min()) / abs(med) < FLAT.t("rel_range")
