"""Single-run rule on the eval loss against the train loss while the train loss is still a
held-out measurement. In the first epoch every train batch is new to the model, so the
logged train loss estimates the loss on unseen data of the training distribution (the
argument of TP-UNSEEN-NEAR-ZERO); an eval loss far above it, at every evaluation made in
that epoch, means the eval measures something the training does not: another
distribution, a broken eval pipeline (wrong preprocessing, wrong mode, other tokens), or
a train loss logged in other units (divided by the gradient-accumulation steps)
(TP-EVAL-MISMATCH, WARN). Declared once here; the judge below is the only code that
decides whether it fires."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules import unseen  # noqa: F401  (registers unseen-near-zero, which this check follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import epoch_at
from trainproof.rules.gradients import G, where
from trainproof.rules.unseen import surrogate

EVAL_MISMATCH = rule(
    id="TP-EVAL-MISMATCH", level=Level.WARN, group=G,
    title="Eval loss sits far above a train loss that is itself still held-out: the eval measures "
    "something the training does not.",
    evidence="at all {n} evaluations of the first epoch (epochs {start_epoch:.2f}-{end_epoch:.2f}, "
    "steps {first:g}-{last:g}) the eval loss is >= {low_ratio:.2f}x the train loss around it "
    "(>= {limit_ratio:g}x; median {mid_ratio:.2f}x: eval {eval_mid:.4g} vs train {train_mid:.4g}) "
    "and >= {low_noise:.1f} units of the train log's own noise ({sigma:.1%} per point; "
    ">= {limit_noise_units:g})",
    summary="At every evaluation made in the first epoch (at least three), the eval loss is at "
    "least 3x the train loss logged around the same steps, and that far beyond the train log's "
    "own noise.",
    why="Until the first epoch ends every train batch is new, so the train loss is a held-out "
    "loss on the training distribution, and an eval set of the same distribution gives the same "
    "expected value. What legitimately separates them early makes the train loss higher "
    "(dropout, label smoothing, auxiliary losses, a mean logged over an interval of a falling "
    "loss) or the eval higher by tens of per cent (packed train against unpacked eval "
    "sequences, an eval set from other sources). Three times the train loss at every "
    "first-epoch evaluation is another task: an eval set from another distribution, an eval "
    "pipeline that feeds the model something else (other preprocessing, loss on other tokens, "
    "eval in the wrong mode), or a train loss logged in other units. The number the run is "
    "selected on does not measure what it trains.",
    fix="Evaluate one training batch through the eval path: if its loss is the eval loss, the "
    "eval pipeline differs from training (tokenisation, masking, collator, model mode); if it "
    "is the train loss, the eval set is another distribution - check how it was split. A loop "
    "that logs `loss / gradient_accumulation_steps` logs the train loss in other units.",
    thresholds={
        "ratio": Threshold(3.0, "x the train loss around the evaluation",
                           "Held-out batches of the training distribution and an eval set drawn "
                           "from it agree up to the shift a model can show between two samples of "
                           "one task. On the public runs (all four halves) the first-epoch "
                           "evaluations of a healthy run sit at a median of at most 1.45x the "
                           "train loss around them, with two exceptions: a ViT whose first "
                           "evaluation sat at 10.7x and its second at 1.3x, and an AI-text "
                           "detector whose eval set comes from other sources at 1.9-5.5x (three "
                           "of its four under 3x). Single evaluations above 3x happen in healthy "
                           "runs, so every first-epoch evaluation must clear the bar."),
        "noise_units": Threshold(4.0, "units of the train loss's per-point noise (log space)",
                                 "The eval lies beyond where the train log's own points stray "
                                 "(stats.log_noise, first differences of the log loss): 4 units "
                                 "is one point in 30 000 for normal noise. A classifier near 0, "
                                 "whose logged loss scatters by a factor 2 per point, needs the "
                                 "eval about 12x its train level before the ratio counts."),
        "min_points": Threshold(3, "evaluations in the first epoch",
                               "A persistent offset, never one point: a checkpoint caught "
                               "mid-spike, or a first evaluation made before the model adapted "
                               "to the eval format, is one evaluation (a healthy ViT's first "
                               "sat at 10.7x its train loss, its second at 1.3x); with three, "
                               "no pair of evaluations decides."),
        "window": Threshold(5, "train loss points",
                            "The train loss around an evaluation is the median of the five "
                            "first-epoch points nearest to it in steps, on both sides, so a "
                            "falling loss is read at the evaluation's step and one noisy batch "
                            "does not decide it."),
    },
    fires=Example({"loss": [2.2, 2.1, 2.15, 2.05, 2.1, 2.0, 2.05, 2.1, 2.0, 2.05],
                   "epoch": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                   "eval_loss": [8.5, 8.4, 8.3]},
                  note="train 2.0-2.2 on new batches, eval 8.3-8.5 from the first evaluation"),
    passes=Example({"loss": [2.2, 2.1, 2.15, 2.05, 2.1, 2.0, 2.05, 2.1, 2.0, 2.05],
                    "epoch": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                    "eval_loss": [2.6, 2.5, 2.45]},
                   note="an eval set a little harder than the training data: 1.2x"),
    limits="Only evaluations made in the first epoch are judged (the log's epoch column, "
    "interpolated to each evaluation's step; epoch < 1), from the first logged train point on: "
    "after it the model has seen its train batches and a gap is TP-OVERFIT's to read. A log "
    "without an epoch column, with an RL or preference objective (`reward`, `rewards/*`, "
    "`logps/*`), or with a non-finite train or eval loss (an unstable run: an evaluation can "
    "catch the weights between blow-ups; TP-NAN's to judge) is not judged. A train objective "
    "that differs from the eval's on purpose - distillation against a teacher, a contrastive "
    "loss whose eval batch is larger and so holds more negatives - reads as a mismatch; that "
    "is what it is, and configuration can ignore the rule for such a run.",
)


def _positive_finite(run: Run, name: str) -> Series | Skip:
    s = run.get(name)
    if s is None:
        return Skip(SkipKind.NO_DATA, f"no {name} column in the log")
    if not s.finite.all():
        return Skip(SkipKind.COVERED, f"non-finite {name} values: an unstable run, TP-NAN's to judge")
    if s.values.min() <= 0:
        return Skip(SkipKind.DEGENERATE, f"{name} is not positive")
    return s


def _nearest(steps: np.ndarray, at: np.ndarray, k: int) -> np.ndarray:
    """For each step of `at`, the indices of the k points of sorted `steps` nearest to it
    (ties to the earlier). They lie among the k on either side of where the step would be
    inserted, so each row looks at 2k candidates: memory is len(at) x 2k."""
    m = min(2 * k, steps.size)
    start = np.clip(np.searchsorted(steps, at) - k, 0, steps.size - m)
    cand = start[:, None] + np.arange(m)[None, :]
    order = np.argsort(np.abs(steps[cand] - at[:, None]), axis=1, kind="stable")[:, :k]
    return np.take_along_axis(cand, order, axis=1)


@check("eval-mismatch", EVAL_MISMATCH, after="unseen-near-zero")
def eval_mismatch(run: Run) -> list[Finding] | Skip:
    r = EVAL_MISMATCH
    ev = _positive_finite(run, "eval_loss")
    if isinstance(ev, Skip):
        return ev
    if surrogate(run):
        return Skip(SkipKind.COVERED, "the loss is an RL or preference objective")
    tr = _positive_finite(run, "loss")
    if isinstance(tr, Skip):
        return tr
    tr_epochs, ev_epochs = epoch_at(run, tr.steps), epoch_at(run, ev.steps)
    if tr_epochs is None or ev_epochs is None:
        return Skip(SkipKind.NO_DATA, "no epoch column: which evaluations fall in the first epoch is unknown")
    inside = tr_epochs < 1.0
    t_steps, t_vals = tr.steps[inside], tr.values[inside]
    at = (ev_epochs < 1.0) & (ev.steps >= tr.steps[0])
    if t_vals.size < r.t("window") or at.sum() < r.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{int(at.sum())} evaluation(s) and {t_vals.size} train point(s) "
                    "in the first epoch")
    k = int(r.t("window"))
    e_steps, e_vals = ev.steps[at], ev.values[at]
    level = stats.median(t_vals[_nearest(t_steps, e_steps, k)], axis=1)
    gap = np.log(e_vals / level)
    sigma = stats.log_noise(t_vals)
    units = gap / sigma if sigma > 0 else np.where(gap > 0, np.inf, 0.0)
    if gap.min() < np.log(r.t("ratio")) or units.min() < r.t("noise_units"):
        return []
    epochs = ev_epochs[at]
    mid = int(np.argsort(gap, kind="stable")[gap.size // 2])
    return [r.finding(where(run, e_steps[0]), n=int(gap.size), start_epoch=float(epochs[0]),
                      end_epoch=float(epochs[-1]), first=float(e_steps[0]), last=float(e_steps[-1]),
                      low_ratio=float(np.exp(gap.min())), mid_ratio=float(np.exp(gap[mid])),
                      eval_mid=float(e_vals[mid]), train_mid=float(level[mid]), low_noise=float(units.min()),
                      sigma=sigma)]
