"""Lightning evidence for TP-LR-NOT-AS-DECLARED: a module whose saved hyperparameters
declare one learning rate while configure_optimizers builds the optimizer with another
(a literal left in the code), next to the same module that uses its hyperparameter.

    python scripts/make_evidence_declared_lightning.py

The system Python suffices (lightning 2.6.6, torch 2.13.0 CPU). The task and network are
make_evidence_common.py's (next byte from 8 bytes of stdlib docstrings, a byte MLP), 300
steps of batch 64, a log point every 5 steps, validation every 50, seed 42, one thread.
Each run keeps what CSVLogger wrote, exactly: `csv/metrics.csv` (LearningRateMonitor's
`lr-Adam` every step) and `csv/hparams.yaml` (`save_hyperparameters()`)."""

from __future__ import annotations

import json
import platform
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import EVIDENCE, RECIPES, text_bytes, windows
from make_evidence_lightning import loaders
from make_evidence_torch import byte_mlp

OUT = EVIDENCE / "declared_lightning"
SEED = 42
DECLARED_LR = 3e-4
RUNS = {
    "healthy": ("configure_optimizers uses self.hparams.lr (3e-4)", None),
    "lr_hardcoded": ("configure_optimizers builds Adam with lr=3e-3 written in the code; the "
                     "saved hyperparameters say lr 3e-4", 3e-3),
}


def module_class():
    import lightning.pytorch as pl
    import torch
    from torch.nn.functional import cross_entropy

    class ByteLM(pl.LightningModule):
        def __init__(self, lr: float, hidden: int = 128, literal_lr: float | None = None) -> None:
            super().__init__()
            self.save_hyperparameters(ignore=["literal_lr"])
            self.literal_lr = literal_lr
            self.net = byte_mlp()

        def training_step(self, batch, _idx):
            x, y = batch
            loss = cross_entropy(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, _idx) -> None:
            x, y = batch
            self.log("val_loss", cross_entropy(self.net(x), y))

        def configure_optimizers(self):
            lr = self.literal_lr if self.literal_lr is not None else self.hparams.lr
            return torch.optim.Adam(self.parameters(), lr=lr)

    return ByteLM


def train(name: str, data: tuple) -> float:
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import LearningRateMonitor
    from lightning.pytorch.loggers import CSVLogger

    recipe = RECIPES["healthy"]
    dest = OUT / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    pl.seed_everything(SEED, verbose=False)
    trainer = pl.Trainer(
        max_steps=recipe.steps, log_every_n_steps=recipe.log_every, val_check_interval=recipe.val_every,
        check_val_every_n_epoch=None, logger=CSVLogger(dest, name="csv", version=""),
        callbacks=[LearningRateMonitor(logging_interval="step")], accelerator="cpu", devices=1,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        num_sanity_val_steps=0)
    train_loader, val_loader = loaders(recipe, data)
    t0 = time.perf_counter()
    trainer.fit(module_class()(lr=DECLARED_LR, literal_lr=RUNS[name][1]), train_loader, val_loader)
    return time.perf_counter() - t0


def main() -> int:
    import lightning
    import torch

    torch.set_num_threads(1)
    data = windows(text_bytes())
    for name, (what, literal) in RUNS.items():
        wall = train(name, data)
        meta = {"framework": "declared_lightning", "run": name, "what": what, "seed": SEED,
                "recipe": {**RECIPES["healthy"].__dict__, "declared_lr": DECLARED_LR,
                           "optimizer_lr": literal or DECLARED_LR},
                "task": "next byte from 8 bytes of stdlib docstrings (byte MLP)",
                "wall_seconds": round(wall, 1), "logs": ["csv/hparams.yaml", "csv/metrics.csv"],
                "versions": {"python": platform.python_version(), "lightning": lightning.__version__,
                             "torch": torch.__version__},
                "command": "python scripts/make_evidence_declared_lightning.py"}
        (OUT / name / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(name, round(wall, 1), "s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
