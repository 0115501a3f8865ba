"""Compare rules beyond the loss's level: whether the run optimises like its baseline
(gradient norms) and whether the baseline is itself known-good (TP-BAD-BASELINE, which
the engine states from the baseline's own report); and shared_medians, a metric's
median over the steps both sides logged, which compare_eval.py reads too."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Skip, SkipKind
from trainproof.rules import compare_gain  # noqa: F401  (registered first: keeps the checks' order)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.compare import G, run_location
from trainproof.rules.compare_align import Pair

GRADNORM_RATIO = rule(
    id="TP-GRADNORM-RATIO", level=Level.WARN, group=G,
    title="Gradient norms are far above the baseline's.",
    evidence="run median grad_norm {run_med} vs baseline {base_med} up to step {step} "
    "({ratio:.2f}x > {limit_ratio})",
    summary="The run's typical gradient norm is a multiple of the baseline's over the same steps.",
    why="Persistently large gradients mean a sharper, less stable optimisation than the "
    "recipe is known to produce.",
    fix="Check the learning rate, loss scaling and clipping against the baseline's config.",
    thresholds={"ratio": Threshold(5.0, "x baseline median", "Medians are robust to single "
                                   "spikes; 5x is a different optimisation regime.")},
    fires=Example({"baseline": {"loss": [1.0] * 3, "grad_norm": [0.4, 0.5, 0.45]},
                   "run": {"loss": [1.0] * 3, "grad_norm": [4.0, 5.0, 4.5]}}),
    passes=Example({"baseline": {"loss": [1.0] * 3, "grad_norm": [0.4, 0.5, 0.45]},
                    "run": {"loss": [1.0] * 3, "grad_norm": [0.5, 0.6, 0.55]}}),
)


def _upto(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return values[keep] if keep.any() else values


def shared_medians(pair: Pair, name: str) -> tuple[float, float, float] | Skip:
    """(run median, highest baseline median, run's last step) of a metric over the steps
    both sides logged: the run from the baselines' first step, the baselines up to the
    run's last (the top of several baselines, so seed spread is not called a regression)."""
    r = pair.run.get(name)
    bs = [b.get(name) for b in pair.baselines]
    if r is None or any(b is None for b in bs):
        return Skip(SkipKind.NO_DATA, f"{name} missing on one side")
    rf = r.finite_only()
    fs = [b.finite_only() for b in bs if b is not None]
    if not len(rf) or not all(len(f) for f in fs):
        return Skip(SkipKind.DEGENERATE, f"no finite {name} on one side")
    first, last = max(float(f.steps[0]) for f in fs), float(rf.steps[-1])
    run_med = stats.robust_median(_upto(rf.values, rf.steps >= first))
    base_med = max(stats.robust_median(_upto(f.values, f.steps <= last)) for f in fs)
    return run_med, base_med, last


@check("gradnorm-ratio", GRADNORM_RATIO)
def gradnorm_ratio(pair: Pair) -> list[Finding] | Skip:
    got = shared_medians(pair, "grad_norm")
    if isinstance(got, Skip):
        return got
    rm, bm, step = got
    if not bm > 0 or not np.isfinite(rm):
        return Skip(SkipKind.DEGENERATE, "no positive finite grad_norm median on one side")
    ratio = rm / bm
    if ratio > GRADNORM_RATIO.t("ratio"):
        return [GRADNORM_RATIO.finding(run_location(pair), run_med=rm, base_med=bm, ratio=ratio, step=step)]
    return []


BAD_BASELINE = rule(
    id="TP-BAD-BASELINE", level=Level.WARN, group=G,
    title="The baseline itself fails single-run checks.",
    evidence="baseline {path} is {verdict}: {ids}",
    summary="The run was compared against a baseline that is not known-good.",
    why="Ratios against a broken baseline can pass a broken run.",
    fix="Pick a baseline that passes `trainproof epoch`.",
)
