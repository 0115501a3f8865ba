"""Single-run rule on a finished run whose warm-up never ended (TP-WARMUP-NEVER-ENDED):
the log shows the run reached its planned end (max_steps, or num_train_epochs) with its
learning rate still rising at the last logged point. Such a run never trained at the LR
it was configured for - warmup_steps at or past max_steps, or a warmup_ratio / scheduler
built for another length. While a run is in progress the same LR curve is only an early
log (TP-TOO-EARLY, rules/gate.py); once the run is over it is a configuration finding.
Declared once here; the judge below is the only code that decides whether it fires
(rules/gate.py's `finished` reads whether a log reached its planned end)."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import EPOCH_SLACK, G, finished, judged_series
from trainproof.schedule import read_schedule

WARMUP_NEVER_ENDED = rule(
    id="TP-WARMUP-NEVER-ENDED", level=Level.WARN, group=G,
    title="The run finished with its learning rate still in warm-up.",
    evidence="the LR rose from {lr_first:.3g} to {lr_last:.3g} over {n_lr} logged values and was still "
    "rising at step {last:g}, the end of the run ({how}): it never trained at its planned LR; "
    "{metric} {start:.4g} -> {end:.4g} (median of the last {k}), a {gain:.1%} gain "
    "(< {limit_clear_gain:.0%})",
    summary="The log reached its planned end (max_steps, or num_train_epochs), its learning "
    "rate rose up to the last logged point (the warm-up was as long as the run or longer), and "
    "the loss made no clear gain.",
    why="Warm-up exists to bring the LR up to the rate the run is planned at; a run that ends "
    "inside it trained at a fraction of that rate throughout, so what it learned (often "
    "little: the loss barely moves) says nothing about the configuration that was meant. The "
    "usual cause is a warmup_steps at or past max_steps, or a warmup_ratio or scheduler built "
    "for a longer run (epochs changed, a smoke run reusing a full run's settings). WARN, not "
    "FAIL: the run did train, a deliberate LR range test looks the same, and whether the "
    "weights are usable is for the loss rules to say.",
    fix="Set warmup_steps well below max_steps (or warmup_ratio for this run's length), and "
    "check the scheduler is built for the number of steps the run actually takes.",
    thresholds={
        "min_points": Threshold(
            3, "logged LR values",
            "Two rises in a row: one step between two logged values is too little to call a "
            "schedule; three values that keep rising to the end are a warm-up."),
        "clear_gain": Threshold(
            0.10, "fraction of the first loss",
            "TP-DEAD-RUN's clear_improvement: a loss that ended 10 % below its first point "
            "learned, and a warm-up slip that cost the run nothing its log shows is not worth a "
            "WARN (on the public runs, finished runs in warm-up whose loss fell 15-99 % are "
            "labelled PASS; fresh5's jeevakrishna, 1.7 %, is broken). Below it the run trained "
            "at a fraction of its LR and barely moved: the slip is the likely cause. The "
            "progress checks stay closed either way (rules/gate.py)."),
        # When a log reached its planned end (rules/gate.py, `finished`).
        "epoch_slack": EPOCH_SLACK,
    },
    fires=Example({"loss": [4.77, 4.78, 4.76, 4.76, 4.71, 4.69],
                   "lr": [1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6], "meta": {"max_steps": 6}},
                  note="max_steps is the last step: the run finished"),
    passes=Example({"loss": [4.77, 4.5, 4.1, 3.6, 3.2, 3.0],
                    "lr": [1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6], "meta": {"max_steps": 6}},
                   note="the same slip, but the loss fell 37 %: it learned anyway"),
    limits="Warm-up is read from the logged LR (schedule.py): a log without an LR column is "
    "never judged. A run is finished when its last logged step reaches max_steps (HF "
    "trainer_state.json; total_steps for LLaMA-Factory), or, without one, when its epoch "
    "column reaches num_train_epochs; a log with neither, or a checkpoint cut before the end, "
    "is in progress and TP-TOO-EARLY's. A finished run in warm-up whose loss fell by clear_gain "
    "is not flagged (TP-TOO-EARLY's INFO says its progress was not judged). An LR range test (a "
    "rising LR on purpose) reads the same.",
)


def never_ended(run: Run) -> dict[str, object] | None:
    """The finding's values when the run finished inside warm-up and its loss made no clear
    gain; None otherwise (also when there is no LR or loss to read)."""
    lr, s = run.get("lr"), judged_series(run)
    if lr is None or s is None:
        return None
    lr, s = lr.finite_only(), s.finite_only()
    if len(lr) < WARMUP_NEVER_ENDED.t("min_points") or len(s) < 2:
        return None
    sched = read_schedule(run)
    how = finished(run, sched, WARMUP_NEVER_ENDED.t("epoch_slack")) if sched.warming_up else ""
    if not how:
        return None
    # The end is a median of the last fifth (at least one point), as TP-DEAD-RUN's end.
    k = max(1, len(s) // 5)
    start, end = float(s.values[0]), stats.robust_median(s.values[-k:])
    gain = (start - end) / start if start > 0 else np.nan
    if not np.isfinite(gain) or gain >= WARMUP_NEVER_ENDED.t("clear_gain"):
        return None  # it learned anyway: the slip cost nothing the log can show
    return {"lr_first": float(lr.values[0]), "lr_last": float(lr.values[-1]), "n_lr": len(lr),
            "last": float(sched.last_step if sched.last_step is not None else lr.steps[-1]), "how": how,
            "metric": s.name, "start": start, "end": end, "gain": gain, "k": k}


@check("warmup-end", WARMUP_NEVER_ENDED)
def warmup_never_ended(run: Run) -> list[Finding] | Skip:
    if run.get("lr") is None:
        return Skip(SkipKind.NO_DATA, "no LR column in the log")
    got = never_ended(run)
    if got is None:
        return []
    return [WARMUP_NEVER_ENDED.finding(Location(run.path, got["last"]), **got)]  # type: ignore[arg-type]
