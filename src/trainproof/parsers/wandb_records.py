"""W&B `Record` payloads (wandb/proto/wandb_internal.proto), decoded field by field
with the protobuf wire walker of tfevents_proto; neither wandb nor protobuf is imported.

Field numbers read (the same in wandb 0.31.0's wandb_internal.proto):
  Record:        history 2, metric 12, run 17, exit 18, header 21 (other kinds skipped)
  HistoryRecord: item 1 (repeated HistoryItem), step 2 (HistoryStep: num 1)
  HistoryItem:   key 1, nested_key 2 (repeated: the path of a nested dict, joined
                 with "/"), value_json 16; the typed oneof none 3, boolean 4,
                 integer 5 (sint64), number 6 (double), text 7, json 8 is read too,
                 though wandb 0.31.0 writes only value_json
  MetricRecord:  name 1, glob_name 2, step_metric 4 (from wandb.define_metric)
  RunRecord:     run_id 1, project 3, display_name 8
  RunExitRecord: exit_code 1
  HeaderRecord:  version_info 1 (VersionInfo: producer 1)

A history value is a number when its JSON is one, NaN / Infinity / -Infinity
included (they are evidence). Strings, booleans, lists and dicts (media objects,
tables) are not metrics: they are counted, by kind, and left out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from trainproof.parsers.tfevents_proto import Undecodable, fields, varint

HISTORY, METRIC, RUN, EXIT, HEADER = 2, 12, 17, 18, 21
_WANTED = frozenset((HISTORY, METRIC, RUN, EXIT, HEADER))
_F64 = struct.Struct("<d")
_KINDS = {ord('"'): "string", ord("["): "list", ord("{"): "dict", ord("t"): "boolean", ord("f"): "boolean"}
_MAX_KEYS_NAMED = 5
_KEY_CACHE = 65536  # distinct keys whose decoded str is kept (a run logs a few hundred)


@dataclass
class Tally:
    history: int = 0  # history rows read
    undecodable: int = 0  # payloads that passed their checksum but are not a Record
    ignored: dict[str, int] = field(default_factory=dict)  # kind -> non-numeric values left out
    ignored_keys: list[str] = field(default_factory=list)  # the first few keys that held them
    step_metrics: dict[str, str] = field(default_factory=dict)  # metric name or glob -> its step metric
    meta: dict[str, object] = field(default_factory=dict)
    keys: dict[bytes, str] = field(default_factory=dict)  # decoded key names, by their bytes

    def ignore(self, kind: str, key: str) -> None:
        self.ignored[kind] = self.ignored.get(kind, 0) + 1
        if key not in self.ignored_keys and len(self.ignored_keys) < _MAX_KEYS_NAMED:
            self.ignored_keys.append(key)

    def notes(self) -> list[str]:
        out = []
        if self.undecodable:
            out.append(f"{self.undecodable} record(s) passed their checksum but do not decode as a "
                       "W&B Record; not read")
        if self.ignored:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.ignored.items()))
            keys = ", ".join(self.ignored_keys)
            out.append(f"{sum(self.ignored.values())} non-numeric history value(s) ignored ({kinds}; "
                       f"keys: {keys})")
        return out


def _text(buf: bytes, span: tuple[int, int]) -> str:
    return buf[span[0]:span[1]].decode("utf-8", "replace")


def json_value(raw: bytes) -> float | str | None:
    """A value_json as a float, None for null, or the kind of non-number it is."""
    try:
        return float(raw)  # JSON numbers, and the NaN / Infinity / -Infinity wandb writes
    except ValueError:
        pass
    raw = raw.strip()
    if raw == b"null":
        return None
    return _KINDS.get(raw[0], "malformed") if raw else "malformed"


def _item(buf: bytes, span: tuple[int, int]) -> tuple[str, float | str | None]:
    key, path, value = "", [], None
    for num, wt, v in fields(buf, *span):
        if wt == 2 and num == 1:
            key = _text(buf, v)
        elif wt == 2 and num == 2:
            path.append(_text(buf, v))
        elif wt == 2 and num in (16, 8):
            value = json_value(buf[v[0]:v[1]])
        elif num == 6 and wt == 1:
            value = _F64.unpack_from(buf, v)[0]
        elif num == 5 and wt == 0:
            value = float((v >> 1) ^ -(v & 1))  # sint64: zigzag
        elif num == 4 and wt == 0:
            value = "boolean"
        elif num == 7 and wt == 2:
            value = "string"
    return key or "/".join(path), value


def _common_item(buf: bytes, s: int, e: int, keys: dict[bytes, str]) -> tuple[str, float | str | None] | None:
    """The item shape wandb writes for nearly every value, read without the walker:
    one key (or a one-part nested_key) and a value_json, both shorter than 128 bytes."""
    if e - s < 5 or buf[s] not in (0x0A, 0x12) or buf[s + 1] >= 0x80:
        return None
    k = s + 2 + buf[s + 1]
    if k + 3 > e or buf[k] != 0x82 or buf[k + 1] != 0x01 or k + 3 + buf[k + 2] != e:
        return None
    raw = buf[s + 2:k]
    key = keys.get(raw)
    if key is None:
        key = raw.decode("utf-8", "replace")
        if len(keys) < _KEY_CACHE:
            keys[raw] = key
    return key, json_value(buf[k + 3:e])


def history_row(buf: bytes, span: tuple[int, int], tally: Tally) -> dict[str, float]:
    """One history row: its numeric values by key. Walks the record's fields inline
    (this loop runs once per logged value, the bulk of a large file)."""
    row: dict[str, float] = {}
    step = None
    pos, end = span
    while pos < end:
        tag = buf[pos]  # one-byte varints (tags, short lengths) read inline: the common case
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = varint(buf, pos, end)
        wt = tag & 7
        if wt == 2:
            if pos < end and buf[pos] < 0x80:
                n, pos = buf[pos], pos + 1
            else:
                n, pos = varint(buf, pos, end)
            e = pos + n
            if e > end:
                raise Undecodable("field runs past its message")
            if tag == 0x0A:  # item
                got = _common_item(buf, pos, e, tally.keys) or _item(buf, (pos, e))
                key, value = got
                if type(value) is float:
                    row[key] = value
                elif value is not None and key:
                    tally.ignore(value, key)  # type: ignore[arg-type]
            elif tag == 0x12:  # step
                step = next((float(x) for n2, w2, x in fields(buf, pos, e) if n2 == 1 and w2 == 0), 0.0)
            pos = e
        elif wt == 0:
            pos = varint(buf, pos, end)[1]
        elif wt in (1, 5):
            pos += 8 if wt == 1 else 4
        else:
            raise Undecodable(f"wire type {wt}")
    if pos > end:
        raise Undecodable("field runs past its message")
    row.pop("", None)
    if "_step" not in row and step is not None:
        row["_step"] = step
    tally.history += 1
    return row


def _metric(buf: bytes, span: tuple[int, int], tally: Tally) -> None:
    name = step = ""
    for num, wt, v in fields(buf, *span):
        if wt == 2 and num in (1, 2) and not name:
            name = _text(buf, v)
        elif wt == 2 and num == 4:
            step = _text(buf, v)
    if name and step:
        tally.step_metrics[name] = step


def _strings(buf: bytes, span: tuple[int, int], wanted: dict[int, str]) -> dict[str, str]:
    return {wanted[num]: _text(buf, v) for num, wt, v in fields(buf, *span) if wt == 2 and num in wanted}


def _other(kind: int, buf: bytes, span: tuple[int, int], tally: Tally) -> None:
    if kind == METRIC:
        _metric(buf, span, tally)
    elif kind == RUN:
        tally.meta.update(_strings(buf, span, {1: "run_id", 3: "project", 8: "run_name"}))
    elif kind == EXIT:
        code = next((v for num, wt, v in fields(buf, *span) if num == 1 and wt == 0), 0)
        tally.meta["exit_code"] = code - (1 << 64) if code >= 1 << 63 else code
    elif kind == HEADER:
        for num, wt, v in fields(buf, *span):
            if num == 1 and wt == 2:
                tally.meta.update(_strings(buf, v, {1: "wandb_version"}))


def decode(buf: bytes, tally: Tally) -> dict[str, float] | None:
    """The history row a payload holds, or None; run, exit, header and metric
    records update tally as they pass."""
    try:
        for num, wt, v in fields(buf, 0, len(buf)):
            if num in _WANTED and wt == 2:
                if num == HISTORY:
                    return history_row(buf, v, tally)
                _other(num, buf, v, tally)
                return None
    except (Undecodable, IndexError, struct.error):
        tally.undecodable += 1
    return None

