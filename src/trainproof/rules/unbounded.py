"""Single-run rule on a negative loss that falls without a floor (TP-LOSS-UNBOUNDED). Every
rule that compares loss levels reads them as ratios and so asks for a positive loss; a
negative loss is not wrong in itself (a Gaussian or flow negative log-likelihood is negative
once the predicted density is sharp), so those rules skip it and say so. This rule reads
what they cannot: a loss that is negative from its start and whose size grows by orders of
magnitude, still growing at the end, is an objective with no floor. Growth is a ratio of
sizes, so the verdict does not move with the loss's units. Declared once here; the judge
below is the only code that decides whether it fires."""

from __future__ import annotations

from trainproof import stats
from trainproof.model import Finding, Level, Run, Skip
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, finite_loss, where
from trainproof.rules.run import surrogate_loss

UNBOUNDED = rule(
    id="TP-LOSS-UNBOUNDED", level=Level.FAIL, group=G,
    title="The loss is negative and falls without a floor: its size grew by orders of magnitude.",
    evidence="the loss is negative from its start ({start:.4g}, the median of its first {edge} points) "
    "to its end ({end:.4g}): {growth:.0f}x its starting size (>= {limit_min_growth:g}x), and still "
    "{late:.2f}x larger over the last quarter of the log (from {late_from:.4g} at step {late_step:g})",
    summary="A negative loss whose size grew a hundredfold or more and is still growing at the "
    "end: the objective has no floor the model is approaching.",
    why="A negative log-likelihood improves as the model's density sharpens, and on real data "
    "it approaches a bound: the data's own entropy. Healthy negative losses in the public runs "
    "move by factors of 1.4-5 over a whole run (density estimators, a VAE, a hair-segmentation "
    "loss). A loss negative from its first point whose size keeps growing, a hundredfold and "
    "more, has nothing to converge to: a continuous likelihood fitted to discrete or "
    "duplicated values (its variance collapses to 0 and the likelihood to infinity), a loss "
    "that is maximised instead of minimised (a sign error), or an unconstrained critic. "
    "Public runs fresh12/agusbs98 (-3.4e4 to -6.5e7 in 70 epochs) and fresh26/villrv (-221 to "
    "-2.7e5 in 50 epochs) were labelled broken by their readers.",
    fix="Check the loss's sign and what it is minimising; for a likelihood, floor the predicted "
    "variance (or scale), dequantise discrete targets, and look for duplicated samples the model "
    "can collapse onto.",
    thresholds={
        "min_growth": Threshold(
            100, "x the starting size",
            "Two orders of magnitude between the medians of the first and last points. The "
            "healthy negative losses of the public runs grow 1.4-4.8x over their whole log "
            "(fresh21/niklaskappel 4.8x, fresh14/andriy99 2x, fresh13/karelveldkamp's VAE "
            "1.8x, fresh26/francoli74 1.4x), twenty times below this; the two broken ones grew "
            "600x and 500x."),
        "min_late_growth": Threshold(
            1.1, "x over the last quarter",
            "Still growing at the end: the end's size is this many times the size a quarter "
            "of the log earlier. A likelihood that rose to a bound (a converged fit) moves by "
            "a few per cent or less in its last quarter; the broken runs grew 1.4-1.6x there."),
        "edge": Threshold(
            0.1, "of the loss points",
            "Start, end and the point a quarter before the end are medians of this share of "
            "the log (at least three points), so one noisy batch is neither a start nor an end."),
        "min_points": Threshold(
            8, "points",
            "A start, a point a quarter of the log before the end and an end, each a median of "
            "three points or more (on logs under twelve points the last two windows overlap)."),
    },
    fires=Example({"loss": [float(round(-200 * 1.6 ** k)) for k in range(14)]},
                  note="negative from the start and 1.6x larger at every point"),
    passes=Example({"loss": [-0.5, -0.8, -1.1, -1.4, -1.6, -1.8, -1.9, -2.0, -2.05, -2.1, -2.1, -2.12]},
                   note="a negative log-likelihood that sharpens and settles: 2.6x its start"),
    limits="Judged only on a loss negative at its start and its end (medians), so a loss that "
    "crosses 0 is not judged: its starting size says nothing about its scale. A reward-logging "
    "run's loss (a policy-gradient surrogate) is not judged. A positive loss that grows is "
    "TP-DIVERGE's.",
)


@check("unbounded-loss", UNBOUNDED, after="divergence")
def loss_unbounded(run: Run) -> list[Finding] | Skip:
    r = UNBOUNDED
    if (skip := surrogate_loss(run)) is not None:
        return skip
    s = finite_loss(run, int(r.t("min_points")))
    if isinstance(s, Skip):
        return s
    v, n = s.values, s.values.size
    edge = stats.edge_window(n, 3, r.t("edge"))
    start, end = float(stats.median(v[:edge])), float(stats.median(v[-edge:]))
    if not (start < 0 and end < 0):
        return []  # only a loss negative at both ends has a size to compare
    growth = end / start  # both negative: the ratio of sizes
    late_at = max(edge, n - n // 4)  # the window that ends a quarter of the log before the end
    late_from = float(stats.median(v[late_at - edge:late_at]))
    late = end / late_from if late_from < 0 else float("inf")
    if growth < r.t("min_growth") or late < r.t("min_late_growth"):
        return []
    step = float(s.steps[late_at - 1])
    return [r.finding(where(run, float(s.steps[-1])), start=start, end=end, edge=edge,
                      growth=growth, late=late, late_from=late_from, late_step=step)]
