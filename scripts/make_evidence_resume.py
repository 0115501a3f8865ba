"""Stop a real HF Trainer run and start it again, soundly and in the ways that go wrong,
for the resume-integrity rules (#16).

The task is next-byte prediction on stdlib docstrings (scripts/make_evidence_common.py)
with a 1-layer GPT-2 built from a config (n_embd 32, vocab 256 = bytes, context 32),
random init, seed 42, one CPU thread. Every run plans 200 optimizer steps of batch 16,
Adam (the Trainer's AdamW) at lr 3e-3 with 20 warm-up steps and linear decay, a log
entry every 2 steps, a checkpoint every 50. Each run writes what users point
trainproof at, in evidence/resume/<run>/:

- `tb/`: TensorBoard event files (the Trainer's TensorBoardCallback with
  TENSORBOARD_LOGGING_DIR fixed, so every job adds an event file to one directory; by
  default transformers 5 gives each job its own `runs/<date>_<host>/`, which TensorBoard
  and trainproof read as separate runs);
- `metrics.jsonl`: a user's callback that appends `{"step", **logs}` on every log;
- `trainer_state.json`: `Trainer.save_state()` after the last `train()` (what the HF
  example scripts do), plus `checkpoint-100/trainer_state.json` as the Trainer wrote it
  (every other checkpoint file - weights, optimizer, scheduler - is deleted: KBs, not MBs).

Runs (the first job of the three resumed ones stops at step 130, a job time limit, via
`control.should_training_stop`; the second job starts from checkpoint-100):

- `uninterrupted`: 200 steps in one job (healthy).
- `resume_sound`: `trainer.train(resume_from_checkpoint=".../checkpoint-100")` (healthy).
- `resume_no_optimizer`: the same, with optimizer.pt and scheduler.pt deleted from
  checkpoint-100 first. transformers 5.24 then loads neither (Trainer._load_optimizer_and_scheduler
  needs both files) and says nothing: fresh AdamW moments and a fresh scheduler that warms up
  again from step 0 of its own count, while the step counter and the data position continue.
- `restart_from_weights`: `GPT2LMHeadModel.from_pretrained(".../checkpoint-100")` and a new
  Trainer with the same arguments: the counter, the schedule and the data order start over.
- `constant_resume_sound`, `constant_resume_no_optimizer`: the two resumes at a constant LR
  without warm-up, where a fresh scheduler is the same as the old one and only the Adam
  moments are lost: what a lost optimizer alone does to the loss and gradient norm.

    python scripts/make_evidence_resume.py            # system Python: transformers 5.24.0,
                                                      # torch 2.13.0 CPU, tensorboard 2.21.0
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import EVIDENCE, text_bytes

OUT = EVIDENCE / "resume"
SEED = 42
CONTEXT = 32
STOP_AT = 130  # the first job's time limit
RESUME_FROM = 100  # the last checkpoint before it
RECIPE = {"max_steps": 200, "per_device_train_batch_size": 16, "learning_rate": 3e-3,
          "warmup_steps": 20, "lr_scheduler_type": "linear", "logging_steps": 2,
          "save_steps": 50, "max_grad_norm": 1.0}
RUNS = {
    "uninterrupted": "200 steps in one job",
    "resume_sound": f"job 1 stops at step {STOP_AT}; job 2 resumes from checkpoint-{RESUME_FROM} "
                    "with trainer.train(resume_from_checkpoint=...)",
    "resume_no_optimizer": f"as resume_sound, with optimizer.pt and scheduler.pt deleted from "
                           f"checkpoint-{RESUME_FROM} before job 2",
    "restart_from_weights": f"job 1 stops at step {STOP_AT}; job 2 loads checkpoint-{RESUME_FROM}'s "
                            "weights with from_pretrained and trains a new Trainer with the same arguments",
    "constant_resume_sound": "as resume_sound, at a constant LR without warm-up",
    "constant_resume_no_optimizer": "as resume_no_optimizer, at a constant LR without warm-up: "
                                    "only the Adam moments are lost (a fresh constant scheduler is the same)",
}
CONSTANT = {"lr_scheduler_type": "constant", "warmup_steps": 0}  # the constant_* runs' changes


class Blocks:
    """Fixed 32-byte blocks of the text as a map-style dataset of input_ids/labels."""

    def __init__(self) -> None:
        import torch

        data = text_bytes()
        n = data.size // CONTEXT
        self.ids = torch.from_numpy(data[: n * CONTEXT].astype(np.int64).reshape(n, CONTEXT))

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def _callbacks(log_path: Path, stop: bool) -> list:
    from transformers import TrainerCallback

    class AppendJsonl(TrainerCallback):
        """What a user's own metrics callback does: append every log entry to a file."""

        def on_log(self, args, state, control, logs=None, **kw):
            with log_path.open("a") as f:
                f.write(json.dumps({"step": state.global_step, **(logs or {})}) + "\n")

    class TimeLimit(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step >= STOP_AT:
                control.should_training_stop = True

    return [AppendJsonl()] + ([TimeLimit()] if stop else [])


def _recipe(name: str) -> dict:
    return {**RECIPE, **(CONSTANT if name.startswith("constant_") else {})}


def _trainer(name: str, work: Path, dest: Path, stop: bool, model=None):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(SEED)
    if model is None:
        model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=CONTEXT, n_embd=32,
                                           n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0))
    args = TrainingArguments(output_dir=str(work), seed=SEED, report_to=["tensorboard"],
                             save_strategy="steps", disable_tqdm=True, use_cpu=True,
                             dataloader_num_workers=0, **_recipe(name))
    return Trainer(model=model, args=args, train_dataset=Blocks(),
                   callbacks=_callbacks(dest / "metrics.jsonl", stop))


def _second_job(name: str, work: Path, dest: Path) -> None:
    ckpt = work / f"checkpoint-{RESUME_FROM}"
    time.sleep(1.1)  # a later job: its event file carries a later time stamp
    if name == "restart_from_weights":
        from transformers import GPT2LMHeadModel

        trainer = _trainer(name, work, dest, stop=False, model=GPT2LMHeadModel.from_pretrained(str(ckpt)))
        trainer.train()
    else:
        if name.endswith("resume_no_optimizer"):
            for f in ("optimizer.pt", "scheduler.pt"):
                (ckpt / f).unlink()
        trainer = _trainer(name, work, dest, stop=False)
        trainer.train(resume_from_checkpoint=str(ckpt))
    trainer.save_state()


def _keep(work: Path, dest: Path) -> None:
    """Copy the records users read; drop weights and optimizer/scheduler/RNG state."""
    shutil.copytree(os.environ["TENSORBOARD_LOGGING_DIR"], dest / "tb")
    shutil.copy(work / "trainer_state.json", dest / "trainer_state.json")
    ckpt = work / f"checkpoint-{RESUME_FROM}"  # the one the resumed runs start from
    (dest / ckpt.name).mkdir()
    shutil.copy(ckpt / "trainer_state.json", dest / ckpt.name / "trainer_state.json")


def make(name: str) -> None:
    import torch
    import transformers

    dest = OUT / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "out"
        os.environ["TENSORBOARD_LOGGING_DIR"] = str(Path(tmp) / "tb")
        first = _trainer(name, work, dest, stop=name != "uninterrupted")
        first.train()
        if name == "uninterrupted":
            first.save_state()
        else:
            _second_job(name, work, dest)
        _keep(work, dest)
    meta = {
        "framework": "resume", "library": "transformers Trainer", "run": name, "what": RUNS[name], "seed": SEED,
        "recipe": {**_recipe(name), "stop_at": STOP_AT, "resume_from": RESUME_FROM},
        "task": f"next byte of stdlib docstrings, {CONTEXT}-byte blocks; GPT-2 from config "
                "(n_layer 1, n_embd 32, n_head 2, vocab 256, random init)",
        "wall_seconds": round(time.time() - t0, 1),
        "pruned": "every checkpoint but checkpoint-100's trainer_state.json (weights, optimizer.pt, "
                  "scheduler.pt, rng_state.pth, training_args.bin)",
        "logs": ["tb/", "metrics.jsonl", "trainer_state.json", f"checkpoint-{RESUME_FROM}/trainer_state.json"],
        "versions": {"python": platform.python_version(), "transformers": transformers.__version__,
                     "torch": torch.__version__},
        "command": "python scripts/make_evidence_resume.py",
    }
    (dest / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def main() -> None:
    import torch

    torch.set_num_threads(1)
    only = sys.argv[1:] or list(RUNS)
    for name in only:
        make(name)
        print(name, "done", flush=True)


if __name__ == "__main__":
    main()
