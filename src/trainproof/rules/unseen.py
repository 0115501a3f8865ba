"""Single-run rule on the train loss where it is still a held-out measurement: in the
first epoch every batch is new to the model, so the loss logged there estimates how
well it predicts data it has not trained on. A cross-entropy near zero on such data
means the targets can be read off the inputs - a leaked or copied target, labels that
are padding or a constant - or the task is trivial; only an evaluation on held-out
data can tell which, and a log without one has nothing that vouches for the number
(TP-UNSEEN-NEAR-ZERO, WARN). Declared once here; the judge below is the only code that
decides whether it fires."""

from __future__ import annotations

from trainproof import stats
from trainproof.model import Finding, Level, Run, Skip, SkipKind
from trainproof.rules import evalcurve  # noqa: F401  (registers eval-curve, which this check follows)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import epoch_at
from trainproof.rules.gradients import G, finite_loss, where

# Raw column prefixes of objectives that are not a cross-entropy on targets: TRL's
# preference and policy-gradient trainers (DPO/KTO/ORPO `rewards/*`, `logps/*`; GRPO
# `rewards/<fn>/mean`). Their loss reaches ~0 by construction when a margin saturates.
_SURROGATE_PREFIXES = ("rewards", "logps", "logits/chosen", "logits/rejected")

UNSEEN_NEAR_ZERO = rule(
    id="TP-UNSEEN-NEAR-ZERO", level=Level.WARN, group=G,
    title="Loss is near zero on data the model has not seen yet, and no eval loss vouches for it.",
    evidence="train loss {median:.3g} (median of {n} points, epochs {start_epoch:.2f}-{end_epoch:.2f}, "
    "steps {first:g}-{last:g}) < {limit_near_zero:g} while every batch is still new to the model; "
    "no eval loss logged",
    summary="In the second half of the first epoch - batches the model has never trained on - the "
    "median train loss is below 0.01, and the log has no eval loss.",
    why="Until the first epoch ends the train loss is a held-out loss: each batch is new. A "
    "cross-entropy of 0.01 means about 99 % probability on every target token of unseen "
    "examples, which natural targets do not allow; it happens when the target leaks through "
    "the input (copied, or the labels are the inputs), when the labels are padding or a "
    "constant, or when the task is trivial. Memorising a small set drives the loss that low "
    "only after the examples repeat, i.e. after epoch 1, and is not judged here.",
    fix="Decode one batch's labels next to its inputs (are they the inputs, padding, -100 "
    "everywhere but a constant?), and log an eval loss on held-out data: if it is as low, the "
    "task is that easy and this warning goes away.",
    thresholds={
        "near_zero": Threshold(0.01, "loss units (nats)", "Mean probability about 0.99 per target "
                               "token or example. Generated text, speech and summaries carry nats "
                               "per token; on the public runs only classifiers and near-templated "
                               "answers reach this on unseen data, and those logged an eval loss that "
                               "agreed."),
        "from_epoch": Threshold(0.5, "epochs", "The second half of the first epoch: past warm-up "
                                "and the initial drop of any ordinary run, and still before any "
                                "example repeats."),
        "min_points": Threshold(5, "loss points", "A level is the median of at least five logged "
                                "points in that half epoch, so one lucky batch is not a level."),
    },
    fires=Example({"loss": [9.2, 3.1, 0.4, 0.02, 0.004, 0.002, 0.002, 0.001, 0.002, 0.001],
                   "epoch": [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95]},
                  note="a summariser at 0.002 nats/token within its first epoch, no eval loss"),
    passes=Example({"loss": [1.6, 0.6, 0.02, 0.001, 0.0006, 0.0004, 0.0002, 0.0002, 0.0002, 0.0002],
                    "epoch": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                    "eval_loss": [0.0002]},
                   note="an easy classifier whose eval loss is as low: the number is real"),
    limits="Assumes the loss is a cross-entropy. A regression or distillation loss (mean squared "
    "error in small units) can sit below 0.01 legitimately; logging an eval loss silences the "
    "rule. An eval loss is taken at its word: when the eval targets are as degenerate as the train "
    "targets (an eval loss as near zero, beside a metric such as WER that says the model is "
    "useless), the rule is silent and TP-EVAL-METRIC-CONFLICT judges the pair. A log without an "
    "epoch column cannot say where the first epoch "
    "ends and is not judged.",
)


def surrogate(run: Run) -> bool:
    """The logged loss is a policy-gradient or preference objective, not a cross-entropy."""
    return run.get("reward") is not None or any(c.startswith(_SURROGATE_PREFIXES) for c in run.columns)


@check("unseen-near-zero", UNSEEN_NEAR_ZERO, after="eval-curve")
def unseen_near_zero(run: Run) -> list[Finding] | Skip:
    r = UNSEEN_NEAR_ZERO
    if run.get("eval_loss") is not None:
        return []  # an eval loss is the evidence this rule asks for; TP-OVERFIT and TP-EVAL-DIVERGE read it
    if surrogate(run):
        return Skip(SkipKind.COVERED, "the loss is an RL or preference objective, not a cross-entropy")
    epoch = run.get("epoch")
    if epoch is None:
        return Skip(SkipKind.NO_DATA, "no epoch column: where the first epoch ends is unknown")
    s = finite_loss(run, int(r.t("min_points")))
    if isinstance(s, Skip):
        return s
    at = epoch_at(run, s.steps)
    if at is None:
        return Skip(SkipKind.NO_DATA, "no finite epoch value")
    inside = (at >= r.t("from_epoch")) & (at < 1.0)
    if inside.sum() < r.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{int(inside.sum())} loss point(s) in the second half of the first epoch")
    level = float(stats.median(s.values[inside]))
    if not 0.0 < level < r.t("near_zero"):
        return []  # an exact zero is TP-ZERO-LOSS's (-ONSET's) to judge
    steps = s.steps[inside]
    return [r.finding(where(run, steps[0]), median=level, n=int(inside.sum()), start_epoch=float(at[inside][0]),
                      end_epoch=float(at[inside][-1]), first=float(steps[0]), last=float(steps[-1]))]
