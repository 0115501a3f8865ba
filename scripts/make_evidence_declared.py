"""Real HuggingFace Trainer runs for the declared-versus-actual and best-checkpoint rules
(rules/declared.py, rules/checkpoints.py): each broken run next to the healthy run it is
measured against, made on CPU in seconds.

    python scripts/make_evidence_declared.py            # every run
    python scripts/make_evidence_declared.py --only best_gone

The system Python suffices (transformers 5.24.0, torch 2.13.0 CPU, accelerate 1.16.0).
The task: predict the next byte of stdlib docstrings (make_evidence_common.text_bytes)
in blocks of 32 bytes with a GPT-2 built from a config (1 layer, n_embd 32, 2 heads,
vocabulary 256, random init). Seed 42, one CPU thread, batch 16.

What is kept of each run is what the Trainer wrote into its output directory, minus the
weights: every `checkpoint-N/` keeps `trainer_state.json`, `training_args.bin` (the
pickled TrainingArguments, ~5 KB) and `config.json`; model.safetensors, optimizer.pt,
scheduler.pt, rng_state.pth and the generation config are deleted after the run, and
run_meta.json lists what was pruned. The checkpoint directories that `save_total_limit`
rotated away are absent exactly as the Trainer left them.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import EVIDENCE, text_bytes

OUT = EVIDENCE / "declared"
BLOCK = 32
KEEP = {"trainer_state.json", "training_args.bin", "config.json"}

# name -> (what it shows, settings). Settings the runs share are in `_args`.
RUNS: dict[str, tuple[str, dict[str, Any]]] = {
    "healthy": ("the reference: linear decay with 10 warm-up steps, eval and save every 20 steps, "
                "150 steps", {}),
    "healthy_cosine": ("the reference with a cosine decay and its warm-up given as a share "
                       "(warmup_steps=0.1: 15 of 150 steps)", {"cosine": True}),
    "lr_wrong_steps": ("the same, with the optimizer and scheduler passed in (`optimizers=`), the "
                       "scheduler built for 1,500 training steps instead of 150",
                       {"wrong_schedule": 1500}),
    "killed": ("the same, killed by an exception raised in a callback at step 65 of 150; the last "
               "checkpoint is checkpoint-60", {"kill_at": 65}),
    "eval_no_labels": ("the same, with an evaluation set whose examples carry no `labels`: the "
                       "Trainer evaluates every 20 steps and logs no eval_loss", {"eval_labels": False}),
    "best_gone": ("overfitting: 64 training blocks, lr 3e-3, 300 steps, eval and save every 20, "
                  "save_total_limit=2, load_best_model_at_end=False", {"overfit": True}),
    "best_kept": ("the same overfitting run with load_best_model_at_end=True (the Trainer keeps "
                  "the best checkpoint out of the rotation)", {"overfit": True, "load_best": True}),
    "early_stopped": ("the same overfitting run stopped on purpose by EarlyStoppingCallback "
                      "(patience 3) before max_steps", {"overfit": True, "load_best": True,
                                                         "early_stop": 3}),
}


def _blocks(data: Any, labels: bool) -> Any:
    import torch

    class Blocks(torch.utils.data.Dataset):
        def __init__(self, arr: Any) -> None:
            n = arr.size // BLOCK
            self.x = torch.tensor(arr[: n * BLOCK].reshape(n, BLOCK).astype("int64"))

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.x[i], "labels": self.x[i]} if labels else {"input_ids": self.x[i]}

    return Blocks(data)


def _args(out: Path, s: dict[str, Any]) -> Any:
    from transformers import TrainingArguments

    overfit = s.get("overfit", False)
    return TrainingArguments(
        output_dir=str(out), max_steps=300 if overfit else 150, per_device_train_batch_size=16,
        per_device_eval_batch_size=32, learning_rate=3e-3 if overfit else 1e-3,
        warmup_steps=0.1 if s.get("cosine") else 10,
        lr_scheduler_type="cosine" if s.get("cosine") else "linear", logging_steps=5,
        eval_strategy="steps", eval_steps=20,
        save_strategy="steps", save_steps=20, save_total_limit=2 if overfit else None,
        load_best_model_at_end=s.get("load_best", False),
        metric_for_best_model="eval_loss" if s.get("load_best") else None,
        seed=42, data_seed=42, report_to="none", disable_tqdm=True, use_cpu=True,
        dataloader_num_workers=0)


def train(name: str) -> dict[str, Any]:
    import torch
    from transformers import (
        EarlyStoppingCallback,
        GPT2Config,
        GPT2LMHeadModel,
        Trainer,
        TrainerCallback,
        get_linear_schedule_with_warmup,
        set_seed,
    )

    what, s = RUNS[name]
    torch.set_num_threads(1)
    set_seed(42)
    data = text_bytes()
    train_bytes = data[: 32 * BLOCK] if s.get("overfit") else data[:60_000]
    train_set = _blocks(train_bytes, True)
    eval_set = _blocks(data[-4_096:], s.get("eval_labels", True))
    model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=BLOCK, n_embd=32, n_layer=1,
                                       n_head=2, bos_token_id=0, eos_token_id=0))
    tmp = Path(tempfile.mkdtemp(prefix=f"tp-declared-{name}-"))
    args = _args(tmp, s)
    callbacks: list[Any] = []
    if s.get("kill_at"):
        class Kill(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                if state.global_step >= s["kill_at"]:
                    raise RuntimeError(f"killed at step {state.global_step}")
        callbacks.append(Kill())
    if s.get("early_stop"):
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=s["early_stop"]))
    optimizers: Any = (None, None)
    if s.get("wrong_schedule"):
        opt = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.0)
        optimizers = (opt, get_linear_schedule_with_warmup(opt, 10, s["wrong_schedule"]))
    trainer = Trainer(model=model, args=args, train_dataset=train_set, eval_dataset=eval_set,
                      callbacks=callbacks, optimizers=optimizers)
    t0 = time.time()
    ended = "completed"
    try:
        trainer.train()
    except RuntimeError as exc:
        ended = f"raised: {exc}"
    wall = time.time() - t0
    pruned = _keep(tmp, OUT / name)
    shutil.rmtree(tmp, ignore_errors=True)
    # "framework" names the evidence folder (scripts/evidence_matrix.py); the library is HF's
    return {"framework": "declared", "library": "transformers Trainer", "run": name, "what": what,
            "ended": ended, "seed": 42, "settings": s,
            "wall_seconds": round(wall, 1), "pruned_files": pruned,
            "checkpoints_kept": sorted((p.name for p in (OUT / name).glob("checkpoint-*")),
                                      key=lambda n: int(n.rpartition("-")[2]))}


def _keep(src: Path, dest: Path) -> list[str]:
    """Copy the output directory's checkpoint-N/ folders with only their small JSON and the
    pickled arguments; return the names of the files left behind."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    pruned: set[str] = set()
    for ck in sorted(src.glob("checkpoint-*")):
        (dest / ck.name).mkdir()
        for f in ck.iterdir():
            if f.name in KEEP:
                shutil.copy2(f, dest / ck.name / f.name)
            else:
                pruned.add(f.name)
    return sorted(pruned)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=sorted(RUNS))
    names = ap.parse_args().only or list(RUNS)
    import accelerate
    import torch
    import transformers

    for name in names:
        meta = train(name)
        meta.update(task=f"next byte of stdlib docstrings in {BLOCK}-byte blocks; GPT-2 from a config "
                    "(n_layer 1, n_embd 32, n_head 2, vocab 256), random init",
                    versions={"python": platform.python_version(), "transformers": transformers.__version__,
                              "torch": torch.__version__, "accelerate": accelerate.__version__},
                    command=f"python scripts/make_evidence_declared.py --only {name}")
        (OUT / name / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(name, meta["ended"], meta["wall_seconds"], "s", meta["checkpoints_kept"], flush=True)


if __name__ == "__main__":
    main()
