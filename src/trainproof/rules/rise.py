"""The short-log form of divergence: on a log too short for TP-DIVERGE's block medians
(a 4-epoch Keras or fastai CSVLogger file, a TRL run with 4 logged points), did the
loss end far above where it started? Declared here with its thresholds; the judge
below is the only code that decides whether it fires."""

from __future__ import annotations

from trainproof.model import Finding, Level, Location, Run, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.run import DIVERGE, G, finite_loss

LOSS_ROSE = rule(
    id="TP-LOSS-ROSE", level=Level.FAIL, group=G,
    title="Loss ended far above where it started.",
    evidence="last loss {end} at step {end_step} vs first {start} at step {start_step}: "
    "{ratio:.2f}x > {limit_ratio}x over {n} points (too few for TP-DIVERGE, which needs "
    "{limit_divergence_points})",
    summary="On a log too short for TP-DIVERGE, the last loss is far above the first.",
    why="A run whose loss ends well above where it began made the model worse over its whole "
    "budget: a learning rate far too high, a wrong sign, or a broken target. Epoch-level "
    "logs (Keras, fastai) of a few epochs are normal runs and deserve that answer too.",
    fix="Lower the learning rate (or add warm-up and clipping) and check the loss and labels "
    "on one batch.",
    thresholds={
        "ratio": Threshold(
            DIVERGE.t("ratio"), "x first loss",
            "TP-DIVERGE's margin over the floor; the first point is at or above the floor, so a "
            "rise this test calls also clears TP-DIVERGE's ratio. A log this short cannot measure "
            "its own noise (TP-DIVERGE's standard-error test needs blocks of points), so the "
            "margin alone stands in for it: healthy gallery runs end <= 1.15x their floor."),
        "min_points": Threshold(2, "finite loss points", "A start and an end; the ratio margin, "
                                "not more points, guards against noise."),
        "divergence_points": DIVERGE.thresholds["min_points"],
    },
    fires=Example({"loss": [2.3, 3.1, 4.0, 5.2]}),
    passes=Example({"loss": [2.3, 1.9, 1.7, 1.6]}),
    limits="Runs only below TP-DIVERGE's min_points; longer logs are TP-DIVERGE's (block medians "
    "against the measured noise). A loss that rose and came back down inside the log is not "
    "flagged, and a blow-up inside the first logged epoch leaves no start to compare with "
    "(TP-NAN catches the NaN it usually ends in). A positive loss is required.",
)


@check("rise", LOSS_ROSE, loss_curve=True)
def loss_rose(run: Run) -> list[Finding] | Skip:
    s = finite_loss(run, int(LOSS_ROSE.t("min_points")))
    if isinstance(s, Skip):
        return s
    if len(s) >= LOSS_ROSE.t("divergence_points"):
        return Skip(SkipKind.COVERED, f"{len(s)} finite loss points: judged by divergence")
    start, end = float(s.values[0]), float(s.values[-1])
    if start <= 0 or end <= 0:
        return Skip(SkipKind.DEGENERATE, "loss is not positive; end/start ratio is meaningless")
    ratio = end / start
    if ratio > LOSS_ROSE.t("ratio"):
        return [LOSS_ROSE.finding(Location(run.path, float(s.steps[-1])), end=end, start=start,
                                  end_step=float(s.steps[-1]), start_step=float(s.steps[0]),
                                  ratio=ratio, n=len(s))]
    return []
