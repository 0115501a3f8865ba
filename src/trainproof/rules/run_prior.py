"""Single-run rule on a classifier that learned only its class prior. A model whose
predictions ignore the input scores, at best, the entropy of the label prior: at most ln K
for K classes, and close to it for mildly imbalanced data; a fresh classification head
starts there too (near-zero logits give every class 1/K). So a run whose train loss starts
near ln K for a small K and never leaves the band a constant prediction can reach, with
every evaluation in the same band, has learned the output bias and nothing else
(TP-PRIOR-ONLY). Past an epoch it is a FAIL: examples seen twice are memorised by any
model that reads its input, so a train loss still at the prior there means the input never
reached the prediction. TP-DEAD-RUN misses such runs when the bias's own early fall (ln 2
-> the prior's entropy, a few per cent) reads as learning; when it fires, it owns the run.
Declared once here; the judge below is the only code that decides whether it fires."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules import rise
from trainproof.rules import steady_fall as sf
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import epoch_at
from trainproof.rules.gradients import finite_loss
from trainproof.rules.run import G, loss_blocks, loss_noise
from trainproof.rules.unseen import surrogate

_EVIDENCE = (
    "train loss starts at {start:.4g} (step {first:g}) and every block median stays in "
    "{low:.4g}-{high:.4g} ({lo_share:.1%}-{hi_share:.1%} of ln {k} = {ln_k:.4g}; band +/-{limit_band:.0%}) "
    "{through}; all {n_eval} evaluations {eval_low:.4g}-{eval_high:.4g}, in the same "
    "band{accuracy}; no fall across the run beyond a settling bias ({trend}; <= {limit_max_drift:.0%}){level_why}")

PRIOR_ONLY = rule(
    id="TP-PRIOR-ONLY", level=Level.FAIL, group=G,
    title="The loss starts at ln K and stays where a constant prediction of the class prior "
    "would score it: the classifier learned the output bias and nothing else.",
    evidence=_EVIDENCE,
    summary="Train loss starts within 10 % of ln K for K = 2, 3 or 4, and every block of the "
    "run and every evaluation stays within 10 % of ln K, with no steady fall across the run of more than 5 %. "
    "FAIL past 1.5 epochs (the run saw its examples again and still did not fit them), WARN "
    "before.",
    why="A model whose predictions ignore the input can do no better than the entropy of the "
    "label prior - ln K for balanced classes, a little less for mildly imbalanced ones "
    "(ln 2 = 0.693; a 60/40 prior scores 0.673) - and a fresh classification head starts at "
    "about ln K. A run that starts there and never leaves the band has learned the one thing a "
    "constant predictor can: the bias. The fall of that bias in the first steps is a few per "
    "cent, which TP-DEAD-RUN can read as learning. Past an epoch the argument is strong: any "
    "model that reads its input memorises examples it sees again, so the train loss on them "
    "falls below the prior's entropy; one still at the prior never used the input. An LM that "
    "fell from 2.0 to 1.1 does not start near ln K; one that sits at 1.1 from its first step "
    "but keeps falling block after block by more than a settling bias can is learning "
    "slowly, and is left to TP-DEAD-RUN.",
    fix="Check that the inputs reach the model (the collator, the label column, a frozen or "
    "detached encoder, a classifier head reading padding), then the learning rate: a "
    "fine-tune at 1e-3 or with LR 0 never moves the encoder. Compare the eval accuracy with "
    "the majority class's share.",
    thresholds={
        "max_classes": Threshold(4, "classes (K)",
                                 "Small K only: ln 2 = 0.69, ln 3 = 1.10, ln 4 = 1.39. Above that "
                                 "the uniform loss (ln 5 = 1.61, ln 8 = 2.08) is where LM "
                                 "fine-tunes sit, and ../shared/corpus's gallery42 run at LR 0 "
                                 "starts within 6 % of ln 5: a level there says nothing about "
                                 "classes."),
        "band": Threshold(0.10, "fraction of ln K, either side",
                          "The level a constant prediction reaches: ln K down to the entropy of "
                          "a mildly imbalanced prior (0.9 ln 2 is a 68/32 prior; 0.9 ln 3 is "
                          "below a 50/25/25 one), and up to a fresh head's start a little above "
                          "ln K. A classifier that learned anything leaves it: the nearest "
                          "healthy run of the five public-run halves, a hallucination detector "
                          "that starts at 1.02 ln 2, reaches 0.87 ln 2."),
        "max_drift": Threshold(0.05, "fraction of the start (Theil-Sen fall over the run)",
                               "A steady fall across the run larger than this is learning, "
                               "however slow, and is left to TP-DEAD-RUN. A constant predictor "
                               "can drift too - its bias settles on the prior as the LR decays "
                               "(fresh3's vacantfury: a steady 1.7 % over eight epochs) - but by "
                               "no more than the gap between ln K and the prior's entropy, 3 % "
                               "for a 60/40 prior: half the band."),
        "min_points": Threshold(5, "train loss points", "A level and a start, not a point."),
        "min_evals": Threshold(2, "evaluations",
                               "The eval loss at the same level at two evaluations at least: "
                               "held-out data scored no better than the prior, twice."),
        "fail_epochs": Threshold(1.5, "epochs at the last train point",
                                 "Half an epoch of examples seen a second time: any model that "
                                 "reads its input fits examples it has seen, so a train loss "
                                 "still at the prior's entropy there is a FAIL. Before it (or "
                                 "without an epoch column) the argument rests on the level "
                                 "alone: WARN."),
    },
    fires=Example({"loss": [0.717, 0.689, 0.688, 0.683, 0.689, 0.679, 0.682, 0.676, 0.678, 0.673],
                   "epoch": [0.2, 0.8, 1.6, 2.4, 3.2, 4.0, 4.8, 5.6, 6.4, 7.2],
                   "eval_loss": [0.691, 0.668, 0.677, 0.671]},
                  note="a binary classifier at the class prior for seven epochs"),
    passes=Example({"loss": [0.717, 0.66, 0.58, 0.49, 0.41, 0.35, 0.31, 0.28, 0.26, 0.25],
                    "epoch": [0.2, 0.8, 1.6, 2.4, 3.2, 4.0, 4.8, 5.6, 6.4, 7.2],
                    "eval_loss": [0.62, 0.48, 0.41, 0.39]},
                   note="the same start, a classifier that learned"),
    limits="Assumes the loss is a cross-entropy in nats over K classes: a loss in bits, or a "
    "sum over tokens, is at another level and is not judged. An eval loss is required (a log "
    "without one is not judged: the level of the train loss alone is not enough to tell a "
    "classifier from an LM plateau). An LM whose loss happens to start within 10 % of ln 2, "
    "3 or 4 and stays flat there, eval included, reads as one; it learned nothing either, "
    "and TP-DEAD-RUN usually says so first. RL and preference objectives are not judged. An "
    "eval accuracy, where logged, is shown with the loss a constant prediction of that majority "
    "scores (two classes); it never decides. A log too short for the trend test (fewer than nine "
    "block medians) whose Theil-Sen fall - through the block medians, or through every point from "
    "the first to the last, whichever is larger - exceeds max_drift is not judged, a skip saying so "
    "(fresh48's namanau9, a 7-class classifier whose loss sits at ln 3 by coincidence and falls "
    "steadily 1.167 -> 1.076 in twelve epochs, read 3 % through three block medians cut by one "
    "point, 7 % through its points): cut "
    "three points short, a binary classifier falling 0.71 -> 0.60 (public run jasonzeng24) or a "
    "3-class one falling 1.17 -> 0.96 in seven points (sid-diamond) stays inside the band, and "
    "only the trend test could have told that fall from a settling bias.",
)


def _classes(start: float) -> int | None:
    """The K of 2..max_classes whose ln K is nearest the start (log ratio), if within the band."""
    ks = np.arange(2, int(PRIOR_ONLY.t("max_classes")) + 1)
    off = np.abs(np.log(start / np.log(ks)))
    i = int(np.argmin(off))
    return int(ks[i]) if off[i] <= np.log1p(PRIOR_ONLY.t("band")) else None


def _in_band(values: np.ndarray, ln_k: float) -> bool:
    band = PRIOR_ONLY.t("band")
    return bool(((values >= (1 - band) * ln_k) & (values <= (1 + band) * ln_k)).all())


def _accuracy(run: Run, k: int) -> str:
    """The eval accuracy, shown beside the finding (it never decides it). A constant
    prediction's accuracy is the majority share m, and for two classes its loss is at
    best the binary entropy of m: the two agree when the model predicts the prior."""
    acc = run.get("eval_accuracy")
    a = acc.finite_only() if acc is not None else None
    if a is None or len(a) == 0:
        return ""
    last = float(a.values[-1])
    said = f" (eval accuracy {a.values[0]:.3g} -> {last:.3g}"
    m = max(last, 1.0 - last)
    if k == 2 and 0.0 < m < 1.0:
        h = -(m * np.log(m) + (1 - m) * np.log(1 - m))
        said += f"; predicting a {m:.1%} majority always scores {h:.4g} at best"
    return said + ")"


def _fall_through_points(s: Series) -> float:
    """The Theil-Sen fall of the log of the loss across the whole log, point by point (a short
    log: O(n^2) pairs is nothing), as a share of where the line starts."""
    drop = -stats.theil_sen(np.log(s.values)) * (len(s) - 1)
    return float(-np.expm1(-drop))


def _epoch_at_end(run: Run, s: Series) -> float | None:
    at = epoch_at(run, s.steps[-1:])
    return None if at is None else float(at[0])


@check("prior-only", PRIOR_ONLY)
def prior_only(run: Run) -> list[Finding] | Skip:
    r = PRIOR_ONLY
    if surrogate(run):
        return Skip(SkipKind.COVERED, "the loss is an RL or preference objective, not a cross-entropy")
    s = finite_loss(run, int(r.t("min_points")))
    if isinstance(s, Skip):
        return s
    ev = run.get("eval_loss")
    if ev is None:
        return Skip(SkipKind.NO_DATA, "no eval loss: a train level alone cannot tell a classifier from an LM")
    if not ev.finite.all() or len(ev) < r.t("min_evals"):
        return Skip(SkipKind.TOO_FEW, f"{int(ev.finite.sum())} finite evaluation(s)")
    start = float(s.values[0])
    k = _classes(start) if start > 0 else None
    if k is None:
        return []  # the run does not start at ln K for a small K
    ln_k = float(np.log(k))
    b = loss_blocks(s)
    if not (_in_band(b.medians, ln_k) and _in_band(ev.values, ln_k)):
        return []  # some block or evaluation left what a constant prediction reaches
    dead = rise.loss_not_improving(run)
    if not isinstance(dead, Skip) and dead:
        return Skip(SkipKind.COVERED, "TP-DEAD-RUN fails the run: it owns a loss that never moved")
    sigma = loss_noise(s)
    trend = sf.steady_fall(s, start, 1.0, rise.DEAD_RUN.t, b, sigma)
    if trend is not None and trend.learned and trend.fall > r.t("max_drift"):
        return []  # falling block after block by more than a bias settling can: slow learning
    few = trend is not None and not sf.can_show_fall(trend.blocks, rise.DEAD_RUN.t)
    # Too few blocks for the trend test: the fall is also read through every point, from the
    # first to the last - the line through a few block medians spans only their centres (three
    # 3-point blocks of an 11-point log: 6 of its 10 intervals) and under-reads a slow, steady fall.
    fall = max(trend.fall, _fall_through_points(s)) if few and trend is not None else None
    if fall is not None and fall > r.t("max_drift"):
        # a fall past what a settling bias reaches is then no evidence either way, and a FAIL
        # needs evidence
        return Skip(SkipKind.TOO_FEW, f"not judged: the loss fell {fall:.1%} (Theil-Sen), more than a "
                    f"settling bias reaches ({r.t('max_drift'):.0%}), over {trend.blocks} block medians, too few "
                    "for the trend test to tell a steady fall")
    end_epoch = _epoch_at_end(run, s)
    past = end_epoch is not None and end_epoch >= r.t("fail_epochs")
    level_why = ("" if past else
                 f"; WARN, not FAIL: the log ends before epoch {r.t('fail_epochs'):g}"
                 if end_epoch is not None else "; WARN, not FAIL: no epoch column says an epoch passed")
    measured = (f"Mann-Kendall z {trend.z:.1f}, Theil-Sen fall {trend.fall:.1%}" if trend is not None
                else "not measured")
    finding = r.finding(
        Location(run.path, float(s.steps[0])), start=start, first=float(s.steps[0]), k=k, ln_k=ln_k,
        low=float(b.medians.min()), high=float(b.medians.max()), lo_share=float(b.medians.min() / ln_k),
        hi_share=float(b.medians.max() / ln_k), end_epoch=end_epoch,
        through=(f"through epoch {end_epoch:.2f}" if end_epoch is not None
                 else f"through step {s.steps[-1]:g}"),
        n_eval=len(ev), eval_low=float(ev.values.min()), eval_high=float(ev.values.max()),
        accuracy=_accuracy(run, k), trend=measured, level_why=level_why)
    return [finding if past else replace(finding, level=Level.WARN)]
