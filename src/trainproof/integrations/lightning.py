"""`TrainproofCallback` for Lightning (`lightning`, or `pytorch_lightning` when only
that is installed): the `epoch` rules judged on the metrics the LightningModule logs,
while it trains.

    Trainer(..., callbacks=[TrainproofCallback(policy="warn")])        # or "stop_on_fail"

Every `every_n_steps` optimizer steps (default: the Trainer's log_every_n_steps) it
records the mean training_step loss since the last record (as HF's Trainer logs it:
single-batch losses are too noisy for ratio rules on a short prefix), the metrics in
`trainer.callback_metrics` (per-step keys; `*_epoch` aggregates are skipped), the
learning rate of the first parameter group, and - unless the module logs its own - the
gradient norm, computed on those steps only. Validation losses are recorded when
validation ends.

Ranks: logged metrics may differ between ranks (unless logged with sync_dist=True),
so each rank judges its own and the decision is shared with
`trainer.strategy.reduce_boolean_decision(..., all=False)`: one rank's FAIL stops
all of them at the same step. The collective is reached on every rank at the same
steps even when judging raised on one. Only global rank 0 prints or writes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from trainproof.config import Config, as_config
from trainproof.integrations._guardian import (
    GpuProbe,
    Guardian,
    GuardianResults,
    StepTimer,
    abort_message,
    guarded,
    local_device_index,
    numeric,
    telemetry,
    warn_message,
)
from trainproof.parsers.columns import canonical

try:
    from lightning.pytorch import Callback
except ImportError:  # pragma: no cover - exercised only where lightning is absent
    try:
        from pytorch_lightning import Callback
    except ImportError as exc:
        raise ImportError("trainproof.integrations.lightning needs lightning "
                          "(pip install lightning) or pytorch_lightning") from exc


def _is_eval(key: str) -> bool:
    hit = canonical(key)
    return hit is not None and hit[0] == "eval_loss"


def _guarded(where: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Errors stay inside the callback; the hook's trainer argument names the main process."""
    return guarded(where, lambda a: getattr(a[0], "is_global_zero", True))


class TrainproofCallback(GuardianResults, Callback):
    """policy="warn" never interrupts; "stop_on_fail" sets trainer.should_stop on the first
    FAIL (on every rank). After fit, `verdict`, `findings`, `report`, `stopped_at` and
    `errors` hold the outcome; `report_path` receives the JSON report. `config`: as for
    the HF callback (a Config, a config file path, or a table of its keys)."""

    def __init__(self, policy: str = "warn", report_path: str | os.PathLike[str] | None = None,
                 every_n_steps: int | None = None, grad_norm: bool = True,
                 config: Config | Mapping[str, Any] | str | os.PathLike[str] | None = None) -> None:
        self.config = as_config(config)  # a bad config fails here, before training starts
        self._guardian = Guardian(policy, "lightning", "lightning-callback", config=self.config)
        self.policy, self.report_path = policy, report_path
        self.every_n_steps, self.grad_norm = every_n_steps, grad_norm
        self._timer = StepTimer()
        self._gpu: GpuProbe | None = None
        self._pending_norm: float | None = None
        self._last_step = -1
        self._loss_sum: Any = 0.0  # a tensor on the loss's device once training runs
        self._loss_n = 0

    @_guarded("on_train_start")
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        scheduled = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        if scheduled is None:
            est = getattr(trainer, "estimated_stepping_batches", None)
            scheduled = int(est) if isinstance(est, (int, float)) and 0 < est < float("inf") else None
        subject = str(getattr(trainer, "log_dir", None) or trainer.default_root_dir)
        self._guardian = Guardian(self.policy, subject, "lightning-callback", scheduled, self.config)
        self._last_step, self._loss_sum, self._loss_n = -1, 0.0, 0
        device = getattr(pl_module, "device", None)
        if getattr(device, "type", "") == "cuda":
            self._gpu = GpuProbe(local_device_index(device.index))

    def _every(self, trainer: Any) -> int:
        return max(1, int(self.every_n_steps or getattr(trainer, "log_every_n_steps", 50) or 1))

    def on_train_batch_start(self, trainer: Any, *args: Any, **kw: Any) -> None:
        self._timer.begin()

    @_guarded("on_before_optimizer_step")
    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        if self.grad_norm and (trainer.global_step + 1) % self._every(trainer) == 0:
            self._pending_norm = _grad_norm(pl_module)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, *args: Any, **kw: Any) -> None:
        self._timer.end()
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if hasattr(loss, "detach"):  # stays on its device: no sync until the record
            self._loss_sum, self._loss_n = loss.detach().float() + self._loss_sum, self._loss_n + 1
        step = trainer.global_step
        if step == self._last_step or step % self._every(trainer):
            return
        self._last_step = step
        stop = self._judge_step(trainer, step) or False  # None when judging raised
        self._share(trainer, stop)

    @_guarded("on_train_batch_end")
    def _judge_step(self, trainer: Any, step: int) -> bool:
        values = self._step_values(trainer)
        if not values:
            return False
        g = self._guardian
        g.metrics.add(float(step), {**values, **telemetry(self._timer, self._gpu)})
        if not g.due(values):
            return False
        report = g.judge()
        fresh = g.new_findings(report)
        grounds = g.decide_stop(report, float(step))
        if grounds and trainer.is_global_zero:
            print(abort_message(grounds, float(step), g.scheduled), file=sys.stderr)
        elif fresh and trainer.is_global_zero:
            print(warn_message(fresh, float(step), self.policy), file=sys.stderr)
        return bool(grounds)

    @_guarded("stop decision")
    def _share(self, trainer: Any, stop: bool) -> None:
        if self.policy != "stop_on_fail":
            return
        if trainer.strategy.reduce_boolean_decision(bool(stop), all=False):
            trainer.should_stop = True
            if self._guardian.stopped_at is None:  # another rank's log failed, not ours
                self._guardian.stopped_at = float(trainer.global_step)
                if trainer.is_global_zero:
                    print(f"TRAINPROOF ABORT - stopping training at step {trainer.global_step}: "
                          "another rank's logged metrics FAILed (its findings are in its report)",
                          file=sys.stderr)

    def _step_values(self, trainer: Any) -> dict[str, float]:
        metrics = {k: v for k, v in trainer.callback_metrics.items()
                   if not k.endswith("_epoch") and not _is_eval(k)}
        values = numeric(metrics)
        if self._loss_n:
            values["loss"] = float(self._loss_sum) / self._loss_n
            self._loss_sum, self._loss_n = 0.0, 0
        if trainer.optimizers:
            values.setdefault("lr", float(trainer.optimizers[0].param_groups[0]["lr"]))
        if self._pending_norm is not None:
            if not any(canonical(k) and canonical(k)[0] == "grad_norm" for k in values):
                values["grad_norm"] = self._pending_norm
            self._pending_norm = None
        return values

    @_guarded("on_validation_end")
    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        values = numeric({k: v for k, v in trainer.callback_metrics.items() if _is_eval(k)})
        if values:
            self._guardian.metrics.add(float(trainer.global_step), values)

    @_guarded("on_train_end")
    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._guardian.finish(trainer.is_global_zero, self.report_path)


def _grad_norm(module: Any) -> float | None:
    """The global L2 norm of the gradients about to be applied (after AMP unscaling)."""
    import torch

    grads = [p.grad.detach() for p in module.parameters() if p.grad is not None]
    if not grads:
        return None
    norms = torch.stack([torch.linalg.vector_norm(g.float()) for g in grads])
    return float(torch.linalg.vector_norm(norms))
