"""The value types every layer shares: series and runs (measured), findings and
reports (judged), and the two derived facts users gate on — a report's verdict
and a report set's exit code — each computed in exactly one place."""

from __future__ import annotations

import enum
import weakref
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING

from trainproof.frozen import FACTORY, record

if TYPE_CHECKING:  # numpy stays off the start-up path of --version, --help and `rules`
    import numpy as np

# The value types below are frozen dataclasses whose __init__ is written out
# (trainproof.frozen: compiling dataclasses' generated methods cost ~10 ms of every
# judging command's start-up, #14); each sets its fields, in order, as dataclasses would.
_set = object.__setattr__


class Level(str, enum.Enum):
    """How much a single finding weighs."""

    FAIL = "FAIL"
    WARN = "WARN"
    INFO = "INFO"
    PASS = "PASS"
    NOT_CHECKED = "NOT-CHECKED"


class Verdict(str, enum.Enum):
    """A report's overall answer. `rank` orders triage: FAIL first."""

    FAIL = "FAIL"
    WARN = "WARN"
    NOT_CHECKED = "NOT-CHECKED"
    PASS = "PASS"

    @property
    def rank(self) -> int:
        return _VERDICT_RANK[self]


_VERDICT_RANK = {Verdict.FAIL: 0, Verdict.WARN: 1, Verdict.NOT_CHECKED: 2, Verdict.PASS: 3}


class ExitCode(enum.IntEnum):
    OK = 0  # judged, no FAIL (WARN allowed)
    FAIL = 1  # judged, at least one FAIL about the user's run
    CANNOT_JUDGE = 2  # missing/unreadable input, nothing checkable, usage or internal error


class SkipKind(str, enum.Enum):
    """Why a check did not run. Decided where the check decides it, never parsed from prose."""

    NO_DATA = "no data"
    TOO_FEW = "too few points"
    DEGENERATE = "degenerate data"
    NOT_REQUESTED = "not requested"
    COVERED = "judged by another check"
    FAILED = "checker failed"


@record(slots=True)
class Skip:
    """Why a check did not judge: its kind and the words a report shows."""

    kind: SkipKind
    detail: str

    def __init__(self, kind: SkipKind, detail: str) -> None:
        _set(self, "kind", kind)
        _set(self, "detail", detail)

    def __str__(self) -> str:
        return self.detail


@record(slots=True, weakref_slot=True)  # weakref: memo.last_series
class Series:
    """One metric of one run: steps sorted ascending, unique; NaN/Inf kept as evidence."""

    name: str
    steps: np.ndarray
    values: np.ndarray

    def __init__(self, name: str, steps: np.ndarray, values: np.ndarray) -> None:
        _set(self, "name", name)
        _set(self, "steps", steps)
        _set(self, "values", values)

    def __len__(self) -> int:
        return int(self.values.size)

    @property
    def finite(self) -> np.ndarray:
        import numpy as np

        return np.isfinite(self.values)

    def finite_only(self) -> Series:
        from trainproof import stats  # lazily, like numpy: the model module stays light

        # a finite series is known finite without its mask (a 5M-point temporary per call, #14),
        # and known finite again without its min and max: rules ask ~30 times a report about
        # the same few series (two passes over 1M points each time, #14)
        if any(ref() is self for ref in _FINITE):
            return self
        if stats.all_finite(self.values):
            _FINITE[:] = [weakref.ref(self), *_FINITE[:_FINITE_KEPT - 1]]
            return self
        mask = self.finite
        return Series(self.name, self.steps[mask], self.values[mask])


# Series found finite by finite_only (weak references: a Series is a frozen value, and is
# not kept alive for this list's sake), the most recent first
_FINITE: list[weakref.ref[Series]] = []
_FINITE_KEPT = 8


@record()
class Run:
    """A training log reduced to canonical series plus what the parser noticed."""

    path: str
    format: str
    series: Mapping[str, Series]
    records: int
    columns: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    meta: Mapping[str, object] = field(default_factory=dict)

    def __init__(self, path: str, format: str, series: Mapping[str, Series], records: int,
                 columns: tuple[str, ...] = (), notes: tuple[str, ...] = (),
                 meta: Mapping[str, object] = FACTORY) -> None:
        _set(self, "path", path)
        _set(self, "format", format)
        _set(self, "series", series)
        _set(self, "records", records)
        _set(self, "columns", columns)
        _set(self, "notes", notes)
        _set(self, "meta", {} if meta is FACTORY else meta)

    def get(self, name: str) -> Series | None:
        s = self.series.get(name)
        return s if s is not None and len(s) else None

    @property
    def step_span(self) -> tuple[float, float] | None:
        spans = [(s.steps[0], s.steps[-1]) for s in self.series.values() if len(s)]
        if not spans:
            return None
        return float(min(a for a, _ in spans)), float(max(b for _, b in spans))


@record(slots=True)
class Location:
    """Where a finding points: a file, and the step or line in it when known."""

    file: str
    step: float | None = None
    line: int | None = None

    def __init__(self, file: str, step: float | None = None, line: int | None = None) -> None:
        _set(self, "file", file)
        _set(self, "step", step)
        _set(self, "line", line)


Evidence = Mapping[str, "float | int | str | None"]


@record(slots=True)
class Finding:
    """One rule's verdict on one subject: its message, evidence and where it points."""

    rule_id: str
    level: Level
    message: str
    evidence: str
    values: Evidence
    location: Location
    source: str = "single_run"

    def __init__(self, rule_id: str, level: Level, message: str, evidence: str, values: Evidence,
                 location: Location, source: str = "single_run") -> None:
        _set(self, "rule_id", rule_id)
        _set(self, "level", level)
        _set(self, "message", message)
        _set(self, "evidence", evidence)
        _set(self, "values", values)
        _set(self, "location", location)
        _set(self, "source", source)


@record()
class Report:
    """What one subject (a log, a comparison, a dataset, a machine) was found to be."""

    subject: str
    format: str
    findings: tuple[Finding, ...]
    ran: tuple[str, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    records: int = 0
    span: tuple[float, float] | None = None
    notes: tuple[str, ...] = ()
    required: bool = True  # False for what doctor discovered on its own
    kind: str = "run"
    curves: Mapping[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)
    ignored: tuple[tuple[str, str], ...] = ()  # (rule ID, why) of findings the configuration dropped

    def __init__(self, subject: str, format: str, findings: tuple[Finding, ...], ran: tuple[str, ...] = (),
                 skipped: Mapping[str, str] = FACTORY, records: int = 0, span: tuple[float, float] | None = None,
                 notes: tuple[str, ...] = (), required: bool = True, kind: str = "run",
                 curves: Mapping[str, tuple[tuple[float, ...], tuple[float, ...]]] = FACTORY,
                 ignored: tuple[tuple[str, str], ...] = ()) -> None:
        _set(self, "subject", subject)
        _set(self, "format", format)
        _set(self, "findings", findings)
        _set(self, "ran", ran)
        _set(self, "skipped", {} if skipped is FACTORY else skipped)
        _set(self, "records", records)
        _set(self, "span", span)
        _set(self, "notes", notes)
        _set(self, "required", required)
        _set(self, "kind", kind)
        _set(self, "curves", {} if curves is FACTORY else curves)
        _set(self, "ignored", ignored)

    @property
    def verdict(self) -> Verdict:
        levels = {f.level for f in self.findings}
        if Level.FAIL in levels:
            return Verdict.FAIL
        if Level.WARN in levels:
            return Verdict.WARN
        if Level.NOT_CHECKED in levels or not self.ran:
            return Verdict.NOT_CHECKED
        return Verdict.PASS


@record()
class ReportSet:
    """What one command found: its reports, or the error that stopped it."""

    command: str
    reports: tuple[Report, ...] = ()
    error: str | None = None
    tables: Mapping[str, object] = field(default_factory=dict)
    streamed: bool = False  # progress already went out as JSON lines (watch): end with one more line
    config: Mapping[str, object] = field(default_factory=dict)  # what it was judged against (config.summary)

    def __init__(self, command: str, reports: tuple[Report, ...] = (), error: str | None = None,
                 tables: Mapping[str, object] = FACTORY, streamed: bool = False,
                 config: Mapping[str, object] = FACTORY) -> None:
        _set(self, "command", command)
        _set(self, "reports", reports)
        _set(self, "error", error)
        _set(self, "tables", {} if tables is FACTORY else tables)
        _set(self, "streamed", streamed)
        _set(self, "config", {} if config is FACTORY else config)

    @property
    def worst_verdict(self) -> Verdict | None:
        if self.error is not None or not self.reports:
            return None
        return min((r.verdict for r in self.reports), key=lambda v: v.rank)

    @property
    def exit_code(self) -> ExitCode:
        """0/1/2 as CONTRACTS.md states; FAIL outranks could-not-judge."""
        if self.error is not None or not self.reports:
            return ExitCode.CANNOT_JUDGE
        verdicts = [r.verdict for r in self.reports]
        if Verdict.FAIL in verdicts:
            return ExitCode.FAIL
        if any(r.verdict is Verdict.NOT_CHECKED and r.required for r in self.reports):
            return ExitCode.CANNOT_JUDGE
        if all(v is Verdict.NOT_CHECKED for v in verdicts):
            return ExitCode.CANNOT_JUDGE
        return ExitCode.OK

    def gated_exit_code(self, fail_on: str = "fail", exit_zero: bool = False) -> ExitCode:
        """`exit_code` under the CLI's gate options. `fail_on="warn"` makes a WARN verdict
        exit 1; `exit_zero` turns 1 into 0 but never hides could-not-judge: a required
        input that was NOT-CHECKED (which a FAIL elsewhere outranks in `exit_code`) is 2."""
        code = self.exit_code
        if code is ExitCode.OK and fail_on == "warn" and any(r.verdict is Verdict.WARN for r in self.reports):
            code = ExitCode.FAIL
        if code is ExitCode.FAIL and exit_zero:
            unjudged = any(r.verdict is Verdict.NOT_CHECKED and r.required for r in self.reports)
            return ExitCode.CANNOT_JUDGE if unjudged else ExitCode.OK
        return code

    def triaged(self) -> tuple[Report, ...]:
        return tuple(sorted(self.reports, key=lambda r: r.verdict.rank))


class InputError(Exception):
    """The input cannot be judged: one line for the user, exit 2, never a traceback."""
