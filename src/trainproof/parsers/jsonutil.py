"""JSON decoding shared by the JSON readers: orjson when installed (several times
faster), the standard library otherwise. Python's json writes bare NaN/Infinity
tokens, which orjson rejects by design: they are quoted first (the readers parse
"NaN" and "Infinity" strings as numbers), and if quoting could have touched a
string value the result fails to parse and the standard library decides."""

from __future__ import annotations

import json
import re
from typing import Any

# orjson is imported once the decoded bytes add up to this much: its import (~10 ms,
# it loads zoneinfo and sysconfig) costs more than the standard library takes on a
# short log, a 60-entry trainer_state.json included. Before that, the standard
# library decodes text on which both give the same values: any text orjson refuses
# ends in the standard library anyway, so only text orjson reads differently goes
# to it (bare NaN/Infinity, which it reads quoted; integers past 64 bits, which it
# reads as floats; nesting the standard library's recursion may not reach).
ORJSON_AFTER = 256 << 10
_orjson: Any = None  # the module, False when not installed, None until needed
_decoded = 0

_BARE = re.compile(rb'(?<![\w"])(-?Infinity|NaN)(?![\w"])')
_LONG = 19  # digits: an integer token this long may be past 64 bits
_DEEP = 256  # nesting levels; far below the recursion limit
# _long_int and _deep_chain were regular expressions (each quoted in its docstring;
# tests/test_lazy_paths.py checks the two against them), and _BARE is now searched only
# where "NaN" or "Infinity" occurs: the three expressions tried a match at every byte,
# ~1.8 ms of a 60-entry trainer_state.json, eight times its decoding (#14).
# A digit as "0", "." as itself, "e" and "E" as "e", any other byte as " ".
_DIGITS = bytes(48 if 48 <= b <= 57 else b if b == 46 else 101 if b in (69, 101) else 32 for b in range(256))
_NOT_DIGIT = re.compile(rb"[^0]")  # in the mapped text
_OPENINGS = bytes.maketrans(b"[{]}", b"oocc")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _long_int(data: bytes | bytearray) -> bool:
    r"""An integer token of _LONG digits or more: a run of that many digits neither after
    a "." nor before one, an "e" or an "E" (the digits of a float's fraction, or those
    before its point or exponent, are no integer: orjson and the standard library read
    those alike). `(?<![\d.])\d{19,}(?![\d.eE])` found."""
    mapped = data.translate(_DIGITS)
    at = mapped.find(b"0" * _LONG)
    while at >= 0:  # the start of a run of digits (searched from a byte that is none)
        after = _NOT_DIGIT.search(mapped, at + _LONG)
        end = after.start() if after is not None else len(mapped)
        if (at == 0 or mapped[at - 1] != 46) and (end == len(mapped) or mapped[end] not in (46, 101)):
            return True
        at = mapped.find(b"0" * _LONG, end)
    return False


def _deep_chain(data: bytes | bytearray) -> bool:
    r"""_DEEP openings in a row with no closing between them: a document at least that deep
    along one chain (what deep-nesting attacks look like), found without counting every
    bracket of an ordinary log (a 100-entry log_history holds hundreds of braces, all
    shallow). `(?:[\[{][^\]}\[{]*){256}` found."""
    return b"o" * _DEEP in data.translate(_OPENINGS, _NOT_BRACKETS)


def _orjson_reads_differently(data: bytes | bytearray) -> bool:
    """Could orjson read `data` otherwise than the standard library does: bare NaN or
    Infinity (orjson reads them quoted), integers past 64 bits (as floats), nesting the
    standard library's recursion may not reach."""
    if not isinstance(data, (bytes, bytearray)):
        data = bytes(data)
    return ((b"NaN" in data or b"Infinity" in data) and _BARE.search(data) is not None) \
        or _long_int(data) or _deep_chain(data)


def _fast(data: bytes) -> Any:
    """orjson, when installed and worth importing for `data`; else None."""
    global _orjson, _decoded
    _decoded += len(data)
    if _orjson is None:
        if _decoded < ORJSON_AFTER and not _orjson_reads_differently(data):
            return None
        try:
            import orjson
        except ImportError:  # optional speed-up ([fast] extra)
            orjson = False
        _orjson = orjson
    return _orjson or None


def loads(data: bytes) -> Any:
    """The decoded document; ValueError (the readers' "malformed") for anything that
    cannot be decoded, nesting too deep for the decoder's recursion included."""
    try:
        return _loads(data)
    except RecursionError:  # `[[[[...` 1,000 deep: one bad line, not an internal error
        raise ValueError("JSON nested too deeply to decode") from None


def _loads(data: bytes) -> Any:
    fast = _fast(data)
    if fast is not None:
        try:
            return fast.loads(data)
        except fast.JSONDecodeError:
            if _BARE.search(data):
                try:
                    return fast.loads(_BARE.sub(rb'"\1"', data))
                except fast.JSONDecodeError:
                    pass
    return json.loads(data)


def may_have_bools(raw: bytes) -> bool:
    """False when the raw text cannot hold a JSON boolean (lets readers skip a scan)."""
    return b"true" in raw or b"false" in raw


def read_document(path: Any, max_bytes: int, too_big: str, corrupt: str) -> Any:
    """A log that is ONE JSON document (Keras History, Sacred metrics.json), decoded whole:
    bounded at max_bytes, its first bytes past the bound refused; `too_big` and `corrupt`
    end the one-line InputError for an oversized or undecodable file."""
    from trainproof.model import InputError
    from trainproof.parsers.base import require_file
    from trainproof.parsers.compressed import open_log

    require_file(path)
    with open_log(path) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{path}: over {max_bytes >> 20} MiB; {too_big}")
    try:
        return loads(data)
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"{path}: not valid JSON ({corrupt})") from None
