"""Real Coqui Trainer runs for TP-BEST-CKPT-GONE (#16): evidence/coqui/<run>/.

Made with coqui-tts-trainer 0.4.0 (module `trainer`), torch 2.13.0 CPU, Python 3.11, in a venv:
    python -m venv --system-site-packages /tmp/venv-coqui
    /tmp/venv-coqui/bin/pip install coqui-tts-trainer==0.4.0 torch==2.13.0
    /tmp/venv-coqui/bin/python scripts/make_evidence_coqui.py

The task: 4-way classification of 16 random features by a fixed random linear teacher,
30 % of the labels replaced by random ones, 64 training examples (512 for evaluation): a
256-wide MLP first learns the teacher, then memorises the noise and its eval loss climbs.
Adam lr 2e-3, batch 8 (an epoch is 8 steps), 40 epochs, grad_clip 5 (with 0, Coqui logs a
gradient norm of 0 it never computed), seed 42, one CPU thread, about 2 s a run. Coqui
evaluates and calls save_best_model at every epoch end; checkpoint_N.pth every 20 steps,
the last 2 kept (save_n_checkpoints).

- `best_saved`: save_best_after=0 (0.4.0's default): best_model_48.pth, the eval minimum, stays.
- `best_unsaved`: save_best_after=100 (10,000 steps by default in early releases of the `trainer` package;
  100 is that setting at this run's scale): the eval minimum (step 48) comes before step
  100, so Coqui never saves it; its first and only BEST MODEL is best_model_104.pth.

Each run directory keeps Coqui's text log and config.json as written; every .pth file is
replaced by an empty file of the same name (the rule reads names, never weights),
run_meta.json records the original sizes, and expected.json what the Trainer held at
each epoch end (a callback): its step counter, the eval loss it ranked, the
best_model_N.pth files on disk.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import time
from pathlib import Path

import torch
from torch import nn
from trainer import Trainer, TrainerArgs, TrainerConfig, TrainerModel

OUT = Path(__file__).resolve().parent.parent / "evidence" / "coqui"
RUNS = {"best_saved": 0, "best_unsaved": 100}
SEED = 42
N_TRAIN = 64
NOISE = 0.3  # share of training and eval labels replaced by random ones
HIDDEN = 256
LR = 2e-3


class Regressor(TrainerModel):
    """A wide two-layer MLP: enough capacity to memorise 64 noisily labelled examples."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 4))
        self.crit = nn.CrossEntropyLoss()

    def forward(self, x: torch.Tensor, *args, aux_input=None, **kwargs):
        return {"model_outputs": self.net(x)}

    def train_step(self, batch, criterion, optimizer_idx=None):
        out = self.forward(batch["x"])["model_outputs"]
        return {"model_outputs": out}, {"loss": self.crit(out, batch["y"])}

    @torch.inference_mode()
    def eval_step(self, batch, criterion, optimizer_idx=None):
        return self.train_step(batch, criterion)

    def train_log(self, *args) -> None:
        return None

    def eval_log(self, *args) -> None:
        return None

    def get_criterion(self) -> nn.Module:
        return self.crit

    def get_data_loader(self, config, *, is_eval=False, samples=None, verbose=True):
        g = torch.Generator().manual_seed(1 if is_eval else 0)
        n = 512 if is_eval else N_TRAIN
        x = torch.randn(n, 16, generator=g)
        teacher = torch.randn(16, 4, generator=torch.Generator().manual_seed(7))
        y = (x @ teacher).argmax(dim=1)
        flip = torch.rand(n, generator=g) < NOISE  # label noise: what an overfitted model memorises
        y = torch.where(flip, torch.randint(0, 4, (n,), generator=g), y)
        data = [{"x": x[i], "y": y[i]} for i in range(n)]
        return torch.utils.data.DataLoader(
            data, batch_size=config.eval_batch_size if is_eval else config.batch_size,
            shuffle=not is_eval, generator=torch.Generator().manual_seed(SEED))


def run(name: str, save_best_after: int) -> dict[str, object]:
    torch.manual_seed(SEED)
    work = OUT / f"_work_{name}"
    shutil.rmtree(work, ignore_errors=True)
    config = TrainerConfig(
        run_name=name, output_path=str(work), epochs=40, batch_size=8, eval_batch_size=128,
        lr=LR, optimizer="Adam", optimizer_params={}, print_step=4, plot_step=1000,
        save_step=20, save_n_checkpoints=2, save_best_after=save_best_after,
        dashboard_logger="tensorboard", print_eval=False, run_eval=True, grad_clip=5.0)
    epochs: list[dict[str, object]] = []

    def at_epoch_end(tr: Trainer) -> None:
        # what Coqui itself held after save_best_model: the step counter, the eval average
        # it ranked, and the best_model_N.pth files then on disk
        epochs.append({"step": tr.total_steps_done, "eval_loss": tr.keep_avg_eval["avg_loss"],
                       "best_files": sorted(p.name for p in Path(tr.output_path).glob("best_model_*.pth"))})

    t0 = time.time()
    trainer = Trainer(TrainerArgs(), config, str(work), model=Regressor(),
                      train_samples=[0], eval_samples=[0], parse_command_line_args=False,
                      callbacks={"on_epoch_end": at_epoch_end})
    trainer.fit()
    wall = time.time() - t0
    (made,) = [p for p in work.iterdir() if p.is_dir()]
    dest = OUT / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    sizes = {}
    for p in sorted(made.iterdir()):
        if p.suffix == ".pth":
            sizes[p.name] = p.stat().st_size
            (dest / p.name).touch()  # the name as Coqui left it; the weights are not evidence
        elif p.name.startswith("trainer_") or p.name == "config.json":
            shutil.copy(p, dest / p.name)
    shutil.rmtree(work)
    (dest / "expected.json").write_text(json.dumps({"epochs": epochs}, indent=0) + "\n")
    return {"run": name, "save_best_after": save_best_after, "wall_s": round(wall, 1),
            "pth_replaced_by_empty_files": sizes, "coqui_run_folder": made.name}


def main() -> None:
    torch.set_num_threads(1)
    from importlib.metadata import version

    for name, after in RUNS.items():
        meta = run(name, after)
        meta.update({
            "framework": "coqui",
            "recipe": "MLP 16-256-4, 4-way teacher labels with 30% noise, 64 train / 512 eval "
                      "examples; Adam lr 2e-3, batch 8, 40 epochs of 8 steps, grad_clip 5, "
                      "save_step 20, save_n_checkpoints 2",
            "seed": SEED, "threads": 1, "python": platform.python_version(),
            "versions": {"coqui-tts-trainer": version("coqui-tts-trainer"), "torch": torch.__version__},
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
        })
        (OUT / name / "run_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        print(name, meta["wall_s"], sorted(meta["pth_replaced_by_empty_files"]))


if __name__ == "__main__":
    main()
