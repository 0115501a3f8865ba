"""Every real log a single-run rule must stay silent on, read once per test session: the
public runs of the seven halves the rules of this branch were checked against (design,
report, fresh, fresh2, fresh3, fresh4, fresh5; rebuilt as their writers wrote them, through
scripts/public_runs.py), and the logs doctor finds under the galleries (all seeds),
evidence/, tests/fixtures/ and ../shared/corpus (when it is beside the checkout).

A later public-runs half is never read here: until its first scoring is committed no test
may judge it, and after it, it is the rules' out-of-sample estimate, which a test that
failed on it would invite tuning to."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path

from trainproof.discover import discover
from trainproof.model import InputError, Run, Skip
from trainproof.parsers import read_run

from .conftest import CORPUS, ROOT
from .test_public_runs import DOCS, public_runs

LOCAL = (ROOT / "examples", ROOT / "evidence", ROOT / "tests" / "fixtures", CORPUS)
IN_SAMPLE = ("design", "report", "fresh", "fresh2", "fresh3", "fresh4", "fresh5")


@functools.cache
def public() -> tuple[tuple[str, Run], ...]:
    """(id, run) of every public run of the IN_SAMPLE halves."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for doc in (d for d in DOCS if d["half"] in IN_SAMPLE):
            out.append((doc["id"], read_run(public_runs.rebuild(doc, Path(tmp)))))
    return tuple(out)


@functools.cache
def local() -> tuple[tuple[str, Run], ...]:
    """(path, run) of every log found under LOCAL that reads (fixtures of unreadable input are
    the readers' tests' business)."""
    out = []
    for root in (r for r in LOCAL if r.exists()):
        for path, _fmt in discover(root, 100_000).logs:
            try:
                out.append((str(path), read_run(path)))
            except InputError:
                continue
    return tuple(out)


def fires_on(judge: Callable[[Run], object], runs: tuple[tuple[str, Run], ...]) -> set[str]:
    """The names of the runs on which a check's judge makes a finding."""
    return {name for name, run in runs if not isinstance(out := judge(run), Skip) and list(out)}  # type: ignore[call-overload]


def public_run(run_id: str) -> Run:
    """One public run, of any half, rebuilt as its writer wrote it and read as a user's log is
    (for the tests of a rule on the runs that raised it)."""
    (doc,) = [d for d in DOCS if d["id"] == run_id]
    with tempfile.TemporaryDirectory() as tmp:
        return read_run(public_runs.rebuild(doc, Path(tmp)))


@functools.cache
def labelled_runs() -> tuple[tuple[dict, Run], ...]:
    """(file, run) of every public run of every half that reads, for a rule's test that it fires on
    the runs labelled for it and on no other (its judge only, never a verdict)."""
    out = []
    for doc in DOCS:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                out.append((doc, read_run(public_runs.rebuild(doc, Path(tmp)))))
            except InputError:  # a run the harness scores as NOT-CHECKED
                continue
    return tuple(out)
