"""A plain PyTorch training loop that writes its own JSON Lines log, as many
hand-written trainers do: one object per logged step, validation rows in between.

    nice -n 10 python scripts/make_evidence_torch.py

Writes evidence/pytorch/<run>/metrics.jsonl + run_meta.json for the healthy and the
diverging recipe of make_evidence_common.py."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import CONTEXT, EVIDENCE, RECIPES, Recipe, text_bytes, windows, write_meta

SEED = 42


def byte_mlp():
    from torch import nn

    return nn.Sequential(nn.Embedding(256, 16), nn.Flatten(), nn.Linear(16 * CONTEXT, 128),
                         nn.ReLU(), nn.Linear(128, 256))


def optimizer_for(recipe: Recipe, params):
    import torch

    if recipe.optimizer == "sgd":
        return torch.optim.SGD(params, lr=recipe.learning_rate, momentum=0.9)
    return torch.optim.Adam(params, lr=recipe.learning_rate)


def train(recipe: Recipe, data: tuple, log_path: Path) -> None:
    import torch
    from torch.nn.functional import cross_entropy

    torch.manual_seed(SEED)
    tx, ty, vx, vy = (torch.from_numpy(a) for a in data)
    model = byte_mlp()
    opt = optimizer_for(recipe, model.parameters())
    gen = torch.Generator().manual_seed(SEED)
    with open(log_path, "w") as log:
        for step in range(1, recipe.steps + 1):
            idx = torch.randint(0, tx.shape[0], (recipe.batch_size,), generator=gen)
            loss = cross_entropy(model(tx[idx]), ty[idx])
            opt.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), math.inf)
            opt.step()
            if step % recipe.log_every == 0:
                row = {"step": step, "loss": loss.item(), "grad_norm": grad_norm.item(),
                       "lr": opt.param_groups[0]["lr"]}
                log.write(json.dumps(row) + "\n")
            if step % recipe.val_every == 0:
                with torch.no_grad():
                    val = cross_entropy(model(vx), vy).item()
                log.write(json.dumps({"step": step, "val_loss": val}) + "\n")


def main() -> int:
    import torch

    torch.set_num_threads(1)
    data = windows(text_bytes())
    for recipe in RECIPES.values():
        dest = EVIDENCE / "pytorch" / recipe.name
        dest.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        train(recipe, data, dest / "metrics.jsonl")
        write_meta(dest, "pytorch", recipe, SEED, time.perf_counter() - t0,
                   {"torch": torch.__version__}, ["metrics.jsonl"], "make_evidence_torch.py")
        print(f"pytorch {recipe.name}: {dest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
