"""`trainproof rules` and `trainproof rule TP-X`: the rule documentation, generated
from the declarations (RULES.md is this command's --markdown output), through their
snapshot in ruledocs so that printing documentation stays fast."""

from __future__ import annotations

import argparse

from trainproof.docs import rule_markdown, rule_text, rules_markdown
from trainproof.ruledocs import heads, load, load_one

NAME = "rules"
ALIASES = ("rule",)
HELP = "print the documentation of every rule, or of one rule ID"
JUDGES = False  # documentation: reads no configuration (and stays light)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rule_id", metavar="TP-X", nargs="?", help="one rule ID")
    p.add_argument("--markdown", action="store_true", help="Markdown (RULES.md is generated this way)")


def run(args: argparse.Namespace) -> str:
    # the documentation snapshot: the judging code is not imported, and of the snapshot
    # only what is printed is decoded (a listing reads each rule's head, TP-X its own line)
    if args.rule_id is None:
        if args.markdown:
            return rules_markdown(load())
        return "\n".join(f"{r['id']:<28} {r['level']:<11} {r['title']}" for r in heads())
    rid = args.rule_id.upper()
    if not rid.startswith("TP-"):
        rid = "TP-" + rid
    doc = load_one(rid)
    if doc is None:
        from trainproof.model import InputError

        raise InputError(f"unknown rule {args.rule_id!r}; `trainproof rules` lists them")
    return rule_markdown(doc) if args.markdown else rule_text(doc)
