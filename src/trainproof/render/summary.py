"""The short text forms of a report set, for CI logs that want less than the full report:

- `--quiet`: one line per report that did not PASS (`VERDICT  SUBJECT  RULE-ID, ...`),
  nothing at all for a PASS, no closing summary; the exit code says the rest.
- `--statistics`: how many findings each rule ID produced over every report, most
  frequent first (like ruff's `--statistics`), instead of the findings themselves.

Both are plain ASCII, like the full text report, and never judge anything."""

from __future__ import annotations

from collections import Counter

from trainproof.model import Level, ReportSet, Verdict
from trainproof.render.text import ascii_only

# Levels a line names: PASS statements are not findings a reader acts on.
_SHOWN = (Level.FAIL, Level.WARN, Level.NOT_CHECKED, Level.INFO)
_RANK = {lv: i for i, lv in enumerate(_SHOWN)}


def render_quiet(rs: ReportSet) -> str:
    lines = []
    for r in rs.triaged():
        if r.verdict is Verdict.PASS:
            continue
        wanted = {Verdict.FAIL: (Level.FAIL,), Verdict.WARN: (Level.WARN,)}.get(r.verdict, (Level.NOT_CHECKED,))
        ids = list(dict.fromkeys(f.rule_id for f in r.findings if f.level in wanted))
        lines.append(f"{r.verdict.value:<11} {r.subject}" + (f"  {', '.join(ids)}" if ids else ""))
    return ascii_only("\n".join(lines) + ("\n" if lines else ""))


def render_statistics(rs: ReportSet) -> str:
    counts: Counter[tuple[str, Level]] = Counter()
    subjects: dict[tuple[str, Level], set[str]] = {}
    for r in rs.reports:
        for f in r.findings:
            if f.level in _RANK:
                counts[(f.rule_id, f.level)] += 1
                subjects.setdefault((f.rule_id, f.level), set()).add(r.subject)
    if not counts:
        return ""
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], _RANK[kv[0][1]], kv[0][0]))
    width = max(len(rule) for (rule, _), _ in rows)
    out = [f"{'count':>5}  {'level':<11} {'rule':<{width}}  reports"]
    for (rule, level), n in rows:
        out.append(f"{n:>5}  {level.value:<11} {rule:<{width}}  {len(subjects[(rule, level)])}")
    return ascii_only("\n".join(out) + "\n")
