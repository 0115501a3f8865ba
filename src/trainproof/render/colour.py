"""Colour for the text report, on a terminal only. Decided once per run:

1. `--color always|never` wins;
2. else `NO_COLOR` (set and not empty) turns it off, `FORCE_COLOR` (set, not empty) on;
3. else only when standard output is a terminal.

Only the verdict words are painted (`VERDICT: FAIL`, `[FAIL]` tags, a `--quiet` line's
first word); the words themselves never change, so a pipe or a file gets the same text
without the escape codes. Machine formats and annotations are never coloured."""

from __future__ import annotations

import os
import re
from typing import TextIO

_CODES = {"FAIL": "31;1", "WARN": "33;1", "NOT-CHECKED": "35", "PASS": "32", "INFO": "36"}
_WORD = "FAIL|WARN|NOT-CHECKED|PASS|INFO"
# a verdict line, a finding's tag, or the first word of a --quiet line
_PAINTED = re.compile(rf"(?<=^VERDICT: )({_WORD})\b|(?<=\[)({_WORD})(?=\])|^({_WORD})(?= )", re.MULTILINE)


def wanted(choice: str | None, stream: TextIO) -> bool:
    if choice in ("always", "never"):
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def paint(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        word = m.group(0)
        return f"\x1b[{_CODES[word]}m{word}\x1b[0m"

    return _PAINTED.sub(one, text)
