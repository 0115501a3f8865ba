"""Which findings a configuration keeps, and at what level. Owns the ruff-shaped
selection semantics and the per-path globs; the engine calls `screen` on every
check's findings before a report's outcome is stated, so a dropped FAIL never
leaves a FAIL verdict behind, and a re-levelled WARN counts as the FAIL it became.

Selection, layer by layer (the file, then --select/--extend-select/--ignore):
a layer's `select` (default `TP`, every rule) starts the set afresh, `extend-select`
adds to it, `ignore` removes from it. Within a layer the more specific selector wins
(more dash-separated parts: `TP-GRAD-SPIKE` beats `TP-GRAD` beats `TP`); at equal
specificity `ignore` wins. Outcome statements (PASS) and could-not-judge findings
(NOT-CHECKED) are never dropped or re-levelled: they say whether judging happened."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache

from trainproof.address import split_address
from trainproof.config import Config, PathIgnore, current, matches
from trainproof.model import Finding, Level

_CONFIGURABLE = (Level.FAIL, Level.WARN, Level.INFO)


def _specificity(selector: str) -> int:
    return selector.count("-") + 1


def _layer(enabled: set[str], universe: Iterable[str], select: Sequence[str] | None,
           extend: Sequence[str], ignore: Sequence[str]) -> set[str]:
    if select is not None:
        enabled = set()
    moves = [(s, True) for s in (*(select or ()), *extend)] + [(s, False) for s in ignore]
    moves.sort(key=lambda m: (_specificity(m[0]), not m[1]))  # general first; ignore after select
    ids = list(universe)
    for sel, on in moves:
        hit = {r for r in ids if matches(sel, r)}
        enabled = enabled | hit if on else enabled - hit
    return enabled


def enabled_rules(cfg: Config) -> frozenset[str]:
    """The rule IDs `cfg` selects, among every rule in the catalogue."""
    return _enabled(cfg.select, cfg.extend_select, cfg.ignore,
                    cfg.cli_select, cfg.cli_extend_select, cfg.cli_ignore)


@lru_cache(maxsize=64)  # keyed by the selectors themselves (tuples), never by a Config's identity
def _enabled(select: tuple[str, ...], extend: tuple[str, ...], ignore: tuple[str, ...],
             cli_select: tuple[str, ...] | None, cli_extend: tuple[str, ...],
             cli_ignore: tuple[str, ...]) -> frozenset[str]:
    from trainproof.rules import catalogue

    universe = sorted(catalogue())
    on = _layer(set(), universe, select, extend, ignore)
    return frozenset(_layer(on, universe, cli_select, cli_extend, cli_ignore))


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """`**` any run of directories, `*` any name part, `?` one character; the rest literal."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(p: PathIgnore, file: str) -> bool:
    """A pattern with a `/` is relative to the config file's directory (or absolute);
    one without matches the file's name in any directory."""
    where = os.path.normpath(os.path.abspath(split_address(file)[0])).replace(os.sep, "/")
    if "/" not in p.pattern:
        return bool(_glob(p.pattern).match(where.rsplit("/", 1)[-1]))
    full = os.path.normpath(os.path.join(p.root, p.pattern)).replace(os.sep, "/")
    if p.pattern.endswith("/"):  # a directory: everything under it (normpath dropped the slash)
        full += "/**"
    return bool(_glob(full).match(where))


def _why_dropped(f: Finding, cfg: Config) -> str | None:
    if f.rule_id not in enabled_rules(cfg):
        cli = cfg.cli_select is not None or cfg.cli_ignore or cfg.cli_extend_select
        return f"not selected ({'command line' if cli else cfg.source})"
    for p in cfg.per_path_ignores:
        if any(matches(s, f.rule_id) for s in p.rules) and path_matches(p, f.location.file):
            return f"per-path-ignores {p.pattern!r} ({cfg.source}): {p.reason}"
    return None


def screen(findings: Iterable[Finding], cfg: Config | None = None) -> tuple[list[Finding], list[tuple[str, str]]]:
    """The findings `cfg` (default: the active config) keeps, re-levelled by its
    `severity`, and (rule ID, why) for each one it drops."""
    cfg = cfg if cfg is not None else current()
    found = list(findings)
    if cfg is None or not cfg.changed:
        return found, []
    kept, ignored = [], []
    for f in found:
        if f.level not in _CONFIGURABLE:
            kept.append(f)
            continue
        why = _why_dropped(f, cfg)
        if why is not None:
            ignored.append((f.rule_id, why))
            continue
        level = cfg.severity.get(f.rule_id)
        kept.append(replace(f, level=Level(level)) if level else f)
    return kept, ignored
