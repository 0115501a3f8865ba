"""Multi-run stores: one path that holds several runs (an MLflow `mlflow.db`, an
`mlruns/` tree); trainproof.address owns the `PATH::RUN_ID` form that names one.

A store format lists the runs a path holds and reads one run by its exact id. This
module owns the choice of run: the only run when the user
named none, else the run whose id (or a unique id prefix, or a unique run name)
matches; anything else is one InputError line that lists what the store holds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from trainproof.address import SEPARATOR
from trainproof.frozen import NamedTuple
from trainproof.model import InputError

if TYPE_CHECKING:  # base imports this module for Format.store
    from trainproof.parsers.base import RawLog

LISTED = 5  # runs named in an error line before "and N more"


class UnknownRun(InputError):
    """The store has no run with this exact id (the caller may try a prefix or a name)."""


class RunRef(NamedTuple):
    """One run in a store. `path` is the run's own location when it has one (an
    mlruns run directory), so doctor can name the run by a real path."""

    id: str
    name: str = ""
    path: Path | None = None

    @property
    def label(self) -> str:
        return f"{self.id} ({self.name})" if self.name else self.id


class Store(NamedTuple):
    runs: Callable[[Path], list[RunRef]]  # every run the path holds, in a stable order
    read: Callable[[Path, str], RawLog]  # one run by exact id; UnknownRun when absent


def _listing(refs: list[RunRef]) -> str:
    shown = ", ".join(r.label for r in refs[:LISTED])
    more = f" and {len(refs) - LISTED} more" if len(refs) > LISTED else ""
    return shown + more


def select(path: Path, refs: list[RunRef], wanted: str | None) -> RunRef:
    """The run `wanted` names (None: the only run), or an InputError that says which
    runs the store holds and how to name one."""
    if not refs:
        raise InputError(f"{path}: holds no runs")
    if wanted is None:
        if len(refs) == 1:
            return refs[0]
        raise InputError(f"{path}: holds {len(refs)} runs ({_listing(refs)}); "
                         f"name one as {path}{SEPARATOR}RUN_ID, or run `trainproof doctor {path}`")
    exact = [r for r in refs if r.id == wanted]
    hits = exact or [r for r in refs if r.id.startswith(wanted) or r.name == wanted]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise InputError(f"{path}{SEPARATOR}{wanted}: names {len(hits)} runs ({_listing(hits)}); "
                         "give the full run id")
    raise InputError(f"{path}{SEPARATOR}{wanted}: no such run; it holds {_listing(refs)}")


def read_selected(store: Store, path: Path, wanted: str | None) -> tuple[str | None, RawLog]:
    """Read the run `wanted` names (an exact id is read without listing the store:
    doctor's path). Returns the run id to append to the path's address (None when
    the path is the run's own directory) and the run's log."""
    if wanted is not None:
        try:
            return wanted, store.read(path, wanted)
        except UnknownRun:
            pass
    ref = select(path, store.runs(path), wanted)
    own = ref.path is not None and wanted is None and ref.path == path
    return (None if own else ref.id), store.read(path, ref.id)
