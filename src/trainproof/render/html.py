"""`--html`: one self-contained page (inline CSS, SVG and a few lines of script; no
external asset, no network request), triaged like the text report. Runs get their loss
and eval loss (a compare's drawn over its baseline and envelope), learning rate and
gradient norm charts, with a marker per finding step that the findings table links to;
doctor opens with a summary of every run, compare with its ranking. Every string that
came from a file or a message is escaped; the script reads only ids the page made."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from trainproof import __version__
from trainproof.config import judged_with
from trainproof.curves import BASELINE, steps_of
from trainproof.model import Finding, Report, ReportSet
from trainproof.render import svg

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:62em;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin:0 0 .3em;word-break:break-all}h3{font-size:1em;margin:.8em 0 .2em}
section{border:1px solid #ccc;border-radius:6px;padding:1em;margin:1em 0}
.v{display:inline-block;padding:.1em .6em;border-radius:4px;font-weight:bold;color:#fff;font-size:.9em}
.v.FAIL{background:#b3261e}.v.WARN{background:#a15c00}.v.PASS{background:#1b6e3a}
.v.INFO,.v.NOT-CHECKED{background:#555}table{border-collapse:collapse;width:100%}
td,th{border-top:1px solid #eee;padding:.3em .5em;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:.95em;word-break:break-all}.meta{color:#555}a{color:#1f5fbf}
tr.hl,tr:target{background:#fff3c4}.findings td:nth-child(2){white-space:nowrap}
.chart{width:100%;height:auto;font:11px system-ui,sans-serif}.small{display:flex;gap:1em}.small>div{flex:1}
.plot{fill:#fff;stroke:#999}.grid{stroke:#eee}.axis{stroke:#999}.tick{fill:#555}.lab{fill:#333;font-size:12px}
.ty{text-anchor:end}.tx{text-anchor:middle}
.env{fill:#9ca3af;fill-opacity:.3;stroke:none}
.mk line,.mk2 line{stroke:#555;stroke-dasharray:3 3}.mk text{fill:#333;paint-order:stroke;stroke:#fff;stroke-width:3px}
.mk.FAIL line,.mk2.FAIL line{stroke:#b3261e}.mk.WARN line,.mk2.WARN line{stroke:#a15c00}.mk{cursor:pointer}
.mk.hl line,.mk:target line{stroke-width:3;stroke-dasharray:none}.mk.hl text,.mk:target text{font-weight:bold}
.legend{margin:.2em 0;color:#444}.key{display:inline-block;width:1.6em;border-top:2px solid;margin-right:.3em;
vertical-align:middle}.envkey{border:0;height:.8em;background:#9ca3af;opacity:.5}
"""

# Clicking a finding highlights its marker and brings the chart into view; clicking a
# marker highlights its finding. Anchors (#m..., :target) do the same without script.
_JS = """
(function(){
function hl(ids){document.querySelectorAll('.hl').forEach(function(e){e.classList.remove('hl')});
ids.forEach(function(i){var e=document.getElementById(i);if(e){e.classList.add('hl')}})}
document.addEventListener('click',function(ev){
var a=ev.target.closest('a[data-marker]');
if(a){ev.preventDefault();var m=document.getElementById(a.dataset.marker);hl([a.dataset.marker,a.dataset.finding]);
if(m){m.closest('svg').scrollIntoView({block:'center'})}return}
var g=ev.target.closest('g.mk');
if(g){hl([g.id,g.dataset.finding]);var r=document.getElementById(g.dataset.finding);
if(r){r.scrollIntoView({block:'center'})}}});
})();
"""


def _badge(level: str) -> str:
    return f"<span class='v {escape(level)}'>{escape(level)}</span>"


def _markers(findings: Sequence[Finding], sec: str) -> list[svg.Marker]:
    return [svg.Marker(f"m{sec}-{j}", f"f{sec}-{j}", f.rule_id, float(f.location.step), f.level.value)
            for j, f in enumerate(findings) if f.location.step is not None]


MAIN = ("loss", "eval_loss", BASELINE)


def _charted(r: Report) -> bool:
    """Whether the report gets its loss chart, which holds the markers findings link to."""
    return any(r.curves.get(n, ((), ()))[0] for n in MAIN)


def _charts(r: Report, sec: str) -> str:
    """The loss chart (with its baseline and envelope in a compare) and the small charts."""
    span = steps_of(r.curves)
    if span is None or not _charted(r):
        return ""
    marks = _markers(r.findings, sec)
    cited = [m.step for m in marks]
    xr = (min([span[0], *cited]), max([span[1], *cited]))
    out = [svg.legend(r.curves, MAIN), svg.chart(r.curves, MAIN, "loss", xr, marks)]
    if svg.is_log(r.curves, MAIN):
        out.append("<p class='meta'>The loss spans more than a decade: its axis is logarithmic.</p>")
    small = [svg.chart(r.curves, (n,), label, xr, marks, width=340, height=170, labelled=False)
             for n, label in (("lr", "learning rate"), ("grad_norm", "grad norm"))]
    small = [f"<div>{c}</div>" for c in small if c]
    if small:
        out.append("<div class='small'>" + "".join(small) + "</div>")
    return "".join(out)


def _findings(r: Report, sec: str) -> str:
    rows, linked = [], _charted(r)
    for j, f in enumerate(r.findings):
        rule = f"<code>{escape(f.rule_id)}</code>"
        if f.location.step is not None and not linked:
            rule += f"<br><span class='meta'>step {f.location.step:g}</span>"
        elif f.location.step is not None:
            rule = (f"<a href='#m{sec}-{j}' data-marker='m{sec}-{j}' data-finding='f{sec}-{j}'>{rule}</a>"
                    f"<br><span class='meta'>step {f.location.step:g}</span>")
        rows.append(f"<tr id='f{sec}-{j}'><td>{_badge(f.level.value)}</td><td>{rule}</td>"
                    f"<td>{escape(f.message)}<br><span class='meta'>{escape(f.evidence)}</span></td></tr>")
    return ("<table class='findings'><tr><th>level</th><th>rule</th><th>finding</th></tr>"
            + "".join(rows) + "</table>")


def _checks(r: Report) -> str:
    ran = ", ".join(f"<code>{escape(c)}</code>" for c in r.ran) or "none"
    skipped = "".join(f"<li><code>{escape(k)}</code>: {escape(v)}</li>" for k, v in r.skipped.items())
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes)
    return (f"<h3>Checks</h3><p><b>Ran:</b> {ran}</p>"
            + (f"<p><b>Skipped</b> (not passed), with the reason:</p><ul>{skipped}</ul>" if skipped else "")
            + (f"<h3>Notes</h3><ul>{notes}</ul>" if notes else ""))


def _report(r: Report, sec: str) -> str:
    span = f" (steps {r.span[0]:g}..{r.span[1]:g})" if r.span else ""
    return (f"<section id='r{sec}' class='report'><h2>{_badge(r.verdict.value)} {escape(r.subject)}</h2>"
            f"<p class='meta'>{escape(r.kind)} · format {escape(r.format)} · {r.records} records{span}</p>"
            + _charts(r, sec) + _findings(r, sec) + _checks(r) + "</section>")


def _worst(r: Report) -> Finding | None:
    order = {"FAIL": 0, "WARN": 1, "NOT-CHECKED": 2, "INFO": 3, "PASS": 4}
    return min(r.findings, key=lambda f: order.get(f.level.value, 5), default=None)


def _summary(reports: Sequence[Report]) -> str:
    """doctor's opening table: every run, its verdict, worst finding and loss sparkline."""
    rows = []
    for i, r in enumerate(reports):
        w = _worst(r)
        said = f"<code>{escape(w.rule_id)}</code> {escape(w.message)}" if w else ""
        spark = svg.sparkline(r.curves["loss"]) if "loss" in r.curves else ""
        rows.append(f"<tr><td>{_badge(r.verdict.value)}</td><td><a href='#r{i}'><code>{escape(r.subject)}"
                    f"</code></a></td><td>{said}</td><td>{spark}</td></tr>")
    return ("<section id='summary'><h2>Every run</h2><table><tr><th>verdict</th><th>run</th>"
            "<th>worst finding</th><th>loss</th></tr>" + "".join(rows) + "</table></section>")


def _num(v: object, pct: bool = False) -> str:
    if not isinstance(v, (int, float)):
        return ""
    return f"{v:.0%}" if pct else f"{v:.3g}"


def _ranking(rs: ReportSet, reports: Sequence[Report]) -> str:
    """compare's ranking, best first, each run linked to its section."""
    where = {r.subject: i for i, r in enumerate(reports)}
    bases = rs.tables.get("baselines") or [rs.tables.get("baseline")]
    rows = []
    for n, row in enumerate(rs.tables.get("ranking") or [], 1):
        name = str(row.get("run"))
        link = f"<a href='#r{where[name]}'>" if name in where else "<a>"
        rows.append(f"<tr><td class='num'>{n}</td><td>{_badge(str(row.get('verdict')))}</td>"
                    f"<td>{link}<code>{escape(name)}</code></a></td><td class='num'>{_num(row.get('reached'), True)}"
                    f"</td><td class='num'>{_num(row.get('end_ratio'))}</td><td class='num'>"
                    f"{_num(row.get('eval_end_ratio'))}</td></tr>")
    names = ", ".join(f"<code>{escape(str(b))}</code>" for b in bases if b)
    return (f"<section id='ranking'><h2>Ranking against {names}</h2><table><tr><th>#</th><th>verdict</th>"
            "<th>run</th><th>reached</th><th>end loss / baseline</th><th>eval end / baseline</th></tr>"
            + "".join(rows) + "</table><p class='meta'>Ranked by verdict, then by eval loss (train loss where "
            "there is no eval) at the end, relative to the baseline at the same steps.</p></section>")


def render(rs: ReportSet) -> str:
    worst = rs.worst_verdict
    reports = rs.triaged()
    body = ""
    if rs.error:
        body += f"<section><p><b>Error:</b> {escape(rs.error)}</p></section>"
    if rs.command == "compare" and rs.tables.get("ranking") is not None:
        body += _ranking(rs, reports)
    elif rs.command == "doctor" and reports:
        body += _summary(reports)
    body += "".join(_report(r, str(i)) for i, r in enumerate(reports))
    skipped = rs.tables.get("not_judged") or []
    if skipped:
        items = "".join(f"<li><code>{escape(str(i['file']))}</code>: {escape(str(i['reason']))}</li>"
                        for i in skipped)
        body += f"<section id='not-judged'><h2>Not judged</h2><ul>{items}</ul></section>"
    head = f"trainproof {escape(rs.command)}: {escape(worst.value) if worst else 'could not judge'}"
    said = judged_with(rs.config) if rs.config else None  # what the verdict was judged against
    if said:
        body = f"<p class='config'>{escape(said)}</p>" + body
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        "<link rel='icon' href='data:,'>"  # no favicon request
        f"<title>{head}</title><style>{_CSS}</style></head><body>"
        f"<h1>{head}</h1>{body}"
        f"<p class='meta'>trainproof {escape(__version__)} · deterministic rules: <code>trainproof rule "
        "ID</code> explains each</p>"
        f"<script>{_JS}</script></body></html>\n"
    )
