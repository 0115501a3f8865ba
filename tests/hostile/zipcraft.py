"""ZIP files written byte by byte, so they can lie: a central directory that names
one deflated entry thousands of times (a bomb by duplication), one small entry that
inflates to hundreds of MB (a bomb by ratio), entries appended to a real archive."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")


@dataclass(frozen=True)
class Entry:
    name: bytes
    offset: int  # of its local header
    method: int
    crc: int
    csize: int
    usize: int


def deflate_zeros(n: int, head: bytes = b"") -> tuple[bytes, int]:
    """Raw deflate of `head` then n zero bytes; returns (stream, crc32 of the plain bytes).
    One MiB of zeros is compressed once and its block repeated: a full flush resets the
    compressor's window, so each copy decodes on its own."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = [co.compress(head), co.flush(zlib.Z_FULL_FLUSH)]
    chunk = bytes(1 << 20)
    block = co.compress(chunk) + co.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(n >> 20):
        crc = zlib.crc32(chunk, crc)
    out.append(block * (n >> 20))
    out.append(co.flush())
    return b"".join(out), crc


def local(name: bytes, data: bytes, crc: int, usize: int, method: int, offset: int) -> tuple[bytes, Entry]:
    head = _LOCAL.pack(0x04034B50, 20, 0, method, 0, 0x21, crc, len(data), usize, len(name), 0)
    return head + name + data, Entry(name, offset, method, crc, len(data), usize)


def central(entries: list[Entry], at: int) -> bytes:
    """The central directory (at offset `at`) and the end record."""
    cd = b"".join(_CENTRAL.pack(0x02014B50, 20, 20, 0, e.method, 0, 0x21, e.crc, e.csize, e.usize,
                                len(e.name), 0, 0, 0, 0, 0, e.offset) + e.name for e in entries)
    n = min(len(entries), 0xFFFF)
    return cd + _END.pack(0x06054B50, 0, 0, n, n, len(cd), at, 0)


def duplicated_zip(name: str, deflated: tuple[bytes, int], usize: int, times: int) -> bytes:
    """One deflated entry, named `times` times by the central directory."""
    data, crc = deflated
    body, e = local(name.encode(), data, crc, usize, 8, 0)
    return body + central([e] * times, len(body))


def ratio_zip(name: str, size: int, prefix: bytes = b"") -> bytes:
    """One entry: `prefix` then `size` zero bytes, deflated (~1000:1)."""
    data, crc = deflate_zeros(size, prefix)
    body, e = local(name.encode(), data, crc, len(prefix) + size, 8, 0)
    return body + central([e], len(body))


def extend_zip(archive: bytes, extra: list[tuple[str, bytes, int, int]], repeat_last: int = 1) -> bytes:
    """`archive` (a real ZIP) with entries appended (name, deflated data, crc, plain size);
    the last one is named `repeat_last` times by the new central directory."""
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        infos = zf.infolist()
        entries = [Entry(i.filename.encode(), i.header_offset, i.compress_type, i.CRC, i.compress_size,
                         i.file_size) for i in infos]
    end = archive.rfind(b"PK\x05\x06")
    cd_at = struct.unpack_from("<I", archive, end + 16)[0]
    out = bytearray(archive[:cd_at])
    for name, data, crc, usize in extra:
        body, e = local(name.encode(), data, crc, usize, 8, len(out))
        out += body
        entries.append(e)
    entries.extend([entries[-1]] * (repeat_last - 1))
    return bytes(out) + central(entries, len(out))
