"""`trainproof rules` and `trainproof rule TP-X`: the rule documentation, generated
from the declarations (RULES.md is this command's --markdown output), through their
snapshot in ruledocs so that printing documentation stays fast."""

from __future__ import annotations

import argparse

from trainproof.docs import rule_markdown, rule_text, rules_markdown
from trainproof.ruledocs import load

NAME = "rules"
ALIASES = ("rule",)
HELP = "print the documentation of every rule, or of one rule ID"
JUDGES = False  # documentation: reads no configuration (and stays light)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rule_id", metavar="TP-X", nargs="?", help="one rule ID")
    p.add_argument("--markdown", action="store_true", help="Markdown (RULES.md is generated this way)")


def run(args: argparse.Namespace) -> str:
    cat = load()  # the documentation snapshot: the judging code is not imported
    if args.rule_id is None:
        if args.markdown:
            return rules_markdown(cat)
        return "\n".join(f"{r.id:<28} {r.level.value:<11} {r.title}" for r in cat.values())
    rid = args.rule_id.upper()
    if not rid.startswith("TP-"):
        rid = "TP-" + rid
    if rid not in cat:
        from trainproof.model import InputError

        raise InputError(f"unknown rule {args.rule_id!r}; `trainproof rules` lists them")
    return rule_markdown(cat[rid]) if args.markdown else rule_text(cat[rid])
