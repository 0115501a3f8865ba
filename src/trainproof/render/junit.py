"""`--junit PATH`: JUnit XML (the Jenkins/Ant subset CI dashboards read) for every
command, telling what the exit code tells:

- one <testsuite> per report (subject), one <testcase> per check that ran or was
  skipped, named by the check;
- the FAIL findings of a check are its <failure> (type = the rule ID); a FAIL that no
  check owns (a status rule) is a case of its own, named by its rule ID;
- WARN and INFO findings leave their case passing and are written in its <system-out>;
- a check that did not run is <skipped> with its reason;
- a subject that could not be judged (NOT-CHECKED) is an <error> case when it makes
  the exit code 2 (it was asked for by name, or nothing at all was judged), else
  <skipped> (a log doctor found on its own, or a GPU nobody asked about);
- "could not judge" for the whole command (exit 2 without reports) is an <error> case,
  and doctor's not-judged files are <skipped> cases of a "not judged" suite.

So `failures` > 0 exactly when the exit code is 1, and exit 2 always has an error.
trainproof does not time its checks: every `time` is 0. Text is kept to the characters
XML 1.0 allows (a control character or an undecodable file name byte is written as an
escape), so the file always parses."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from xml.etree import ElementTree as ET

from trainproof.model import Finding, Level, Report, ReportSet, Verdict

COMPARE_PREFIX = "compare:"  # doctor --baseline lists its compare checks under this prefix
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], text)


@dataclass
class _Case:
    name: str
    failures: list[Finding] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)
    said: list[Finding] = field(default_factory=list)  # WARN and INFO: the case passes
    skipped: str | None = None


def _owners() -> Mapping[str, tuple[str, ...]]:
    """rule ID -> the names of the checks that emit it (its own group's)."""
    from trainproof.rules import catalogue, checks

    groups = {r.group for r in catalogue().values()}
    owners: dict[str, tuple[str, ...]] = {}
    for g in groups:
        for c in checks(g):
            for r in c.rules:
                owners[r.id] = (*owners.get(r.id, ()), c.name)
    return owners


def _case_for(f: Finding, ran: set[str], owners: Mapping[str, tuple[str, ...]]) -> str | None:
    for name in owners.get(f.rule_id, ()):
        if f.source == "compare" and COMPARE_PREFIX + name in ran:
            return COMPARE_PREFIX + name
        if name in ran:
            return name
    return None


def _cases(r: Report, strict: bool, owners: Mapping[str, tuple[str, ...]]) -> list[_Case]:
    """The report's cases; `strict`: an unjudged subject is an error, not a skip."""
    cases = {name: _Case(name) for name in r.ran}
    for f in r.findings:
        name = _case_for(f, set(r.ran), owners)
        if name is None:
            if f.level in (Level.PASS, Level.INFO):
                continue  # outcome statements and notes: the verdict is in the other cases
            name = f.rule_id
        case = cases.setdefault(name, _Case(name))
        if f.level is Level.FAIL:
            case.failures.append(f)
        elif f.level is Level.NOT_CHECKED:
            case.unjudged.append(f"{f.rule_id}: {f.message} {f.evidence}".strip())
        else:
            case.said.append(f)
    out = list(cases.values())
    out += [_Case(name, skipped=why) for name, why in r.skipped.items()]
    if r.verdict is Verdict.NOT_CHECKED and not any(c.unjudged for c in out):
        why = "; ".join(f"{k} ({v})" for k, v in r.skipped.items()) or "no check ran"
        out.append(_Case("judged", unjudged=[f"nothing could be checked: {why}"]))
    if not strict:
        for c in out:
            if c.unjudged and not c.failures:
                c.skipped, c.unjudged = "; ".join(c.unjudged), []
    return out


def _element(suite: ET.Element, case: _Case, classname: str) -> None:
    el = ET.SubElement(suite, "testcase", name=_clean(case.name), classname=_clean(classname), time="0")
    if case.skipped is not None and not case.failures and not case.unjudged:
        ET.SubElement(el, "skipped", message=_clean(case.skipped))
    if case.unjudged:
        err = ET.SubElement(el, "error", message=_clean(case.unjudged[0]), type="NOT-CHECKED")
        err.text = _clean("\n".join(case.unjudged))
    if case.failures:
        first = case.failures[0]
        msg = "; ".join(f"{f.rule_id}: {f.message}" for f in case.failures)
        fail = ET.SubElement(el, "failure", message=_clean(msg), type=first.rule_id)
        fail.text = _clean("\n".join(f"{f.rule_id}: {f.evidence}" for f in case.failures))
    if case.said:
        out = ET.SubElement(el, "system-out")
        out.text = _clean("\n".join(f"[{f.level.value}] {f.rule_id}: {f.message} {f.evidence}" for f in case.said))


def _suite(root: ET.Element, name: str, cases: Iterable[_Case], classname: str) -> None:
    cases = list(cases)
    suite = ET.SubElement(root, "testsuite", name=_clean(name))
    for c in cases:
        _element(suite, c, classname)
    _count(suite, cases)


def _count(el: ET.Element, cases: list[_Case]) -> None:
    el.set("tests", str(len(cases)))
    el.set("failures", str(sum(1 for c in cases if c.failures)))
    el.set("errors", str(sum(1 for c in cases if c.unjudged)))
    el.set("skipped", str(sum(1 for c in cases if c.skipped is not None and not c.failures and not c.unjudged)))
    el.set("time", "0")


def render(rs: ReportSet) -> str:
    root = ET.Element("testsuites", name="trainproof")
    every: list[_Case] = []
    nothing_judged = all(r.verdict is Verdict.NOT_CHECKED for r in rs.reports)
    if rs.error is not None or not rs.reports:
        why = rs.error or "nothing was judged"
        every.append(_Case("input", unjudged=[why]))
        _suite(root, rs.command, every[-1:], rs.command)
    owners = _owners()
    for r in rs.triaged():
        cases = _cases(r, r.required or nothing_judged, owners)
        every += cases
        _suite(root, r.subject, cases, r.subject)
    not_judged = rs.tables.get("not_judged") or []
    if not_judged:
        cases = [_Case(str(i["file"]), skipped=str(i["reason"])) for i in not_judged]  # type: ignore[union-attr]
        every += cases
        _suite(root, "not judged", cases, rs.command)
    _count(root, every)
    return ET.tostring(root, encoding="unicode") + "\n"
