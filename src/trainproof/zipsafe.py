"""Opening a ZIP that trainproof did not write (a torch checkpoint, a ClearML session
zip) with the work bounded per input, not only per entry.

`zipfile` trusts the central directory: an entry listed twice is inflated twice, two
names may point at the same bytes, and the directory may list millions of entries,
each parsed into memory before anything else happens. No writer produces any of
that, so before a single entry is read the directory must be one a writer could
have made, and the work it asks for must fit the limits below:

- `max_entries` (default MAX_ENTRIES): entries in the directory, counted from the end
  record before zipfile parses it;
- every name appears once, and no two entries' bytes (local header and data) overlap,
  so reading every entry reads each byte of the file at most once;
- `max_ratio` (MAX_RATIO): declared size / compressed size of one compressed entry;
- `max_inflated` (MAX_INFLATED): declared uncompressed bytes of all compressed entries
  together. zipfile stops each entry at its declared size, so this caps inflation.

Stored (uncompressed) entries need no cap of their own: with overlaps refused, they
add up to at most the file. The checkpoint probe passes its own limits, declared as
thresholds in rules/env_checkpoint.py; other readers take these defaults.
"""

from __future__ import annotations

import struct
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAX_ENTRIES = 10_000  # a ClearML session zip holds a handful of files; checkpoints pass their own cap
MAX_RATIO = 100.0  # deflate tops out near 1000x on zeros; real logs and JSON stay under 20x
MAX_INFLATED = 1 << 30  # 1 GiB of inflation: seconds of work, far past any log or pickle read

_EOCD, _EOCD64, _LOCATOR = b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07"
_LOCAL = b"PK\x03\x04"
_TAIL = 22 + 0xFFFF  # the end record plus the longest comment


class ZipRefused(Exception):
    """The directory is not one a writer makes, or asks for more work than the limits allow."""


@dataclass(frozen=True)
class ZipLimits:
    max_entries: int = MAX_ENTRIES
    max_ratio: float = MAX_RATIO
    max_inflated: int = MAX_INFLATED


def open_zip(path: Path, limits: ZipLimits = ZipLimits()) -> zipfile.ZipFile:
    """A ZipFile whose directory passed `check_directory`. Raises ZipRefused, or
    zipfile.BadZipFile when there is no readable directory at all."""
    with open(path, "rb") as fh:
        n = declared_entries(fh)
    if n is not None and n > limits.max_entries:
        raise ZipRefused(f"the ZIP directory lists {n} entries, over the {limits.max_entries} cap")
    try:
        zf = zipfile.ZipFile(path)
    except (UnicodeDecodeError, ValueError, OverflowError, NotImplementedError) as exc:
        # a name flagged UTF-8 that is not, a field out of range, a ZIP version zipfile refuses
        raise ZipRefused(f"the ZIP directory cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        check_directory(zf, path, limits)
    except BaseException:
        zf.close()
        raise
    return zf


def declared_entries(fh: BinaryIO) -> int | None:
    """The entry count the end record (ZIP64 included) declares, or None without one."""
    size = fh.seek(0, 2)
    start = max(0, size - _TAIL)
    fh.seek(start)
    tail = fh.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        return None
    count = struct.unpack("<H", tail[at + 10:at + 12])[0]
    loc = at - 20
    if loc >= 0 and tail[loc:loc + 4] == _LOCATOR:
        fh.seek(struct.unpack("<Q", tail[loc + 8:loc + 16])[0])
        rec = fh.read(56)
        if len(rec) == 56 and rec[:4] == _EOCD64:
            count = max(count, struct.unpack("<Q", rec[32:40])[0])
    return count


# The methods the zipfile module inflates (torch.save writes every entry stored).
_INFLATABLE = frozenset({zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA})


def check_directory(zf: zipfile.ZipFile, path: Path, limits: ZipLimits = ZipLimits()) -> None:
    """Raise ZipRefused for duplicate names, overlapping entries, a compression method the
    zipfile module cannot inflate, or inflation past the caps."""
    infos = zf.infolist()
    if len(infos) > limits.max_entries:
        raise ZipRefused(f"the ZIP directory lists {len(infos)} entries, over the {limits.max_entries} cap")
    name, times = Counter(i.filename for i in infos).most_common(1)[0] if infos else ("", 0)
    if times > 1:
        raise ZipRefused(f"corrupt ZIP directory: entry {name} is listed {times} times")
    inflated = 0
    for i in infos:
        if i.compress_type == zipfile.ZIP_STORED:
            continue
        if i.compress_type not in _INFLATABLE:  # zipfile would raise NotImplementedError on open
            raise ZipRefused(f"entry {i.filename} uses ZIP compression method {i.compress_type}, "
                             "which cannot be read")
        if i.file_size > limits.max_ratio * max(i.compress_size, 1):
            raise ZipRefused(f"entry {i.filename} declares {i.file_size} bytes from {i.compress_size} "
                             f"compressed (over {limits.max_ratio:g}x): not inflated")
        inflated += i.file_size
        if inflated > limits.max_inflated:
            raise ZipRefused(f"its compressed entries inflate to more than {limits.max_inflated} bytes "
                             f"together: not inflated")
    _refuse_overlaps(infos, path)


def _refuse_overlaps(infos: list[zipfile.ZipInfo], path: Path) -> None:
    """Each entry spans its local header, name, extra field and data; sorted by offset,
    each must start at or after the end of the one before."""
    prev_end, prev_name = 0, ""
    with open(path, "rb") as fh:
        for i in sorted(infos, key=lambda x: x.header_offset):
            if i.header_offset < prev_end:
                raise ZipRefused(f"corrupt ZIP directory: entries {prev_name} and {i.filename} "
                                 f"overlap at byte {i.header_offset}")
            fh.seek(i.header_offset)
            head = fh.read(30)
            # a missing local header is the reader's to report (truncated or corrupt); the
            # central lengths still bound where the entry ends
            name_len, extra_len = (struct.unpack("<HH", head[26:30]) if len(head) == 30 and
                                   head[:4] == _LOCAL else (0, 0))
            prev_end = i.header_offset + 30 + name_len + extra_len + i.compress_size
            prev_name = i.filename
