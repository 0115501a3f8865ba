"""Transcript files for the tokenizer command, streamed line by line.

Accepted formats (by content, whatever the extension):
- JSON Lines: one object per line; the text in `text`, `transcript`, `sentence`,
  `normalized_text` or `transcription`; the audio duration in seconds in
  `duration`, `duration_s`, `audio_duration` or `seconds`, or as `end` - `start`
  (seconds). A line with a duration is a *timed line*: tokens per second of audio
  are measured over timed lines only.
- LJSpeech-style `metadata.csv`: `id|text[|normalized text]`; the last field is the text.
- Plain text: one transcript per line.
Blank lines are skipped. Lines longer than `max_line` bytes are skipped and counted."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trainproof.files import require_regular
from trainproof.model import InputError
from trainproof.parsers.base import number
from trainproof.probes.dataset_read import decode_line

TEXT_KEYS = ("text", "transcript", "sentence", "normalized_text", "transcription")
DURATION_KEYS = ("duration", "duration_s", "audio_duration", "seconds")


@dataclass(frozen=True)
class Transcript:
    line: int
    text: str
    seconds: float | None  # None: the line carries no duration


@dataclass
class TranscriptTally:
    format: str = "text"
    lines: int = 0
    skipped: int = 0  # unparseable JSON, no text field, invalid UTF-8, over-long
    first_skipped: tuple[int, str] | None = None

    def skip(self, line: int, why: str) -> None:
        self.skipped += 1
        if self.first_skipped is None:
            self.first_skipped = (line, why)


def _duration(rec: dict) -> float | None:
    for k in DURATION_KEYS:
        v = rec.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return number(v)  # None for an integer past float64's range
    a, b = number(rec.get("start")), number(rec.get("end"))
    return b - a if a is not None and b is not None else None


def _sniff(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(65536)
    if b"\x00" in head:
        raise InputError(f"{path}: binary content (NUL bytes); expected text or JSONL transcripts")
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), b"")
    if first.startswith(b"{"):
        return "jsonl"
    if path.suffix.lower() == ".csv" and b"|" in first:
        return "ljspeech"
    return "text"


def read_transcripts(path: Path, tally: TranscriptTally, max_line: int) -> Iterator[Transcript]:
    require_regular(path)
    tally.format = _sniff(path)
    with open(path, "rb") as f:
        for i, raw in enumerate(_lines(f, max_line), 1):
            if raw is None:
                tally.skip(i, f"line longer than {max_line} bytes")
                continue
            if not raw.strip():
                continue
            tally.lines += 1
            item = _parse(raw, i, tally)
            if item is not None:
                yield item


def _lines(f, max_line: int) -> Iterator[bytes | None]:
    """Lines without their newline; None for a line over the limit (read past, not kept)."""
    while True:
        line = f.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not line.endswith(b"\n"):
            while (rest := f.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        yield line.rstrip(b"\r\n")


def _parse(raw: bytes, i: int, tally: TranscriptTally) -> Transcript | None:
    try:
        if tally.format != "jsonl":
            text = raw.decode("utf-8").removeprefix("\ufeff")
            if tally.format == "ljspeech":
                text = text.split("|")[-1]
            return Transcript(i, text, None)
        rec = decode_line(raw.removeprefix(b"\xef\xbb\xbf"))
    except UnicodeDecodeError:
        tally.skip(i, "invalid UTF-8")
        return None
    except ValueError as exc:
        tally.skip(i, f"invalid JSON: {exc}".splitlines()[0])
        return None
    if not isinstance(rec, dict):
        tally.skip(i, "not a JSON object")
        return None
    text = next((rec[k] for k in TEXT_KEYS if isinstance(rec.get(k), str)), None)
    if text is None:
        tally.skip(i, f"no text field ({', '.join(TEXT_KEYS)})")
        return None
    return Transcript(i, text, _duration(rec))
