"""What a WAV header promises against what the file holds. libsndfile silently clamps
a RIFF `data` chunk that claims more bytes than the file has, so a truncated copy
decodes as a shorter, healthy-looking file; reading the chunk table tells.
Measures only: no thresholds."""

from __future__ import annotations

import struct

HEAD_BYTES = 1 << 16  # chunk tables of real WAVs sit well inside the first 64 KiB
_UNKNOWN_SIZES = (0, 0xFFFFFFFF)  # streaming writers leave these when the size is unknown


def wav_missing_bytes(head: bytes, file_size: int) -> int | None:
    """Bytes the RIFF/WAVE `data` chunk claims beyond the end of the file (0 when it
    fits), or None when `head` is no RIFF/WAVE or its data size is left unknown."""
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    pos = 12
    while pos + 8 <= len(head):
        chunk_id = head[pos:pos + 4]
        (size,) = struct.unpack_from("<I", head, pos + 4)
        if chunk_id == b"data":
            if size in _UNKNOWN_SIZES:
                return None
            return max(0, pos + 8 + size - file_size)
        pos += 8 + size + (size & 1)  # chunks are word-aligned
    return None
