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
# an integer token of 19 digits or more (the digits of a float's fraction or one before its
# point or exponent are no integer: orjson and the standard library read those alike)
_LONG_INT = re.compile(rb"(?<![\d.])\d{19,}(?![\d.eE])")
_DEEP = 256  # nesting levels; far below the recursion limit
# 256 openings in a row with no closing between them: a document at least that deep along
# one chain (what deep-nesting attacks look like), found without counting every bracket of
# an ordinary log (a 100-entry log_history holds hundreds of braces, all shallow)
_DEEP_CHAIN = re.compile(rb"(?:[\[{][^\]}\[{]*){%d}" % _DEEP)


def _fast(data: bytes) -> Any:
    """orjson, when installed and worth importing for `data`; else None."""
    global _orjson, _decoded
    _decoded += len(data)
    if _orjson is None:
        if _decoded < ORJSON_AFTER and not (_BARE.search(data) or _LONG_INT.search(data)
                                            or _DEEP_CHAIN.search(data)):
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
