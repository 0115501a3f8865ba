"""Single-run rule on the eval loss beside an error rate measured on the same evaluation:
a loss that says the model predicts its targets almost perfectly, and a word or character
error rate that says its transcriptions are almost all wrong (TP-EVAL-METRIC-CONFLICT,
FAIL). A near-zero eval loss alone can be an easy task; the metric beside it is what
makes it implausible. Declared once here; the judge below is the only code that decides
whether it fires.

The arithmetic behind it: a cross-entropy L is a mean of -log p over target tokens, so by
Markov's inequality at most L / ln 2 of the targets have p < 0.5, i.e. are not the model's
first choice under teacher forcing. At L = 0.01 that is 1.4 % of tokens; greedy decoding
follows the reference until its first such token, so a sequence shorter than a few
hundred tokens is mostly reproduced and its error rate is small. An error rate near 100 %
beside it means the targets the loss scores are not the references the metric compares
with: decoder inputs that contain the labels unshifted (the model learns to copy, and has
nothing to copy when it generates), labels that are padding or empty."""

from __future__ import annotations

import numpy as np

from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules import evalcurve  # noqa: F401  (registers eval-curve, which this check follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, where

# Error rates read, as parsers/columns.py names them. Accuracy is not read: in a Trainer it
# is computed from the same logits and label ids as the loss, so a contradiction there is a
# bug in the metric code, not in the run; and a sequence-level accuracy has no bound from a
# per-token loss without the sequence length.
ERROR_RATES = ("eval_wer", "eval_cer")

EVAL_METRIC_CONFLICT = rule(
    id="TP-EVAL-METRIC-CONFLICT", level=Level.FAIL, group=G,
    title="Eval loss says the model predicts its targets perfectly while the error rate on the "
    "same evaluations says its output is useless.",
    evidence="{metric} {wer_low:.1f}-{wer_high:.1f} % (>= {useless_pct:g} %) while the eval loss is "
    "{loss_low:.2g}-{loss_high:.2g} (<= {limit_near_zero:g}) at {n} evaluations, steps {first:g}-"
    "{last:g}, the last one included; {metric} read as a percentage ({unit})",
    summary="At two or more evaluations, the last included, the eval loss is at most 0.01 while "
    "the word or character error rate logged with it is at least 90 %.",
    why="A cross-entropy of 0.01 leaves at most 1.4 % of target tokens outside the model's "
    "first choice (Markov: L / ln 2), so decoding reproduces most of each reference and the "
    "error rate must be small. An error rate near 100 % on the same evaluation means the loss "
    "scores targets that are not the references: labels fed to the decoder unshifted (the "
    "model copies its input, which it does not have when it generates), labels that are "
    "padding or empty. The loss is then no measure of the task, and the run trained the model "
    "to do something else.",
    fix="Decode one eval batch: print the label ids as text next to the generated text and the "
    "reference. Check that the decoder inputs are the labels shifted right (let the model "
    "build them from `labels`), that padding in labels is -100, and that labels are not empty.",
    thresholds={
        "near_zero": Threshold(0.01, "loss units (nats)",
                               "At most 1.4 % of target tokens off the model's first choice "
                               "(L / ln 2); TP-UNSEEN-NEAR-ZERO's level for a loss that says "
                               "'perfect'."),
        "useless": Threshold(0.9, "error rate as a fraction",
                             "Nine words (or characters) in ten wrong: the output shares almost "
                             "nothing with the references. Against 1.4 % of tokens off under "
                             "teacher forcing, this needs the first miss in the first tenth of "
                             "every reference, which the loss allows only for references of "
                             "about 600 tokens or more (Whisper's decoder holds 448)."),
        "percent_above": Threshold(1.5, "in the metric's own units",
                                   "The unit is read from the values: a series with any value "
                                   "above 1.5 is a percentage (a fraction that high means 1.5 "
                                   "errors per reference word). A series that stays at or below "
                                   "1.5 is either a fraction or the percentage of a near-perfect "
                                   "model, and a near-zero loss agrees with the second reading: "
                                   "it is not judged."),
        "min_points": Threshold(2, "evaluations",
                               "Never one point: the loss and the metric disagree at two "
                               "evaluations, and still at the last one."),
    },
    fires=Example({"loss": [0.72, 0.31, 0.08, 0.07, 0.03, 0.01], "eval_loss": [0.0054, 0.0011, 0.0006],
                   "eval_wer": [98.9, 99.6, 99.7]},
                  note="a Whisper LoRA whose eval loss reaches 0.0006 while it transcribes nothing"),
    passes=Example({"loss": [0.72, 0.31, 0.08, 0.07, 0.03, 0.01], "eval_loss": [0.0054, 0.0011, 0.0006],
                    "eval_wer": [4.1, 2.2, 1.9]},
                   note="a narrow-vocabulary recogniser: near-zero loss and a WER that agrees"),
    limits="Reads eval_wer and eval_cer (parsers/columns.py spellings), paired with the eval "
    "loss logged at the same step. A WER logged as a fraction is judged only when some value "
    "exceeds 1.5; otherwise it cannot be told from a percentage under 1.5 % and the rule is "
    "silent. Accuracy is not read: the Trainer computes it from the same logits and labels as "
    "the loss, so a contradiction there is a bug in the metric code, not in the run. A loss "
    "that is not a cross-entropy over the generated tokens (a CTC loss summed rather than "
    "averaged) is not near zero and is not judged.",
)


def _as_fraction(s: Series) -> np.ndarray | None:
    """The error rate as a fraction, or None when its unit cannot be told."""
    if s.values.max() <= EVAL_METRIC_CONFLICT.t("percent_above"):
        return None
    return s.values / 100.0


def _conflict(run: Run, name: str, ev: Series) -> Finding | None:
    r = EVAL_METRIC_CONFLICT
    s = run.get(name)
    m = s.finite_only() if s is not None else None
    if m is None or len(m) == 0 or (frac := _as_fraction(m)) is None:
        return None
    steps, i_ev, i_m = np.intersect1d(ev.steps, m.steps, return_indices=True)
    if steps.size == 0:
        return None
    loss, err = ev.values[i_ev], frac[i_m]
    bad = (loss >= 0) & (loss <= r.t("near_zero")) & (err >= r.t("useless"))
    if bad.sum() < r.t("min_points") or not bad[-1]:
        return None
    return r.finding(where(run, steps[bad][0]), metric=name, wer_low=float(err[bad].min() * 100),
                     wer_high=float(err[bad].max() * 100), useless_pct=r.t("useless") * 100,
                     loss_low=float(loss[bad].min()), loss_high=float(loss[bad].max()), n=int(bad.sum()),
                     first=float(steps[bad][0]), last=float(steps[bad][-1]),
                     unit=f"values up to {m.values.max():.4g}")


@check("eval-metric", EVAL_METRIC_CONFLICT, after="eval-curve")
def eval_metric_conflict(run: Run) -> list[Finding] | Skip:
    ev = run.get("eval_loss")
    if ev is None:
        return Skip(SkipKind.NO_DATA, "no eval_loss in the log")
    if not any(run.get(n) is not None for n in ERROR_RATES):
        return Skip(SkipKind.NO_DATA, "no eval_wer or eval_cer beside the eval loss")
    found = [f for n in ERROR_RATES if (f := _conflict(run, n, ev.finite_only())) is not None]
    return found[:1]  # one finding per run: the WER's, else the CER's
