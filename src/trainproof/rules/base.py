"""How a rule is declared: its ID, level, thresholds (each with a unit and a reason),
message and evidence templates, documentation, and executable fire/pass examples.
A *check* is one judge function that may emit the findings of one or more rules;
checks are what a report lists as ran or skipped."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainproof.model import Finding, Level, Location, Skip

DOCS_URL = "https://github.com/trainproof/trainproof/blob/main/RULES.md"


@dataclass(frozen=True)
class Threshold:
    value: float
    unit: str
    why: str


@dataclass(frozen=True)
class Example:
    """Input that makes the rule fire (or stay quiet). The group's example runner
    turns `data` into a subject; tests run every example in the catalogue."""

    data: Mapping[str, Any]
    note: str = ""


@dataclass(frozen=True)
class Rule:
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

    def t(self, name: str) -> float:
        return self.thresholds[name].value

    def finding(self, location: Location, source: str | None = None, **values: Any) -> Finding:
        """Render a finding from measured values; the values travel as structured evidence."""
        shown = {k: _display(v) for k, v in values.items()}
        shown.update({f"limit_{k}": _display(t.value) for k, t in self.thresholds.items()})
        return Finding(
            rule_id=self.id,
            level=self.level,
            message=self.title,
            evidence=self.evidence.format(**shown),
            values={k: _plain(v) for k, v in values.items()},
            location=location,
            source=source or ("compare" if self.group == "compare" else "single_run"),
        )

    @property
    def anchor(self) -> str:
        return self.id.lower()

    @property
    def help_uri(self) -> str:
        return f"{DOCS_URL}#{self.anchor}"


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


@dataclass(frozen=True)
class Check:
    name: str  # as reports list it: "divergence", "overfit", ...
    group: str
    rules: tuple[Rule, ...]
    judge: Judge
    # True for checks that judge the shape of a loss curve (train or eval). A run on which
    # none of them could run was not checked, whatever else ran (TP-NOT-CHECKED).
    loss_curve: bool = False


_CHECKS: dict[str, list[Check]] = {}
_RULES: dict[str, Rule] = {}
ExampleRunner = Callable[[Mapping[str, Any]], set[str]]
_EXAMPLE_RUNNERS: dict[str, ExampleRunner] = {}


def example_runner(group: str) -> Callable[[ExampleRunner], ExampleRunner]:
    """Register how a group turns an Example's data into a subject and judges it;
    the runner returns the set of rule IDs that fired. Tests run every example."""

    def register(fn: ExampleRunner) -> ExampleRunner:
        _EXAMPLE_RUNNERS[group] = fn
        return fn

    return register


def run_example(r: Rule, ex: Example) -> set[str]:
    return _EXAMPLE_RUNNERS[r.group](ex.data)


def rule(**kwargs: Any) -> Rule:
    """Declare a rule and enter it in the catalogue; IDs are unique forever."""
    r = Rule(**kwargs)
    if r.id in _RULES:
        raise ValueError(f"duplicate rule id {r.id}")
    _RULES[r.id] = r
    return r


def check(name: str, *rules: Rule, loss_curve: bool = False) -> Callable[[Judge], Judge]:
    """Register a judge as the check `name` of the rules' group; `loss_curve` marks the
    checks whose running makes a single-run verdict more than NOT-CHECKED."""

    def register(fn: Judge) -> Judge:
        group = rules[0].group if rules else "single_run"
        _CHECKS.setdefault(group, []).append(Check(name, group, tuple(rules), fn, loss_curve))
        return fn

    return register


def checks(group: str) -> Sequence[Check]:
    return tuple(_CHECKS.get(group, ()))


def catalogue() -> Mapping[str, Rule]:
    return dict(_RULES)
