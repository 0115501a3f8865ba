"""`--html`: one self-contained page (no scripts, no external assets), triaged
like the text report, with every finding's evidence and every skipped check."""

from __future__ import annotations

from html import escape

from trainproof import __version__
from trainproof.model import Report, ReportSet
from trainproof.render import svg

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin:0;word-break:break-all}
section{border:1px solid #ccc;border-radius:6px;padding:1em;margin:1em 0}
.v{display:inline-block;padding:.1em .6em;border-radius:4px;font-weight:bold;color:#fff}
.FAIL{background:#b3261e}.WARN{background:#a15c00}.PASS{background:#1b6e3a}
.INFO,.NOT-CHECKED{background:#555}table{border-collapse:collapse;width:100%}
td,th{border-top:1px solid #eee;padding:.3em .5em;text-align:left;vertical-align:top}
code{font-size:.95em}.meta{color:#555}
"""


def _report(r: Report) -> str:
    rows = "".join(
        f"<tr><td><span class='v {escape(f.level.value)}'>{escape(f.level.value)}</span></td>"
        f"<td><code>{escape(f.rule_id)}</code></td><td>{escape(f.message)}<br>"
        f"<span class='meta'>{escape(f.evidence)}</span></td></tr>"
        for f in r.findings)
    skipped = "".join(f"<li><code>{escape(k)}</code>: {escape(v)}</li>" for k, v in r.skipped.items())
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes)
    ran = ", ".join(escape(c) for c in r.ran) or "none"
    marks = {f.location.step for f in r.findings if f.location.step is not None
             and f.level.value in ("FAIL", "WARN")}
    plot = svg.chart(r.curves, sorted(marks))
    return (
        f"<section><h2><span class='v {escape(r.verdict.value)}'>{escape(r.verdict.value)}</span> "
        f"{escape(r.subject)}</h2><p class='meta'>format {escape(r.format)} · {r.records} records</p>"
        + plot + f"<table><tr><th>level</th><th>rule</th><th>finding</th></tr>{rows}</table>"
        f"<p><b>Ran:</b> {ran}</p>"
        + (f"<p><b>Skipped</b> (not passed):</p><ul>{skipped}</ul>" if skipped else "")
        + (f"<p><b>Notes</b></p><ul>{notes}</ul>" if notes else "")
        + "</section>"
    )


def render(rs: ReportSet) -> str:
    worst = rs.worst_verdict
    body = (f"<p><b>Error:</b> {escape(rs.error)}</p>" if rs.error
            else "".join(_report(r) for r in rs.triaged()))
    skipped = rs.tables.get("not_judged") or []
    if skipped:
        items = "".join(f"<li><code>{escape(i['file'])}</code>: {escape(i['reason'])}</li>" for i in skipped)
        body += f"<section><h2>Not judged</h2><ul>{items}</ul></section>"
    head = f"trainproof {escape(rs.command)}: {escape(worst.value) if worst else 'could not judge'}"
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{head}</title><style>{_CSS}</style></head><body>"
        f"<h1>{head}</h1>{body}"
        f"<p class='meta'>trainproof {escape(__version__)} · deterministic rules, see RULES.md</p>"
        "</body></html>\n"
    )
