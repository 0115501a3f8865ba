"""MLflow tracking stores as one format, `mlflow`: the SQLite database (a file,
mlflow_sqlite) and the file store (a directory, mlflow_files). Both hold many runs:
`trainproof epoch` judges the only run or names them, `doctor` judges each, and
`PATH::RUN_ID` picks one (stores.py)."""

from __future__ import annotations

from pathlib import Path

from trainproof.parsers import mlflow_files, mlflow_sqlite
from trainproof.parsers.base import RawLog
from trainproof.parsers.stores import RunRef, Store, read_selected

NAME = "mlflow"


def runs(path: Path) -> list[RunRef]:
    return mlflow_files.runs(path) if path.is_dir() else mlflow_sqlite.runs(path)


def read_one(path: Path, run_id: str) -> RawLog:
    return mlflow_files.read(path, run_id) if path.is_dir() else mlflow_sqlite.read(path, run_id)


STORE = Store(runs, read_one)


def read(path: Path) -> RawLog:
    """The only run the path holds (an InputError names them when there are several)."""
    return read_selected(STORE, path, None)[1]
