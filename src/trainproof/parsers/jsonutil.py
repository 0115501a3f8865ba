"""JSON decoding shared by the JSON readers: orjson when installed (several times
faster), the standard library otherwise. Python's json writes bare NaN/Infinity
tokens, which orjson rejects by design: they are quoted first (the readers parse
"NaN" and "Infinity" strings as numbers), and if quoting could have touched a
string value the result fails to parse and the standard library decides."""

from __future__ import annotations

import json
import re
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # optional speed-up ([fast] extra)
    _orjson = None

_BARE = re.compile(rb'(?<![\w"])(-?Infinity|NaN)(?![\w"])')


def loads(data: bytes) -> Any:
    """The decoded document; ValueError (the readers' "malformed") for anything that
    cannot be decoded, nesting too deep for the decoder's recursion included."""
    try:
        return _loads(data)
    except RecursionError:  # `[[[[...` 1,000 deep: one bad line, not an internal error
        raise ValueError("JSON nested too deeply to decode") from None


def _loads(data: bytes) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            if _BARE.search(data):
                try:
                    return _orjson.loads(_BARE.sub(rb'"\1"', data))
                except _orjson.JSONDecodeError:
                    pass
    return json.loads(data)


def may_have_bools(raw: bytes) -> bool:
    """False when the raw text cannot hold a JSON boolean (lets readers skip a scan)."""
    return b"true" in raw or b"false" in raw
