"""Vectorised summaries the judges share. Pure numpy, no thresholds: the numbers
that decide verdicts are passed in from the rule declarations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Blocks:
    """A series reduced to medians of consecutive blocks of max(min_size, n // max_blocks)
    points (the last block ends at the last point, so `end` is always the freshest evidence)."""

    medians: np.ndarray
    steps: np.ndarray  # the step at the middle of each block
    size: int


def block_medians(steps: np.ndarray, values: np.ndarray, min_size: int, max_blocks: int) -> Blocks:
    n = values.size
    size = max(1, min(max(min_size, n // max_blocks), n))
    if size == 1:
        return Blocks(values, steps, 1)
    full = (n // size) * size
    head = n - full  # a shorter first block keeps the earliest points in play
    tail_v = values[head:].reshape(-1, size)
    tail_s = steps[head:].reshape(-1, size)
    meds = np.median(tail_v, axis=1)
    mids = tail_s[:, size // 2]
    if head:
        meds = np.concatenate(([np.median(values[:head])], meds))
        mids = np.concatenate(([steps[head // 2]], mids))
    return Blocks(meds, mids, size)


def edge_window(n: int, minimum: int, fraction: float) -> int:
    """Points at each end used for start/end medians: at least `minimum`, more on long logs."""
    return max(minimum, int(n * fraction))


def robust_median(values: np.ndarray) -> float:
    return float(np.median(values)) if values.size else float("nan")


def first_index(mask: np.ndarray) -> int:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else -1


def share(mask: np.ndarray) -> float:
    return float(mask.mean()) if mask.size else 0.0


MEDIAN_SE = 1.2533  # standard error of a median of n normal samples is 1.2533 * sigma / sqrt(n)


def log_noise(values: np.ndarray) -> float:
    """Robust point-to-point noise of a positive series in log space:
    1.4826 * median |first difference of log| / sqrt 2. Logs make it relative (a loss
    near 0.03 scatters by the same share as one near 3) and keep an exploding loss's
    growth from passing for noise; differences cancel the trend, the median ignores
    spikes, 1.4826 turns a MAD into a normal sigma, sqrt 2 undoes differencing."""
    if values.size < 3:
        return 0.0
    return float(1.4826 * np.median(np.abs(np.diff(np.log(values)))) / np.sqrt(2.0))
