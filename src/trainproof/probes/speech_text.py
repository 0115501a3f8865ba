"""Measures transcripts: which writing systems their letters come from, and what a TTS
normaliser would rewrite (numbers, dates, clock times, acronyms) — the words a model
trained on the raw text is asked to pronounce without ever hearing them spelled out.
The normaliser is ttsproof's; this module only reports what it changes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

# The first word of a letter's Unicode name, for the scripts that name it so. Letters
# named otherwise (FEMININE ORDINAL INDICATOR, MICRO SIGN, MODIFIER LETTER ...) are not
# counted: they belong to no one script. Japanese writes kana and kanji in one sentence.
_SCRIPTS = frozenset((
    "LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "HEBREW", "ARABIC", "SYRIAC", "THAANA", "NKO",
    "DEVANAGARI", "BENGALI", "GURMUKHI", "GUJARATI", "ORIYA", "TAMIL", "TELUGU", "KANNADA",
    "MALAYALAM", "SINHALA", "THAI", "LAO", "TIBETAN", "MYANMAR", "GEORGIAN", "HANGUL", "ETHIOPIC",
    "CHEROKEE", "KHMER", "MONGOLIAN", "HIRAGANA", "KATAKANA", "CJK", "BOPOMOFO", "YI"))
_SCRIPT_FAMILY = {"HIRAGANA": "CJK", "KATAKANA": "CJK"}
_WORD = re.compile(r"\w+")
_KINDS = (("clock time", re.compile(r"\b\d{1,2}:\d{2}\b")),
          ("date", re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b")),
          ("digits", re.compile(r"\d")),
          ("acronym", re.compile(r"\b[A-Z]{2,6}\b")))


@lru_cache(maxsize=4096)
def _script(ch: str) -> str:
    words = unicodedata.name(ch, "").split(" ")
    head = words[1] if words[0] in ("FULLWIDTH", "HALFWIDTH") and len(words) > 1 else words[0]
    return _SCRIPT_FAMILY.get(head, head) if head in _SCRIPTS else ""


def scripts_of(text: str) -> tuple[str, ...]:
    """The writing systems of the letters in `text` (digits, punctuation, marks and letters
    of no single script left out): LATIN, CYRILLIC, GREEK, CJK, ..."""
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
