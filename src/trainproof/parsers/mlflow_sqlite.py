"""MLflow's SQLite tracking store (`sqlite:///mlflow.db`): one file, many runs.

Read with the standard library's sqlite3, opened read-only and immutable (no lock,
no journal, nothing written beside the file), after checking the file really has
MLflow's `runs` and `metrics` tables. Points are streamed in blocks from one query
per run that MLflow's (run, key, step) index serves in order. MLflow cannot store
NaN or +-Inf in its FLOAT column: it writes NaN as 0.0 with `is_nan` set and +-Inf
as +-1.797e308 (the largest double); both are read back as the non-finite values
they stand for, never as numbers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from trainproof.model import InputError
from trainproof.parsers.base import Columns, RawLog, require_file
from trainproof.parsers.stores import RunRef, UnknownRun

if TYPE_CHECKING:
    import sqlite3

MAGIC = b"SQLite format 3\x00"
BLOCK = 65536  # rows fetched per round trip
INF_MARK = sys.float_info.max  # what MLflow stores for +Inf (and -INF_MARK for -Inf)
NEEDED = {"runs": {"run_uuid", "name", "status", "lifecycle_stage"},
          "metrics": {"key", "value", "step", "is_nan", "run_uuid"}}


def sniff(name: str, head: bytes) -> bool:
    """Any SQLite file; `confirm` then tells MLflow's schema from the rest."""
    return head.startswith(MAGIC)


def confirm(path: Path) -> bool:
    """False for a readable SQLite database without MLflow's tables (coverage data, an
    Optuna study), so `doctor` passes it by; a damaged one stays a candidate, and
    reading it says what is wrong."""
    import sqlite3

    try:
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
        try:
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.Error:
        return True
    return set(NEEDED) <= tables


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to an MLflow database; every SQLite error (not a
    database, malformed, truncated) becomes one InputError line."""
    import sqlite3

    require_file(path)
    uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise InputError(f"{path}: cannot open as SQLite ({exc})") from None
    try:
        _require_schema(con, path)
        yield con
    except sqlite3.Error as exc:
        raise InputError(f"{path}: unreadable SQLite database ({exc})") from None
    finally:
        con.close()


def _require_schema(con: sqlite3.Connection, path: Path) -> None:
    for table, columns in NEEDED.items():
        have = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
        if not columns <= have:
            missing = ", ".join(sorted(columns - have))
            raise InputError(f"{path}: SQLite database without MLflow's '{table}' table "
                             f"(missing {missing}); not an MLflow tracking store")


def runs(path: Path) -> list[RunRef]:
    """The active runs, oldest first (deleted runs are MLflow's trash)."""
    with _connect(path) as con:
        rows = con.execute("SELECT run_uuid, name FROM runs WHERE lifecycle_stage IS NOT 'deleted' "
                           "ORDER BY start_time, run_uuid").fetchall()
    return [RunRef(str(uid), str(name or "")) for uid, name in rows]


def read(path: Path, run_id: str) -> RawLog:
    with _connect(path) as con:
        info = con.execute("SELECT name, status FROM runs WHERE run_uuid = ?", (run_id,)).fetchone()
        if info is None:
            raise UnknownRun(f"{path}: no run {run_id}")
        # Row order is not write order (clients log asynchronously): the (run, key, step)
        # index streams each key by step, and at a repeated step the later time stamp
        # comes last, so it is the write that wins when the run is built.
        cur = con.execute("SELECT key, step, value, is_nan FROM metrics WHERE run_uuid = ? "
                          "ORDER BY key, step, timestamp, rowid", (run_id,))
        cols, records, marked = Columns(), 0, 0
        while rows := cur.fetchmany(BLOCK):
            records += len(rows)
            marked += _add_rows(rows, cols)
    name, status = info
    notes = [f"MLflow run '{name or ''}' ({status})"]
    if marked:
        notes.append(f"{marked} value(s) stored with MLflow's NaN/Inf markers (is_nan, "
                     "+-1.797e308) read as non-finite")
    return RawLog(cols.arrays(), records, notes=notes + cols.bad_notes(),
                  meta={"run_id": run_id, "run_name": name, "status": status})


def _add_rows(rows: list[tuple], cols: Columns) -> int:
    """Add a block of (key, step, value, is_nan) rows; returns how many were markers."""
    marked = 0
    for key, step, value, is_nan in rows:
        if type(value) not in (float, int) or type(step) not in (float, int):
            cols.reject(str(key))
            continue
        if is_nan:
            value = float("nan")
        elif abs(value) == INF_MARK:
            value = float("inf") if value > 0 else float("-inf")
        else:
            cols.add(str(key), float(step), float(value))
            continue
        marked += 1
        cols.add(str(key), float(step), value)
    return marked
