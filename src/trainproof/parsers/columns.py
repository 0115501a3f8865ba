"""Column names: the spellings real trainers write, mapped to canonical metrics.

A raw name is normalised (lower case; '/', '-', '.', ' ' become '_'), then looked up
in one alias table. When several raw columns map to one canonical metric, the one
listed first wins (per-step before per-epoch, train before anything else)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

# canonical -> normalised aliases, most preferred first
ALIASES: Mapping[str, tuple[str, ...]] = {
    "loss": (
        "loss", "train_loss", "training_loss", "loss_train", "train_loss_step", "train_loss_iter",
        "batch_loss", "trainer_loss", "lm_loss", "train_lm_loss", "loss_step", "train_iterstats_loss",
        "trainiterstats_loss", "train_loss_epoch", "epoch_loss_train", "train_epoch_loss", "epoch_loss",
        "metrics_loss", "metrics_train_loss", "total_loss", "train_total_loss", "reduced_train_loss",
        "trainepochstats_avg_loss",
        "xent", "progress_xent",  # OpenNMT-py: cross-entropy per token, its stdout and its TensorBoard
    ),
    "eval_loss": (
        "eval_loss", "val_loss", "validation_loss", "dev_loss", "test_loss", "loss_val", "loss_eval",
        "loss_validation", "loss_test", "val_loss_epoch", "val_loss_step", "valid_loss",
        "evalstats_avg_loss", "eval_avg_loss", "validation_epoch_loss", "epoch_val_loss",
        "eval_lm_loss", "metrics_eval_loss", "metrics_val_loss", "lm_loss_validation",
        "validation_evaluation_loss_vs_iterations", "valid_xent",
    ),
    # metrics beside the eval loss: read to corroborate an eval-loss finding, never alone
    "eval_wer": ("eval_wer", "val_wer", "validation_wer", "test_wer"),
    "eval_cer": ("eval_cer", "val_cer", "validation_cer", "test_cer"),
    "eval_accuracy": ("eval_accuracy", "val_accuracy", "validation_accuracy", "val_acc", "eval_acc",
                      "dev_accuracy", "valid_accuracy", "valid_acc", "test_accuracy", "eval_mean_token_accuracy"),
    "lr": (
        "lr", "learning_rate", "current_lr", "train_learning_rate", "train_lr", "lr_group0",
        "lr_0", "optimizer_lr", "lr_adamw", "lr_adam", "lr_sgd", "lr_adafactor",
        "learning_rate_0", "metrics_lr", "metrics_learning_rate", "epoch_learning_rate",
        "trainiterstats_current_lr", "training_lr", "training_learning_rate",
    ),
    "grad_norm": (
        "grad_norm", "gnorm", "gradient_norm", "grad_l2", "grad_norm_total", "train_grad_norm",
        "grad_2_0_norm_total", "total_grad_norm", "global_grad_norm", "metrics_grad_norm",
        "trainiterstats_grad_norm", "training_grad_norm",
    ),
    "step": (
        "step", "global_step", "iter", "iteration", "train_global_step", "trainer_global_step",
        "_step", "num_steps", "steps", "current_steps",
    ),
    "time": ("time", "timestamp", "elapsed", "_timestamp", "wall_time", "_runtime"),
    "step_time": (
        "step_time", "seconds_per_step", "time_per_step", "iteration_time", "train_step_time",
        "elapsed_time_per_iteration", "batch_time", "metrics_step_time",
        "train_step_timing", "trainiterstats_step_time",
    ),
    "loader_time": ("loader_time", "data_time", "dataloader_time", "train_loader_time",
                    "trainiterstats_loader_time"),
    "gpu_util": ("gpu_util", "gpu_utilization", "gpu_util_percent", "system_gpu_util"),
    "epoch": ("epoch", "epochs", "train_epoch"),
    # optimizer steps skipped (overflow, NaN) and iterations with a NaN loss, counted per
    # logged interval (Megatron's counters; DeepSpeed's running total is differenced)
    "skipped_iters": ("skipped_iters", "number_of_skipped_iterations", "skipped_iterations"),
    "nan_iters": ("nan_iters", "number_of_nan_iterations", "nan_iterations"),
    # the dynamic fp16 loss scale: Megatron's "loss scale:", fairseq's loss_scale, a
    # hand-written loop's GradScaler.get_scale() (rules/scaler.py)
    "loss_scale": ("loss_scale", "train_loss_scale", "scaler_scale", "grad_scaler_scale", "amp_loss_scale",
                   "loss_scaler"),
    # policy-gradient RL fine-tunes: the mean reward of the batch (TRL GRPO/RLOO `reward`,
    # TRL PPO `objective/scores`, verl `critic/rewards/mean`) and GRPO's share of prompt
    # groups whose completions all scored the same (rules/rl.py)
    "reward": ("reward", "train_reward", "reward_mean", "rewards_mean", "objective_scores",
               "critic_rewards_mean", "critic_score_mean"),
    "frac_reward_zero_std": ("frac_reward_zero_std", "train_frac_reward_zero_std"),
}

# Aliases of a held-out metric that are one validation batch, not one evaluation: read only
# where no other column names the metric (choose).
PER_EVALUATION: Mapping[str, frozenset[str]] = {"eval_loss": frozenset({"val_loss_step"})}

_SEP = re.compile(r"[/\-. ]+")
_INDEX: dict[str, tuple[str, int]] = {
    alias: (canon, rank) for canon, aliases in ALIASES.items() for rank, alias in enumerate(aliases)
}
CANONICAL = tuple(ALIASES)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def normalise(raw: str) -> str:
    return _SEP.sub("_", raw.strip().lower()).strip("_") or raw


@lru_cache(maxsize=4096)  # called per key of every scanned text line; names repeat, the cache is bounded
def canonical(raw: str) -> tuple[str, int] | None:
    """(canonical name, preference rank) for a raw column, or None if unrecognised. A
    camelCase name (`trainLoss`, `validLoss`: a Sacred `log_scalar` or a hand-written loop)
    is tried with its words split when the plain spelling is not in the table, so names the
    table already knows run together (`TrainIterStats/loss`) keep their meaning."""
    return _INDEX.get(normalise(raw)) or _INDEX.get(normalise(_CAMEL.sub("_", raw)))


def is_step(raw: str) -> bool:
    hit = canonical(raw)
    return hit is not None and hit[0] == "step"


def looks_like_metric(raw: str) -> bool:
    """Cheap test used by sniffers: does a column name look like a training metric?"""
    hit = canonical(raw)
    return hit is not None and hit[0] in ("loss", "eval_loss", "lr", "grad_norm")


def choose(raw_names: Iterable[str], mapping: Mapping[str, str],
           sizes: Mapping[str, int] | None = None) -> dict[str, str]:
    """canonical -> raw column, applying --map first, then the alias table. With `sizes`
    (points per raw column), a column that holds fewer than half the points of another
    column naming the same metric gives way to it whatever its rank: Lightning's
    `train_loss_step` logged once in a short run (every 50 steps, 49 steps an epoch) beside a
    `train_loss_epoch` of ten points is one batch, not the curve."""
    raw_names = list(raw_names)
    found: dict[str, list[tuple[int, str]]] = {}
    for raw in raw_names:
        hit = canonical(raw)
        if hit is not None:
            found.setdefault(hit[0], []).append((hit[1], raw))
    points = sizes or {}
    out = {}
    for canon, hits in found.items():
        if canon in PER_EVALUATION and len(hits) > 1:
            # a held-out loss is one number per evaluation: Lightning's `val_loss_step` (on_step
            # inside validation) is one validation batch's loss, counted by a validation-batch
            # index, and its many points are batches, not a longer curve - its `val_loss_epoch`
            # is the evaluation. It is read only where nothing else names the metric.
            hits = [h for h in hits if ALIASES[canon][h[0]] not in PER_EVALUATION[canon]] or hits
        most = max(points.get(raw, 0) for _, raw in hits)
        out[canon] = min(hits, key=lambda h: (2 * points.get(h[1], 0) < most, h[0]))[1]
    out.update(mapping)
    return out


# ---------------------------------------------------------------- held-out quality metrics
# A score over a whole held-out set where higher is better (accuracy, F1, mAP, IoU, ...),
# read by TP-EVAL-METRIC-FROZEN (rules/eval_frozen.py). Recognised by its words: one that
# says held-out, one that says which score, and nothing else but qualifiers of the score.
# Writers spell the first as a prefix (Keras `val_accuracy`, HF `eval_f1`, Flair `DEV_F1`,
# Lightning `val/f1`, DVCLive `eval/accuracy`, Sacred `validAccuracy`) or as the
# evaluator's namespace (MMEngine `coco/bbox_mAP`, Detectron2 `bbox/AP`, Ultralytics'
# validation `metrics/mAP50(B)`). A word outside these is a class, an entity type or a
# group (`eval_T007_f1`, `Validation.f1.OFF`, `eval_accuracy_class_Viral`), or something
# that is not a score (`eval_best_f1_thresh`): a per-class score at 0 is a class the model
# never finds, not a run whose decisions never changed.
_HELD_OUT = frozenset({"eval", "val", "valid", "validation", "dev", "test", "coco", "bbox", "segm",
                       "metrics", "voc", "pascal"})
_SCORE = re.compile(r"(^|_)(acc|accuracy|f1|f_score|fscore|f_measure|precision|recall|m?ap|m?ap\d+|"
                    r"m?iou|dice|auc|top\d|top_\d|exact_match|em|mcc|kappa|matthews_correlation)(_|$)")
_QUALIFIERS = frozenset({
    "acc", "accuracy", "f1", "f", "score", "fscore", "measure", "precision", "recall", "map", "ap", "miou",
    "iou", "dice", "coef", "auc", "roc", "pr", "top", "exact", "match", "em", "mcc", "kappa", "matthews",
    "correlation", "macro", "micro", "weighted", "overall", "mean", "avg", "average", "binary",
    "categorical", "sparse", "subset", "token", "sequence", "seq", "box", "mask", "b", "m", "s", "l",
    "epoch", "synth", "weak", "event", "intersection",
    "p", "pose", "keypoint", "keypoints"})  # Ultralytics pose models: metrics/mAP50(P), precision(P) ...


def heldout_quality(raw: str) -> bool:
    """Whether a raw column is a higher-is-better score over a whole held-out set."""
    words = _SEP.sub("_", _CAMEL.sub("_", raw.strip())).lower()
    words = re.sub(r"[^a-z0-9_]+", "_", words).strip("_")
    tokens = set(words.split("_"))
    known = all(t in _HELD_OUT or t in _QUALIFIERS or t.isdigit() or re.fullmatch(r"m?ap\d+|top\d", t)
                for t in tokens)
    return known and bool(tokens & _HELD_OUT) and _SCORE.search(words) is not None
