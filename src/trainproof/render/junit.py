"""`--junit PATH`: JUnit XML for CI dashboards. One suite per report, one case per
check; a FAIL finding fails its case, a skipped check is a skipped case."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from trainproof.model import Level, ReportSet


def render(rs: ReportSet) -> str:
    root = ET.Element("testsuites", name="trainproof")
    if rs.error:
        suite = ET.SubElement(root, "testsuite", name=rs.command, tests="1", errors="1")
        case = ET.SubElement(suite, "testcase", name="input", classname=rs.command)
        ET.SubElement(case, "error", message=rs.error)
    for r in rs.triaged():
        suite = ET.SubElement(root, "testsuite", name=r.subject)
        n = fails = skips = 0
        for name in r.ran:
            n += 1
            case = ET.SubElement(suite, "testcase", name=name, classname=r.subject)
            for f in r.findings:
                if f.level is Level.FAIL and _belongs(f.rule_id, name):
                    fails += 1
                    ET.SubElement(case, "failure", message=f"{f.rule_id}: {f.message}").text = f.evidence
        for name, why in r.skipped.items():
            n += 1
            skips += 1
            case = ET.SubElement(suite, "testcase", name=name, classname=r.subject)
            ET.SubElement(case, "skipped", message=why)
        suite.set("tests", str(n))
        suite.set("failures", str(fails))
        suite.set("skipped", str(skips))
    return ET.tostring(root, encoding="unicode") + "\n"


def _belongs(rule_id: str, check_name: str) -> bool:
    from trainproof.rules import checks

    for group in ("single_run", "compare"):
        for c in checks(group):
            if c.name == check_name and any(r.id == rule_id for r in c.rules):
                return True
    return False
