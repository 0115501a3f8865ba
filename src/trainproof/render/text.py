"""Plain ASCII text for terminals and CI logs: one block per report, triaged
(FAIL first), every finding with its evidence, and what a PASS did not cover."""

from __future__ import annotations

import textwrap

from trainproof.config import judged_with
from trainproof.model import Level, Report, ReportSet, Verdict

WIDTH = 72
RULE = "=" * 60
THIN = "-" * 60

LIMITS = """What this cannot tell you
-------------------------
A passing report does not mean the run is good. These checks catch
mechanical failures (divergence, NaN, flatline, spikes) from the log
alone. They cannot detect a model learning the wrong thing - a run
trained on corrupted data can look healthy here. For that, compare
against a known-good baseline: trainproof compare <baseline> <run>
"""


def ascii_only(s: str) -> str:
    return s.encode("ascii", "backslashreplace").decode("ascii")


def _wrap(prefix: str, body: str, indent: int) -> list[str]:
    """Wrap to WIDTH, keeping the body's own line breaks (multi-line exception messages).
    Lines break at spaces only: never after a hyphen or a '/', and a word longer than a
    line (a deep path) runs past WIDTH whole, so a path can be copied from the report."""
    out: list[str] = []
    for i, para in enumerate(body.splitlines() or [""]):
        first = prefix if i == 0 else " " * indent
        out += textwrap.wrap(para, WIDTH, initial_indent=first, subsequent_indent=" " * indent,
                             break_on_hyphens=False, break_long_words=False) or [first.rstrip()]
    return out


def _span(r: Report) -> str:
    if r.span is None:
        return ""
    a, b = r.span
    return f" (steps {a:g}..{b:g})"


def render_report(r: Report) -> list[str]:
    lines = [RULE, f"FILE   : {r.subject}", f"FORMAT : {r.format}",
             f"RECORDS: {r.records}{_span(r)}", THIN, f"VERDICT: {r.verdict.value}", THIN]
    for f in r.findings:
        tag = f"[{f.level.value}] "
        lines += _wrap(f"{tag}{f.rule_id}: ", f.message, len(tag) + 4)
        lines += _wrap(" " * len(tag) + "Evidence: ", f.evidence, len(tag) + 4)
    for rid, why in r.ignored:
        lines += _wrap(f"ignored by config: {rid}: ", why, 6)
    for note in r.notes:
        lines += _wrap("note: ", note, 6)
    counts = {lv: sum(1 for f in r.findings if f.level is lv) for lv in Level}
    lines += [THIN, f"Findings: {counts[Level.PASS]} PASS, {counts[Level.WARN]} WARN, "
              f"{counts[Level.FAIL]} FAIL, {counts[Level.INFO]} INFO", RULE, ""]
    return lines


def _num(row: dict, key: str, fmt: str) -> str:
    v = row.get(key)
    width = int("".join(c for c in fmt.split(".")[0] if c.isdigit()) or 0)
    return format(v, fmt) if isinstance(v, (int, float)) else "-".rjust(width)


def _ranking(rows: list[dict]) -> list[str]:
    head = (f"{'#':>2}  {'verdict':<11} {'reached':>7} {'at step':>8} {'floor x':>8} {'end x':>8} "
            f"{'eval x':>7} {'improve':>8}  run")
    out = ["Ranking against the baseline (best first; by eval loss where both sides log it)",
           head, "-" * len(head)]
    for i, row in enumerate(rows, 1):
        out.append(f"{i:>2}  {row['verdict']:<11} {_num(row, 'reached', '7.0%')} {_num(row, 'step', '8g')} "
                   f"{_num(row, 'floor_ratio', '8.2f')} {_num(row, 'end_ratio', '8.2f')} "
                   f"{_num(row, 'eval_end_ratio', '7.2f')} {_num(row, 'improvement', '8.1%')}  {row['run']}")
    return [*out, ""]


def render(rs: ReportSet) -> str:
    if rs.error is not None:
        return ""
    said = judged_with(rs.config)
    lines: list[str] = [said] if said else []  # one line, never wrapped: scripts grep it
    for r in rs.triaged():
        lines += render_report(r)
    ranking = rs.tables.get("ranking")
    if ranking:
        lines += _ranking(list(ranking))  # type: ignore[arg-type]
    skipped = rs.tables.get("not_judged")
    if skipped:
        lines.append("Not judged")
        for item in skipped:  # type: ignore[union-attr]
            lines += _wrap(f"  {item['file']}: ", item["reason"], 6)
        lines.append("")
    if len(rs.reports) > 1:
        tally = {v: sum(1 for r in rs.reports if r.verdict is v) for v in Verdict}
        lines.append(f"{len(rs.reports)} reports: " + ", ".join(
            f"{tally[v]} {v.value}" for v in Verdict) + f"; worst {rs.worst_verdict.value}")
        lines.append("")
    if any(r.verdict is Verdict.PASS and r.kind == "run" for r in rs.reports):
        lines.append(LIMITS)
    return ascii_only("\n".join(lines))
