"""Single-run timing rules: is the run slow, and why. GPU utilisation and throughput
are context (INFO), never a verdict: low utilisation has too many innocent causes."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule

G = "single_run"

STEP_CLIFF = rule(
    id="TP-STEP-CLIFF", level=Level.WARN, group=G,
    title="Step time jumped and stayed up.",
    evidence="median step time {late} s over the last {window} points vs {early} s over the {window} after the first "
    "({ratio:.1f}x > {limit_ratio}x); first slow step {step}",
    summary="Steps late in the run take several times longer than early ones.",
    why="A sustained slowdown multiplies the bill: memory fragmentation, a leak that pushes "
    "into swap, thermal throttling, a dataloader that exhausted its cache, or a "
    "synchronisation introduced mid-run (eval, checkpoint) that never went away.",
    fix="Profile a slow step; check host memory, data pipeline and any per-step logging or "
    "syncs added by callbacks.",
    thresholds={
        "ratio": Threshold(3, "x early median", "Jitter and eval pauses stay well under 3x "
                           "when medians over a quarter of the run are compared."),
        "min_points": Threshold(10, "points", "Each quarter needs a median of several points."),
        "window_share": Threshold(0.25, "of the step_time points", "The early and late medians are "
                                  "each over a quarter of the run: long enough that eval and "
                                  "checkpoint pauses are outvoted, short enough to see a late cliff."),
        "min_window": Threshold(2, "points", "A median of fewer than 2 points is one step's time."),
    },
    fires=Example({"loss": [1.0] * 12, "step_time": [0.5] * 6 + [2.0] * 6}),
    passes=Example({"loss": [1.0] * 12, "step_time": [0.5, 0.52, 0.49, 0.5, 0.51, 0.5] * 2}),
    limits="The first logged step is left out of the early median: compilation and cache "
    "warm-up make it slow in healthy runs.",
)


@check("step-time", STEP_CLIFF)
def step_time_cliff(run: Run) -> list[Finding] | Skip:
    st = run.get("step_time")
    if st is None:
        return Skip(SkipKind.NO_DATA, "no step_time column in the log")
    f = st.finite_only()
    if len(f) < STEP_CLIFF.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(f)} step_time points, needs {int(STEP_CLIFF.t('min_points'))}")
    q = max(int(STEP_CLIFF.t("min_window")), int(len(f) * STEP_CLIFF.t("window_share")))
    early = stats.robust_median(f.values[1:q + 1])
    late = stats.robust_median(f.values[-q:])
    if early <= 0:
        return Skip(SkipKind.DEGENERATE, "early step time is not positive")
    if late > STEP_CLIFF.t("ratio") * early:
        slow = np.flatnonzero(f.values > STEP_CLIFF.t("ratio") * early)
        step = float(f.steps[slow[0]]) if slow.size else float(f.steps[-q])
        return [STEP_CLIFF.finding(Location(run.path, step), late=late, early=early,
                                   ratio=late / early, step=step, window=q)]
    return []


LOADER_BOUND = rule(
    id="TP-LOADER-BOUND", level=Level.WARN, group=G,
    title="Data loading dominates the step.",
    evidence="median loader_time/step_time {ratio:.2f} > {limit_ratio} over {n} steps "
    "(median loader {loader} s, step {step} s)",
    summary="Waiting for data takes more than half of a typical step.",
    why="The accelerator idles while the input pipeline catches up: the run costs up to "
    "twice what the hardware needs.",
    fix="More dataloader workers, pinned memory, pre-tokenised or cached data, faster storage.",
    thresholds={"ratio": Threshold(0.5, "loader/step", "Above half, the loader, not the model, "
                                   "sets the pace."),
                "min_points": Threshold(3, "steps with both timings", "A median of three is the "
                                        "smallest that one slow batch cannot set.")},
    fires=Example({"loss": [1.0] * 5, "step_time": [1.0] * 5, "loader_time": [0.8] * 5}),
    passes=Example({"loss": [1.0] * 5, "step_time": [1.0] * 5, "loader_time": [0.05] * 5}),
    limits="Logs differ in whether step_time includes loading; the ratio is read as logged.",
)


@check("loader", LOADER_BOUND)
def loader_bound(run: Run) -> list[Finding] | Skip:
    lt, st = run.get("loader_time"), run.get("step_time")
    if lt is None or st is None:
        return Skip(SkipKind.NO_DATA, "no loader_time/step_time pair in the log")
    _, li, si = np.intersect1d(lt.steps, st.steps, return_indices=True)
    lv, sv = lt.values[li], st.values[si]
    ok = np.isfinite(lv) & np.isfinite(sv) & (sv > 0)
    if ok.sum() < LOADER_BOUND.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{int(ok.sum())} steps with both timings, needs "
                    f"{int(LOADER_BOUND.t('min_points'))}")
    ratio = stats.robust_median(lv[ok] / sv[ok])
    if ratio > LOADER_BOUND.t("ratio"):
        return [LOADER_BOUND.finding(Location(run.path), ratio=ratio, n=int(ok.sum()),
                                     loader=stats.robust_median(lv[ok]),
                                     step=stats.robust_median(sv[ok]))]
    return []


THROUGHPUT = rule(
    id="TP-THROUGHPUT", level=Level.INFO, group=G,
    title="Throughput (context only).",
    evidence="median step time {median} s ({rate:.3g} steps/s) over {n} steps; p90 {p90} s",
    summary="Reports the typical step time; never changes a verdict.",
    why="A number to compare against the next run and the budget, not a judgement.",
    fix="Nothing to fix.",
    thresholds={"min_points": Threshold(1, "positive step times", "Context, not a verdict: one "
                                        "timed step is a number to show.")},
    fires=Example({"loss": [1.0] * 3, "step_time": [0.5, 0.5, 0.6]}),
    passes=Example({"loss": [1.0] * 3}),
)


@check("throughput", THROUGHPUT)
def throughput(run: Run) -> list[Finding] | Skip:
    st = run.get("step_time")
    if st is None:
        return Skip(SkipKind.NO_DATA, "no step_time column in the log")
    f = st.finite_only().values
    f = f[f > 0]
    if f.size < THROUGHPUT.t("min_points"):
        return Skip(SkipKind.DEGENERATE, "no positive step time")
    med = stats.robust_median(f)
    return [THROUGHPUT.finding(Location(run.path), median=med, rate=1.0 / med, n=int(f.size),
                               p90=float(np.percentile(f, 90)))]


GPU_UTIL = rule(
    id="TP-GPU-UTIL", level=Level.INFO, group=G,
    title="GPU utilisation (context only).",
    evidence="median GPU utilisation {median:.0f} % over {n} samples (min {min:.0f} %)",
    summary="Reports GPU utilisation as logged; never changes a verdict.",
    why="Low utilisation has many innocent causes (small models, eval phases, logging "
    "cadence); it is shown to help read TP-LOADER-BOUND and TP-STEP-CLIFF, not to judge.",
    fix="Nothing to fix.",
    thresholds={"min_points": Threshold(1, "samples", "Context, not a verdict: one sample is a "
                                        "number to show.")},
    fires=Example({"loss": [1.0] * 3, "gpu_util": [90, 95, 40]}),
    passes=Example({"loss": [1.0] * 3}),
)


@check("gpu-util", GPU_UTIL)
def gpu_utilisation(run: Run) -> list[Finding] | Skip:
    g = run.get("gpu_util")
    if g is None:
        return Skip(SkipKind.NO_DATA, "no gpu_util column in the log")
    f = g.finite_only().values
    if f.size < GPU_UTIL.t("min_points"):
        return Skip(SkipKind.DEGENERATE, "no finite gpu_util value")
    return [GPU_UTIL.finding(Location(run.path), median=stats.robust_median(f), n=int(f.size),
                             min=float(f.min()))]
