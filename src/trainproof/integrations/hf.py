"""`TrainproofCallback` for the HuggingFace `transformers.Trainer`: the `epoch` rules
judged on the Trainer's own log events while it trains.

    Trainer(..., callbacks=[TrainproofCallback(policy="warn")])        # or "stop_on_fail"

Ranks: the Trainer calls `on_log` on every process with the same numbers (the loss is
gathered and averaged across ranks before it is logged; grad_norm is the norm of the
all-reduced gradients; the learning rate comes from the shared schedule). The stop
decision is a deterministic function of those numbers alone, so every rank reaches the
same decision at the same step without a collective. Only the main process prints or
writes the JSON report."""

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
from trainproof.parsers.hf import is_summary
from trainproof.probes.vocab import vocabulary_from_config

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - exercised only without transformers
    raise ImportError("trainproof.integrations.hf needs transformers (pip install transformers)") from exc


def _guarded(where: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Errors stay inside the callback; the hook's state argument names the main process."""
    return guarded(where, lambda a: getattr(a[1], "is_world_process_zero", True))


class TrainproofCallback(GuardianResults, TrainerCallback):
    """Judges the run on every log event. policy="warn" never interrupts; "stop_on_fail"
    sets control.should_training_stop on the first FAIL. After training, `verdict`,
    `findings`, `report`, `stopped_at` and `errors` hold the outcome; `report_path`
    receives the JSON report (schema of `trainproof epoch --json`). `config`: a Config,
    a trainproof.toml / pyproject.toml path, or a table of its keys (thresholds, select,
    ignore, severity, per-path-ignores); None judges by the declared defaults."""

    def __init__(self, policy: str = "warn", report_path: str | os.PathLike[str] | None = None,
                 config: Config | Mapping[str, Any] | str | os.PathLike[str] | None = None) -> None:
        self.config = as_config(config)  # a bad config fails here, before training starts
        self._guardian = Guardian(policy, "hf-trainer", "hf-callback", config=self.config)
        self.policy = policy
        self.report_path = report_path
        self._timer = StepTimer()
        self._gpu: GpuProbe | None = None

    @_guarded("on_train_begin")
    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        scheduled = int(state.max_steps or 0) or None
        self._guardian = Guardian(self.policy, str(args.output_dir), "hf-callback", scheduled, self.config)
        config = getattr(kw.get("model"), "config", None)
        if hasattr(config, "to_dict"):  # the model's vocabulary: what a confidently wrong start is judged by
            vocab, _ = vocabulary_from_config(config.to_dict(), f"{type(kw['model']).__name__}.config")
            if vocab is not None:
                self._guardian.meta["vocabulary"] = vocab
        device = getattr(args, "device", None)
        if getattr(device, "type", "") == "cuda":
            self._gpu = GpuProbe(local_device_index(getattr(device, "index", None)))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._timer.begin()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._timer.end()

    @_guarded("on_log")
    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
        if not logs or is_summary(logs):  # the end-of-training totals, not a point
            return
        values = numeric(logs)
        if not values:
            return
        g, step = self._guardian, float(state.global_step)
        g.metrics.add(step, {**values, **telemetry(self._timer, self._gpu)})
        if not g.due(values):
            return
        report = g.judge()
        fresh = g.new_findings(report)
        grounds = g.decide_stop(report, step)
        main = state.is_world_process_zero
        if grounds:
            control.should_training_stop = True
            if main:
                print(abort_message(grounds, step, g.scheduled), file=sys.stderr)
        elif fresh and main:
            print(warn_message(fresh, step, self.policy), file=sys.stderr)

    @_guarded("on_train_end")
    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._guardian.finish(state.is_world_process_zero, self.report_path)
