"""Rebuild the tabular training logs of the public-runs corpus (CSV written by a training framework).

A tabular run file keeps the writer's numbers as `series` (column name -> [[key, value], ...],
keyed by the writer's own step column: `step` for Lightning's CSVLogger, `epoch` for the others)
and, under `source`, what the row layout needs to write the file again cell for cell:

- `columns`: the header, in order, exactly as written (YOLO's older releases pad the names);
- `key`: the column whose value keys every series point (null: the row number, from 0); it is
  a series too (`[[k, k], ...]`), so every filled cell is the next point of its column's series;
- `rows`: one mask per data row, a character per cell: `1` a number (the next point of that
  column's series), `0` an empty cell (Lightning's sparse train/val rows), `t` a text cell
  (the next entry of `source.text[column]`, e.g. fastai's `time` column `00:12`);
- `text`: column -> [[key, "cell"], ...] for the cells that are not numbers;
- `pad`: the width older Ultralytics releases right-align every cell to (`%20.5g`, `%23.5g`);
- `newline`: the line ending the writer used (`\\r\\n` for Python's csv module on Windows or
  Keras' CSVLogger; `\\n` otherwise); `delimiter` when it is not a comma.

Each REBUILDERS function writes the file under the name its writer uses and returns its path.
Numbers are written back as Python writes them (`repr` of a float, an integer as an integer),
so each cell reads back as the same number; the rows, their order, the empty cells and the
header are the writer's own.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping
from pathlib import Path


def _cell(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"series value {value!r} is not a number")
    return str(value) if isinstance(value, int) else repr(float(value))


def _next(kind: str, name: str, series: dict, text: dict, pad: int) -> str:
    if kind == "0":
        return ""
    return next(text[name])[1] if kind == "t" else _cell(next(series[name])[1]).rjust(pad)


def table(doc: Mapping) -> list[list[str]]:
    """The header and the data rows of the file, as cells (strings)."""
    src = doc["source"]
    names = [c.strip() for c in src["columns"]]
    series = {name: iter(points) for name, points in doc["series"].items()}
    text = {name: iter(points) for name, points in (src.get("text") or {}).items()}
    pad = int(src.get("pad") or 0)
    rows = [list(src["columns"])]
    for index, mask in enumerate(src["rows"]):
        if len(mask) > len(names):
            raise ValueError(f"row {index} has more cells than the header")
        # each filled cell takes the next point of its column, in the order the writer wrote them
        rows.append([_next(kind, name, series, text, pad) for name, kind in zip(names, mask, strict=False)])
    return rows


def write_table(doc: Mapping, path: Path) -> Path:
    """Write the rows of `doc` to `path` with the writer's delimiter and line ending."""
    src = doc["source"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, delimiter=src.get("delimiter", ","), lineterminator=src.get("newline", "\n"))
        writer.writerows(table(doc))
    return path


def _named(relative: str) -> Callable[[Mapping, Path], Path]:
    return lambda doc, folder: write_table(doc, folder / relative)


def _keras(doc: Mapping, folder: Path) -> Path:
    # CSVLogger writes wherever it is pointed: keep the name the user gave it (training.log, history.csv, ...)
    return write_table(doc, folder / Path(doc["source"]["path"]).name)


def _ultralytics(doc: Mapping, folder: Path) -> Path:
    # YOLOv5 logs objectness (train/obj_loss) and writes runs/train/exp/; v8+ writes runs/<task>/train/
    v5 = any(c.strip() == "train/obj_loss" for c in doc["source"]["columns"])
    return write_table(doc, folder / ("runs/train/exp" if v5 else "runs/detect/train") / "results.csv")


REBUILDERS: dict[str, Callable[[Mapping, Path], Path]] = {
    "lightning_csv": _named("lightning_logs/version_0/metrics.csv"),
    "keras_csv": _keras,
    "fastai_csv": _named("history.csv"),
    "ultralytics_results": _ultralytics,
    "timm_summary": _named("summary.csv"),
}
