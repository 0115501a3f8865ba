"""Single-run rules on the gradient: non-finite values (TP-NAN, TP-NAN-GRAD, TP-NAN-GRAD-SKIPPED;
TP-EVAL-NAN-TRANSIENT in rules/eval_nan.py) and spikes (TP-GRAD-SPIKE, TP-GRAD-SPIKE-ISOLATED),
and the test they share: did the loss react? They read a curve as an engineer does - an odd
point matters when the loss reacts to it, when it repeats or when it lasts, not because it is
the largest of the run. Declared once here with their thresholds; the judge below each is the
only code that decides whether it fires. Exact zeros (loss, gradient, LR) are rules/zeros.py's;
rules/run.py places its checks around these so reports list findings in the order they always have."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from trainproof import memo, stats
from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.schedule import read_schedule

G = "single_run"


def where(run: Run, step: float | None = None) -> Location:
    """Where a finding points: the log, at a step when one is known."""
    return Location(run.path, None if step is None else float(step))


def finite_series(run: Run, name: str, minimum: float) -> Series | Skip:
    """The finite points of `name`, or a typed skip when it is absent or has fewer than `minimum`."""
    if (s := run.get(name)) is None:
        return Skip(SkipKind.NO_DATA, f"no {name} column in the log")
    f = s.finite_only()
    if len(f) < minimum:
        return Skip(SkipKind.TOO_FEW, f"{len(f)} finite {name} points, needs {int(minimum)}")
    return f


def finite_loss(run: Run, minimum: int) -> Series | Skip:
    """The finite loss points, or a typed skip when there are fewer than `minimum`."""
    return finite_series(run, "loss", minimum)


# ---------------------------------------------------------------- did the loss react?

_REACT_POINTS = Threshold(
    3, "loss points",
    "A bad update shows in the loss at the next logged points (the weights it wrote are the "
    "ones those batches see); three catch it while it lasts and a later, unrelated wobble "
    "less often. The loss logged at the event's own step is part of the baseline: a bad batch "
    "and the spike it causes share that step.")
_REACT = Threshold(
    4, "noise units",
    "The loss reacted when the highest of those points sits this many units of the loss's "
    "point-to-point noise (robust, measured on the points before, floored by the whole log's; "
    "of log loss when the loss is positive, so the yardstick is relative) above the median of "
    "the points before: the largest of three draws of noise exceeds 4 sigma about once in 10,000.")
_BASELINE = Threshold(
    10, "logged points",
    "Local baselines are medians of the ten points before: enough that one earlier spike "
    "does not move them, short enough to follow a gradient norm or loss that drifts by 10x "
    "over a run.")


class LossView(NamedTuple):
    """The loss as the reaction test reads it, measured once per run."""

    series: Series | None
    log: bool  # every finite loss is > 0: rises are judged as ratios (log space)
    sigma: float  # the whole log's point-to-point noise: the floor under local estimates


_SPIKE_MIN_BASELINE = Threshold(5, "logged points", "A local median or noise of fewer points is "
                                "one or two values, not a baseline.")


def loss_view(run: Run) -> LossView:
    """The run's loss, whether it is judged in log space, and its whole-log noise."""
    if (s := run.get("loss")) is None:
        return LossView(None, False, 0.0)
    v = s.finite_only().values
    log = bool(v.size) and bool(np.all(v > 0))
    return LossView(s, log, stats.log_noise(v) if log else stats.point_noise(v))


def reaction(view: LossView, step: float) -> float | None:
    """How far the loss rose in the `_REACT_POINTS` points after `step` above its median
    over the `_BASELINE` points up to it, in noise units (of the ratio when the loss is
    positive, so a loss that shrinks 10x over the run is judged by the same yardstick at
    both ends); inf when one of them is NaN/Inf or the NaN filter's 0.0; None when no
    loss point follows or precedes (nothing shows how the run went on)."""
    loss = view.series
    if loss is None:
        return None
    # The loss logged at `step` belongs to the baseline: HF logs the mean over the interval
    # the norm closes, so a high-loss batch and the spike it causes share a step - a cause,
    # not a consequence (a TrOCR run's 0.49 among 0.13s at its spike, back at 0.15 next).
    j = int(np.searchsorted(loss.steps, step, side="right"))  # steps ascend (Series)
    at = int(np.searchsorted(loss.steps, step, side="left"))
    w = int(_BASELINE.value)
    after = loss.values[j: j + int(_REACT_POINTS.value)]
    before = loss.values[max(0, j - 4 * w): j]
    before = before[np.isfinite(before)][-w:]
    if after.size == 0 or before.size == 0:
        return None
    earlier = loss.values[max(0, at - w): at]
    if not np.isfinite(after).all() or (np.any(loss.values[at: j + len(after)] == 0) and np.all(earlier != 0)):
        return float("inf")  # NaN, or HF's NaN filter logging 0.0 from the event's step on
    if view.log:
        after, before = np.log(after), np.log(before)
    rise = float(after.max() - stats.median(before))
    local = stats.point_noise(before) if before.size >= _SPIKE_MIN_BASELINE.value else 0.0
    sigma = max(local, view.sigma)
    if sigma <= 0:
        return float("inf") if rise > 0 else 0.0
    return rise / sigma


# ---------------------------------------------------------------- non-finite values

NAN = rule(
    id="TP-NAN", level=Level.FAIL, group=G,
    title="Loss is NaN or Inf.",
    evidence="{count} non-finite {metric} value(s) of {n}; first at step {step} ({value})",
    summary="A logged loss (train or eval) is NaN or infinite.",
    why="A non-finite loss means the weights or the optimizer state are already poisoned; "
    "every later step trains on garbage.",
    fix="Lower the learning rate, enable gradient clipping, use bf16 instead of fp16 or a "
    "loss scaler, and look for log(0) or division by zero in the loss.",
    thresholds={"min_points": Threshold(1, "points", "One non-finite value is the finding itself; "
                                        "no baseline or trend is needed.")},
    fires=Example({"loss": [2.0, 1.8, float("nan"), 1.7]}),
    passes=Example({"loss": [2.0, 1.8, 1.75, 1.7]}),
)

NAN_GRAD = rule(
    id="TP-NAN-GRAD", level=Level.FAIL, group=G,
    title="Gradient norm is NaN or Inf.",
    evidence="{count} non-finite grad_norm value(s) of {n}; first at step {step} ({value}); {reason}{hidden}",
    summary="Non-finite gradient norms that the loss scaler did not absorb: more than a "
    "calibrating scaler skips, one the loss reacted to, or one at the end of the log.",
    why="HF Trainer's logging_nan_inf_filter (on by default) drops NaN/Inf losses from the "
    "logged average, so a non-finite gradient norm is often the only trace that the "
    "update blew up. An fp16 loss scaler skips such steps; repeated ones, or a loss that "
    "jumps or turns NaN after one, mean it cannot.",
    fix="As for TP-NAN: lower the learning rate, clip gradients, prefer bf16; check whether "
    "the logged loss at those steps is an artefact of the NaN filter.",
    thresholds={
        "min_points": Threshold(1, "grad_norm points", "One non-finite norm the loss reacts to "
                                "is the finding."),
        "max_count": Threshold(5, "non-finite norms", "A dynamic loss scaler starts high "
                               "(torch GradScaler 2^16) and halves on each overflow: finding a "
                               "workable fp16 scale costs a handful of skipped steps."),
        "max_share": Threshold(0.01, "of logged grad_norm points", "On a long log the allowance "
                               "grows to one point in a hundred: 20x the one step in 2,000 a "
                               "calibrated GradScaler skips when it probes a higher scale."),
        "react_points": _REACT_POINTS, "react": _REACT, "baseline": _BASELINE,
    },
    fires=Example({"loss": [2.0, 1.8, 1.7, 1.6, 1.5, 6.0, 9.0, 12.0],
                   "grad_norm": [1.0, 1.1, 0.9, 1.0, float("inf"), 30.0, 40.0, 50.0]}),
    passes=Example({"loss": [2.0, 1.8, 1.7, 1.6, 1.5], "grad_norm": [1.0, 0.9, 1.2, 1.1, 1.0]}),
)

NAN_GRAD_SKIPPED = rule(
    id="TP-NAN-GRAD-SKIPPED", level=Level.INFO, group=G,
    title="The loss scaler skipped steps with a non-finite gradient; the loss did not react.",
    evidence="{count} isolated non-finite grad_norm value(s) of {n} (<= {allowance:g} allowed), "
    "first at step {step}; the loss rose at most {worst:.1f} noise units after them (< {limit_react})",
    summary="A few non-finite gradient norms, each followed by finite ones, with a loss that "
    "keeps its course: the fp16 loss scaler doing its job.",
    why="A dynamic loss scaler finds the largest safe fp16 scale by overflowing now and then; "
    "it skips that step and halves the scale. Counted, so a rising count is visible.",
    fix="Nothing to fix; bf16 avoids the skips where the hardware has it.",
    thresholds={"max_count": NAN_GRAD.thresholds["max_count"],
                "max_share": NAN_GRAD.thresholds["max_share"], "react": _REACT,
                "min_points": NAN_GRAD.thresholds["min_points"]},
    fires=Example({"loss": [2.0, 1.8, 1.7, 1.6, 1.5, 1.45, 1.4, 1.35],
                   "grad_norm": [1.0, 1.1, 0.9, float("inf"), 1.0, 0.9, 1.0, 1.1]}),
    passes=Example({"loss": [2.0, 1.8, 1.7, 1.6, 1.5], "grad_norm": [1.0, 0.9, 1.2, 1.1, 1.0]}),
    limits="The TP-NAN-GRAD rule keeps its meaning (a non-finite norm that matters, FAIL); "
    "scaler skips the loss shrugs off are reported under this ID instead, at INFO.",
)


def _nonfinite(run: Run, s: Series, rule_, **extra: object) -> Iterator[Finding]:
    bad = ~s.finite
    if bad.any():
        i = stats.first_index(bad)
        yield rule_.finding(
            where(run, s.steps[i]), metric=s.name, count=int(bad.sum()), n=len(s),
            step=float(s.steps[i]), value=float(s.values[i]), **extra,
        )


def _nan_grad(run: Run, g: Series) -> list[Finding]:
    """TP-NAN-GRAD when the non-finite norms matter, TP-NAN-GRAD-SKIPPED when they do not."""
    if stats.all_finite(g.values):  # the common case, without two 5M-point masks (#14)
        return []
    bad = ~g.finite
    idx = np.flatnonzero(bad)
    allowance = max(NAN_GRAD.t("max_count"), NAN_GRAD.t("max_share") * len(g))
    view = loss_view(run)
    measured = [reaction(view, float(g.steps[i])) for i in idx]
    zs = np.array([np.inf if z is None else z for z in measured])
    k = int(np.argmax(zs))
    if idx.size > allowance:
        reason = f"more than the {allowance:g} a calibrating loss scaler skips"
    elif bad[-1]:
        reason = "the last logged norm is non-finite: no later point shows the run recovered"
    elif measured[k] is None:
        reason = "no loss logged around them shows the run recovered"
    elif zs[k] > _REACT.value:
        reason = (f"the loss reacted: {zs[k]:.1f} noise units up within {int(_REACT_POINTS.value)} "
                  f"points after step {g.steps[idx[k]]:g}")
    else:
        return [NAN_GRAD_SKIPPED.finding(where(run, g.steps[idx[0]]), count=int(idx.size), n=len(g),
                                         step=float(g.steps[idx[0]]), allowance=allowance,
                                         worst=float(zs[k]))]
    return list(_nonfinite(run, g, NAN_GRAD, reason=reason, hidden=_filtered_hint(run, g)))


@check("nan", NAN, NAN_GRAD, NAN_GRAD_SKIPPED)
def non_finite_values(run: Run) -> list[Finding] | Skip:
    present = [s for s in (run.get("loss"), run.get("eval_loss")) if s is not None]
    if not present:
        return Skip(SkipKind.NO_DATA, "no loss column in the log")
    out: list[Finding] = []
    for s in present:
        if not stats.all_finite(s.values):  # no 5M-point mask (#14)
            from trainproof.rules.eval_nan import came_back  # its own check reports such an eval loss
            if came_back(run, s) is None:
                out.extend(_nonfinite(run, s, NAN))
            break  # one TP-NAN per report: the first poisoned metric is the evidence
    if (g := run.get("grad_norm")) is not None:
        out.extend(_nan_grad(run, g))
    return out


def _filtered_hint(run: Run, g: Series) -> str:
    """Say so when the loss at a non-finite-gradient step looks like HF's NaN filter at work."""
    loss = run.get("loss")
    if loss is None or stats.all_finite(g.values):
        return ""
    at = np.isin(loss.steps, g.steps[~g.finite])
    if at.any() and np.all(np.isfinite(loss.values[at])):
        return "; the loss logged at those steps is finite - HF's logging_nan_inf_filter may have hidden NaN losses"
    return ""


# ---------------------------------------------------------------- spikes

def grad_norms(run: Run, minimum: float) -> Series | Skip:
    """The finite gradient norms, or a typed skip when there are fewer than `minimum`."""
    return finite_series(run, "grad_norm", minimum)


_SPIKE = dict(
    ratio=Threshold(10, "x local median grad_norm", "Healthy runs peak <= 2.1x their median; "
                    "an order of magnitude above the norms just before is a step the optimizer "
                    "was not following."),
    floor=Threshold(1.0, "grad_norm", "HF Trainer's default clipping threshold (max_grad_norm): "
                    "a norm below it is one the default recipe treats as ordinary, so a run whose "
                    "norms sit near 1e-3 (RL fine-tunes) is not judged by a ratio alone."),
    baseline=_BASELINE,
    min_baseline=_SPIKE_MIN_BASELINE,
    drop=Threshold(3, "noise units", "The initial steep drop lasts while a loss point is still "
                   "more than 3 units of the loss's noise above the median of the next tenth of "
                   "the log: gradients are large and volatile there by design, and the loss "
                   "cannot show a reaction while it falls that fast."),
    drop_window=Threshold(0.1, "of the loss points", "'Later level' is the median of the next "
                          "tenth of the log (at least 3 points), so the drop's end does not "
                          "depend on the logging rate."),
    repeat=Threshold(3, "consecutive logged points", "A norm that stays above the spike line "
                     "for three logging intervals in a row is a stretch of instability (a "
                     "learning rate too high for the current curvature), not one bad batch; "
                     "single spikes, however many over a long run, with the loss unmoved are "
                     "batches the optimizer absorbed (a ViT LoRA in the public runs has 11 such "
                     "single spikes and a loss flat to 1 %)."),
    react_points=_REACT_POINTS, react=_REACT,
    min_points=Threshold(6, "points", "A median of fewer points is not a baseline."),
)

GRAD_SPIKE = rule(
    id="TP-GRAD-SPIKE", level=Level.WARN, group=G,
    title="Gradient norm spikes detected.",
    evidence="{spikes} grad_norm spike(s) after step {after} (warm-up and the initial loss drop "
    "excluded), each > {limit_ratio}x the median of the points before it and > {limit_floor}; "
    "largest {max} at step {step} ({ratio:.0f}x its local median {median}); {consequence}",
    summary="Gradient-norm spikes, outside warm-up and the initial steep drop, that the loss "
    "reacts to or that persist over consecutive logged points.",
    why="A spike the loss reacts to is an update that damaged the weights; a norm that stays "
    "high for several logged points means the learning rate is too high for where the run "
    "is. With clipping spikes silently shrink the effective learning rate, without it one "
    "can wreck the weights. WARN, not FAIL: "
    "lasting damage shows in the loss itself, and TP-DIVERGE / TP-LOSS-ROSE fail it there.",
    fix="Enable or tighten gradient clipping, lower the peak learning rate or lengthen "
    "warm-up; look at the batch at that step.",
    thresholds=_SPIKE,
    fires=Example({"loss": [2.0, 1.9, 1.85, 1.82, 1.8, 1.79, 1.78, 1.77, 1.76, 1.75, 3.5, 3.2, 3.0, 2.9],
                   "grad_norm": [2.0, 1.8, 1.7, 1.6, 1.6, 1.5, 1.6, 1.5, 1.5, 40.0, 9.0, 5.0, 3.0, 2.0]}),
    passes=Example({"loss": [1] * 12, "grad_norm": [0.5, 0.6, 0.5, 0.55, 0.6, 0.5, 0.9, 0.55, 0.5,
                                                      0.6, 0.5, 0.55]}),
)

GRAD_SPIKE_ISOLATED = rule(
    id="TP-GRAD-SPIKE-ISOLATED", level=Level.INFO, group=G,
    title="Isolated gradient-norm spikes; the loss did not react.",
    evidence="{spikes} grad_norm spike(s) after step {after}, never {limit_repeat} in a row; largest "
    "{max} at step {step} ({ratio:.0f}x its local median {median}); the loss rose at most "
    "{worst:.1f} noise units after any (< {limit_react})",
    summary="Gradient-norm spikes outside warm-up and the initial drop that neither persist "
    "nor move the loss: counted, not judged.",
    why="One large batch gradient that clipping or Adam's normalisation absorbs leaves no mark "
    "on the run; none of 19 such spikes in public fine-tunes preceded loss trouble.",
    fix="Nothing to fix; if they become frequent, TP-GRAD-SPIKE says so.",
    thresholds={k: _SPIKE[k] for k in ("ratio", "floor", "repeat", "react", "min_points")},
    fires=Example({"loss": [2.0, 1.9, 1.85, 1.82, 1.8, 1.79, 1.78, 1.77, 1.76, 1.75, 1.74, 1.73, 1.72],
                   "grad_norm": [2.0, 1.8, 1.7, 1.6, 1.6, 1.5, 1.6, 1.5, 1.5, 40.0, 1.5, 1.6, 1.5]}),
    passes=Example({"loss": [1] * 12, "grad_norm": [0.5] * 12}),
)


def initial_drop_end(run: Run) -> float | None:
    """The step where the loss's initial steep drop ends (_drop_end), None without a loss."""
    return None if (loss := run.get("loss")) is None else _drop_end(loss)


@memo.last_series  # asked by TP-GRAD-SPIKE and TP-SPIKE-UNRECOVERED of the same loss (#14)
def _drop_end(loss: Series) -> float | None:
    """The first point within `drop` noise units of the median of the next `drop_window`."""
    if len(f := loss.finite_only()) < 3:
        return None
    v = f.values
    m = max(3, int(v.size * _SPIKE["drop_window"].value))
    bar = _SPIKE["drop"].value * stats.point_noise(v)

    def steep(i: int) -> bool:
        ahead = v[i + 1: i + 1 + m]
        return bool(ahead.size) and stats.above_median(v[i], ahead, bar)

    # A grid of m/20 points, then the stride before the first point off the drop: ~20
    # window medians per window, not one per point (4e9 values on a 200,000-point log).
    stride = max(1, m // 20)
    i = 0
    while i < v.size and steep(i):
        i += stride
    j = max(0, i - stride + 1)
    while j < min(i, v.size) and steep(j):
        j += 1
    return float(f.steps[min(j, v.size - 1)])


def _spikes(run: Run, f: Series) -> tuple[np.ndarray, stats.AtPoints, float]:
    """(indices of judged spikes, local medians at the candidates, the start step)."""
    edges = [float(f.steps[0]), read_schedule(run).warmup_end, initial_drop_end(run)]
    start = max(e for e in edges if e is not None)
    ratio, floor = _SPIKE["ratio"].value, _SPIKE["floor"].value
    cand, med, count = stats.trailing_median_where(  # the mask asked a chunk at a time: none 5M points long
        f.values, int(_BASELINE.value), ratio, lambda lo, hi: (f.steps[lo:hi] > start) & (f.values[lo:hi] > floor))
    base = stats.AtPoints(cand, med)  # gradient_spike reads it at the spikes only
    return cand[(count >= _SPIKE["min_baseline"].value) & (f.values[cand] > ratio * med)], base, start


def _burst(idx: np.ndarray) -> int | None:
    """The first spike index that opens `repeat` spikes on consecutive points, if any."""
    k = int(_SPIKE["repeat"].value)
    if idx.size < k:
        return None
    run = (idx[k - 1:] - idx[: idx.size - k + 1]) == k - 1
    return int(idx[np.flatnonzero(run)[0]]) if run.any() else None


@check("grad-spike", GRAD_SPIKE, GRAD_SPIKE_ISOLATED)
def gradient_spike(run: Run) -> list[Finding] | Skip:
    f = grad_norms(run, _SPIKE["min_points"].value)
    if isinstance(f, Skip):
        return f
    if stats.robust_median(f.values) <= 0:
        return Skip(SkipKind.DEGENERATE, "median grad_norm is 0")
    idx, base, start = _spikes(run, f)
    if idx.size == 0:
        return []
    view = loss_view(run)
    zs = np.array([z if (z := reaction(view, float(f.steps[i]))) is not None else 0.0 for i in idx])
    reacted = zs > _REACT.value
    pick = idx[reacted] if reacted.any() else idx
    i = int(pick[np.argmax(f.values[pick] / base[pick])])
    common = dict(spikes=int(idx.size), after=start, max=float(f.values[i]), step=float(f.steps[i]),
                  median=float(base[i]), ratio=float(f.values[i] / base[i]))
    if reacted.any():
        k = int(np.flatnonzero(idx == i)[0])
        consequence = (f"the loss rose {zs[k]:.1f} noise units (> {_REACT.value:g}) within "
                       f"{int(_REACT_POINTS.value)} points after it")
    elif (burst := _burst(idx)) is not None:
        consequence = (f"the norm stayed above the spike line for {_SPIKE['repeat'].value:g} logged "
                       f"points in a row from step {f.steps[burst]:g}")
    else:
        return [GRAD_SPIKE_ISOLATED.finding(where(run, common["step"]), worst=float(zs.max()), **common)]
    return [GRAD_SPIKE.finding(where(run, common["step"]), consequence=consequence, **common)]
