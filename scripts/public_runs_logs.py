"""Rebuild the log files of the public runs whose writers are not HF/LLaMA-Factory (fresh8 onwards).

A corpus file keeps a log's numbers as series (metric -> [[step, value], ...], in the order
logged) and, under `layout`, what is needed to put them back in the writer's own file format:

- JSON-lines writers (`detectron2_metrics`, `mmengine_scalars`, `swift_logging_jsonl`):
  `step_key` (the writer's step field), `keysets` (the distinct key lists a line holds, in the
  line's order, the step field among them) and `lines` ([step, keyset index] per line, in file
  order). The lines are needed because these files are appended to: a restarted run starts
  again at iteration 19 in the same metrics.json, so the steps alone cannot say which values
  shared a line.
- `hf_stdout` (the Trainer's printed log dicts): the same line layout, stepped by `epoch` (the
  only step a printed dict carries), and `quoted` (transformers 5 prints numbers as strings).
- `nanogpt_stdout`: the same line layout over nanoGPT's two printed lines (`step N: train loss
  X, val loss Y` and `iter N: loss X, time Tms, mfu M%`), refilled from their print templates.
- `keras_fit_stdout`: the same line layout over Keras' per-epoch printout, each line carrying
  the `E` of its `Epoch e/E` (several fits printed in one file restart at 1), the name of the
  closing line's print (`keras20_v2`, `tfkeras2_v2`, `tfkeras2_v1`: `_KERAS_PRINTS`) and the
  numbers printed around the metrics (`batches`, `seconds`, `epoch_time` / `step_time` as
  [number, unit]); `newline` is the file's line ending (default "\\n").
- `keras_history_json`: `json.dump(history.history)` - metric -> per-epoch list; `indent` is
  the indent the file was written with (None: one line). Its steps are epochs counted from 1.

Only the numbers come back: string fields a writer derives from them (ms-swift's
`global_step/max_steps` and `percentage`) are recomputed, and elapsed/remaining-time strings
are not kept. `REBUILDERS[writer](doc, folder)` writes the file under its usual name and
returns its path; scripts/public_runs.py calls it for any writer it does not rebuild itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import public_runs_more  # the fresh9 writers' rebuilders (DVCLive, Flair, Sacred, MLflow)


def _lines(doc: Mapping) -> list[tuple[float, dict]]:
    """(step, line) per logged line, the line a dict in the writer's key order with the values taken
    from the series in the order logged; a point whose step is not its line's raises ValueError."""
    layout, series = doc["layout"], doc["series"]
    cursor = dict.fromkeys(series, 0)
    max_steps = (doc.get("planned") or {}).get("max_steps")
    derived = {  # fields the writer prints from the step rather than logs as a metric
        layout.get("step_key"): lambda step: step,
        "global_step/max_steps": lambda step: f"{step}/{max_steps}",  # ms-swift's step field
        "percentage": lambda step: f"{100 * step / max_steps:.2f}%",
    }
    out = []
    for step, keyset, *_ in layout["lines"]:
        line: dict = {}
        for key in layout["keysets"][keyset]:
            if key in derived:
                line[key] = derived[key](step)
                continue
            at, line[key] = series[key][cursor[key]]
            if at != step:
                raise ValueError(f"{doc['id']}: {key} point at {at} sits on a line at step {step}")
            cursor[key] += 1
        out.append((step, line))
    left = {k: len(v) - cursor[k] for k, v in series.items() if cursor[k] != len(v)}
    if left:
        raise ValueError(f"{doc['id']}: points on no line: {left}")
    return out


def _write_jsonl(path: Path, rows: list[dict], sort_keys: bool = False) -> Path:
    path.write_text("".join(json.dumps(row, sort_keys=sort_keys) + "\n" for row in rows))
    return path


def detectron2_metrics(doc: Mapping, folder: Path) -> Path:
    """output/metrics.json: Detectron2's JSONWriter writes one sorted-key line per logged iteration."""
    rows = [line for _step, line in _lines(doc)]
    return _write_jsonl(folder / "metrics.json", rows, sort_keys=True)


def mmengine_scalars(doc: Mapping, folder: Path) -> Path:
    """vis_data/scalars.json: MMEngine's LocalVisBackend appends one line of scalars and `step` per log."""
    rows = [line for _step, line in _lines(doc)]
    vis = folder / "vis_data"
    vis.mkdir(exist_ok=True)
    return _write_jsonl(vis / "scalars.json", rows)


def swift_logging_jsonl(doc: Mapping, folder: Path) -> Path:
    """logging.jsonl: ms-swift's per-log line; the step lives in `global_step/max_steps`."""
    return _write_jsonl(folder / "logging.jsonl", [line for _step, line in _lines(doc)])


def hf_stdout(doc: Mapping, folder: Path) -> Path:
    """train_log.txt: the dicts the HF Trainer prints, one a line, without the progress bars around
    them. transformers 5 prints every number quoted, in 4 significant digits (`quoted`); 4.x
    prints the floats as Python writes them."""
    quoted = doc["layout"].get("quoted")

    def number(v: float) -> str:
        return f"'{v:.4g}'" if quoted else repr(v)

    text = "".join("{" + ", ".join(f"'{k}': {number(v)}" for k, v in line.items()) + "}\n"
                   for _step, line in _lines(doc))
    path = folder / "train_log.txt"
    path.write_text(text)
    return path


# nanoGPT's train.py prints these two lines (an evaluation, then the iteration's own loss)
_NANOGPT_LINES = {
    ("train_loss", "val_loss"): "step {step}: train loss {train_loss:.4f}, val loss {val_loss:.4f}",
    ("loss", "time_ms", "mfu_pct"): "iter {step}: loss {loss:.4f}, time {time_ms:.2f}ms, mfu {mfu_pct:.2f}%",
}


def nanogpt_stdout(doc: Mapping, folder: Path) -> Path:
    """train.log: nanoGPT's stdout lines, the evaluation and iteration prints only."""
    text = "".join(_NANOGPT_LINES[tuple(line)].format(step=step, **line) + "\n" for step, line in _lines(doc))
    path = folder / "train.log"
    path.write_text(text)
    return path


def _keras_number(v: float, verbose: int) -> str:
    # Keras' progress bar prints 4 decimals, switching to exponent form at or below 1e-3
    # (verbose=1 tests |v|, verbose=2 tests v itself)
    big = abs(v) > 1e-3 if verbose == 1 else v > 1e-3
    return f"{v:.4f}" if big else f"{v:.4e}"


def _keras_time(token: list) -> str:
    number, unit = token  # as printed: [43, "ms"] is `43ms`
    return f"{number}{unit}"


# The line that closes an epoch, per Keras generation, around the ` - name: value` pairs
# (`fields`: the numbers printed with them; the bar at the end of an epoch is always full)
_KERAS_PRINTS: dict[str, tuple[int, Callable[[dict, str], str]]] = {
    # keras 2.0 Progbar, verbose=2: `67s - loss: ...`
    "keras20_v2": (2, lambda f, m: f"{f['seconds']}s - {m}"),
    # tf.keras 2.x, verbose=2: `128/128 - 5s - loss: ... - 5s/epoch - 43ms/step`
    "tfkeras2_v2": (2, lambda f, m: f"{f['batches']}/{f['batches']} - {f['seconds']}s - {m} - "
                                    f"{_keras_time(f['epoch_time'])}/epoch - {_keras_time(f['step_time'])}/step"),
    # tf.keras 2.x, verbose=1, the final draw: `4/4 [=====] - 3s 11ms/step - loss: ...`
    "tfkeras2_v1": (1, lambda f, m: f"{f['batches']}/{f['batches']} [{'=' * 30}] - {f['seconds']}s "
                                    f"{_keras_time(f['step_time'])}/step - {m}"),
}


def keras_fit_stdout_lines(doc: Mapping) -> list[str]:
    """`Epoch e/E` and the line that closes the epoch, per epoch, as its Keras generation printed them."""
    out = []
    for (step, line), (_s, _k, total, printed, fields) in zip(_lines(doc), doc["layout"]["lines"], strict=True):
        verbose, template = _KERAS_PRINTS[printed]
        metrics = " - ".join(f"{k}: {_keras_number(v, verbose)}" for k, v in line.items())
        out += [f"Epoch {step}/{total}", template(fields, metrics)]
    return out


def keras_fit_stdout(doc: Mapping, folder: Path) -> Path:
    """fit.log: what `model.fit(...)` prints per epoch - `Epoch e/E`, then the epoch's closing line
    with the batch counter and timings the writer printed around the metrics (banners, generated
    text and mid-epoch redraws are not kept); `newline` is the file's line ending."""
    newline = doc["layout"].get("newline", "\n")
    path = folder / "fit.log"
    with path.open("w", newline="") as fh:
        fh.write("".join(line + newline for line in keras_fit_stdout_lines(doc)))
    return path


def keras_history_json(doc: Mapping, folder: Path) -> Path:
    """history.json: `json.dump(model.fit(...).history, f)` - one list per metric, one value per epoch."""
    history = {name: [value for _epoch, value in points] for name, points in doc["series"].items()}
    path = folder / "history.json"
    path.write_text(json.dumps(history, indent=doc["layout"].get("indent")))
    return path


REBUILDERS: dict[str, Callable[[Mapping, Path], Path]] = {
    "detectron2_metrics": detectron2_metrics,
    "mmengine_scalars": mmengine_scalars,
    "swift_logging_jsonl": swift_logging_jsonl,
    "keras_history_json": keras_history_json,
    "hf_stdout": hf_stdout,
    "nanogpt_stdout": nanogpt_stdout,
    "keras_fit_stdout": keras_fit_stdout,
}
REBUILDERS.update(public_runs_more.REBUILDERS)
