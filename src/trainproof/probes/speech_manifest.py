"""Reads what a speech dataset lists: a JSONL manifest (NeMo / HF style), an
LJSpeech-style `metadata.csv` (id|text|normalized text, audio in wavs/ beside it) or a
directory of audio files (with LibriTTS / MFA sidecar transcripts when present).
Each becomes a list of entries: audio path, transcript, declared duration, line.
Lines are read with a byte cap, so a 100 MB line or a binary file costs bounded memory;
lines that cannot be read are counted with a reason, never raised."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from trainproof.files import special_kind, stat_input
from trainproof.model import InputError
from trainproof.parsers.base import number
from trainproof.probes.audio import AUDIO_EXTENSIONS

AUDIO_KEYS = ("audio_filepath", "audio_path", "audio", "path", "file", "wav", "filename")
TEXT_KEYS = ("text", "transcript", "transcription", "normalized_text", "sentence")
SIDECAR_SUFFIXES = (".normalized.txt", ".txt", ".lab")  # LibriTTS first, then plain, then MFA
LJSPEECH_NAMES = ("metadata.csv",)
_CHUNK = 1 << 20
MAX_EXAMPLES = 5


@dataclass(frozen=True, slots=True)
class Entry:
    audio: str  # path as the dataset resolves it
    text: str | None  # None: the dataset gives no transcript for this entry
    duration: float | None = None  # as declared by the manifest
    line: int | None = None  # in the manifest; None for a directory scan


@dataclass
class Listing:
    """Everything a dataset lists, plus the lines that could not be read."""

    path: str
    format: str  # jsonl-manifest, ljspeech, audio-dir
    entries: list[Entry] = field(default_factory=list)
    bad_lines: int = 0
    bad_examples: list[tuple[int, str]] = field(default_factory=list)
    lines: int = 0  # non-blank lines seen
    notes: list[str] = field(default_factory=list)

    def bad(self, line: int, reason: str) -> None:
        self.bad_lines += 1
        if len(self.bad_examples) < MAX_EXAMPLES:
            self.bad_examples.append((line, reason))


def capped_lines(fh: BinaryIO, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; None for a line longer than `limit` bytes, whose
    bytes are dropped as they stream past rather than held."""
    lineno, pending, overlong = 0, bytearray(), False
    while chunk := fh.read(_CHUNK):
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            lineno += 1
            if not overlong:
                pending += chunk[start:nl]
            yield lineno, None if overlong or len(pending) > limit else bytes(pending)
            pending.clear()
            overlong, start = False, nl + 1
        if not overlong:
            pending += chunk[start:]
            if len(pending) > limit:
                overlong = True
                pending.clear()
    if pending or overlong:
        yield lineno + 1, None if overlong else bytes(pending)


def _decoded(raw: bytes | None, limit: int) -> tuple[str | None, str]:
    if raw is None:
        return None, f"line longer than {limit} bytes"
    try:
        return raw.decode("utf-8-sig").strip("\r\n"), ""
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start})"


def _pick(record: dict, keys: tuple[str, ...]) -> tuple[str | None, object]:
    for k in keys:
        if k in record:
            return k, record[k]
    return None, None


def _manifest_entry(record: object, base: Path, line: int) -> Entry | str:
    """An entry from one JSON record, or the reason it is not one."""
    if not isinstance(record, dict):
        return "not a JSON object"
    key, audio = _pick(record, AUDIO_KEYS)
    if isinstance(audio, dict):  # HF datasets' {"path": ..., "array": ...}
        audio = audio.get("path")
    if key is None or not isinstance(audio, str) or not audio.strip():
        return f"no audio path (keys tried: {', '.join(AUDIO_KEYS)})"
    tkey, text = _pick(record, TEXT_KEYS)
    if tkey is not None and not isinstance(text, str):
        return f"{tkey!r} is not a string"
    dur = record.get("duration")
    if isinstance(dur, bool) or not isinstance(dur, (int, float, type(None))):
        return "'duration' is not a number"
    seconds = None if dur is None else number(dur)
    if dur is not None and seconds is None:
        return "'duration' is past float64's range"
    return Entry(str(base / audio), text, seconds, line)


def _text_lines(path: Path, limit: int, out: Listing) -> Iterator[tuple[int, str]]:
    """(line number, text) of every non-blank line; lines that are not text are
    counted on `out` as bad and skipped."""
    with open(path, "rb") as fh:
        for line, raw in capped_lines(fh, limit):
            text, why = _decoded(raw, limit)
            if text is not None and not text.strip():
                continue
            out.lines += 1
            if text is None:
                out.bad(line, why)
                continue
            yield line, text


def read_manifest(path: Path, limit: int) -> Listing:
    out = Listing(str(path), "jsonl-manifest")
    for line, text in _text_lines(path, limit, out):
        try:
            entry = _manifest_entry(json.loads(text), path.parent, line)
        except (ValueError, RecursionError) as exc:  # ValueError: JSON's, and 5,000-digit ints
            entry = f"not JSON: {getattr(exc, 'msg', type(exc).__name__)}"
        if isinstance(entry, Entry):
            out.entries.append(entry)
        else:
            out.bad(line, entry)
    return out


def read_ljspeech(path: Path, limit: int) -> Listing:
    """id|text|normalized text. Training reads the third column when it exists (Coqui's
    ljspeech formatter does), so that is the transcript checked."""
    out = Listing(str(path), "ljspeech")
    wavs = path.parent / "wavs"
    for line, text in _text_lines(path, limit, out):
        cols = text.split("|")
        if len(cols) < 2 or not cols[0].strip():
            out.bad(line, "expected id|text[|normalized text]")
            continue
        transcript = cols[2] if len(cols) >= 3 else cols[1]
        out.entries.append(Entry(str(wavs / f"{cols[0].strip()}.wav"), transcript, None, line))
    return out


def _sidecar_text(audio: Path, limit: int) -> str | None:
    stem = audio.with_suffix("")
    for suffix in SIDECAR_SUFFIXES:
        p = stem.with_name(stem.name + suffix)
        if p.is_file():
            with open(p, "rb") as fh:
                raw = fh.read(limit + 1)
            if len(raw) > limit:
                return None
            return raw.decode("utf-8", errors="replace").strip()
    return None


def read_audio_dir(path: Path, limit: int) -> Listing:
    out = Listing(str(path), "audio-dir")
    for root, dirs, files in os.walk(path, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if name.lower().endswith(AUDIO_EXTENSIONS):
                audio = Path(root) / name
                out.entries.append(Entry(str(audio), _sidecar_text(audio, limit)))
    out.lines = len(out.entries)
    listings = sorted(p.name for p in path.iterdir() if p.suffix in (".jsonl", ".json", ".csv") and p.is_file())
    if listings:
        out.notes.append(f"read as a directory of audio; to check a listing's transcripts and paths, "
                         f"pass it instead: {', '.join(listings[:3])}")
    return out


def _looks_like_jsonl(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1] == b"{"


def read_listing(path: Path, line_limit: int) -> Listing:
    """What PATH lists. Raises InputError for what is no dataset at all (missing, a FIFO,
    a device, a file that is neither a manifest nor metadata.csv)."""
    st = stat_input(path)
    if stat.S_ISDIR(st.st_mode):
        meta = next((path / n for n in LJSPEECH_NAMES if (path / n).is_file()), None)
        return read_ljspeech(meta, line_limit) if meta else read_audio_dir(path, line_limit)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: is {special_kind(st)}, not a regular file or a directory")
    try:
        if path.suffix.lower() in AUDIO_EXTENSIONS:  # one clip: a dataset of one
            return Listing(str(path), "audio-file", [Entry(str(path), None)], lines=1)
        if path.suffix.lower() in (".csv", ".txt") and not _looks_like_jsonl(path):
            return read_ljspeech(path, line_limit)
        return read_manifest(path, line_limit)
    except PermissionError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
