"""A speech dataset measured: what it lists, what each listed audio file holds, and
which files are byte-identical. The subject the `data` rules judge."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from trainproof.probes.audio import AudioProblem, AudioStats, Levels, identical_groups, measure_many
from trainproof.probes.speech_manifest import Entry, Listing


@dataclass
class SpeechDataset:
    path: str
    format: str
    entries: list[Entry]
    audio: list[AudioStats | AudioProblem]  # one per entry, same order
    duplicates: list[list[int]] = field(default_factory=list)  # groups of entry indices
    bad_lines: int = 0
    bad_examples: list[tuple[int, str]] = field(default_factory=list)
    lines: int = 0
    notes: list[str] = field(default_factory=list)

    @cached_property
    def _decoded(self) -> list[tuple[int, AudioStats]]:
        return [(i, a) for i, a in enumerate(self.audio) if isinstance(a, AudioStats)]

    @cached_property
    def _texts(self) -> list[tuple[int, str]]:
        return [(i, e.text) for i, e in enumerate(self.entries) if e.text is not None]

    def stats(self) -> list[tuple[int, AudioStats]]:
        """(entry index, measurement) for every file that decoded."""
        return self._decoded

    def transcripts(self) -> list[tuple[int, str]]:
        """(entry index, text) for every entry that has a transcript, empty or not."""
        return self._texts

    def where(self, i: int) -> str:
        """How a user finds entry i: its manifest line and file, or its path in a directory."""
        e = self.entries[i]
        shown = _relative(e.audio, self.path)
        return f"line {e.line} ({shown})" if e.line is not None else shown


def _relative(path: str, root: str) -> str:
    base = root if os.path.isdir(root) else os.path.dirname(root) or "."
    rel = os.path.relpath(path, base)
    return path if rel.startswith("..") else rel


def measure_dataset(listing: Listing, levels: Levels, workers: int = 0,
                    progress: Callable[[int, int], None] | None = None) -> SpeechDataset:
    audio = measure_many([e.audio for e in listing.entries], levels, workers, progress=progress)
    sized = [(i, listing.entries[i].audio, a.size) for i, a in enumerate(audio) if isinstance(a, AudioStats)]
    return SpeechDataset(listing.path, listing.format, listing.entries, audio,
                         identical_groups(sized, workers), listing.bad_lines,
                         listing.bad_examples, listing.lines, listing.notes)
