"""How a rule is declared: its ID, level, thresholds (each with a unit and a reason),
message and evidence templates, documentation, and executable fire/pass examples.
A *check* is one judge function that may emit the findings of one or more rules;
checks are what a report lists as ran or skipped. A *statement* declares how a
report of one scope states its outcome (which rule says PASS, which says nothing
could be checked); the engine makes that statement, in one place, for every scope."""

from __future__ import annotations

import contextlib
import importlib
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import field
from typing import Any

from trainproof.frozen import FACTORY, NamedTuple, record
from trainproof.model import Finding, Level, Location, Skip

_set = object.__setattr__

# Threshold overrides of the judging in progress: rule ID -> name -> value. A context
# variable, set for a block and restored after it, so that overrides never outlive the
# judging they were given for (nor leak into another thread's or another caller's).
_OVERRIDES: ContextVar[Mapping[str, Mapping[str, float]] | None] = ContextVar("trainproof_thresholds",
                                                                             default=None)


@contextlib.contextmanager
def overridden_thresholds(values: Mapping[str, Mapping[str, float]]) -> Iterator[None]:
    """Inside the block `Rule.t` answers `values` (validated by trainproof.config)."""
    token = _OVERRIDES.set(values)
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


def thresholds_in_force() -> object:
    """The overrides of the judging in progress (None: the declared values), as an object
    whose identity changes when they do: memo.last_series keys on it."""
    return _OVERRIDES.get()


class Threshold(NamedTuple):
    value: float
    unit: str
    why: str


class Example(NamedTuple):
    """Input that makes the rule fire (or stay quiet). The group's example runner
    turns `data` into a subject; tests run every example in the catalogue."""

    data: Mapping[str, Any]
    note: str = ""


@record()
class Rule:
    """One rule as the catalogue declares it: ID, level, words and thresholds."""

    id: str
    level: Level
    group: str  # rule family: single_run, compare, preflight, tokenizer, data, env
    title: str  # the one-line message
    evidence: str  # str.format template over the finding's values
    summary: str  # what it catches, one sentence
    why: str  # why it matters
    fix: str  # what to do
    thresholds: Mapping[str, Threshold] = field(default_factory=dict)
    fires: Example | None = None
    passes: Example | None = None
    limits: str = ""  # what the finding does NOT mean

    def __init__(self, id: str, level: Level, group: str, title: str, evidence: str, summary: str, why: str,
                 fix: str, thresholds: Mapping[str, Threshold] = FACTORY, fires: Example | None = None,
                 passes: Example | None = None, limits: str = "") -> None:
        # written out, not generated (trainproof.frozen, #14)
        _set(self, "id", id)
        _set(self, "level", level)
        _set(self, "group", group)
        _set(self, "title", title)
        _set(self, "evidence", evidence)
        _set(self, "summary", summary)
        _set(self, "why", why)
        _set(self, "fix", fix)
        _set(self, "thresholds", {} if thresholds is FACTORY else thresholds)
        _set(self, "fires", fires)
        _set(self, "passes", passes)
        _set(self, "limits", limits)

    def t(self, name: str) -> float:
        """The threshold `name` as the judging in progress uses it: the declared value,
        or a configuration's override of it (see `overridden_thresholds`)."""
        over = (_OVERRIDES.get() or {}).get(self.id)
        if over is not None and name in over:
            return over[name]
        return self.thresholds[name].value

    def finding(self, location: Location, source: str | None = None, **values: Any) -> Finding:
        """Render a finding from measured values; the values, and the rule's thresholds as
        `limit_<name>`, travel as structured evidence as well as in the text."""
        limits = {f"limit_{k}": self.t(k) for k in self.thresholds}
        shown = {k: _display(v) for k, v in values.items()}
        shown.update({k: _display(v) for k, v in limits.items()})
        return Finding(
            rule_id=self.id,
            level=self.level,
            message=self.title,
            evidence=self.evidence.format(**shown),
            values={**{k: _plain(v) for k, v in values.items()}, **{k: _plain(v) for k, v in limits.items()}},
            location=location,
            source=source or ("compare" if self.group == "compare" else "single_run"),
        )

    @property
    def anchor(self) -> str:
        return self.id.lower()


class _Shown:
    """A value as evidence shows it: numbers with sensible precision, anything else as str."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __format__(self, spec: str) -> str:
        if spec and isinstance(self.v, (int, float)) and not isinstance(self.v, bool):
            return format(self.v, spec)
        return _fmt(self.v)

    def __str__(self) -> str:
        return _fmt(self.v)


def _display(v: Any) -> _Shown:
    return _Shown(v)


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.3g}"
        return f"{v:.4g}" if abs(v) < 10 else f"{v:.2f}".rstrip("0").rstrip(".")
    return str(v)


def _plain(v: Any) -> Any:
    """Structured evidence holds JSON-safe scalars: NaN/Inf become strings."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, (int, float, str)) or v is None:
        return v
    return str(v)


Outcome = Iterable[Finding] | Skip
Judge = Callable[..., Outcome]


class Check(NamedTuple):
    name: str  # as reports list it: "divergence", "overfit", ...
    group: str
    rules: tuple[Rule, ...]
    judge: Judge
    # True for checks that judge the shape of a loss curve (train or eval). A run on which
    # none of them could run was not checked, whatever else ran (TP-NOT-CHECKED).
    loss_curve: bool = False


class Statement(NamedTuple):
    """How a report of one scope states its outcome. The scope is a rule group, or
    "group:family" where one group judges several kinds of subject (env). The engine
    adds `passed` when no FAIL, WARN or NOT-CHECKED finding stands and a check that
    counts ran, `nothing_checked` when no check that counts ran."""

    scope: str
    passed: Rule | None
    where: Callable[[Any], Location]
    nothing_checked: Rule | None = None
    loss_curve_only: bool = False  # only loss-curve checks count (single_run)
    checks: tuple[str, ...] | None = None  # the group's checks this scope runs (None: all)
    # Values the statement's templates need from the subject; None: the subject gives a
    # PASS nothing to stand on (a checkpoint not read whole) and no PASS is stated.
    values: Callable[[Any], Mapping[str, Any] | None] = lambda _s: {}
    # A finding that makes the subject unjudgeable before any check runs (no records,
    # no loss column); decided where the subject is understood, in the rule module.
    precheck: Callable[[Any], Finding | None] = lambda _s: None

    @property
    def group(self) -> str:
        return self.scope.split(":", 1)[0]


# Rule modules imported only when one of their groups is asked for (its checks, a
# statement of its scope, the whole catalogue): `epoch` judges single_run alone and
# need not import the probes these import. A module listed nowhere is imported with
# the package, so a new rule module is never missed, only eager until listed here
# (tests/test_startup.py checks that each listed module declares only its groups).
LAZY_GROUPS: dict[str, tuple[str, ...]] = {
    "compare": ("compare_align", "compare", "compare_gain", "compare_health", "compare_eval"),
    "data": ("data", "data_files", "data_audio", "data_text", "data_examples"),
    "env": ("env", "env_import", "env_checkpoint", "env_pickle", "env_tensors", "env_machine", "env_examples"),
    "live": ("live",),
    "preflight": ("preflight", "preflight_records", "preflight_tokens", "preflight_overlap"),
    "tokenizer": ("tokenizer",),
}
_LOADED: set[str] = set()


def load_group(group: str) -> None:
    """Import the modules that declare `group`'s rules, checks and statements."""
    if group not in _LOADED:
        _LOADED.add(group)
        for name in LAZY_GROUPS.get(group, ()):
            importlib.import_module(f"{__package__}.{name}")


def _load_all() -> None:
    for group in LAZY_GROUPS:
        load_group(group)


_CHECKS: dict[str, list[Check]] = {}
_RULES: dict[str, Rule] = {}
_MODULE_OF: dict[str, str] = {}  # rule id -> the rule module that declared it
_STATEMENTS: dict[str, Statement] = {}
SubjectBuilder = Callable[[Mapping[str, Any]], tuple[str, Any]]
_EXAMPLE_SUBJECTS: dict[str, SubjectBuilder] = {}


def example_subject(group: str) -> Callable[[SubjectBuilder], SubjectBuilder]:
    """Register how a group turns an Example's data into (scope, subject); the engine
    judges it (trainproof.examples.run_example), and tests run every example."""

    def register(fn: SubjectBuilder) -> SubjectBuilder:
        _EXAMPLE_SUBJECTS[group] = fn
        return fn

    return register


def example_for(r: Rule, ex: Example) -> tuple[str, Any]:
    load_group(r.group)
    return _EXAMPLE_SUBJECTS[r.group](ex.data)


def statement(scope: str, passed: Rule | None, where: Callable[[Any], Location], **kwargs: Any) -> Statement:
    """Declare how reports of `scope` state their outcome; one declaration per scope."""
    if scope in _STATEMENTS:
        raise ValueError(f"duplicate statement for {scope}")
    st = _STATEMENTS[scope] = Statement(scope, passed, where, **kwargs)
    return st


def statement_for(scope: str) -> Statement:
    load_group(scope.split(":", 1)[0])
    return _STATEMENTS[scope]


def statements() -> Mapping[str, Statement]:
    _load_all()
    return dict(_STATEMENTS)


def rule(**kwargs: Any) -> Rule:
    """Declare a rule and enter it in the catalogue; IDs are unique forever."""
    r = Rule(**kwargs)
    if r.id in _RULES:
        raise ValueError(f"duplicate rule id {r.id}")
    _RULES[r.id] = r
    _MODULE_OF[r.id] = sys._getframe(1).f_globals.get("__name__", "").rpartition(".")[2]
    return r


def check(name: str, *rules: Rule, loss_curve: bool = False, after: str | None = None) -> Callable[[Judge], Judge]:
    """Register a judge as the check `name` of the rules' group; `loss_curve` marks the
    checks whose running makes a single-run verdict more than NOT-CHECKED. `after` places
    the check right behind an already registered one (and its rules behind that check's
    in the catalogue), so a family split over two modules keeps the order in which
    reports list findings and the catalogue lists rules, whichever module loads first."""

    def register(fn: Judge) -> Judge:
        group = rules[0].group if rules else "single_run"
        listed = _CHECKS.setdefault(group, [])
        new = Check(name, group, tuple(rules), fn, loss_curve)
        if after is None:
            listed.append(new)
            return fn
        at = next((i for i, c in enumerate(listed) if c.name == after), None)
        if at is None:
            raise ValueError(f"check {name!r}: no check {after!r} registered before it")
        listed.insert(at + 1, new)
        _place_rules(new.rules, behind=listed[at].rules)
        return fn

    return register


def _place_rules(moved: tuple[Rule, ...], behind: tuple[Rule, ...]) -> None:
    """Move `moved` in the catalogue to right behind the last of `behind`."""
    if not behind:
        return
    ids = [i for i in _RULES if i not in {r.id for r in moved}]
    at = ids.index(behind[-1].id) + 1
    order = ids[:at] + [r.id for r in moved] + ids[at:]
    rules = dict(_RULES)
    _RULES.clear()
    _RULES.update((i, rules[i]) for i in order)


def checks(group: str) -> Sequence[Check]:
    load_group(group)
    return tuple(_CHECKS.get(group, ()))


def catalogue() -> Mapping[str, Rule]:
    """Every rule, in one order whatever was loaded first: the eagerly imported modules'
    rules as declared (the package imports those first), then LAZY_GROUPS' modules in
    the order listed there."""
    _load_all()
    rank = {name: i for i, name in enumerate(n for names in LAZY_GROUPS.values() for n in names)}
    order = sorted(enumerate(_RULES), key=lambda ir: (rank.get(_MODULE_OF[ir[1]], -1), ir[0]))
    return {rid: _RULES[rid] for _, rid in order}
