"""Single-run rules on the trainer's own skip counters: Megatron-LM and NeMo print
"number of skipped iterations" and "number of nan iterations" per logging interval,
DeepSpeed a running `skipped=` total (the text-log reader turns it into per-interval
counts). A skipped iteration is one whose optimizer step the dynamic loss scaler
threw away because the gradients overflowed; Megatron counts it as a NaN iteration
when the loss itself was non-finite. The logged loss scale itself (`loss_scale`:
Megatron's "loss scale:", fairseq's loss_scale, a loop's GradScaler.get_scale()) is
judged by TP-LOSS-SCALE-COLLAPSE: a scale that fell to its floor and stayed there is a
scaler that has given up. Declared once here; each judge below is the only code that
decides whether its rule fires."""

from __future__ import annotations

import numpy as np

from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import finite_series
from trainproof.stats import median

G = "single_run"

_CALIBRATION = Threshold(
    64, "skipped iterations",
    "Dynamic loss scalers start high (Megatron 2^32, DeepSpeed 2^16) and halve the scale "
    "after `hysteresis` (default 2) overflows in a row: finding a workable scale costs at "
    "most 32 x 2 skipped iterations, and a scaler still skipping every iteration after that "
    "many has no scale left that works.")

SKIPPED_ITERS = rule(
    id="TP-SKIPPED-ITERS", level=Level.WARN, group=G,
    title="Many optimizer steps were skipped.",
    evidence="{skipped} of {iterations} iterations skipped after the first {limit_calibration} "
    "(the loss scaler's calibration): {share:.1%} > {limit_share:.0%}; the most in one interval "
    "ending at step {step}",
    summary="After the loss scaler calibrated, a large share of iterations was still skipped.",
    why="A skipped iteration costs a full forward and backward pass and updates nothing. A "
    "calibrated scaler raises its scale every loss_scale_window (1,000 by default) good "
    "iterations and overflows about once each time: about 0.1 % skipped. Far more means the "
    "gradients themselves overflow fp16 often, and the run pays for steps it never takes.",
    fix="Switch to bf16 if the hardware has it; otherwise lower the learning rate, clip "
    "gradients, raise the scaler's hysteresis or min scale, and look for the layer whose "
    "activations grow (attention logits, an un-normalised residual).",
    thresholds={
        "share": Threshold(0.05, "of iterations",
                           "Fifty times the ~0.1 % a calibrated scaler skips by design: one step "
                           "in twenty wasted is no longer the scaler probing its limit."),
        "calibration": _CALIBRATION,
        "min_points": Threshold(1, "skip-counter points", "One logged interval with its count "
                                "is a measurement; the share is over every iteration logged."),
    },
    fires=Example({"loss": [3.0 - 0.01 * i for i in range(150)], "skipped_iters": [1, 1, 0] * 50},
                  note="one iteration per logged step: 100 of 150 skipped, 36 past the allowance"),
    passes=Example({"loss": [3.0 - 0.01 * i for i in range(150)], "skipped_iters": [1] * 60 + [0] * 90},
                   note="60 skipped at the start while the scaler calibrates, none after"),
    limits="Iterations are counted from the logged step numbers, so the first interval of a "
    "log that starts mid-run is taken to be as long as the typical one.",
)

UPDATES_STOPPED = rule(
    id="TP-UPDATES-STOPPED", level=Level.FAIL, group=G,
    title="The optimizer stopped updating: every recent iteration was skipped.",
    evidence="the last {count} iterations (steps {first_step}..{step}) were all skipped, "
    "{nan} of them with a NaN loss; >= {limit_run} in a row means no loss scale works",
    summary="Every iteration of the last logged intervals, at least the calibration allowance, "
    "was skipped by the loss scaler.",
    why="A run that skips every step trains nothing while it burns its budget, and its "
    "printed loss (often only the finite ones) can look quietly flat. The weights or the "
    "optimizer state are usually already non-finite.",
    fix="Stop the run; resume from the last checkpoint before the skips began with a lower "
    "learning rate or bf16, and check that checkpoint for NaN/Inf weights "
    "(`trainproof env --checkpoint`).",
    thresholds={"run": _CALIBRATION,
                "min_points": Threshold(1, "skip-counter points", "One interval can hold a whole "
                                        "run of skipped iterations (Megatron logs every 100).")},
    fires=Example({"loss": [3.0 - 0.01 * i for i in range(80)], "skipped_iters": [0] * 10 + [1] * 70},
                  note="one iteration per logged step: the last 70 all skipped"),
    passes=Example({"loss": [3.0 - 0.01 * i for i in range(80)], "skipped_iters": [0] * 30 + [1] * 50},
                   note="50 in a row at the end: still within what calibration can take"),
)

NAN_ITERS = rule(
    id="TP-NAN-ITERS", level=Level.INFO, group=G,
    title="The trainer skipped iterations whose loss was NaN.",
    evidence="{nan} NaN iteration(s) counted by the trainer, the first in the interval ending at "
    "step {step}; their updates were skipped",
    summary="The trainer's own NaN-iteration counter is not zero.",
    why="Megatron-LM prints a NaN loss nowhere else: the loss column simply leaves those "
    "iterations out. Skipped, they did not touch the weights; counted here so they are not "
    "invisible. When they keep coming, TP-UPDATES-STOPPED says so.",
    fix="Find the batch (consumed samples at that step) if they recur; a few isolated ones "
    "after a data shard change usually point at a bad sample.",
    thresholds={"min_points": Threshold(1, "nan-counter points", "One non-zero count is the "
                                        "finding.")},
    fires=Example({"loss": [3.0, 2.8, 2.7, 2.6], "nan_iters": [0, 1, 0, 0]}),
    passes=Example({"loss": [3.0, 2.8, 2.7, 2.6], "nan_iters": [0, 0, 0, 0]}),
)


def _interval_lengths(s: Series) -> np.ndarray:
    """Iterations per logged interval, from the step numbers: each count covers the
    iterations since the previous log line. The first interval is as long as the typical
    one (a resumed log's first step says nothing about where its interval began)."""
    gaps = np.diff(s.steps)
    typical = float(median(gaps)) if gaps.size else 1.0
    first = min(float(s.steps[0]), typical) if s.steps[0] > 0 else typical
    return np.maximum(np.concatenate(([first], gaps)), 1.0)


def _counts(run: Run, name: str, rule_) -> tuple[Series, np.ndarray] | Skip:
    s = run.get(name)
    if s is None:
        return Skip(SkipKind.NO_DATA, f"no {name} column in the log")
    s = s.finite_only()
    if len(s) < rule_.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"no finite {name} points")
    return s, np.clip(s.values, 0, None)


@check("skipped-iters", SKIPPED_ITERS, UPDATES_STOPPED)
def skipped_iterations(run: Run) -> list[Finding] | Skip:
    got = _counts(run, "skipped_iters", SKIPPED_ITERS)
    if isinstance(got, Skip):
        return got
    s, skipped = got
    lengths = _interval_lengths(s)
    skipped = np.minimum(skipped, lengths)
    out: list[Finding] = []
    allowance = SKIPPED_ITERS.t("calibration")
    late = max(float(skipped.sum()) - allowance, 0.0)
    total = float(lengths.sum())
    if late / total > SKIPPED_ITERS.t("share"):
        worst = int(np.argmax(skipped))
        out.append(SKIPPED_ITERS.finding(Location(run.path, float(s.steps[worst])), skipped=int(late),
                                         iterations=int(total), share=late / total,
                                         step=float(s.steps[worst])))
    full = skipped >= lengths
    tail = len(full) - int(np.argmin(full[::-1])) if not full.all() else 0
    tail_len = float(lengths[tail:].sum()) if not full.all() else total
    if full[-1] and tail_len >= UPDATES_STOPPED.t("run"):
        nan = run.get("nan_iters")
        in_tail = nan.values[nan.steps >= s.steps[tail]] if nan is not None else np.array([])
        out.append(UPDATES_STOPPED.finding(
            Location(run.path, float(s.steps[-1])), count=int(tail_len),
            first_step=float(s.steps[tail] - lengths[tail] + 1), step=float(s.steps[-1]),
            nan=int(np.nansum(in_tail))))
    return out


@check("nan-iters", NAN_ITERS)
def nan_iterations(run: Run) -> list[Finding] | Skip:
    got = _counts(run, "nan_iters", NAN_ITERS)
    if isinstance(got, Skip):
        return got
    s, nan = got
    if nan.sum() <= 0:
        return []
    first = int(np.flatnonzero(nan > 0)[0])
    return [NAN_ITERS.finding(Location(run.path, float(s.steps[first])), nan=int(nan.sum()),
                              step=float(s.steps[first]))]


# ---------------------------------------------------------------- the loss scale itself

LOSS_SCALE_COLLAPSE = rule(
    id="TP-LOSS-SCALE-COLLAPSE", level=Level.FAIL, group=G,
    title="The fp16 loss scale collapsed to its floor and stayed there.",
    evidence="loss scale {end} at step {step}; at or below {limit_floor} on the last {points} logged "
    "points, since step {since} ({iterations} iterations >= {limit_hold}); at most {tail_top} on the "
    "last {limit_min_points} points, {fall:.3g}x below the highest logged, {peak} (>= {limit_min_fall}x)",
    summary="The dynamic loss scale fell from its working level to 1 or below and was still "
    "there at the end of the log.",
    why="A dynamic loss scaler halves its scale on every overflowing step (skipping it) and "
    "doubles it after a window of clean steps (torch 2000, Megatron and DeepSpeed 1000). A "
    "scale that ends at or below 1 means overflows kept coming faster than the window: every "
    "gradient that does overflow is skipped, and every small one is flushed to zero in fp16 "
    "because nothing scales it up any more. The loss can stay finite and look merely "
    "plateaued while the model has stopped learning (evidence/curve/amp_scale_collapse: the "
    "scale reaches 1 by step 25 and the loss stalls at 3.7 where the healthy twin reaches 2.7).",
    fix="Find the non-finite gradient's source (an epsilon outside a square root, log(0), a "
    "division by a count that can be zero, an fp16 activation past 65504); prefer bf16; "
    "resume from a checkpoint from before the scale fell.",
    thresholds={
        "floor": Threshold(1.0, "loss scale",
                           "Megatron-LM's and DeepSpeed's default min_loss_scale: at 1 the fp16 "
                           "gradients are not scaled at all. torch's GradScaler has no floor and "
                           "keeps halving below it."),
        "min_fall": Threshold(256, "x below its highest logged value",
                              "The end (the highest of the last min_points values) sits eight "
                              "halvings at least below the highest logged scale: a run that logs a "
                              "constant scale of 1 (bf16 or fp32 under Megatron prints `loss scale: "
                              "1.0`) or a small static scale never had a dynamic scale to lose."),
        "hold": Threshold(_CALIBRATION.value, "iterations", "At or below the floor for at least "
                          "this many iterations up to the last logged point: "
                          + _CALIBRATION.why),
        "min_points": Threshold(3, "loss-scale points", "Three logged points in a row at the floor "
                                "at the end, so one dip that the next window regrows is not a "
                                "collapse."),
    },
    fires=Example({"loss": [3.0 - 0.005 * i for i in range(100)],
                   "loss_scale": [65536.0 / 2 ** min(i, 24) for i in range(100)]},
                  note="one iteration per logged step: halved at every step, at or below 1 from step 17"),
    passes=Example({"loss": [3.0 - 0.005 * i for i in range(100)],
                    "loss_scale": [65536.0] * 10 + [32768.0] * 90},
                   note="one overflow early on, then a steady scale"),
    limits="Needs the scale logged (`loss_scale`, Megatron's `loss scale:`, fairseq's loss_scale). "
    "A scale that fell and regrew before the end of the log is not flagged; a run configured "
    "with a static scale of 1 or less never fell and is not either.",
)


@check("loss-scale", LOSS_SCALE_COLLAPSE)
def loss_scale_collapse(run: Run) -> list[Finding] | Skip:
    s = finite_series(run, "loss_scale", int(LOSS_SCALE_COLLAPSE.t("min_points")))
    if isinstance(s, Skip):
        return s
    if s.values.min() < 0:
        return Skip(SkipKind.DEGENERATE, "a negative loss scale: not a loss scaler's")
    low = s.values <= LOSS_SCALE_COLLAPSE.t("floor")
    if not low[-1]:
        return []
    # the first point of the final run at the floor (the whole log when every point is)
    start = len(low) - int(np.argmin(low[::-1])) if not low.all() else 0
    points = len(low) - start
    iterations = float(_interval_lengths(s)[start:].sum())
    # How far it fell: from the highest logged scale to where the end holds it (the highest
    # of the last min_points). A constant scale of 1 (bf16) never fell; a torch scaler,
    # which has no floor, may have passed 1 before the first logged point and still be
    # seen falling far below it.
    peak = float(s.values.max())
    tail_top = float(s.values[-int(LOSS_SCALE_COLLAPSE.t("min_points")):].max())
    fall = peak / tail_top if tail_top > 0 else float("inf")
    if (points < LOSS_SCALE_COLLAPSE.t("min_points") or iterations < LOSS_SCALE_COLLAPSE.t("hold")
            or fall < LOSS_SCALE_COLLAPSE.t("min_fall")):
        return []
    return [LOSS_SCALE_COLLAPSE.finding(
        Location(run.path, float(s.steps[start])), end=float(s.values[-1]), step=float(s.steps[-1]),
        points=points, since=float(s.steps[start]), iterations=int(iterations), peak=peak, fall=fall,
        tail_top=tail_top)]
