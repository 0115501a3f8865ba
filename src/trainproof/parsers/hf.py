"""HuggingFace Trainer `trainer_state.json`: the `log_history` list, train and eval
entries alike. The end-of-training summary entry (train_runtime, train_loss, ...)
is run metadata, not a loss point."""

from __future__ import annotations

from pathlib import Path

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, require_file
from trainproof.parsers.jsonutil import loads
from trainproof.parsers.rows import add_rows

NAME = "hf"
_SUMMARY_KEYS = ("train_runtime", "total_flos")
_META_KEYS = ("global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
              "num_train_epochs", "best_model_checkpoint", "best_metric", "train_batch_size")


def sniff(name: str, head: bytes) -> bool:
    return name == "trainer_state.json" or (b'"log_history"' in head and head.lstrip()[:1] == b"{")


def read(path: Path) -> RawLog:
    require_file(path)
    data = path.read_bytes()
    try:
        doc = loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({_short(exc)})") from None
    del data
    if not isinstance(doc, dict) or not isinstance(doc.get("log_history"), list):
        raise InputError(f"{path}: not a trainer_state.json (no log_history list)")
    history = doc["log_history"]
    rows = [e for e in history if isinstance(e, dict)]
    notes: list[str] = []
    if len(rows) != len(history):
        notes.append(f"{len(history) - len(rows)} log_history entries that are not objects ignored")
    summary = [e for e in rows if any(k in e for k in _SUMMARY_KEYS)]
    points = [e for e in rows if not any(k in e for k in _SUMMARY_KEYS)]
    cols = Columns()
    add_rows(points, cols, 0, "step" if any("step" in e for e in points[:50]) else None)
    notes.extend(cols.bad_notes())
    meta = {k: doc[k] for k in _META_KEYS if k in doc}
    if summary:
        meta["summary"] = {k: v for k, v in summary[-1].items() if isinstance(v, (int, float, str))}
    return RawLog(cols.arrays(), records=len(points), notes=notes, meta=meta, step_column="step")


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120]
