"""Rule documentation generated from the declarations: `trainproof rule TP-X`,
`trainproof rules --markdown` (committed as RULES.md) and the SARIF help texts
all come from the same fields."""

from __future__ import annotations

from trainproof import TYPE_CHECKING

if TYPE_CHECKING:  # typing, like json and textwrap below, is left to the calls that need it (#14)
    from collections.abc import Mapping
    from typing import Any

    from trainproof.ruledocs import RuleDoc
    from trainproof.rules import Rule

GROUP_TITLES = {
    "single_run": "Single run (epoch, doctor, watch, callbacks)",
    "compare": "Compare (compare, doctor --baseline)",
    "preflight": "Dataset preflight (preflight)",
    "tokenizer": "Tokenizer (tokenizer)",
    "data": "Speech data (data)",
    "env": "Environment and checkpoints (env)",
    "live": "Live (watch, training callbacks)",
}


def _example(data: object) -> str:
    import json

    return json.dumps(data, default=str)


def rule_markdown(r: Rule | RuleDoc) -> str:
    out = [f"### {r.id}", "", f"**Level:** {r.level.value} · **Message:** {r.title}", "",
           f"**What it catches.** {r.summary}", "", f"**Why it matters.** {r.why}", ""]
    if r.thresholds:
        out += ["| threshold | value | unit | why this number |", "|---|---|---|---|"]
        out += [f"| `{k}` | {t.value:g} | {t.unit} | {t.why} |" for k, t in r.thresholds.items()]
        out.append("")
    if r.fires is not None:
        out += [f"**Fires on:** `{_example(r.fires.data)}`", ""]
    if r.passes is not None:
        out += [f"**Passes on:** `{_example(r.passes.data)}`", ""]
    out += [f"**What to do.** {r.fix}", ""]
    if r.limits:
        out += [f"**What it does not mean.** {r.limits}", ""]
    return "\n".join(out)


def rules_markdown(catalogue: Mapping[str, Any] | None = None) -> str:
    """RULES.md: from the live catalogue, or from the given one (ruledocs' snapshot)."""
    if catalogue is None:
        from trainproof.rules import catalogue as live

        catalogue = live()
    cat = list(catalogue.values())
    groups = [g for g in GROUP_TITLES if any(r.group == g for r in cat)]
    groups += sorted({r.group for r in cat} - set(groups))
    out = ["# trainproof rules", "",
           "Generated from `src/trainproof/rules/` by `trainproof rules --markdown`; do not edit by hand.",
           "Every threshold below is the one the code uses. IDs are stable: never reused, never renamed.", ""]
    for g in groups:
        out.append(f"- [{GROUP_TITLES.get(g, g)}](#{_slug(GROUP_TITLES.get(g, g))})")
    out.append("")
    for g in groups:
        out += [f"## {GROUP_TITLES.get(g, g)}", ""]
        out += ["| ID | level | message |", "|---|---|---|"]
        out += [f"| [{r.id}](#{r.anchor}) | {r.level.value} | {r.title} |" for r in cat if r.group == g]
        out.append("")
        out += [rule_markdown(r) for r in cat if r.group == g]
    return "\n".join(out).rstrip() + "\n"


def _slug(title: str) -> str:
    keep = "".join(c.lower() if c.isalnum() else ("-" if c in " -" else "") for c in title)
    return keep


def rule_text(r: Rule | RuleDoc) -> str:
    import textwrap

    def para(label: str, body: str) -> list[str]:
        return [*textwrap.wrap(f"{label}: {body}", 78, subsequent_indent="  "), ""]

    out = [f"{r.id}  [{r.level.value}]  {r.title}", ""]
    out += para("Catches", r.summary) + para("Why", r.why)
    for k, t in r.thresholds.items():
        out += para(f"Threshold {k} = {t.value:g} {t.unit}", t.why)
    if r.fires is not None:
        out += para("Fires on", _example(r.fires.data))
    if r.passes is not None:
        out += para("Passes on", _example(r.passes.data))
    out += para("Fix", r.fix)
    if r.limits:
        out += para("Does not mean", r.limits)
    out.append(f"Docs: `trainproof rule {r.id}` (this page), RULES.md#{r.anchor} in the source")
    return "\n".join(out)
