"""Real runs for the curve-shape rules of issue #16 (rules/recovery.py, rules/dataorder.py,
the loss-scale rule in rules/scaler.py): a plain PyTorch loop on the evidence task of
make_evidence_common.py (next byte from 8 bytes of stdlib docstrings, byte MLP), writing
JSON Lines as a hand-written trainer does. Each faulty run has a healthy twin that
differs only in the fault.

    nice -n 10 python scripts/make_evidence_curve.py [run ...]

System Python: torch 2.13.0 CPU, one thread, seed 42. Each logged `loss` is the mean of
the batch losses since the previous log line (as HF Trainer logs it).

Runs (evidence/curve/<run>/metrics.jsonl + run_meta.json):
- amp_healthy / amp_scale_collapse: fp16 autocast on CPU with torch.amp.GradScaler("cpu")
  (defaults: init scale 2^16, growth interval 2000), `loss_scale` = scaler.get_scale()
  logged every 5 steps, 200 steps. The collapse run's hand-written normalisation (see
  `model`) has an infinite derivative at a context of 8 equal bytes (8 spaces, in 59 % of
  the batches): each such step's gradient is non-finite, the scaler skips it and halves
  its scale, and never goes 2000 good steps in a row to grow it back; by step 25 the scale
  is 1, by 200 about 1e-32, and the fp16 gradients underflow to 0 long before - the loss
  stalls near 3.7 (the twin reaches 3.0). The forward pass and the logged loss stay finite.
  Run on, the scale underflows fp32 to 0 near step 225 and the loss turns NaN near 235
  (TP-NAN's); the record stops at 200, where only the loss scale shows anything wrong.
  The healthy twin puts the epsilon inside the square root.
- spike_recovers / spike_unrecovered: Adam at 3e-3; the five batches of steps 146-150 are
  random bytes (a corrupt stretch of data: the loss logged at 150 spikes, then recovers),
  or the learning rate x100 for steps 150-154 (a burst that knocks the model to a higher
  plateau).
- epochs_shuffled / epochs_sorted: 6,400 training examples, 5 epochs of 100 steps; the
  sorted run reads them in a fixed order, sorted by how rare the target byte is (easy,
  frequent bytes first), and never shuffles; the twin reshuffles every epoch. `epoch`
  logged as HF does (fractional).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import CONTEXT, EVIDENCE, text_bytes, windows

SEED = 42
OUT = EVIDENCE / "curve"
LOG_EVERY = 5
BATCH = 64


def model(normalise: bool = False, fixed: bool = False):
    """The evidence byte MLP; with `normalise`, the context's embeddings are centred over
    the 8 positions and divided by their length, sqrt(sum of squares) + 1e-3: a hand-written
    normalisation with its epsilon outside the square root, finite forward at 0 but an
    infinite derivative there; `fixed` puts it inside, sqrt(sum + 1e-6). A context of 8
    equal bytes (8 spaces: 1.4 % of the contexts, in 59 % of the batches) centres to
    exactly 0."""
    import torch
    from torch import nn

    class ByteMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(256, 16)
            self.hidden = nn.Linear(16 * CONTEXT, 128)
            self.out = nn.Linear(128, 256)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            e = self.emb(x)
            if normalise:  # centre over the context, scale to length 4; eps outside the sqrt
                e = e - e.mean(1, keepdim=True)
                s = (e * e).sum((1, 2), keepdim=True)
                e = 4.0 * e / (torch.sqrt(s + 1e-6) if fixed else torch.sqrt(s) + 1e-3)
            return self.out(torch.relu(self.hidden(e.flatten(1))))

    return ByteMLP()


Batches = Callable[[int], "tuple"]


def random_batches(tx, ty) -> Batches:
    import torch

    gen = torch.Generator().manual_seed(SEED)

    def batch(step: int):
        idx = torch.randint(0, tx.shape[0], (BATCH,), generator=gen)
        return tx[idx], ty[idx]

    return batch


def train(log_path: Path, steps: int, batches: Batches, *, lr: Callable[[int], float],
          amp: bool = False, normalise: bool = False, fixed: bool = False,
          epoch_of: Callable[[int], float] | None = None, vx=None, vy=None) -> dict:
    import torch
    from torch.nn.functional import cross_entropy

    torch.manual_seed(SEED)
    net = model(normalise, fixed)
    opt = torch.optim.Adam(net.parameters(), lr=lr(1))
    scaler = torch.amp.GradScaler("cpu") if amp else None
    losses: list[float] = []
    with open(log_path, "w") as log:
        for step in range(1, steps + 1):
            for g in opt.param_groups:
                g["lr"] = lr(step)
            x, y = batches(step)
            with torch.autocast("cpu", dtype=torch.float16, enabled=amp):
                loss = cross_entropy(net(x).float(), y)
            opt.zero_grad()
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            losses.append(loss.item())
            if step % LOG_EVERY == 0:
                row: dict = {"step": step, "loss": float(np.mean(losses)), "lr": lr(step)}
                losses.clear()
                if epoch_of is not None:
                    row["epoch"] = round(epoch_of(step), 4)
                if scaler is not None:
                    row["loss_scale"] = scaler.get_scale()
                log.write(json.dumps(row) + "\n")
            if vx is not None and step % 50 == 0:
                with torch.no_grad():
                    log.write(json.dumps({"step": step, "val_loss": cross_entropy(net(vx), vy).item()}) + "\n")
    return {}


def _bad_batch(batches: Batches, at: int) -> Batches:
    import torch

    gen = torch.Generator().manual_seed(SEED + 1)

    def batch(step: int):
        x, y = batches(step)
        if at - LOG_EVERY < step <= at:  # one logging interval of corrupt batches: random bytes
            x = torch.randint(1, 256, x.shape, generator=gen)
            y = torch.randint(1, 256, y.shape, generator=gen)
        return x, y

    return batch


def _epoch_batches(tx, ty, shuffle: bool, n: int = 6400) -> Batches:
    """Epochs over the first `n` examples: reshuffled each epoch, or in one fixed order
    sorted by the target byte's rarity (frequent bytes first, as a curriculum)."""
    import torch

    x, y = tx[:n], ty[:n]
    counts = torch.bincount(y, minlength=256)
    order = torch.argsort(-counts[y].double() + torch.arange(n) * 1e-9)  # stable: rarity, then index
    gen = torch.Generator().manual_seed(SEED)
    per_epoch = n // BATCH
    perm = order

    def batch(step: int):
        nonlocal perm
        i = (step - 1) % per_epoch
        if i == 0 and shuffle:
            perm = torch.randperm(n, generator=gen)
        idx = perm[i * BATCH:(i + 1) * BATCH]
        return x[idx], y[idx]

    return batch


RUNS: dict[str, tuple[str, Callable[..., dict]]] = {}


def run(name: str, what: str):
    def register(fn):
        RUNS[name] = (what, fn)
        return fn
    return register


def constant(v: float) -> Callable[[int], float]:
    return lambda _s: v


@run("amp_healthy", "fp16 autocast + GradScaler('cpu'), Adam 3e-3, 200 steps; the normalisation's "
     "epsilon inside the square root")
def amp_healthy(d, p):
    return train(p, 200, random_batches(d[0], d[1]), lr=constant(3e-3), amp=True, normalise=True,
                 fixed=True)


@run("amp_scale_collapse", "as amp_healthy with the epsilon outside the square root: every batch "
     "holding a context of 8 spaces overflows, the scaler halves its scale and never regrows it")
def amp_collapse(d, p):
    return train(p, 200, random_batches(d[0], d[1]), lr=constant(3e-3), amp=True, normalise=True)


@run("spike_recovers", "Adam 3e-3, 300 steps; the batches of steps 146-150 are random bytes")
def spike_recovers(d, p):
    return train(p, 300, _bad_batch(random_batches(d[0], d[1]), 150), lr=constant(3e-3), vx=d[2], vy=d[3])


@run("spike_unrecovered", "Adam 3e-3, 300 steps; learning rate x100 (0.3) for steps 150-154")
def spike_unrecovered(d, p):
    return train(p, 300, random_batches(d[0], d[1]), lr=lambda s: 0.3 if 150 <= s < 155 else 3e-3,
                 vx=d[2], vy=d[3])


@run("batches_fresh", "Adam 3e-3, 300 steps, a fresh random batch every step (the stuck_batch twin)")
def batches_fresh(d, p):
    return train(p, 300, random_batches(d[0], d[1]), lr=constant(3e-3), vx=d[2], vy=d[3])


@run("stuck_batch", "as batches_fresh, but the loader yields its first batch at every step")
def stuck_batch(d, p):
    first = random_batches(d[0], d[1])(1)
    return train(p, 300, lambda _s: first, lr=constant(3e-3), vx=d[2], vy=d[3])


@run("epochs_shuffled", "Adam 1e-3, 5 epochs of 100 steps over 6,400 examples, reshuffled every epoch")
def epochs_shuffled(d, p):
    return train(p, 500, _epoch_batches(d[0], d[1], True), lr=constant(1e-3), epoch_of=lambda s: s / 100)


@run("epochs_sorted", "as epochs_shuffled, but one fixed order sorted by the target byte's rarity, "
     "never shuffled")
def epochs_sorted(d, p):
    return train(p, 500, _epoch_batches(d[0], d[1], False), lr=constant(1e-3), epoch_of=lambda s: s / 100)


def main(argv: list[str]) -> int:
    import torch

    torch.set_num_threads(1)
    data = tuple(torch.from_numpy(a) for a in windows(text_bytes()))
    for name in argv or list(RUNS):
        what, fn = RUNS[name]
        dest = OUT / name
        dest.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        fn(data, dest / "metrics.jsonl")
        meta = {"framework": "pytorch", "run": name, "what": what, "seed": SEED,
                "recipe": {"batch_size": BATCH, "log_every": LOG_EVERY, "threads": 1,
                           "logged_loss": "mean of the batch losses since the previous log line"},
                "task": f"next byte from {CONTEXT} bytes of stdlib docstrings (byte MLP)",
                "wall_seconds": round(time.perf_counter() - t0, 1), "logs": ["metrics.jsonl"],
                "versions": {"python": platform.python_version(), "torch": torch.__version__,
                             "numpy": np.__version__},
                "command": f"python scripts/make_evidence_curve.py {name}"}
        (dest / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(f"{name}: {time.perf_counter() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
