"""JSON decoding shared by the JSON readers: orjson when installed (several times
faster), the standard library otherwise and whenever the text holds the bare
NaN/Infinity tokens Python's json writes (orjson rejects them by design)."""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # optional speed-up ([fast] extra)
    _orjson = None


def loads(data: bytes | str) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # NaN/Infinity tokens, or invalid: the stdlib decides which
    return json.loads(data)


def column_values(rows: list[dict], key: str) -> tuple[list[Any], list[int]]:
    """The values of `key` across rows and the indices of the rows that carry it."""
    idx = [i for i, r in enumerate(rows) if key in r]
    return [rows[i][key] for i in idx], idx
