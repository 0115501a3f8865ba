"""Lightning evidence: one run recorded by two loggers at once, CSVLogger and
TensorBoardLogger, so two parsers read two records of the same numbers.

    nice -n 10 python scripts/make_evidence_lightning.py

Writes evidence/lightning/<run>/csv/metrics.csv and evidence/lightning/<run>/tb/
events.out.tfevents.* (+ the hparams.yaml each logger writes) and run_meta.json,
for the healthy and the diverging recipe of make_evidence_common.py."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import EVIDENCE, RECIPES, Recipe, text_bytes, windows, write_meta
from make_evidence_torch import byte_mlp, optimizer_for

SEED = 42


def module_class():
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.utilities import grad_norm
    from torch.nn.functional import cross_entropy

    class ByteLM(pl.LightningModule):
        def __init__(self, recipe: Recipe) -> None:
            super().__init__()
            self.recipe = recipe
            self.net = byte_mlp()

        def training_step(self, batch, _idx):
            x, y = batch
            loss = cross_entropy(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def on_before_optimizer_step(self, optimizer) -> None:
            norms = grad_norm(self.net, norm_type=2)  # per layer + total; keep the total
            self.log("grad_2.0_norm_total", norms["grad_2.0_norm_total"])

        def validation_step(self, batch, _idx) -> None:
            x, y = batch
            self.log("val_loss", cross_entropy(self.net(x), y))

        def configure_optimizers(self):
            return optimizer_for(self.recipe, self.parameters())

    del torch
    return ByteLM


def loaders(recipe: Recipe, data: tuple):
    import torch
    from torch.utils.data import DataLoader, RandomSampler, TensorDataset

    tx, ty, vx, vy = (torch.from_numpy(a) for a in data)
    train = TensorDataset(tx, ty)
    sampler = RandomSampler(train, replacement=True, num_samples=recipe.steps * recipe.batch_size,
                            generator=torch.Generator().manual_seed(SEED))
    return (DataLoader(train, batch_size=recipe.batch_size, sampler=sampler),
            DataLoader(TensorDataset(vx, vy), batch_size=len(vx)))


def train(recipe: Recipe, data: tuple, dest: Path) -> None:
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import LearningRateMonitor
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    pl.seed_everything(SEED, verbose=False)
    for sub in ("csv", "tb"):
        shutil.rmtree(dest / sub, ignore_errors=True)
    trainer = pl.Trainer(
        max_steps=recipe.steps, log_every_n_steps=recipe.log_every,
        val_check_interval=recipe.val_every, check_val_every_n_epoch=None,
        logger=[CSVLogger(dest, name="csv", version=""),
                TensorBoardLogger(dest, name="tb", version="", default_hp_metric=False)],
        callbacks=[LearningRateMonitor(logging_interval="step")],
        accelerator="cpu", devices=1, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0)
    train_loader, val_loader = loaders(recipe, data)
    trainer.fit(module_class()(recipe), train_loader, val_loader)


def main() -> int:
    import lightning
    import tensorboard
    import torch

    torch.set_num_threads(1)
    data = windows(text_bytes())
    versions = {"torch": torch.__version__, "lightning": lightning.__version__,
                "tensorboard": tensorboard.__version__}
    for recipe in RECIPES.values():
        dest = EVIDENCE / "lightning" / recipe.name
        dest.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        train(recipe, data, dest)
        logs = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()
                      and p.name != "run_meta.json")
        write_meta(dest, "lightning", recipe, SEED, time.perf_counter() - t0, versions, logs,
                   "make_evidence_lightning.py")
        print(f"lightning {recipe.name}: {dest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
