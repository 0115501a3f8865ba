"""The best checkpoint is gone: the run's best evaluation (its eval-loss minimum, or the
Trainer's own best_model_checkpoint) points at a checkpoint-N/ directory that is not in
the output directory, while later, worse checkpoints are. A Coqui Trainer run directory
is judged the same way, its best_model_N.pth / checkpoint_N.pth files matched to the
evaluations they hold. What is on disk comes from parsers/beside.py
(Run.meta["checkpoints"]); declared once here, decided by the judge below it."""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.declared import G

_CHECKPOINT = re.compile(r"checkpoint-(\d+)$")
_LOSS_METRICS = (None, "loss", "eval_loss")  # metric_for_best_model values that mean the eval loss

_EVAL = [3.6, 3.2, 3.1, 3.25, 3.4, 3.6, 3.8, 3.9]

BEST_GONE = rule(
    id="TP-BEST-CKPT-GONE", level=Level.WARN, group=G,
    title="The best checkpoint is gone; only later, worse ones are on disk.",
    evidence="{best} (eval_loss {best_loss:.4g} at step {best_step}) is not in {dir}; the best kept, "
    "{kept} (eval_loss {kept_loss:.4g}), gives back {lost:.0%} of the run's eval improvement "
    "({first_loss:.4g} -> {best_loss:.4g}){why}",
    summary="The step of the lowest eval loss (or trainer_state's best_model_checkpoint) has no "
    "checkpoint-N/ directory in the output directory (for a Coqui run: no best_model_N.pth or "
    "checkpoint_N.pth holding that evaluation's weights beside trainer_0_log.txt), while "
    "checkpoints saved after it, with a clearly higher eval loss, remain.",
    why="save_total_limit deletes the oldest checkpoints as new ones are written; the Trainer "
    "keeps the best one out of that rotation only when it tracks a best metric "
    "(load_best_model_at_end or metric_for_best_model). Without it, a run that overfits after "
    "its best evaluation ends with the best weights deleted and only the overfitted ones left: "
    "the GPU hours that reached the best model are spent and its result cannot be recovered "
    "without training again. Coqui's Trainer keeps its best model out of checkpoint rotation, "
    "but saves none before save_best_after steps (10,000 by default in early releases of its `trainer` package): "
    "an eval minimum before then is never saved, and its first BEST MODEL is a later, worse one.",
    fix="Set load_best_model_at_end=True with metric_for_best_model (the Trainer then keeps the "
    "best checkpoint), or raise save_total_limit (Coqui: lower save_best_after); to recover, "
    "retrain to the best step from the oldest checkpoint kept before it, if any.",
    thresholds={
        "lost": Threshold(0.1, "of the eval improvement",
                          "The kept checkpoints' best eval loss is compared with the run's best, "
                          "as a share of what the run gained from its first evaluation to its "
                          "best: a tenth of the gain given back is more than the wobble between "
                          "neighbouring evaluations of a converged run."),
        "noise": Threshold(3, "noise units",
                           "The gap must also stand above the eval curve's own point-to-point "
                           "noise (three times it), so a flat, noisy eval curve whose minimum "
                           "happens to fall on a rotated checkpoint is not a finding."),
        "min_points": Threshold(3, "eval points", "A first, a best and a later evaluation."),
    },
    fires=Example({"loss": [3.0 - 0.2 * i for i in range(8)], "eval_loss": _EVAL,
                   "meta": {"checkpoints": {"dir": "out", "steps": [7, 8], "judged": 8, "own_state": False}}},
                  note="best eval at step 3; save_total_limit=2 kept checkpoints 7 and 8"),
    passes=Example({"loss": [3.0 - 0.2 * i for i in range(8)], "eval_loss": _EVAL,
                    "meta": {"checkpoints": {"dir": "out", "steps": [3, 8], "judged": 8, "own_state": False}}},
                   note="the same run with load_best_model_at_end: checkpoint 3 kept"),
    limits="HF Trainer output directories (checkpoint-N/ beside the trainer_state.json) and "
    "Coqui Trainer run directories (the .pth files beside trainer_0_log.txt; a Coqui log read "
    "without them is not judged) only, "
    "and only the eval loss as the measure of best unless the Trainer recorded its own "
    "best_model_checkpoint. An evaluation that fell between saves had no checkpoint to keep: "
    "it counts as gone too, since its weights were never saved.",
)


def _trainer_best(run: Run, on_disk: set[int]) -> int | None:
    """The step of trainer_state's best_model_checkpoint when it names a checkpoint-N that is
    not on disk (the Trainer protects it from rotation: it was removed by other means)."""
    best = run.meta.get("best_model_checkpoint")
    if not isinstance(best, str):
        return None
    m = _CHECKPOINT.search(best.rstrip("/\\"))
    return int(m.group(1)) if m and int(m.group(1)) not in on_disk else None


@check("best-checkpoint", BEST_GONE, after="eval-declared")
def best_checkpoint_gone(run: Run) -> list[Finding] | Skip:
    ck = run.meta.get("checkpoints")
    if not isinstance(ck, Mapping) or not ck.get("steps"):
        return Skip(SkipKind.NO_DATA, "no saved checkpoints beside the log")
    declared = run.meta.get("declared")
    metric = declared.get("metric_for_best_model") if isinstance(declared, Mapping) else None
    ev = run.get("eval_loss")
    if ev is None or metric not in _LOSS_METRICS:
        return Skip(SkipKind.NO_DATA, "no eval loss to rank the checkpoints by")
    ev = ev.finite_only()
    if len(ev) < BEST_GONE.t("min_points"):
        return Skip(SkipKind.TOO_FEW, f"{len(ev)} eval points, needs {int(BEST_GONE.t('min_points'))}")
    on_disk = {int(s) for s in ck["steps"]}
    at = {float(s): float(v) for s, v in zip(ev.steps, ev.values, strict=True)}
    i = int(np.argmin(ev.values))
    best_step, best_loss, first = float(ev.steps[i]), float(ev.values[i]), float(ev.values[0])
    recorded = _trainer_best(run, on_disk)
    if recorded is not None and float(recorded) in at:
        best_step, best_loss = float(recorded), at[float(recorded)]
    if int(best_step) in on_disk or first <= best_loss:
        return []
    kept = [(at[float(s)], s) for s in on_disk if s > best_step and float(s) in at]
    if not kept:
        return []
    kept_loss, kept_step = min(kept)
    gap = kept_loss - best_loss
    lost = gap / (first - best_loss)
    if lost < BEST_GONE.t("lost") or gap < BEST_GONE.t("noise") * stats.point_noise(ev.values):
        return []
    best, kept, why = _names(run, ck, int(best_step), kept_step)
    if recorded is not None:
        why = " (trainer_state's own best_model_checkpoint)"
    return [BEST_GONE.finding(Location(run.path, best_step), best=best,
                              best_step=best_step, best_loss=best_loss, dir=str(ck.get("dir")),
                              kept=kept, kept_loss=kept_loss, lost=lost,
                              first_loss=first, why=why)]


def _names(run: Run, ck: Mapping[str, object], best_step: int, kept_step: int) -> tuple[str, str, str]:
    """How the missing best and the kept checkpoint are named: checkpoint-N/ for the HF
    Trainer; for Coqui the file that holds the kept evaluation, and what its last
    BEST MODEL line named."""
    files = ck.get("files")
    if ck.get("kind") != "coqui" or not isinstance(files, Mapping):
        return f"checkpoint-{best_step}", f"checkpoint-{kept_step}", ""
    said = run.meta.get("best_model")
    why = f" (Coqui's last BEST MODEL line names {said})" if isinstance(said, str) else ""
    return f"the model evaluated at step {best_step}", str(files.get(str(kept_step))), why
