"""Turning framed records into (record, tag, step, value) points, a chunk at a time.

Records are grouped by body length. Each group's bodies are copied out as one
(n, length) byte array, their CRCs checked together, and the ones with the shape
every `add_scalar` writes,

    09 <wall_time:8>  10 <step:varint>  2a <len>  0a <len>  0a <len> <tag>  15 <simple_value:4>

(Event.wall_time, Event.step, Event.summary{value{tag, simple_value}}), are
decoded with whole-column numpy operations: within a group of one length and one
step width every field sits at a fixed offset, so checking each fixed byte for
every record proves the shape exactly. Everything else goes through the general
decoder in tfevents_proto, in record order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainproof.parsers.tfevents_crc import ROW_LIMIT, byte_rows, crc32c, crc32c_rows, mask, mask_rows
from trainproof.parsers.tfevents_frame import HEADER, Chunk, Damage
from trainproof.parsers.tfevents_proto import Undecodable, decode_event

_WALL, _STEP, _SUMMARY, _VALUE, _TAG, _SIMPLE = 0x09, 0x10, 0x2A, 0x0A, 0x0A, 0x15
_MAX_VARINT = 10


@dataclass
class Points:
    """Points decoded from one chunk, before they are put in record order."""
    record: list[np.ndarray] = field(default_factory=list)
    tag: list[np.ndarray] = field(default_factory=list)
    step: list[np.ndarray] = field(default_factory=list)
    value: list[np.ndarray] = field(default_factory=list)

    def add(self, record: np.ndarray, tag: np.ndarray, step: np.ndarray, value: np.ndarray) -> None:
        self.record.append(record)
        self.tag.append(tag.astype(np.int64))
        self.step.append(step.astype(np.float64))
        self.value.append(value.astype(np.float64))


class Tags:
    """Tag names seen so far, as small integer ids; plugin names per tag."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []
        self.plugins: dict[str, str] = {}

    def id(self, name: str) -> int:
        got = self.ids.get(name)
        if got is None:
            got = self.ids[name] = len(self.names)
            self.names.append(name)
        return got


def _crc_ok(rows: np.ndarray, length: int) -> np.ndarray:
    stored = np.ascontiguousarray(rows[:, length:length + 4]).view("<u4").ravel()
    return mask_rows(crc32c_rows(rows[:, :length])) == stored


def _step_width(rows: np.ndarray) -> np.ndarray:
    """Bytes in each record's step varint (0 when the shape is already wrong)."""
    n, length = rows.shape
    width = np.zeros(n, dtype=np.int64)
    if length < 22:
        return width
    pending = (rows[:, 0] == _WALL) & (rows[:, 9] == _STEP)
    for j in range(_MAX_VARINT):
        last = pending & (rows[:, 10 + j] < 0x80)
        width[last] = j + 1
        pending &= ~last
        if not pending.any():
            break
    return width


def _simple_shape(rows: np.ndarray, width: int, tags: Tags, idx: np.ndarray, points: Points) -> np.ndarray:
    """Decode the rows that have the add_scalar shape; return a mask of those that did."""
    n, length = rows.shape
    base = 10 + width
    taglen = length - base - 11
    if taglen < 0 or length - base - 2 >= 0x80:
        return np.zeros(n, dtype=bool)
    ok = ((rows[:, base] == _SUMMARY) & (rows[:, base + 1] == length - base - 2)
          & (rows[:, base + 2] == _VALUE) & (rows[:, base + 3] == length - base - 4)
          & (rows[:, base + 4] == _TAG) & (rows[:, base + 5] == taglen)
          & (rows[:, length - 5] == _SIMPLE))
    if not ok.any():
        return ok
    good = rows[ok]
    step = np.zeros(good.shape[0], dtype=np.uint64)
    for j in range(width):
        step |= (good[:, 10 + j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
    value = np.ascontiguousarray(good[:, length - 4:]).view("<f4").ravel()
    if taglen:
        raw_tags = np.ascontiguousarray(good[:, base + 6:base + 6 + taglen]).view(f"V{taglen}").ravel()
        uniq, inverse = np.unique(raw_tags, return_inverse=True)
        ids = np.array([tags.id(bytes(u).decode("utf-8", "replace")) for u in uniq], dtype=np.int64)
        tag_ids = ids[inverse.ravel()]
    else:
        tag_ids = np.full(good.shape[0], tags.id(""), dtype=np.int64)
    points.add(idx[ok], tag_ids, step.view(np.int64), value)
    return ok


def _group(chunk: Chunk, members: np.ndarray, length: int, first: int, tags: Tags,
           damage: Damage, points: Points) -> np.ndarray:
    """Check and decode one length group; return the record indices left for the general path."""
    rows = byte_rows(chunk.buf, chunk.starts[members] + HEADER, length + 4)
    crc_ok = _crc_ok(rows, length)
    damage.bad_data += int(members.size - crc_ok.sum())
    rows, members = rows[crc_ok], members[crc_ok]
    width = _step_width(rows)
    done = np.zeros(members.size, dtype=bool)
    for w in np.unique(width[width > 0]).tolist():
        sel = np.flatnonzero(width == w)
        done[sel] = _simple_shape(rows[sel], w, tags, members[sel] + first, points)
    return members[~done]


def _general(chunk: Chunk, indices: np.ndarray, checked: np.ndarray, first: int, tags: Tags,
             damage: Damage, points: Points) -> None:
    """Decode records one by one, in record order (a tag's plugin comes from its first metadata)."""
    raw = chunk.raw
    rec, tag, step, value = [], [], [], []
    for i in np.sort(indices).tolist():
        s = int(chunk.starts[i]) + HEADER
        e = s + int(chunk.lengths[i])
        if not checked[i] and mask(crc32c(raw[s:e])) != int.from_bytes(raw[e:e + 4], "little"):
            damage.bad_data += 1
            continue
        try:
            st, values = decode_event(raw, s, e, tags.plugins, damage)
        except Undecodable:
            damage.undecodable += 1
            continue
        for name, v in values:
            rec.append(first + i)
            tag.append(tags.id(name))
            step.append(st)
            value.append(v)
    if rec:
        points.add(np.array(rec, dtype=np.int64), np.array(tag), np.array(step, dtype=np.float64),
                   np.array(value, dtype=np.float64))


def decode_chunk(chunk: Chunk, first: int, tags: Tags, damage: Damage) -> Points:
    """All scalar points of a chunk (record indices counted from `first`)."""
    points = Points()
    lengths, inverse = np.unique(chunk.lengths, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(lengths.size + 1))
    checked = np.zeros(chunk.starts.size, dtype=bool)  # body CRC already verified
    rest = []
    for g, length in enumerate(lengths.tolist()):
        members = order[bounds[g]:bounds[g + 1]]
        if length > ROW_LIMIT:
            rest.append(members)
            continue
        checked[members] = True
        rest.append(_group(chunk, members, length, first, tags, damage, points))
    if rest:
        _general(chunk, np.concatenate(rest), checked, first, tags, damage, points)
    return points
