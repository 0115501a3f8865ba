"""A steady fall across the whole run as a witness of learning, for TP-DEAD-RUN.

TP-DEAD-RUN compares two estimates, the start (one logged point) and the end (a median
of the last fifth). On a long, slow run - continued training of a model that already
works, a fine-tune near its floor - the gain is a few per cent, and one point's noise
hides it: the start-vs-end test cannot tell such a run from a dead one. The whole curve
can. A run that learns falls across the run, block after block; a dead run's loss is
batch noise around a constant, and its block medians come in no order. So the run is
cut into TP-DIVERGE's blocks (medians of consecutive points, at most about a hundred)
and two tests ask whether they fall steadily:

- Mann-Kendall: do later blocks sit below earlier ones more often than chance allows?
  Rank-based, so it needs no estimate of the noise and no spike moves it;
- Theil-Sen: the median slope over all pairs of blocks, as a fall over the run, in
  standard errors of that fall (the blocks' noise from the log's own point-to-point
  noise). A step confined to the first blocks leaves most pairs flat, so only a fall
  that goes on across the run counts.

Measures only; the thresholds are declared here and listed by TP-DEAD-RUN, whose judge
(rules/rise.py) decides what a steady fall changes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Series
from trainproof.rules.base import Threshold
from trainproof.rules.run import loss_blocks

TREND_Z = Threshold(
    3.5, "standard deviations (Mann-Kendall z)",
    "A steady fall: the Mann-Kendall z of the block medians (positive for a fall) at least "
    "this. The test looks at every run the start-vs-end test would fail, so its false-alarm "
    "rate is the rate at which dead runs pass: at 3.5, about 2 in 10,000 runs whose blocks "
    "are independent batch noise (3.0, TP-LOSS-ROSE's bar, would let 13 through). Measured over "
    "the perturbations of tests/test_invariance.py on both galleries and ../shared/corpus: the "
    "lr=0 runs reach at most 2.35 (84 logs); the lr x100 runs learning back from the wreck of "
    "their first steps reach 5.2, and every one of their logs that passes both tests first "
    "climbed >= 8 standard errors above its start, which witness_wreck_se keeps out; the fresh "
    "half's arbordreams (continued training of a working 1B model, 2,500 points) sits at 8.9. "
    "A log of fewer than nine blocks (27 points) cannot reach it: the start-vs-end test alone "
    "judges a log that short.")
TREND_FALL_SE = Threshold(
    3.5, "standard errors",
    "...and the Theil-Sen line through the logs of the block medians falls over the run by at least "
    "this many standard errors of such a fall (a straight line's, from the blocks' noise: "
    "1.2533 x the log's point-to-point noise / sqrt(block size)). The same bar as trend_z, "
    "for the other half of the question: not only do later blocks sit lower, the curve "
    "goes on falling across the run, where a step confined to the first blocks (a warm-up "
    "settling) leaves most pairs flat. The lr=0 runs reach at most 1.5; arbordreams's 5.6 % "
    "fall (2.3 x its per-point noise) is 27 standard errors.")

TREND_MIN_FALL = Threshold(
    0.01, "of where the line began",
    "...and that fall is a real share of the loss: a log printed finely enough has almost no "
    "point-to-point noise once the loss stops changing, so a drift in its last digits is many "
    "standard errors and no learning; and a very long log's block medians are so precise that "
    "a drift of a few tenths of a per cent is 'steady' (fresh11's christianjzb, a loss at 1.00, "
    "the variance of its targets, for 50 epochs: a 0.2 % Theil-Sen fall at 3.6 standard errors "
    "over 1,200 points). 1 %, a fifth of min_improvement: a run that learns slowly enough to "
    "need this test still falls by a few per cent over the log - the smallest fall it must "
    "accept, arbordreams's (continued training of a working model), is 5.6 %, and fresh10's "
    "annakompan regrouped 4.1 %. Was 1e-4 (TP-LOSS-FROZEN's max_rel_spread).")

THRESHOLDS = {"trend_z": TREND_Z, "trend_fall_se": TREND_FALL_SE, "trend_min_fall": TREND_MIN_FALL}


class Trend(NamedTuple):
    z: float  # Mann-Kendall z of the block medians, positive for a fall
    fall: float  # the Theil-Sen line's fall over the run, as a share of where it began
    fall_se: float  # the same fall (of the log) in standard errors
    blocks: int  # block medians tested
    climb_se: float  # the highest block median above the start, in standard errors
    steady: bool  # the block medians fall steadily (both tests pass)
    wrecked: bool  # ...but from a climb above the start: a wrecked start won back
    drop: float = 0.0  # the line's log(start / end)
    drop_sd: float = float("inf")  # its standard error (inf: too few blocks to fit a line)

    def upper(self, se: float) -> float:
        """The line's log-gain plus `se` of its standard errors: the most the run can have
        fallen across the log, at that confidence."""
        return self.drop + se * self.drop_sd

    @property
    def learned(self) -> bool:
        return self.steady and not self.wrecked

    def says(self) -> str:
        """What TP-DEAD-RUN's evidence says of the trend when it fires anyway."""
        measured = (f"Mann-Kendall z {self.z:.1f} over {self.blocks} block medians, Theil-Sen fall "
                    f"{self.fall:.1%} ({self.fall_se:.1f} standard errors)")
        if self.steady:
            return (f"; a steady fall across the run ({measured}) from a start wrecked and won "
                    f"back: the loss first climbed {self.climb_se:.1f} standard errors above it")
        return f"; no steady fall across the run: {measured}"


def trend_blocks(s: Series, b: stats.Blocks) -> int:
    """How many block medians steady_fall tests on `s` (blocks laid end to end)."""
    overlap = b.medians.size > 1 and len(s) % b.size != 0
    return int(b.medians.size - 1 if overlap else b.medians.size)


def can_show_fall(blocks: int, t: Callable[[str], float]) -> bool:
    """Could `blocks` block medians reach trend_z at all (every later block below every
    earlier one)? Fewer than nine cannot: on such a log the trend test has no power, and a
    missing steady fall is no evidence that the run did not learn."""
    if blocks < 3:
        return False
    n = blocks
    s_max = n * (n - 1) / 2.0
    return bool((s_max - 1.0) / np.sqrt(n * (n - 1) * (2 * n + 5) / 18.0) >= t("trend_z"))


def steady_fall(s: Series, start: float, start_var: float, t: Callable[[str], float],
                b: stats.Blocks | None = None, sigma: float | None = None) -> Trend | None:
    """Whether the positive finite loss `s` falls steadily across the run; None when it is
    not positive. `start` is TP-DEAD-RUN's start, `start_var` its variance in units of the
    log's per-point noise squared (1 for a single point); `t` reads the thresholds above
    and eval_witness's witness_wreck_se as the calling rule declares them. `b` and `sigma`,
    when the caller has them, are loss_blocks(s) and stats.log_noise(s.values): each is a
    pass over the whole log (~0.5 s at 5M points)."""
    if s.values.size == 0 or s.values.min() <= 0 or start <= 0:
        return None
    b = loss_blocks(s) if b is None else b
    # The trend is tested on blocks laid end to end: when the first block overlaps the
    # second (n not a multiple of the block size), it is left out, so that no two medians
    # share points and Mann-Kendall's "no trend" spread holds.
    overlap = b.medians.size > 1 and len(s) % b.size != 0
    logs = np.log(b.medians[1:] if overlap else b.medians)
    k = logs.size
    z = -stats.mann_kendall(logs)
    drop = -stats.theil_sen(logs) * (k - 1)  # log(start / end) of the line
    sigma = stats.log_noise(s.values) if sigma is None else sigma
    block_sigma = stats.MEDIAN_SE * sigma / np.sqrt(b.size)
    # A straight line's fitted fall over k equally spaced points: standard error
    # block_sigma * (k - 1) * sqrt(12 / (k (k^2 - 1))).
    fall_sd = block_sigma * (k - 1) * np.sqrt(12.0 / (k * (k * k - 1))) if k > 1 else 0.0
    fall_se = _ratio(drop, fall_sd)
    # A run wrecked in its first steps (lr x100) learns back part of what it lost: its fall
    # is from the wreck, not from the start - the eval witness's guard, on block medians so
    # that a long log's largest single batch loss is not read as a climb.
    climb = float(np.log(float(b.medians.max()) / start))
    climb_se = _ratio(climb, sigma * np.sqrt(start_var + stats.MEDIAN_SE**2 / b.size))
    fall = float(-np.expm1(-drop))
    steady = z >= t("trend_z") and fall_se >= t("trend_fall_se") and fall >= t("trend_min_fall")
    return Trend(z, fall, fall_se, k, climb_se, bool(steady),
                 bool(climb_se > t("witness_wreck_se")), float(drop),
                 float(fall_sd) if k > 1 else float("inf"))


def _ratio(x: float, sd: float) -> float:
    """x in units of sd; a noiseless log makes any move infinite, and no move 0."""
    if sd > 0:
        return float(x / sd)
    return float(np.inf) if x > 0 else (float(-np.inf) if x < 0 else 0.0)
