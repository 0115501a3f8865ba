"""Resume integrity: whether a run that was stopped and started again carried on where it
stopped. TP-RESUMED (rules/resume.py) reports where a log's step counter went back; the
rules here judge what the curves show across such a boundary:

- TP-RESUME-WARMUP: the learning rate fell off its schedule and warmed up again from the
  start, re-tracing the run's own warm-up: the scheduler's state was not restored (HF's
  Trainer resumes without optimizer.pt or scheduler.pt that way, and says nothing). The
  LR curve shows it whether or not the log shows a boundary (a trainer_state.json resumed
  from a checkpoint has none).
- TP-RESUME-REPLAY: the step counter restarted at the log's start, but the loss carried on
  from its pre-boundary level rather than from the run's starting level: trained weights
  were loaded and the loop (its counter, data position and schedule) began again.

Measured in units of the log itself (shares of the peak LR, the loss's own noise), so the
verdict does not depend on the logging interval or the loss's units."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules import resume  # noqa: F401  (registers the resume check these follow)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gradients import G, finite_series, where
from trainproof.schedule import SAME_LR, read_schedule

# ---------------------------------------------------------------- the schedule restarted

_EX_LR_WARM = [0.1, 0.2, 0.3, 0.4]  # an example run's warm-up (LR in any unit)
_EX_LR_DECAY = [0.38, 0.36, 0.34, 0.32, 0.3, 0.28]
_EX_LOSS = [round(3.0 - 0.05 * i, 2) for i in range(20)]

WARMUP_AGAIN = rule(
    id="TP-RESUME-WARMUP", level=Level.FAIL, group=G,
    title="The learning-rate schedule started over from warm-up in the middle of the run.",
    evidence="around step {step}: the schedule stood at {before} ({before_share:.0%} of the peak "
    "{peak}) and the LR went to {trough}, then re-traced the run's own warm-up ({matched} "
    "point(s) within {limit_retrace_tol:.0%} of the peak of it){how} (>= {limit_min_drop:.0%})",
    summary="After a resume the LR goes back to where warm-up began and warms up again, "
    "instead of continuing the decay it was on.",
    why="The scheduler's state was lost at the resume: the rest of the run trains at a "
    "schedule nobody chose (a second warm-up to the peak, a decay that ends later and higher "
    "than planned), usually because the optimizer's state was lost with it (fresh Adam "
    "moments). transformers' Trainer resumed from a checkpoint without optimizer.pt or "
    "scheduler.pt does exactly this without a warning; so does a new Trainer started from "
    "the checkpoint's weights. The run is not the recipe it claims to be.",
    fix="Resume with the optimizer and scheduler state (keep optimizer.pt and scheduler.pt in "
    "the checkpoint; `trainer.train(resume_from_checkpoint=...)`, not a new Trainer on "
    "`from_pretrained(checkpoint)`); re-run from the last checkpoint that has them.",
    thresholds={
        "min_drop": Threshold(
            0.25, "of the peak LR",
            "How far the LR left the schedule it was on: without a boundary in the log, the "
            "pre-boundary schedule (carried on to where the new warm-up began) stood this far above "
            "the warm-up's start - a cyclic (triangular) schedule reaches its trough by its own "
            "decay (a fall of ~0), a scheduler lost mid-run falls by half the peak or more; at a "
            "boundary the log shows, the new warm-up climbed this far above where the schedule "
            "stood (a run resumed late in its decay goes back up to the peak)."),
        "retrace_tol": Threshold(
            0.1, "of the peak LR",
            "Each point of the new rise must sit within a tenth of the peak of the run's first "
            "warm-up at the same distance from its start: a restarted scheduler repeats its "
            "warm-up exactly (loggers round LRs to 3-4 digits, far inside this). And the rise "
            "must climb more than that tenth above its trough: points that stay within the band "
            "of the trough lie on every line through it, flat ones included - a decay that "
            "flattened at its end (YOLOv5's per-batch warm-up times a decaying schedule, on a "
            "dataset of a few batches: a hump whose tail holds still) is not a warm-up again."),
        "min_matched": Threshold(
            2, "points",
            "The trough and at least one point of the rise after it: one low point alone could be "
            "any dip, two on the warm-up line are the warm-up again."),
        "min_points": Threshold(
            4, "LR points",
            "Two points of the run's own warm-up and two of the rise that repeats it."),
        "max_start_share": Threshold(
            0.5, "of the peak LR",
            "The run's own warm-up must start at most half-way to the peak, so that starting over "
            "is a visible fall; a run without a warm-up gives nothing to recognise."),
    },
    fires=Example({"loss": _EX_LOSS, "lr": _EX_LR_WARM + _EX_LR_DECAY + _EX_LR_WARM + _EX_LR_DECAY},
                  note="warm-up, part of the decay, then the same warm-up again from its start"),
    passes=Example({"loss": _EX_LOSS, "lr": [*_EX_LR_WARM, 0.3, 0.2, *_EX_LR_WARM, 0.3, 0.2, *_EX_LR_WARM, 0.3, 0.2]},
                   note="a triangular cyclic schedule: each trough reached by its own decay"),
    limits="Re-warming on purpose (continued pre-training that warms a decayed model up again "
    "in the same log) looks the same and fires; a schedule restarted without a warm-up (a "
    "jump straight back to the peak) is not told apart from cosine-with-restarts and does not.",
)


def _initial_warmup(steps: np.ndarray, values: np.ndarray, end: float) -> tuple[np.ndarray, np.ndarray]:
    """The run's first warm-up as (steps, non-decreasing LRs), up to its end step."""
    k = int(np.searchsorted(steps, end, side="right"))
    return steps[:k], np.maximum.accumulate(values[:k])


def _warmup_step(lr: np.ndarray, ws: np.ndarray, wv: np.ndarray) -> np.ndarray:
    """The steps of the first warm-up at which it had the LRs `lr` (linear below its first point)."""
    slope = (wv[1] - wv[0]) / (ws[1] - ws[0])
    inside = np.interp(lr, wv, ws)
    if slope <= 0:
        return inside
    return np.where(lr >= wv[0], inside, ws[0] - (wv[0] - lr) / slope)


def _warmup_lr(at: np.ndarray, ws: np.ndarray, wv: np.ndarray) -> np.ndarray:
    """The first warm-up's LRs at the steps `at` (linear below its first point, as `_warmup_step`)."""
    slope = (wv[1] - wv[0]) / (ws[1] - ws[0])
    inside = np.interp(at, ws, wv)
    return np.where(at >= ws[0], inside, np.maximum(wv[0] - (ws[0] - at) * slope, 0.0))


class _Rises(NamedTuple):
    """Every rise after a fall (the schedule's restarts), measured at once: trough index,
    last index of the rise, the shift that lays the first warm-up over it, where the
    schedule before it stood when that warm-up would have begun (the line through the two
    points before the trough, carried on), and how far the LR fell from there / climbed above it."""

    trough: np.ndarray
    end: np.ndarray
    shift: np.ndarray
    before: np.ndarray
    drop: np.ndarray
    climb: np.ndarray


def _rises(s: Series, restarts: tuple[float, ...], ws: np.ndarray, wv: np.ndarray) -> _Rises:
    steps, values = s.steps, s.values
    t = np.searchsorted(steps, np.asarray(restarts)) - 1
    t = t[t >= 2]
    downs = np.flatnonzero(values[1:] < values[:-1] * (1.0 - SAME_LR))
    k = np.searchsorted(downs, t)
    end = np.full(t.size, values.size - 1)
    end[k < downs.size] = downs[k[k < downs.size]]  # the rise ends where the LR next falls
    shift = steps[t] - _warmup_step(values[t], ws, wv)
    s1, s2, v1, v2 = steps[t - 2], steps[t - 1], values[t - 2], values[t - 1]
    slope = np.where(s2 > s1, (v2 - v1) / np.where(s2 > s1, s2 - s1, 1.0), 0.0)
    before = np.maximum(v2 + slope * np.maximum(ws[0] + shift - s2, 0.0), 0.0)
    return _Rises(t, end, shift, before, before - wv[0], values[end] - before)


def _retraced(s: Series, r: _Rises, i: int, ws: np.ndarray, wv: np.ndarray, tol: float) -> int:
    """How many points of rise `i` (from its trough, within the warm-up's length) lie on the
    first warm-up laid over it; 0 when any of them is off it by more than `tol`, or when they
    never climb more than `tol` above the trough (flat points lie on any line within the band)."""
    at = s.steps[r.trough[i]:r.end[i] + 1] - r.shift[i]
    on = at <= ws[-1]  # a prefix: steps increase
    got = s.values[r.trough[i]:r.end[i] + 1][on]
    if np.any(np.abs(got - _warmup_lr(at[on], ws, wv)) > tol) or not got.size or got.max() - got[0] <= tol:
        return 0
    return int(got.size)


def _boundary_at(run: Run, s: Series, t: int) -> dict | None:
    """The resume boundary of the LR log that the point `t` follows, when there is one."""
    found = run.meta.get("resumes")
    for b in (found.get("lr") or []) if isinstance(found, dict) else []:
        at = np.searchsorted(s.steps, b["to"]) if b["kind"] == "resume" else \
            np.searchsorted(s.steps, b["from"], side="right")
        if int(at) == t:
            return b
    return None


def _judged_restart(run: Run, s: Series, r: _Rises, i: int, peak: float) -> str | None:
    """Why rise `i` is the schedule started over (the phrase the evidence ends with), or
    None. With a boundary in the log at the trough, the LR climbing back above where the
    schedule stood says it; without one, the fall off the schedule must say it, so that a
    cyclic schedule's trough is not taken for a restart. A counter restarted with the loss
    back at its start is a new run in the same log, not a resume."""
    b = _boundary_at(run, s, int(r.trough[i]))
    limit = WARMUP_AGAIN.t("min_drop") * peak
    if b is not None and b["kind"] == "restart" and not _weights_carried(run, b):
        return None
    if b is not None and r.climb[i] >= limit:
        return (f"; at the log's resume boundary (step {b['from']:g} -> {b['to']:g}) the LR climbed "
                f"back {r.climb[i] / peak:.0%} of the peak above where the schedule stood")
    if r.drop[i] >= limit:
        return f"; a fall off the schedule of {r.drop[i] / peak:.0%} of the peak"
    return None


def _has_boundary(run: Run) -> bool:
    found = run.meta.get("resumes")
    return isinstance(found, dict) and bool(found.get("lr"))


@check("resume-warmup", WARMUP_AGAIN, after="resume")
def schedule_started_over(run: Run) -> list[Finding] | Skip:
    s = finite_series(run, "lr", WARMUP_AGAIN.t("min_points"))
    if isinstance(s, Skip):
        return s
    sched = read_schedule(run)
    peak = sched.peak_lr
    if sched.warmup_end is None or sched.warming_up or not peak:
        return Skip(SkipKind.DEGENERATE, "no completed warm-up in the LR log to recognise a restart of")
    ws, wv = _initial_warmup(s.steps, s.values, sched.warmup_end)
    if ws.size < 2 or wv[0] > WARMUP_AGAIN.t("max_start_share") * peak:
        return Skip(SkipKind.DEGENERATE, "the run's warm-up starts too close to its peak to recognise")
    if not sched.restarts:
        return []  # the schedule never rose again after its warm-up
    r = _rises(s, sched.restarts, ws, wv)
    # Only rises that could be judged a restart are traced against the warm-up: a cyclic
    # schedule has thousands of rises on a long log, none with a fall off its schedule.
    limit = WARMUP_AGAIN.t("min_drop") * peak
    maybe = np.flatnonzero((r.drop >= limit) | (r.climb >= limit)) if _has_boundary(run) else \
        np.flatnonzero(r.drop >= limit)
    tol = WARMUP_AGAIN.t("retrace_tol") * peak
    for i in maybe.tolist():
        matched = _retraced(s, r, i, ws, wv, tol)
        how = _judged_restart(run, s, r, i, peak) if matched >= WARMUP_AGAIN.t("min_matched") else None
        if how is not None:
            step = float(s.steps[r.trough[i]])
            return [WARMUP_AGAIN.finding(
                where(run, step), step=step, before=float(r.before[i]), before_share=float(r.before[i]) / peak,
                peak=peak, trough=float(s.values[r.trough[i]]), matched=matched, how=how)]
    return []


# ---------------------------------------------------------------- the loop started over

_EX_STEPS = list(range(1, 13)) + list(range(1, 7))
_EX_RUN1 = [3.0, 2.7, 2.4, 2.2, 2.0, 1.85, 1.7, 1.6, 1.5, 1.45, 1.4, 1.35]
_EX_LR = [1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 1.0, 0.95, 0.9, 0.85, 0.8, 0.75]

REPLAYED = rule(
    id="TP-RESUME-REPLAY", level=Level.WARN, group=G,
    title="The step counter started over but the loss carried on: trained weights began the run again.",
    evidence="the counter went back from step {from_step:g} to {to_step:g}; the loss after it "
    "({after}) sits near its level before ({before}), not near the run's start ({start}): "
    "{carried:.0%} of the gain kept >= {limit_carried:.0%}, after a gain of {gain_se:.0f} "
    "standard errors of the loss's noise",
    summary="A step counter and LR schedule restarted from the beginning while the loss continues "
    "from where it was: the weights were carried over, the training loop's state was not.",
    why="A new run started from a checkpoint's weights (`from_pretrained(checkpoint)` and a "
    "new Trainer, or a loop that restores the model only) counts from 0 again and, with the "
    "same seed, feeds the same batches in the same order: the data of the steps before the "
    "boundary is trained twice, and the schedule warms up and decays again. A resume that "
    "writes its overlap again (the counter goes back into the log, not to its start) is a "
    "sound resume and is not this.",
    fix="Resume the run itself (`trainer.train(resume_from_checkpoint=...)`, or restore the "
    "optimizer, scheduler, step and data position in your loop); if a second stage was meant, "
    "log it to its own file.",
    thresholds={
        "carried": Threshold(
            0.5, "of the loss's gain before the boundary",
            "The loss after the boundary has kept at least half of what the run had gained: it "
            "is nearer the pre-boundary level than the start, so the weights were the trained "
            "ones. A second run from scratch appended to the log starts near 0 % of it."),
        "min_gain_se": Threshold(
            6, "standard errors",
            "The run must have moved from its start by this many standard errors of the median "
            "of an edge window (the log's own noise), so that 'back at the start' and 'carried "
            "on' are told apart by far more than the noise."),
        "edge": Threshold(
            0.1, "of the loss points",
            "Each level (the run's start, before the boundary, after it) is the median of a "
            "tenth of the log's loss points (at least min_edge): a share, so thinning the log "
            "does not move the levels."),
        "min_edge": Threshold(3, "points", "The smallest window with a majority."),
        "min_points": Threshold(
            9, "loss points",
            "Three levels of min_edge points each: the run's start, before the boundary, after it."),
        "lr_tol": Threshold(
            0.1, "of the peak LR",
            "The loop itself started over: the first min_edge LRs after the boundary repeat the "
            "run's first ones within a tenth of the peak, and the last ones before it do not (a "
            "counter that restarts while the schedule goes on is a logger counting per process "
            "or per epoch, and a constant LR cannot say)."),
    },
    fires=Example({"loss": [*_EX_RUN1, 1.34, 1.3, 1.28, 1.26, 1.24, 1.22], "lr": _EX_LR, "steps": _EX_STEPS},
                  note="a new run from the trained weights: counter and schedule from the start again"),
    passes=Example({"loss": _EX_RUN1 + _EX_RUN1[:6], "lr": _EX_LR, "steps": _EX_STEPS},
                   note="a second run from scratch appended to the same log"),
    limits="Only counters restarted at or below the log's first step are judged (the parser "
    "continues them; rules/resume.py). A loop that counts steps per epoch restarts its "
    "counter every epoch and keeps its schedule going, so it is not judged; nor is a log without "
    "an LR column.",
)


def _loss_levels(run: Run) -> tuple[Series, int] | Skip:
    """The finite positive loss and the edge window its levels are medians of."""
    s = finite_series(run, "loss", REPLAYED.t("min_points"))
    if isinstance(s, Skip):
        return s
    if s.values.min() <= 0:
        return Skip(SkipKind.DEGENERATE, "loss is not positive; loss levels are compared as ratios")
    return s, max(int(REPLAYED.t("min_edge")), int(REPLAYED.t("edge") * s.values.size))


def _weights_carried(run: Run, b: dict) -> bool:
    """Whether the loss after the restart boundary `b` kept the gain made before it."""
    got = _loss_levels(run)
    if isinstance(got, Skip):
        return False
    m = _replay_at(got[0], b, got[1])
    return m is not None and _carried(m)


def _carried(m: dict) -> bool:
    """The loss after the boundary kept enough of a gain far larger than the noise."""
    return m["carried"] >= REPLAYED.t("carried") and m["gain_se"] >= REPLAYED.t("min_gain_se")


def _replay_at(s: Series, b: dict, k: int) -> dict | None:
    """The start, pre- and post-boundary loss levels around one restart boundary."""
    i = int(np.searchsorted(s.steps, b["from"], side="right"))
    if i < 2 * k or s.values.size - i < k:
        return None
    start, before = stats.median(s.values[:k]), stats.median(s.values[i - k:i])
    after = stats.median(s.values[i:i + k])
    sigma = stats.log_noise(s.values[:i])
    gain = float(np.log(start / before))
    se = stats.MEDIAN_SE * sigma * np.sqrt(2.0 / k)
    if gain <= 0 or se <= 0:
        return None
    return {"start": float(start), "before": float(before), "after": float(after),
            "carried": float(np.log(start / after) / gain), "gain_se": gain / se}


def _schedule_from_start(lr: Series, b: dict) -> bool:
    """Whether the LRs after the boundary `b` repeat the run's first LRs at the same distance
    from its start, while the last ones before it differ from them: the schedule began again.
    Where the restarted counter's first logged step falls between the log's own logging
    points is not known, so the repeat is matched at the best of a few alignments within
    one logging interval."""
    m = int(REPLAYED.t("min_edge"))
    i = int(np.searchsorted(lr.steps, b["from"], side="right"))
    if i < m or lr.values.size - i < m:
        return False
    v, st = lr.values, lr.steps
    tol = REPLAYED.t("lr_tol") * float(np.nanmax(v))
    gap = float(st[i + 1] - st[i]) if i + 1 < st.size else 0.0
    at = st[i:i + m] - st[i] + st[0]
    again = min(float(np.max(np.abs(v[i:i + m] - np.interp(at + d, st[:i], v[:i]))))
                for d in np.linspace(-gap, gap, 9)) <= tol
    moved = float(np.max(np.abs(v[i - m:i] - v[:m]))) > tol
    return again and moved


@check("resume-replay", REPLAYED, after="resume-warmup")
def loop_started_over(run: Run) -> list[Finding] | Skip:
    found = run.meta.get("resumes")
    bounds = [b for b in (found.get("loss") or []) if b.get("kind") == "restart"] if isinstance(found, dict) else []
    if not bounds:
        return []  # no counter went back to the log's start: nothing began again
    lr = run.get("lr")
    if lr is None:
        return Skip(SkipKind.NO_DATA, "no LR column: a restarted counter alone does not say the loop started over")
    got = _loss_levels(run)
    if isinstance(got, Skip):
        return got
    s, k = got
    for b in bounds:
        m = _replay_at(s, b, k)
        if m and _carried(m) and _schedule_from_start(lr, b):
            return [REPLAYED.finding(where(run, b["from"]), from_step=b["from"], to_step=b["to"], **m)]
    return []
