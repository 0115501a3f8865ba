"""Streaming readers for fine-tuning datasets: JSON Lines, JSON arrays, Parquet, and
directories of such shards. Readers yield batches of decoded records with their
positions; they never hold more than one block (plus one over-long record) in
memory, and they never open anything that is not a regular file.

A position ("where") packs the shard index and the 1-based line (row, for
Parquet) into one int, so a digest table can point back at records cheaply."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.files import require_regular
from trainproof.model import InputError
from trainproof.parsers.jsonutil import loads

try:
    import msgspec
except ImportError:  # optional speed-up: orjson or the standard library decode instead
    msgspec = None  # type: ignore[assignment]

BLOCK = 256 << 10  # bytes per step: measured fastest (the block and its decoded records stay in cache)
WHERE_BITS = 40  # a shard holds up to 2**40 lines; up to 2**23 shards
SUFFIXES = (".jsonl", ".ndjson", ".json", ".parquet", ".arrow")
# What `datasets.save_to_disk` writes beside the data: metadata, not records.
METADATA = frozenset({"dataset_info.json", "state.json", "dataset_dict.json"})
_BOM = b"\xef\xbb\xbf"
_ANY = msgspec.json.Decoder() if msgspec is not None else None


def where(file_index: int, pos: int) -> int:
    return (file_index << WHERE_BITS) | pos


def unpack(w: int) -> tuple[int, int]:
    return w >> WHERE_BITS, w & ((1 << WHERE_BITS) - 1)


@dataclass
class Batch:
    """Decoded records of one block. `texts` is set on the fast path (one string
    field, every record carrying it), `dicts` otherwise; `wheres` align with them."""

    wheres: Sequence[int]  # a range on the fast path
    texts: list[str] | None = None
    dicts: list[Any] | None = None


@dataclass
class ReadTally:
    """What the readers could not turn into records, with the first positions."""

    malformed: list[tuple[int, str]] = field(default_factory=list)  # (where, reason), first few
    malformed_count: int = 0
    oversized: list[int] = field(default_factory=list)
    oversized_count: int = 0
    blank_lines: int = 0
    bytes_read: int = 0
    keep: int = 5

    def bad(self, w: int, reason: str) -> None:
        self.malformed_count += 1
        if len(self.malformed) < self.keep:
            self.malformed.append((w, reason))

    def too_long(self, w: int) -> None:
        self.oversized_count += 1
        if len(self.oversized) < self.keep:
            self.oversized.append(w)


def shard_files(path: Path) -> list[Path]:
    """The dataset's files: the file itself, or the dataset shards under a directory."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in SUFFIXES and p.name not in METADATA
                       and not any(part.startswith(".") for part in p.relative_to(path).parts))
        if not files:
            raise InputError(f"{path}: no dataset files (*.jsonl, *.json, *.parquet, *.arrow) in this directory")
        return files
    require_regular(path)
    return [path]


def file_kind(path: Path) -> str:
    """jsonl, json-array or parquet, from magic bytes and the first non-blank byte."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    if path.suffix.lower() == ".arrow" or head.startswith(b"ARROW1"):
        return "arrow"
    if b"\x00" in head:
        raise InputError(f"{path}: binary content (NUL bytes); expected JSONL, a JSON array or Parquet")
    body = head.removeprefix(_BOM).lstrip()
    if body.startswith(b"["):
        return "json-array"
    if body.startswith(b"{") and path.suffix.lower() == ".json" and b"\n" in body:
        first = body.split(b"\n", 1)[0].strip()
        try:
            decode_line(first)
        except ValueError:
            raise InputError(f"{path}: a single JSON object spread over lines, not records; "
                             "expected JSONL (one record per line) or a JSON array") from None
    return "jsonl"


# ---------------------------------------------------------------- JSON Lines


def count_lf(data: bytes) -> int:
    """Vectorised: bytes.count walks a one-byte needle byte by byte, several times slower."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10))


class ByteRange:
    """A file read only from byte `start` up to `end` (the part of one JSONL file one
    worker measures); `read` returns b"" at `end` as a file does at its end."""

    def __init__(self, f: Any, start: int, end: int) -> None:
        f.seek(start)
        self.f, self.left = f, end - start

    def read(self, n: int) -> bytes:
        block = self.f.read(min(n, self.left))
        self.left -= len(block)
        return block


def line_blocks(f: Any, file_index: int, tally: ReadTally, max_record: int,
                line0: int = 1) -> Iterator[tuple[int, bytes, int]]:
    """(first line number, complete lines without the final newline, number of lines);
    a line longer than `max_record` is skipped up to its newline and counted, never
    buffered. The head of a line that spans blocks waits in `parts` (joined once).
    `line0` > 1: `f` starts mid-file at that line (a byte range), so no BOM is stripped."""
    line_no, parts, held, skipping, first = line0, [], 0, False, line0 == 1
    while block := f.read(BLOCK):
        tally.bytes_read += len(block)
        if first:
            block, first = block.removeprefix(_BOM), False
        if skipping:
            nl = block.find(b"\n")
            if nl < 0:
                continue
            block, skipping, line_no = block[nl + 1:], False, line_no + 1
        if parts:
            nl = block.find(b"\n")
            if held + (nl if nl >= 0 else len(block)) > max_record:
                tally.too_long(where(file_index, line_no))
                parts, held = [], 0
                if nl < 0:
                    skipping = True
                    continue
                block, line_no = block[nl + 1:], line_no + 1
        cut = block.rfind(b"\n")
        if cut < 0:
            if block:  # nothing left after a skipped line's newline is no line at all
                parts.append(block)
                held += len(block)
            continue
        body = b"".join((*parts, block[:cut])) if parts else block[:cut]
        parts, held = ([block[cut + 1:]], len(block) - cut - 1) if cut + 1 < len(block) else ([], 0)
        n = count_lf(body) + 1
        yield line_no, body, n
        line_no += n
    if parts and not skipping:
        body = b"".join(parts)
        yield line_no, body, count_lf(body) + 1


def decode_line(line: bytes) -> Any:
    """One JSON value; ValueError (with the decoder's reason) when it is not one."""
    if msgspec is not None:
        try:
            return _ANY.decode(line)
        except msgspec.DecodeError as exc:
            raise ValueError(str(exc)) from None
        except RecursionError:  # `[[[[...` thousands deep: one bad line, not an internal error
            raise ValueError("JSON nested too deeply to decode") from None
    return loads(line)


def _decode_lines(body: bytes, line0: int, file_index: int, tally: ReadTally) -> Batch:
    """Line by line: the slow path, taken only for blocks with a bad or blank line."""
    wheres: list[int] = []
    dicts: list[Any] = []
    for i, line in enumerate(body.split(b"\n")):
        if not line.strip():
            tally.blank_lines += 1
            continue
        w = where(file_index, line0 + i)
        try:
            rec = decode_line(line)
        except ValueError as exc:  # UnicodeDecodeError is a ValueError too
            tally.bad(w, str(exc).splitlines()[0][:160])
            continue
        if type(rec) is not dict:
            tally.bad(w, f"a JSON {type(rec).__name__}, not an object")
            continue
        wheres.append(w)
        dicts.append(rec)
    return Batch(wheres, dicts=dicts)


class _BlockDecoder:
    """Decodes a block of n lines in one C call by making it a JSON array; returns the
    field's strings (fast path) or the records, or None when any line is not a clean
    record (the caller then goes line by line). msgspec when installed, else orjson or
    the standard library."""

    def __init__(self, field_name: str | None) -> None:
        self.field = field_name
        self.typed = None
        if msgspec is not None:
            item = msgspec.defstruct("Rec", [(field_name, str)]) if field_name else dict
            self.typed = msgspec.json.Decoder(list[item])  # type: ignore[valid-type]

    def __call__(self, body: bytes, n: int) -> list[Any] | None:
        buf = b"".join((b"[", body.replace(b"\n", b","), b"]"))
        if self.typed is not None:
            try:
                recs = self.typed.decode(buf)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                return None  # line by line then names the bad line
            if len(recs) != n:
                return None
            return list(map(operator.attrgetter(self.field), recs)) if self.field else recs
        try:
            recs = loads(buf)
        except ValueError:
            return None
        if len(recs) != n or not all(type(r) is dict for r in recs):
            return None
        if not self.field:
            return recs
        texts = [r.get(self.field) for r in recs]
        return texts if all(type(t) is str for t in texts) else None


def read_jsonl(path: Path, file_index: int, field_name: str | None, tally: ReadTally,
               max_record: int, span: tuple[int, int, int] | None = None) -> Iterator[Batch]:
    """With `field_name`, blocks whose every line is an object with that string field
    decode straight to a list of strings (the fast path). `span` (start byte, end byte,
    line number at start) reads one byte range that starts and ends at line boundaries."""
    decode = _BlockDecoder(field_name)
    with open(path, "rb") as raw:
        f, line0 = (ByteRange(raw, span[0], span[1]), span[2]) if span else (raw, 1)
        for first, body, n in line_blocks(f, file_index, tally, max_record, line0):
            recs = decode(body, n)
            if recs is None:
                yield _decode_lines(body, first, file_index, tally)
                continue
            wheres = range(where(file_index, first), where(file_index, first) + n)
            yield Batch(wheres, texts=recs) if field_name else Batch(wheres, dicts=recs)


# ---------------------------------------------------------------- JSON arrays


def read_json_array(path: Path, file_index: int, tally: ReadTally, max_record: int,
                    batch: int = 4096) -> Iterator[Batch]:
    """A top-level JSON array, streamed element by element with the standard
    library's raw_decode over a sliding text window."""
    dec = json.JSONDecoder()
    reader = open(path, encoding="utf-8", errors="strict", newline="")  # noqa: SIM115
    with reader:
        text, pos, line, eof = "", 0, 1, False
        wheres: list[int] = []
        dicts: list[Any] = []

        def more() -> bool:
            nonlocal text, pos, eof
            try:  # the window at least doubles, so a long element is re-scanned O(log n) times
                chunk = reader.read(max(BLOCK, len(text) - pos))
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}: invalid UTF-8 ({exc.reason})") from None
            tally.bytes_read += len(chunk)
            text, pos, eof = text[pos:] + chunk, 0, not chunk
            return bool(chunk)

        more()
        start = text.lstrip().removeprefix("\ufeff").lstrip()
        pos = len(text) - len(start) + 1  # past "["
        line += text.count("\n", 0, pos)
        while True:
            while True:  # skip whitespace and commas, refilling the window as needed
                while pos < len(text) and text[pos] in " \t\r\n,":
                    line += text[pos] == "\n"
                    pos += 1
                if pos < len(text) or not more():
                    break
            if pos >= len(text) or text[pos] == "]":
                break
            try:
                obj, end = dec.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                if len(text) - pos > max_record:
                    tally.too_long(where(file_index, line))
                    break  # the rest of the array cannot be found without reading that element
                if not eof and more():
                    continue  # the element runs past the window: widen it and retry
                tally.bad(where(file_index, line), f"invalid JSON: {exc.msg}")
                break  # an array cannot be resynchronised after a syntax error
            except (ValueError, RecursionError) as exc:  # a 5,000-digit integer, nesting too deep
                tally.bad(where(file_index, line), f"invalid JSON: {str(exc)[:160] or type(exc).__name__}")
                break
            if end - pos > max_record:  # read whole within one window more; still not a record
                tally.too_long(where(file_index, line))
            elif type(obj) is dict:
                wheres.append(where(file_index, line))
                dicts.append(obj)
            else:
                tally.bad(where(file_index, line), f"a JSON {type(obj).__name__}, not an object")
            line += text.count("\n", pos, end)
            pos = end
            if len(dicts) >= batch:
                yield Batch(wheres, dicts=dicts)
                wheres, dicts = [], []
        if dicts:
            yield Batch(wheres, dicts=dicts)


# ---------------------------------------------------------------- Parquet


def read_parquet(path: Path, file_index: int, columns: list[str] | None, tally: ReadTally,
                 batch: int = 8192, span: tuple[int, int, int] | None = None) -> Iterator[Batch]:
    """`span` (first row group, end row group, row number at its start) reads some row
    groups only."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        pf = pq.ParquetFile(path)
        names = set(pf.schema_arrow.names)
        cols = [c for c in columns if c in names] if columns else None
        groups = list(range(span[0], span[1])) if span else None
        row = span[2] if span else 1
        for rb in pf.iter_batches(batch_size=batch, row_groups=groups, columns=cols):
            tally.bytes_read += rb.nbytes
            rows = rb.to_pylist()
            yield Batch(list(range(where(file_index, row), where(file_index, row) + len(rows))), dicts=rows)
            row += len(rows)
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on corrupt files
        raise InputError(f"{path}: unreadable Parquet: {exc}".splitlines()[0]) from None


def read_arrow(path: Path, file_index: int, columns: list[str] | None, tally: ReadTally) -> Iterator[Batch]:
    """Arrow IPC, as `datasets.save_to_disk` writes it (stream format; the file format too)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise InputError(f"{path}: reading Arrow needs pyarrow (pip install pyarrow)") from None
    try:
        with pa.memory_map(str(path)) as source:
            try:
                reader = pa.ipc.open_stream(source)
            except pa.ArrowInvalid:
                source.seek(0)
                reader = pa.ipc.open_file(source)
                reader = (reader.get_batch(i) for i in range(reader.num_record_batches))
            row = 1
            for rb in reader:
                if columns:
                    rb = rb.select([c for c in columns if c in rb.schema.names])
                tally.bytes_read += rb.nbytes
                rows = rb.to_pylist()
                yield Batch(list(range(where(file_index, row), where(file_index, row) + len(rows))), dicts=rows)
                row += len(rows)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable Arrow file: {exc}".splitlines()[0]) from None


def parquet_row_groups(path: Path) -> list[tuple[int, int]]:
    """(rows, bytes) of each row group, from the footer; [] when it cannot be read (the
    file is then read whole, and fails there as one process would)."""
    try:
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(path).metadata
        return [(meta.row_group(g).num_rows, meta.row_group(g).total_byte_size) for g in range(meta.num_row_groups)]
    except (ImportError, OSError, ValueError):
        return []


def parquet_columns(path: Path) -> list[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        return list(pq.ParquetFile(path).schema_arrow.names)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable Parquet: {exc}".splitlines()[0]) from None
