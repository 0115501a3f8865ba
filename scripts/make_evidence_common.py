"""What the evidence scripts share: the task (next-byte prediction on text that ships
with Python), the recipe (a healthy and a diverging setting), and where logs go.

Framework-free on purpose (numpy only): the Keras script runs in an environment
without torch, the PyTorch and Lightning scripts in one without TensorFlow."""

from __future__ import annotations

import importlib
import inspect
import json
import platform
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "evidence"
TEXT_MODULES = ("argparse", "collections", "csv", "datetime", "functools", "json", "logging",
                "os", "pathlib", "re", "shutil", "string", "subprocess", "textwrap", "typing")
CONTEXT = 8        # bytes of context per example
TRAIN_BYTES = 60_000
VAL_BYTES = 8_000


@dataclass(frozen=True)
class Recipe:
    name: str
    what: str
    optimizer: str        # "adam" or "sgd"
    learning_rate: float
    steps: int = 300
    batch_size: int = 64
    log_every: int = 5
    val_every: int = 50


RECIPES = {
    "healthy": Recipe("healthy", "a sane setting", "adam", 3e-3),
    "diverging": Recipe("diverging", "SGD, momentum 0.9, learning rate 5.0, no clipping",
                        "sgd", 5.0),
}


def text_bytes() -> np.ndarray:
    """Docstrings of a fixed list of stdlib modules, as uint8 byte values."""
    docs = []
    for name in TEXT_MODULES:
        mod = importlib.import_module(name)
        docs.append(inspect.getdoc(mod) or "")
        for attr in sorted(dir(mod)):
            obj = getattr(mod, attr)
            if not attr.startswith("_") and getattr(obj, "__module__", None) == mod.__name__:
                docs.append(inspect.getdoc(obj) or "")
    data = "\n\n".join(d for d in dict.fromkeys(docs) if d).encode("utf-8")
    return np.frombuffer(data, dtype=np.uint8)


def windows(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train_x, train_y, val_x, val_y): CONTEXT bytes -> the next byte."""
    def make(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = np.arange(CONTEXT)[None, :] + np.arange(chunk.size - CONTEXT)[:, None]
        return chunk[idx].astype(np.int64), chunk[CONTEXT:].astype(np.int64)

    train = data[:TRAIN_BYTES]
    val = data[-VAL_BYTES:]
    return (*make(train), *make(val))


def write_meta(dest: Path, framework: str, recipe: Recipe, seed: int, wall: float,
               versions: dict[str, str], logs: list[str], script: str) -> None:
    meta = {"framework": framework, "run": recipe.name, "what": recipe.what, "seed": seed,
            "recipe": recipe.__dict__, "task": f"next byte from {CONTEXT} bytes of stdlib "
            "docstrings (byte MLP)", "wall_seconds": round(wall, 1), "logs": logs,
            "versions": {"python": platform.python_version(), **versions},
            "command": f"python scripts/{script}"}
    (dest / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
