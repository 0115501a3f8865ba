"""Measures how a tokenizer handles a set of transcripts, streaming them in batches.

- Unknown tokens are counted by id (the tokenizer's unk id), never by looking for
  the string `<unk>`: SentencePiece returns an unknown span as its original text.
- Coverage is the share of non-space characters that land in known tokens; the
  characters inside unknown tokens are tallied so the report can name them.
- Byte-fallback tokens (`<0x41>`) are counted separately: representable, but
  spelled byte by byte.
- Fertility is tokens per whitespace-separated word.
- Tokens per second of audio are summed over timed lines only.
- Number and date spans (`2023-05-12`, `3.5`, `10:30`) are looked at in context:
  a span is suspicious when its pieces include an unknown or byte token, or when
  it takes more pieces than it has characters."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from trainproof.probes.tokenizer_load import Piece, Tokenizer
from trainproof.probes.tokenizer_transcripts import Transcript, TranscriptTally, read_transcripts

NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
BATCH = 512
KEEP = 5


@dataclass
class TokenizerMeasurement:
    tokenizer: str
    kind: str
    transcripts: str
    read: TranscriptTally
    lines: int = 0  # transcripts tokenised
    tokens: int = 0
    unk_tokens: int = 0
    byte_tokens: int = 0
    chars: int = 0  # non-space characters
    unk_chars: int = 0
    words: int = 0
    timed_lines: int = 0
    timed_tokens: int = 0
    seconds: float = 0.0
    unknown_chars: Counter = field(default_factory=Counter)
    unk_lines: list[int] = field(default_factory=list)
    worst_tps: list[tuple[float, int]] = field(default_factory=list)  # (tokens/s, line)
    number_spans: int = 0
    suspicious_spans: int = 0
    suspicious_examples: list[str] = field(default_factory=list)
    unk_id: int | None = None

    @property
    def oov_rate(self) -> float:
        return self.unk_tokens / self.tokens if self.tokens else 0.0

    @property
    def coverage(self) -> float:
        return 1.0 - self.unk_chars / self.chars if self.chars else 1.0

    @property
    def byte_share(self) -> float:
        return self.byte_tokens / self.tokens if self.tokens else 0.0

    @property
    def fertility(self) -> float:
        return self.tokens / self.words if self.words else 0.0

    @property
    def tps(self) -> float | None:
        return self.timed_tokens / self.seconds if self.seconds > 0 else None


def _batched(items: Iterable[Transcript], n: int) -> Iterable[list[Transcript]]:
    batch: list[Transcript] = []
    for it in items:
        batch.append(it)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch


def _spans(m: TokenizerMeasurement, tok: Tokenizer, text: str, pieces: list[Piece]) -> None:
    for match in NUMBER.finditer(text):
        a, b = match.span()
        inside = [p for p in pieces if p.start < b and p.end > a]
        m.number_spans += 1
        odd = any(p.id == m.unk_id or tok.is_byte(p.id) for p in inside)
        if odd or len(inside) > b - a:
            m.suspicious_spans += 1
            if len(m.suspicious_examples) < KEEP:
                m.suspicious_examples.append(f"{match.group()!r} -> {len(inside)} pieces"
                                             + (" incl. unknown/byte" if odd else ""))


def _line(m: TokenizerMeasurement, tok: Tokenizer, t: Transcript, pieces: list[Piece]) -> None:
    n = len(pieces)
    m.lines += 1
    m.tokens += n
    m.words += len(t.text.split())
    m.chars += sum(1 for c in t.text if not c.isspace())
    unk = [p for p in pieces if p.id == m.unk_id]
    if unk:
        m.unk_tokens += len(unk)
        if len(m.unk_lines) < KEEP:
            m.unk_lines.append(t.line)
        for p in unk:
            span = [c for c in t.text[p.start:p.end] if not c.isspace()]
            m.unk_chars += len(span)
            if len(m.unknown_chars) < 1000:
                m.unknown_chars.update(span)
    m.byte_tokens += sum(1 for p in pieces if tok.is_byte(p.id))
    if t.seconds is not None and t.seconds > 0:
        m.timed_lines += 1
        m.timed_tokens += n
        m.seconds += t.seconds
        m.worst_tps.append((n / t.seconds, t.line))
        if len(m.worst_tps) > 4 * KEEP:
            m.worst_tps = sorted(m.worst_tps, reverse=True)[:KEEP]
    _spans(m, tok, t.text, pieces)


def measure_tokenizer(tok: Tokenizer, transcripts: Path, max_line: int) -> TokenizerMeasurement:
    """Tokenize every transcript line; lines over `max_line` bytes are skipped and counted."""
    tally = TranscriptTally()
    m = TokenizerMeasurement(tokenizer=tok.path, kind=tok.kind, transcripts=str(transcripts), read=tally,
                             unk_id=tok.unk_id)
    for batch in _batched(read_transcripts(transcripts, tally, max_line), BATCH):
        for t, pieces in zip(batch, tok.pieces_batch([t.text for t in batch]), strict=True):
            _line(m, tok, t, pieces)
    m.worst_tps = sorted(m.worst_tps, reverse=True)[:KEEP]
    return m
