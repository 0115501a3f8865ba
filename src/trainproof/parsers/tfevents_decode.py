"""Turning framed records into (record, tag, step, value) points, a chunk at a time.

Records are grouped by body length. Each group's bodies are copied out as one
(n, length) byte array, their CRCs checked together, and the ones with the shape
every `add_scalar` writes,

    09 <wall_time:8>  10 <step:varint>  2a <len>  0a <len>  0a <len> <tag>  15 <simple_value:4>

(Event.wall_time, Event.step, Event.summary{value{tag, simple_value}}), are
decoded with whole-column numpy operations: within a group of one length and one
step width every field sits at a fixed offset, so checking each fixed byte for
every record proves the shape exactly. A row's CRC is then its tag's first row's
CRC corrected by the bytes that vary (wall time, step, value).

Other records that repeat one single-scalar layout (torch's new_style tensors,
TF2/Keras summaries, step-0 records) are matched against a layout learned from
their group's first record (tfevents_layout) and decoded the same way. What is
left goes through the general decoder in tfevents_proto, in record order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainproof.parsers.tfevents_crc import (
    ROW_LIMIT,
    byte_rows,
    crc32c,
    crc32c_rows,
    crc32c_varying,
    mask,
    mask_rows,
)
from trainproof.parsers.tfevents_frame import HEADER, Chunk, Damage
from trainproof.parsers.tfevents_layout import WIDTH, Layout, layout
from trainproof.parsers.tfevents_proto import Undecodable, decode_event

_WALL, _STEP, _SUMMARY, _VALUE, _TAG, _SIMPLE = 0x09, 0x10, 0x2A, 0x0A, 0x0A, 0x15
_MAX_VARINT = 10
_MIN_TEMPLATE_ROWS = 8  # fewer rows of a shape: the general path is as quick
_MAX_TEMPLATES = 16  # layouts tried per length group before the rest go one by one
_FEW_TAGS = 8  # tags matched one at a time per group; more are sorted


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


def _varints(columns: np.ndarray) -> np.ndarray:
    """int64 value of each row's varint bytes (two's complement, as Event.step is)."""
    out = np.zeros(columns.shape[0], dtype=np.uint64)
    for j in range(columns.shape[1]):
        out |= (columns[:, j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
    return out.view(np.int64)


def _values(columns: np.ndarray, kind: str) -> np.ndarray:
    raw = np.ascontiguousarray(columns)
    if kind == "bf16":
        return (raw.view("<u2").astype(np.uint32) << np.uint32(16)).view(np.float32).ravel()
    return raw.view({"f4": "<f4", "f8": "<f8", "f2": "<f2"}[kind]).ravel()


def _template_match(rows: np.ndarray, rep: np.ndarray, lay: Layout) -> np.ndarray:
    """Rows equal to rep outside wall time, step and value, with a step varint of the same width."""
    varying = np.zeros(rows.shape[1], dtype=bool)
    if lay.wall is not None:
        varying[lay.wall:lay.wall + 8] = True
    varying[lay.value:lay.value + WIDTH[lay.kind]] = True
    if lay.step is not None:
        a, b = lay.step
        varying[a:b] = True
    fixed = np.flatnonzero(~varying)
    match = (rows[:, fixed] == rep[fixed]).all(axis=1)
    if lay.step is not None:
        match &= (rows[:, a:b - 1] >= 0x80).all(axis=1) & (rows[:, b - 1] < 0x80)
    return match


def _templated(body: np.ndarray, idx: np.ndarray, tags: Tags, points: Points) -> np.ndarray:
    """Decode rows that repeat a single-scalar record's layout; mask of the rows done."""
    done = np.zeros(body.shape[0], dtype=bool)
    todo = np.arange(body.shape[0])
    for _ in range(_MAX_TEMPLATES):
        if todo.size < _MIN_TEMPLATE_ROWS:
            break
        rep = body[todo[0]]
        lay = layout(rep.tobytes())
        if lay is None or (lay.tensor and tags.plugins.get(lay.tag, "scalars") != "scalars"):
            todo = todo[1:]
            continue
        rows = body[todo]
        match = _template_match(rows, rep, lay)
        rows, hit = rows[match], todo[match]
        if lay.tensor:
            tags.plugins.setdefault(lay.tag, "scalars")
        step = (_varints(rows[:, lay.step[0]:lay.step[1]]) if lay.step is not None
                else np.zeros(hit.size, dtype=np.int64))
        value = _values(rows[:, lay.value:lay.value + WIDTH[lay.kind]], lay.kind)
        points.add(idx[hit], np.full(hit.size, tags.id(lay.tag)), step, value)
        done[hit] = True
        todo = todo[~match]
    return done


def _tag_ids(names: np.ndarray, tags: Tags) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Tag id per row of an (n, taglen) byte array; for each row the first row with
    the same tag; those first rows. A group usually holds a few tags: match them one
    at a time, and sort the rest when there are many (per-layer tags)."""
    n, taglen = names.shape
    flat = np.ascontiguousarray(names).view(f"S{taglen}").ravel() if taglen else np.zeros(n, dtype="S1")
    ids = np.empty(n, dtype=np.int64)
    reps = np.empty(n, dtype=np.int64)
    firsts: list[int] = []
    todo = np.arange(n)
    while todo.size and len(firsts) < _FEW_TAGS:
        rep = int(todo[0])
        firsts.append(rep)
        same = flat[todo] == flat[rep] if todo.size < n else flat == flat[rep]
        ids[todo[same]] = tags.id(names[rep].tobytes().decode("utf-8", "replace"))
        reps[todo[same]] = rep
        todo = todo[~same]
    if todo.size:
        _, first, inverse = np.unique(flat[todo], return_index=True, return_inverse=True)
        rep_rows = todo[first]
        known = np.array([tags.id(names[r].tobytes().decode("utf-8", "replace")) for r in rep_rows.tolist()],
                         dtype=np.int64)
        ids[todo] = known[inverse.ravel()]
        reps[todo] = rep_rows[inverse.ravel()]
        firsts.extend(rep_rows.tolist())
    return ids, reps, firsts


def _simple_shape(rows: np.ndarray, width: int) -> np.ndarray:
    """Mask of the rows that are exactly the add_scalar Event shape for this width."""
    n, length = rows.shape
    base = 10 + width
    taglen = length - base - 11
    if taglen < 0 or length - base - 2 >= 0x80:
        return np.zeros(n, dtype=bool)
    expect = np.array([_SUMMARY, length - base - 2, _VALUE, length - base - 4, _TAG, taglen], dtype=np.uint8)
    return (rows[:, base:base + 6] == expect).all(axis=1) & (rows[:, length - 5] == _SIMPLE)


def _decode_simple(body: np.ndarray, stored: np.ndarray, width: int, tags: Tags, idx: np.ndarray,
                   points: Points) -> int:
    """Verify and decode rows of the add_scalar shape; return how many failed their CRC.

    Every byte but wall time, step and value is fixed by the shape and the tag, so
    a row's CRC is its tag's first row's CRC corrected by the varying bytes."""
    length = body.shape[1]
    base = 10 + width
    tag_ids, reps, firsts = _tag_ids(body[:, base + 6:length - 5], tags)
    varying = [*range(1, 9), *range(10, base), *range(length - 4, length)]
    part = crc32c_varying(body, varying)
    rep_crc = np.zeros(body.shape[0], dtype=np.uint32)
    for r in firsts:
        rep_crc[r] = crc32c(body[r].tobytes()) ^ int(part[r])
    ok = mask_rows(rep_crc[reps] ^ part) == stored
    good = body[ok] if not ok.all() else body
    value = np.ascontiguousarray(good[:, length - 4:]).view("<f4").ravel()
    points.add(idx[ok], tag_ids[ok], _varints(good[:, 10:10 + width]), value)
    return int(ok.size - ok.sum())


def _group(chunk: Chunk, members: np.ndarray, length: int, first: int, tags: Tags,
           damage: Damage, points: Points) -> np.ndarray:
    """Check and decode one length group; return the record indices left for the general path."""
    rows = byte_rows(chunk.buf, chunk.starts[members] + HEADER, length + 4)
    body = rows[:, :length]
    stored = np.ascontiguousarray(rows[:, length:]).view("<u4").ravel()
    width = _step_width(body)
    simple = np.zeros(members.size, dtype=bool)
    for w in np.flatnonzero(np.bincount(width, minlength=_MAX_VARINT + 1)[1:]).tolist():
        w += 1
        sel = np.flatnonzero(width == w)
        shaped = _simple_shape(body[sel], w)
        sel = sel[shaped]
        if sel.size:
            simple[sel] = True
            damage.bad_data += _decode_simple(body[sel], stored[sel], w, tags, members[sel] + first, points)
    rest = np.flatnonzero(~simple)
    if rest.size == 0:
        return rest
    crc_ok = mask_rows(crc32c_rows(body[rest])) == stored[rest]
    damage.bad_data += int(rest.size - crc_ok.sum())
    rest = rest[crc_ok]
    done = _templated(body[rest], members[rest] + first, tags, points)
    return members[rest[~done]]


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


def group_by(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, bounds): order[bounds[g]:bounds[g+1]] are the positions of the g-th
    distinct key, in increasing position. Small keys use numpy's linear radix sort."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
    small = keys.min() >= 0 and keys.max() < (1 << 16)
    order = np.argsort(keys.astype(np.uint16) if small else keys, kind="stable")
    ordered = keys[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    return order, np.r_[0, cuts, keys.size]


def decode_chunk(chunk: Chunk, first: int, tags: Tags, damage: Damage) -> Points:
    """All scalar points of a chunk (record indices counted from `first`)."""
    points = Points()
    order, bounds = group_by(chunk.lengths)
    checked = np.zeros(chunk.starts.size, dtype=bool)  # body CRC already verified
    rest = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        members = order[a:b]
        length = int(chunk.lengths[members[0]])
        if length > ROW_LIMIT:
            rest.append(members)
            continue
        checked[members] = True
        rest.append(_group(chunk, members, length, first, tags, damage, points))
    if rest:
        _general(chunk, np.concatenate(rest), checked, first, tags, damage, points)
    return points
