"""Measures transcripts: which writing systems their letters come from, and what a TTS
normaliser would rewrite (numbers, dates, clock times, acronyms) — the words a model
trained on the raw text is asked to pronounce without ever hearing them spelled out.
The normaliser is ttsproof's; this module only reports what it changes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

# Japanese writes kana and kanji in one sentence; Korean may mix hangul with hanja.
_SCRIPT_FAMILY = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "CJK": "CJK", "HANGUL": "HANGUL",
                  "HALFWIDTH": "CJK", "FULLWIDTH": "LATIN"}
_WORD = re.compile(r"\w+")
_KINDS = (("clock time", re.compile(r"\b\d{1,2}:\d{2}\b")),
          ("date", re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b")),
          ("digits", re.compile(r"\d")),
          ("acronym", re.compile(r"\b[A-Z]{2,6}\b")))


@lru_cache(maxsize=4096)
def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    head = name.split(" ", 1)[0]
    return _SCRIPT_FAMILY.get(head, head)


def scripts_of(text: str) -> tuple[str, ...]:
    """The writing systems of the letters in `text` (digits, punctuation and marks left
    out), as the first word of each letter's Unicode name: LATIN, CYRILLIC, GREEK, ..."""
    return tuple(sorted({_script(ch) for ch in text if ch.isalpha()} - {""}))


def normaliser() -> Callable[[str], str] | None:
    """ttsproof's text normaliser, or None when ttsproof is not installed."""
    try:
        from ttsproof import normalize_text
    except ImportError:
        return None
    return normalize_text


def rewritten(text: str, normalise: Callable[[str], str]) -> str | None:
    """What the normaliser reads aloud differently, or None when it keeps every word.
    Words are compared, so quotes, ellipses and spacing the normaliser tidies do not count."""
    spoken = normalise(text)
    if _WORD.findall(spoken) == _WORD.findall(text):
        return None
    return spoken


def what_needs_reading(text: str) -> str:
    """A short name for what the normaliser had to expand, for the evidence line."""
    kinds = [name for name, pattern in _KINDS if pattern.search(text)]
    if "clock time" in kinds or "date" in kinds:
        kinds = [k for k in kinds if k != "digits"]
    return ", ".join(kinds) or "letters"
