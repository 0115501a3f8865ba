"""Single-run rules on exact zeros: a loss that is exactly 0 (TP-ZERO-LOSS,
TP-ZERO-LOSS-ONSET), a gradient that is (TP-ZERO-GRAD) and a learning rate at 0
(TP-ZERO-LR, TP-ZERO-LR-PARTIAL). A zero is judged as the log printed it and with the schedule in
view: a loss rounded to 0.0 after converging, or an LR passing through 0 at the trough of
a cyclic schedule, is the run working. Declared once here; the judges below are the only
code that decides whether they fire. Checks keep their place in reports (`after=`)."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, finite_loss, grad_norms, where
from trainproof.schedule import read_schedule

# ---------------------------------------------------------------- zero loss

ZERO_LOSS = rule(
    id="TP-ZERO-LOSS", level=Level.FAIL, group=G,
    title="Loss is exactly zero on every step.",
    evidence="all {n} finite loss values are exactly 0",
    summary="Every finite loss value is exactly 0.",
    why="A loss of exactly 0 means nothing is being optimised: labels fully masked (-100 "
    "everywhere), an empty target, or a loss that is not connected to the model.",
    fix="Check the label masking and the collator; print one batch's labels.",
    thresholds={"min_points": Threshold(5, "points", "Fewer points cannot tell a pattern from a "
                                        "coincidence.")},
    fires=Example({"loss": [0.0] * 6}),
    passes=Example({"loss": [0.5, 0.4, 0.3, 0.2, 0.1, 0.05]}),
    limits="A gradient norm logged beside every zero and above 0 at each says the loss was below "
    "the log's printed precision, not 0 (a loss that is really 0 has no gradient): not judged "
    "here (a log cut to its converged tail, fresh16's pavan-gl halved). A policy-gradient log "
    "(GRPO, RLOO, PPO) that logs a reward is not judged: its loss is "
    "a surrogate of zero-mean advantages, logged as 0.0 at 4 decimals on most steps of a healthy "
    "run (every other point of such a run can be exactly 0); its reward is the curve "
    "(TP-RL-REWARD-FLAT).",
)

ZERO_LOSS_ONSET = rule(
    id="TP-ZERO-LOSS-ONSET", level=Level.FAIL, group=G,
    title="Loss collapsed to exactly zero.",
    evidence="loss is exactly 0 on the last {tail} points, from step {step} on (was {before} before); {reason}",
    summary="Loss becomes exactly 0 from some step on and stays there, and that zero is not a "
    "converged loss printed at the log's precision.",
    why="A loss that was positive and then sits at exactly 0 usually means a data shard with "
    "no trainable tokens, or HF's NaN filter logging 0.0 for NaN losses. A loss that "
    "converged below what the log prints (HF rounds to 4 decimals; float32 cross-entropy "
    "underflows to 0) reaches the zeros gradually, with finite gradients and an eval loss "
    "that fell too: that is a finished fit, not a fault. A gradient norm above 0 at every zero "
    "says the same however fast the loss got there: a loss that is really 0 has no gradient.",
    fix="Inspect the batches after that step; check grad_norm there for NaN/Inf.",
    thresholds={
        "min_tail": Threshold(5, "points", "A shorter run of zeros can be a few empty batches, "
                              "not a collapse."),
        "min_points": Threshold(6, "points", "min_tail zeros after at least one positive loss: a "
                                "collapse needs a before."),
        "rounded_decimals": Threshold(6, "decimals", "A log whose every non-zero loss has at most "
                                      "this many decimals was rounded when written (HF Trainer "
                                      "rounds to 4), so its 0.0 means below half its last digit; "
                                      "float32 values print with 7-9 significant digits."),
        "fp32_resolution": Threshold(1.2e-7, "loss units", "A full-precision loss prints 0.0 when "
                                     "float32 cross-entropy underflows: -log(p) is 0 once 1 - p is "
                                     "below float32's epsilon."),
        "approach": Threshold(100, "x the printed resolution", "A converged loss reaches 0 from "
                              "values already within two digits of what the log can print; a "
                              "loss that drops to 0 from far above it fell off a cliff."),
        "fallen": Threshold(0.01, "of the first logged loss", "...and from values two orders of "
                            "magnitude below where the loss started, so a log that happens to print "
                            "few decimals (2.0, 1.5) cannot pass a cliff for convergence."),
    },
    fires=Example({"loss": [2.0, 1.5, 1.2, 0, 0, 0, 0, 0]}),
    passes=Example({"loss": [0.9, 0.2, 0.03, 0.004, 0.0008, 0.0002, 0.0001, 0, 0, 0, 0, 0],
                    "eval_loss": [0.8, 0.1, 0.01, 0.001]},
                   note="HF's 4-decimal loss converging to 0.0 with the eval loss falling to 1e-3"),
    limits="A rounded log converted to other units (nats to bits) is no longer rounded, and "
    "is judged at full precision.",
)


def _nan_filter_hint(run: Run, onset: float) -> str:
    g = run.get("grad_norm")
    if g is None:
        return ""
    after = ~np.isfinite(g.values[g.steps >= onset])
    if after.size and after.mean() > 0.5:
        return ("grad_norm is non-finite over the same steps - HF's logging_nan_inf_filter logs "
                "NaN losses as 0.0, so these zeros are most likely NaNs")
    return ""


def printed_resolution(values: np.ndarray) -> float:
    """The smallest loss difference the log can show, in loss units: 10**-d for a log whose
    every non-zero value fits d <= rounded_decimals decimals (it was rounded when written),
    else float32's resolution near 0 (a full-precision cross-entropy is quantised by
    float32's epsilon there). TP-ZERO-LOSS-ONSET and TP-LOSS-FROZEN read a log's precision
    here, so they agree on what a repeated or a zero value can mean."""
    r = ZERO_LOSS_ONSET
    d = stats.printed_decimals(values, int(r.t("rounded_decimals")))
    return 10.0 ** -d if d <= r.t("rounded_decimals") else r.t("fp32_resolution")


def _gradient_flows(run: Run, onset: float, zeros: int) -> bool:
    """A gradient norm logged beside the zeros (at least as many points as there are zeros),
    finite and above 0 at every one: a loss that really is 0 has no gradient (a masked or
    disconnected loss gives exactly 0, a filtered NaN gives NaN), so a positive one says the
    loss was below what the log prints, however fast it got there (fresh16's pavan-gl: 0.0126
    at step 500, 0.0 from step 1000 at 4 decimals, grad norm 2.5e-4 -> 1.8e-5 smoothly)."""
    g = run.get("grad_norm")
    if g is None:
        return False
    after = g.values[g.steps >= onset]
    return bool(after.size >= zeros and np.all(np.isfinite(after)) and np.all(after > 0))


def _zero_onset_reason(run: Run, s: Series, i: int) -> str | None:
    """Why the zeros from index i on are a fault, or None when they are a converged loss
    printed at the log's precision with the eval loss in view."""
    onset = float(s.steps[i])
    g = run.get("grad_norm")
    hint = _nan_filter_hint(run, onset)
    if hint or (g is not None and not np.isfinite(g.values[g.steps >= onset]).all()):
        return hint or "grad_norm is non-finite after the onset"
    r = ZERO_LOSS_ONSET
    resolution = printed_resolution(s.values[:i])
    lead = float(stats.median(np.abs(s.values[max(0, i - int(r.t("min_tail"))):i])))
    start = float(s.values[0])
    if (lead > r.t("approach") * resolution or lead > r.t("fallen") * abs(start)) \
            and not _gradient_flows(run, onset, len(s) - i):
        return (f"it dropped from {lead:.3g} (median of the points before; {lead / resolution:.0f}x the "
                f"{resolution:.2g} the log resolves, {lead / abs(start):.1%} of its first value): a cliff, "
                "not convergence")
    ev = run.get("eval_loss")
    e = ev.finite_only() if ev is not None else None
    if e is not None and len(e) >= 2 and e.values[-1] >= e.values[0]:
        return (f"the eval loss did not fall ({e.values[0]:.4g} -> {e.values[-1]:.4g}): the zero "
                "train loss is not the model fitting the data")
    return None


@check("zero-loss", ZERO_LOSS, ZERO_LOSS_ONSET, loss_curve=True, after="nan")
def loss_exactly_zero(run: Run) -> list[Finding] | Skip:
    if run.get("reward") is not None:  # GRPO's loss is ~0 by construction; rules/rl.py reads the reward
        return Skip(SkipKind.COVERED, "a policy-gradient loss (a reward is logged) sits at 0 by construction; "
                    "the reward is judged instead")
    s = finite_loss(run, int(min(ZERO_LOSS.t("min_points"), ZERO_LOSS_ONSET.t("min_points"))))
    if isinstance(s, Skip):
        return s
    if not s.values.any():  # every value exactly 0 (either sign; the values are finite)
        if len(s) >= ZERO_LOSS.t("min_points") and not _gradient_flows(run, float(s.steps[0]), len(s)):
            return [ZERO_LOSS.finding(where(run), n=len(s))]
        return []  # a gradient above 0 beside every zero: a loss below the printed precision
    # the zeros after the last non-zero, found from the end a chunk at a time (no 5M-point masks, #14)
    tail = len(s) - 1 - stats.last_where(s.values, lambda v: v != 0.0)
    if tail < ZERO_LOSS_ONSET.t("min_tail"):
        return []
    i = len(s) - tail
    reason = _zero_onset_reason(run, s, i)
    if reason is None:
        return []
    hint = _nan_filter_hint(run, float(s.steps[i]))  # `hidden` stays in values: JSON keys are never removed
    return [ZERO_LOSS_ONSET.finding(where(run, s.steps[i]), tail=tail, step=float(s.steps[i]),
                                    before=float(s.values[i - 1]), hidden=f"; {hint}" if hint else "",
                                    reason=reason)]


# ---------------------------------------------------------------- zero gradient

ZERO_GRAD = rule(
    id="TP-ZERO-GRAD", level=Level.FAIL, group=G,
    title="Gradient norm is exactly zero on every step.",
    evidence="all {n} finite grad_norm values are exactly 0",
    summary="Every finite gradient norm is exactly 0.",
    why="No gradient reaches the parameters: everything frozen, a detached loss, or all "
    "labels masked.",
    fix="Check which parameters require grad and that the loss depends on them.",
    thresholds={"min_points": Threshold(3, "points", "A zero norm on the first logged steps "
                                        "can be a logging artefact.")},
    fires=Example({"loss": [1, 1, 1, 1], "grad_norm": [0.0, 0.0, 0.0, 0.0]}),
    passes=Example({"loss": [1, 0.9, 0.8, 0.7], "grad_norm": [0.5, 0.4, 0.45, 0.4]}),
)


@check("zero-grad", ZERO_GRAD, after="zero-loss")  # run.py puts flat-loss and divergence between
def gradient_zero(run: Run) -> list[Finding] | Skip:
    f = grad_norms(run, ZERO_GRAD.t("min_points"))
    if isinstance(f, Skip):
        return f
    if not f.values.any():  # finite values, every one exactly 0 (no 5M-point mask, #14)
        return [ZERO_GRAD.finding(where(run), n=len(f))]
    return []


# ---------------------------------------------------------------- learning rate

ZERO_LR = rule(
    id="TP-ZERO-LR", level=Level.FAIL, group=G,
    title="Learning rate is zero (or negative) on essentially every step.",
    evidence="lr <= 0 on {count} of {n} logged steps ({share:.1%} >= {limit_share:.0%})",
    summary="The logged learning rate is <= 0 on (nearly) every step.",
    why="With lr = 0 the optimizer takes no step at all; the run costs its full budget and "
    "returns the initial weights.",
    fix="Check the learning-rate argument, the scheduler (warm-up that never ends, a decay "
    "that starts at 0) and per-group lr overrides.",
    thresholds={"share": Threshold(0.99, "of logged steps", "A schedule may touch 0 at its "
                                   "very first or last step; 99 % is every step that matters."),
                "min_points": Threshold(1, "lr points", "An lr of 0 on every logged step is a fact "
                                        "about the optimizer at each of them, however few.")},
    fires=Example({"loss": [1.5] * 5, "lr": [0.0] * 5}),
    passes=Example({"loss": [1.5, 1.4, 1.3, 1.2, 1.1], "lr": [1e-4] * 5}),
    limits="Not judged where the log printed the LR to a fixed number of decimals (a reader "
    "that sees it says so: Flair's loss.tsv writes `{lr:.4f}`): there 0.0000 is any LR below "
    "5e-05, which a fine-tune's often is. A run whose LR really was 0 shows it in its loss, "
    "which the dead-run rules read.",
)

ZERO_LR_PARTIAL = rule(
    id="TP-ZERO-LR-PARTIAL", level=Level.WARN, group=G,
    title="Learning rate is zero on a notable share of steps.",
    evidence="lr <= 0 on {count} of {n} logged steps ({share:.1%} > {limit_share:.0%}) in "
    "stretches of consecutive points, first at step {step}; {touches} single point(s) where "
    "the schedule passes through 0 not counted",
    summary="The logged learning rate sits at <= 0 over stretches that add up to more than a "
    "tenth of the steps.",
    why="Steps at lr = 0 are paid for and learn nothing: a warm-up that is far too long, a "
    "schedule sized for fewer steps than the run has, or a restart that reset the lr. A "
    "single logged 0 where the schedule passes through it - a warm-up from 0, a decay to 0, "
    "the trough of a cyclic or cosine-with-restarts schedule - is the schedule, not a fault.",
    fix="Match the scheduler's total steps to the run; check warm-up length and restarts.",
    thresholds={"share": Threshold(0.10, "of logged steps", "Warm-up from 0 or a decay to 0 "
                                   "costs a step or two, not a tenth of the run."),
                "touch_share": Threshold(0.25, "of logged steps", "Single zeros count too once "
                                         "they are a quarter of the log: a 'cycle' that short "
                                         "spends its run at 0, whatever its shape."),
                "min_points": ZERO_LR.thresholds["min_points"]},
    fires=Example({"loss": [1.5] * 10, "lr": [0, 0, 0, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4]}),
    passes=Example({"loss": [1.5] * 10, "lr": [1e-4, 7.5e-5, 5e-5, 2.5e-5, 0] * 2},
                   note="a cyclic schedule whose troughs touch 0 at logged steps"),
)


def _printed_below(run: Run, lr: np.ndarray) -> str | None:
    """Why the log's zeros may be a small LR rounded when written, or None. A reader that
    saw the LR printed to d decimals in fixed notation says so (Flair's loss.tsv writes
    `{lr:.4f}`: a fine-tune's 5e-6 prints 0.0000); a negative LR is still a fact."""
    d = run.meta.get("lr_printed_decimals")
    if not isinstance(d, int) or (lr < 0).any():
        return None
    return (f"the lr is printed to {d} decimals: its 0.{'0' * d} is any LR below {0.5 * 10.0 ** -d:g}, "
            "as a fine-tune's often is, not a zero the log can show")


@check("lr", ZERO_LR, ZERO_LR_PARTIAL, after="grad-spike")
def learning_rate_zero(run: Run) -> list[Finding] | Skip:
    lr = run.get("lr")
    if lr is None:
        return Skip(SkipKind.NO_DATA, "no lr column in the log")
    f = lr.finite_only()
    if len(f) < ZERO_LR.t("min_points"):
        return Skip(SkipKind.DEGENERATE, "no finite lr value")
    if ZERO_LR.t("share") > 0 <= ZERO_LR_PARTIAL.t("share") and not stats.count_where(f.values, lambda v: v <= 0):
        return []  # no lr at or below 0: both shares are 0 (counted a chunk at a time: no 5M-point mask, #14)
    zero = f.values <= 0
    rounded = _printed_below(run, f.values)
    if rounded is not None and zero.any():
        return Skip(SkipKind.DEGENERATE, rounded)
    part = stats.share(zero)
    if part >= ZERO_LR.t("share"):
        return [ZERO_LR.finding(where(run), count=int(zero.sum()), n=len(f), share=part)]
    touches = read_schedule(run).zero_touches
    if touches:
        touch = np.isin(f.steps, touches) & zero
        counted = zero & ~touch if stats.share(touch) <= ZERO_LR_PARTIAL.t("touch_share") else zero
    else:  # no touch: counted is zero whatever the share (two 5M-point masks fewer, #14)
        counted = zero
    part = stats.share(counted)
    if part > ZERO_LR_PARTIAL.t("share"):
        i = stats.first_index(counted)
        return [ZERO_LR_PARTIAL.finding(where(run, f.steps[i]), step=float(f.steps[i]), count=int(counted.sum()),
                                        n=len(f), share=part, touches=int((zero & ~counted).sum()))]
    return []
