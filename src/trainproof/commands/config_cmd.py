"""`trainproof config`: the effective configuration, key by key, and where each value
came from (default, the file read, or the command line); `--json` for tools."""

from __future__ import annotations

import argparse
import json
from typing import Any

from trainproof.config import COMMAND_LINE, DEFAULT, Config, resolve

NAME = "config"
ALIASES = ()
HELP = "print the effective configuration and where each value came from"
JUDGES = False  # it reads the configuration itself, and judges nothing


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rules", action="store_true", help="also list every rule ID the configuration selects")


def _entries(cfg: Config) -> list[dict[str, Any]]:
    """One entry per key: its effective value and where it came from."""
    from trainproof.rules import catalogue

    cat = catalogue()
    file_sel = cfg.where("select")
    out = [
        {"key": "select", "value": list(cfg.select), "from": file_sel},
        {"key": "extend-select", "value": list(cfg.extend_select), "from": cfg.where("extend-select")},
        {"key": "ignore", "value": list(cfg.ignore), "from": cfg.where("ignore")},
    ]
    for key, value in (("--select", cfg.cli_select), ("--extend-select", cfg.cli_extend_select or None),
                       ("--ignore", cfg.cli_ignore or None)):
        if value is not None:
            out.append({"key": key, "value": list(value), "from": COMMAND_LINE})
    for rid, level in sorted(cfg.severity.items()):
        out.append({"key": f"severity.{rid}", "value": level.lower(), "default": cat[rid].level.value.lower(),
                    "from": cfg.where("severity")})
    for rid, table in sorted(cfg.thresholds.items()):
        for name, value in table.items():
            t = cat[rid].thresholds[name]
            out.append({"key": f"thresholds.{rid}.{name}", "value": value, "default": t.value, "unit": t.unit,
                        "from": cfg.where("thresholds")})
    for p in cfg.per_path_ignores:
        out.append({"key": f"per-path-ignores.{p.pattern}", "value": list(p.rules), "reason": p.reason,
                    "relative_to": p.root, "from": cfg.where("per-path-ignores")})
    return out


def _text(cfg: Config, entries: list[dict[str, Any]], selected: list[str], total: int, listing: bool) -> str:
    if cfg.isolated:
        head = "configuration: none (--isolated)"
    else:
        head = f"configuration: {cfg.source}" if cfg.source else "configuration: no file found (defaults)"
    lines = [head]
    for e in entries:
        shown = json.dumps(e["value"])
        extra = f"  (default {json.dumps(e['default'])}{' ' + e['unit'] if e.get('unit') else ''})" \
            if "default" in e else ""
        lines.append(f"{e['key']} = {shown}{extra}  # {e['from']}")
        if "reason" in e:
            lines.append(f"    reason: {e['reason']}")
    lines.append(f"rules selected: {len(selected)} of {total} configurable")
    if listing:
        lines += [f"  {r}" for r in selected]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> str:
    from trainproof.config import configurable_rules
    from trainproof.selection import enabled_rules

    cfg = resolve(args)
    _, configurable = configurable_rules()
    selected = sorted(enabled_rules(cfg) & configurable)
    entries = _entries(cfg)
    if getattr(args, "json", False):
        doc = {"source": cfg.source, "isolated": cfg.isolated, "entries": entries,
               "selected_rules": selected, "configurable_rules": len(configurable),
               "sources": [DEFAULT, *([cfg.source] if cfg.source else []),
                           *([COMMAND_LINE] if any(e["from"] == COMMAND_LINE for e in entries) else [])]}
        return json.dumps(doc, indent=2) + "\n"
    return _text(cfg, entries, selected, len(configurable), args.rules)
