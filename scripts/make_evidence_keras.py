"""Keras 3 / TensorFlow 2 evidence: one run recorded by two callbacks at once,
keras.callbacks.CSVLogger and keras.callbacks.TensorBoard.

TensorFlow is not part of trainproof's environment (it pins its own numpy and
protobuf), so this script runs in a separate virtual environment:

    python -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install tensorflow-cpu==2.21.0
    nice -n 10 /tmp/tfenv/bin/python scripts/make_evidence_keras.py

Keras logs once per epoch; an "epoch" here is `steps_per_epoch` optimizer steps
(the recipe's log interval), the usual way to get a per-N-steps curve from fit().
Writes evidence/keras/<run>/training.csv, evidence/keras/<run>/tb/{train,validation}/
events.out.tfevents.* and run_meta.json for both recipes of make_evidence_common.py."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import CONTEXT, EVIDENCE, RECIPES, Recipe, text_bytes, windows, write_meta

SEED = 42


def byte_mlp(recipe: Recipe):
    import keras

    model = keras.Sequential([
        keras.Input((CONTEXT,), dtype="int64"), keras.layers.Embedding(256, 16),
        keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(256)])
    if recipe.optimizer == "sgd":
        opt = keras.optimizers.SGD(learning_rate=recipe.learning_rate, momentum=0.9)
    else:
        opt = keras.optimizers.Adam(learning_rate=recipe.learning_rate)
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def train(recipe: Recipe, data: tuple, dest: Path) -> None:
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(SEED)
    tx, ty, vx, vy = data
    train_ds = (tf.data.Dataset.from_tensor_slices((tx, ty)).shuffle(len(tx), seed=SEED)
                .repeat().batch(recipe.batch_size))
    shutil.rmtree(dest / "tb", ignore_errors=True)
    epochs = recipe.steps // recipe.log_every
    byte_mlp(recipe).fit(
        train_ds, steps_per_epoch=recipe.log_every, epochs=epochs,
        validation_data=(vx, vy), validation_freq=recipe.val_every // recipe.log_every,
        verbose=0, callbacks=[keras.callbacks.CSVLogger(str(dest / "training.csv")),
                              keras.callbacks.TensorBoard(str(dest / "tb"), update_freq="epoch",
                                                          write_graph=False, profile_batch=0)])


def main() -> int:
    import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    data = windows(text_bytes())
    versions = {"tensorflow": tf.__version__, "keras": keras.__version__}
    for recipe in RECIPES.values():
        dest = EVIDENCE / "keras" / recipe.name
        dest.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        train(recipe, data, dest)
        logs = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()
                      and p.name != "run_meta.json")
        write_meta(dest, "keras", recipe, SEED, time.perf_counter() - t0, versions, logs,
                   "make_evidence_keras.py (in a tensorflow-cpu venv)")
        print(f"keras {recipe.name}: {dest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
