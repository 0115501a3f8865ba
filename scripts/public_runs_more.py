"""Rebuild the log files of the fresh9 public runs: writers no earlier batch used.

Each corpus file keeps a log's numbers as series (metric -> [[step, value], ...], in the order
logged) and, under `layout`, what is needed to write them back in the writer's own format:

- `dvclive_dir`: DVCLive's `dvclive/plots/metrics/<name>.tsv`, one file per metric (`name` may
  hold folders: `train/loss`). `layout.files` is [[name, header], ...] in file-name order, the
  header as written (`step\\t<metric>`; DVCLive 0.x/1.x also wrote a `timestamp` column, kept
  in `layout.timestamps[name]`). A logged metric called `step` leaves a one-column file.
- `flair_loss_tsv`: Flair's `loss.tsv`, one row per epoch. `layout.header` is the header line's
  cells, `layout.rows` each row's cells in order: `=NAME` takes the next value of series NAME,
  anything else is the literal text the row held (`TIMESTAMP`, the `_` and empty cells of
  metrics Flair did not compute). Some Flair versions write one empty cell the header does not
  name (before the four `_` train-metric cells, or before `DEV_ACCURACY`), so later values sit
  one column right of their header name; the series are named by what the value is, the rows
  keep the cells where they were. `trailing_newline`: newer Flair ends every row with a
  newline, older Flair starts it with one.
- `sacred_metrics`: Sacred's FileStorageObserver `metrics.json`, {name: {steps, timestamps,
  values}} written with sorted keys and an indent of 2; the timestamps are kept under
  `layout.timestamps[name]`.
- `mlflow_dir`: MLflow's file store, `mlruns/<experiment_id>/<run_id>/metrics/<key>`, one
  `timestamp value step` line per logged value (`layout.timestamps[key]`, milliseconds), and
  the run's and the experiment's `meta.yaml` reduced to their id, name, status and time fields
  (`layout.run`, `layout.experiment`; local paths and user names are not kept); `newline` is the
  metric files' line ending (`\r\n` where the store was committed from Windows).

Numbers are written as the writer wrote them: integers as integers, floats as Python's repr,
and Flair's learning rate with four decimals; where a writer printed a value otherwise (numpy's
`1e-04`, older Flair's `0.9410`), `layout.printed[name]` holds [[index, text], ...] for those
points, the text as printed, and the series keeps the number. `REBUILDERS[writer](doc, folder)`
writes the file (or directory) under its usual name and returns its path; public_runs_logs.py
merges this table into its own, so scripts/public_runs.py rebuilds these writers like any other.
The rebuilt files are the originals byte for byte; public_runs/fresh9_original_digests.json
keeps the SHA-256 the collector took from the files at their cited commits, and
tests/test_public_runs.py compares each rebuild with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path


def _number(value: float) -> str:
    # JSON keeps 3 and 3.0 apart, and so did the writers: ints print bare, floats as repr
    return str(value) if isinstance(value, int) else repr(float(value))


def _printed(doc: Mapping, name: str) -> dict[int, str]:
    """The points of series `name` whose printed text is not the default one, by index."""
    return {i: text for i, text in doc["layout"].get("printed", {}).get(name, [])}


def dvclive_dir(doc: Mapping, folder: Path) -> Path:
    """dvclive/: one `plots/metrics/<name>.tsv` per metric, rows of step (and timestamp) and value."""
    root = folder / "dvclive"
    stamps = doc["layout"].get("timestamps", {})
    for name, header in doc["layout"]["files"]:
        path = root / "plots" / "metrics" / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        printed = _printed(doc, name)
        lines = ["\t".join(header)]
        for i, (step, value) in enumerate(doc["series"][name]):
            cell = {"step": _number(step), "timestamp": str(stamps[name][i]) if name in stamps else ""}
            text = printed.get(i, _number(value))
            lines.append("\t".join(cell.get(col, text) for col in header))
        path.write_text("".join(line + "\n" for line in lines))
    return root


def _flair_cell(name: str, value: float) -> str:
    return f"{value:.4f}" if name == "LEARNING_RATE" else _number(value)


def flair_loss_tsv(doc: Mapping, folder: Path) -> Path:
    """loss.tsv: Flair's per-epoch table, the header and each row's cells as the writer laid them out."""
    layout, series = doc["layout"], doc["series"]
    cursor = dict.fromkeys(series, 0)
    printed = {name: _printed(doc, name) for name in series}
    lines = ["\t".join(layout["header"])]
    for row in layout["rows"]:
        cells = []
        for cell in row:
            if not cell.startswith("="):
                cells.append(cell)
                continue
            name = cell[1:]
            at = cursor[name]
            cells.append(printed[name].get(at) or _flair_cell(name, series[name][at][1]))
            cursor[name] += 1
        lines.append("\t".join(cells))
    left = {k: len(v) - cursor[k] for k, v in series.items() if cursor[k] != len(v)}
    if left:
        raise ValueError(f"{doc['id']}: points on no row: {left}")
    path = folder / "loss.tsv"
    path.write_text("\n".join(lines) + ("\n" if layout.get("trailing_newline") else ""))
    return path


def sacred_metrics(doc: Mapping, folder: Path) -> Path:
    """metrics.json: Sacred's steps/timestamps/values lists per metric."""
    stamps = doc["layout"]["timestamps"]
    metrics = {name: {"steps": [s for s, _v in points], "timestamps": stamps[name],
                      "values": [v for _s, v in points]}
               for name, points in doc["series"].items()}
    path = folder / "metrics.json"
    path.write_text(json.dumps(metrics, sort_keys=True, indent=doc["layout"].get("indent", 2)))
    return path


def _meta_yaml(fields: Mapping) -> str:
    # MLflow writes meta.yaml with yaml.safe_dump: sorted keys, ids quoted as strings
    return "".join(f"{k}: '{v}'\n" if isinstance(v, str) and v.isdigit() else f"{k}: {v}\n"
                   for k, v in sorted(fields.items()))


def mlflow_dir(doc: Mapping, folder: Path) -> Path:
    """mlruns/: the experiment and run meta.yaml and one metrics/<key> file per metric."""
    layout = doc["layout"]
    root = folder / "mlruns"
    experiment = root / str(layout["experiment"]["experiment_id"])
    run = experiment / str(layout["run"]["run_id"])
    (run / "metrics").mkdir(parents=True)
    (experiment / "meta.yaml").write_text(_meta_yaml(layout["experiment"]))
    (run / "meta.yaml").write_text(_meta_yaml(layout["run"]))
    newline = layout.get("newline", "\n")
    for key, points in doc["series"].items():
        path = run / "metrics" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = (f"{stamp} {_number(value)} {_number(step)}{newline}"
                 for stamp, (step, value) in zip(layout["timestamps"][key], points, strict=True))
        with path.open("w", newline="") as fh:
            fh.write("".join(lines))
    return root


REBUILDERS: dict[str, Callable[[Mapping, Path], Path]] = {
    "dvclive_dir": dvclive_dir,
    "flair_loss_tsv": flair_loss_tsv,
    "sacred_metrics": sacred_metrics,
    "mlflow_dir": mlflow_dir,
}
