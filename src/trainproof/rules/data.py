"""Speech dataset rules (`trainproof data`): is this TTS/ASR corpus safe to train on —
audio integrity and consistency, durations, clipping and silence, byte-identical
clips, and transcripts (empty, misaligned, unnormalised, mixed scripts). Each rule
reports one finding with the count, the first offending entries and where they are.

This module owns the report: the group's name, what makes a dataset unjudgeable
(TP-DATA-INVALID-INPUT, TP-DATA-NO-DATA), the PASS statement, and how every data finding
names the entries it is about. The rules are in data_files.py (the listing and the files
it names), data_audio.py (sample rate, channels, durations, levels, identical clips) and
data_text.py (transcripts); data_examples.py runs their examples."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from trainproof.model import Finding, Level, Location, Report, Skip, SkipKind
from trainproof.probes.audio import EMPTY, NOT_REGULAR, AudioProblem
from trainproof.probes.speech_dataset import SpeechDataset
from trainproof.rules.base import Rule, rule, statement

G = "data"
SHOWN = 3  # offending entries named in an evidence line

# A clip in an Example lists only what differs from CLIP, an ordinary clip; "missing" or
# "unreadable" replace its measurement, clips with equal "same_bytes" labels are identical
# files, and "declared_s" is the manifest's duration field.
CLIP = {"sample_rate": 22050, "channels": 1, "seconds": 3.0, "text": "a short and ordinary sentence.",
        "peak": 0.5, "longest_silence_s": 0.2}


def clips(*changes: Mapping[str, Any], n: int = 3) -> dict[str, Any]:
    """An Example's data: the given clips, then ordinary ones up to n."""
    return {"clips": [dict(c) for c in changes] + [{} for _ in range(n - len(changes))]}


# --- could not judge, and the PASS statement -------------------------------------------

INVALID_INPUT = rule(
    id="TP-DATA-INVALID-INPUT", level=Level.NOT_CHECKED, group=G,
    title="The path is not a speech dataset trainproof can read.",
    evidence="{detail}",
    summary="The path is missing, not a regular file or directory (a FIFO, a device), or a file "
    "in which no line is a manifest record; exit 2.",
    why="Nothing about the dataset was measured: neither PASS nor FAIL would be true.",
    fix="Point at a directory of audio, a JSONL manifest (one object per line with "
    "audio_filepath/audio_path/audio/path and text/transcript) or an LJSpeech metadata.csv.",
)

NO_DATA = rule(
    id="TP-DATA-NO-DATA", level=Level.NOT_CHECKED, group=G,
    title="The dataset holds nothing to check.",
    evidence="{detail}",
    summary="No audio file or manifest record was found, no listed audio file could be read "
    "(undecodable, empty, a FIFO or a device) while none is missing, or every check was "
    "skipped; exit 2.",
    why="An empty dataset is not a clean one, and a dataset none of whose audio could be "
    "read was not checked: a PASS or a WARN about it would claim what was never measured.",
    fix="Check the path; a directory is searched recursively for .wav, .flac, .ogg, .oga, .opus, .mp3.",
)

PASS = rule(
    id="TP-DATA-PASS", level=Level.PASS, group=G,
    title="No dataset problems detected.",
    evidence="{n} entries, {seconds:.1f} s ({hours:.2f} h) of audio checked. Ran: {ran}. Skipped: {skipped}.",
    summary="The PASS statement: the checks that ran, and every skipped check with its reason.",
    why="A PASS that does not say what it covered invites reading it as covering everything.",
    fix="Nothing to fix. Skipped checks are not passed checks.",
    limits="Nothing here listens: a clip of the wrong speaker, or a transcript of the wrong "
    "sentence at a plausible speaking rate, passes.",
)


# --- how findings name entries ---------------------------------------------------------

def named_entries(ds: SpeechDataset, items: Iterable[tuple[int, str]]) -> str:
    """The first SHOWN entries as an evidence line names them, each with its note."""
    shown = [f"{ds.where(i)}{': ' + note if note else ''}" for i, note in list(items)[:SHOWN]]
    return "; ".join(shown)


def entry_location(ds: SpeechDataset, i: int) -> Location:
    """Where entry i is: its manifest line, or its audio file when there is no manifest."""
    e = ds.entries[i]
    return Location(ds.path, line=e.line) if e.line is not None else Location(e.audio)


def per_entry(r: Rule, ds: SpeechDataset, hits: list[tuple[int, str]], **values: Any) -> list[Finding]:
    """One finding per rule: the count, the first entries, located at the first one."""
    if not hits:
        return []
    return [r.finding(entry_location(ds, hits[0][0]), n=len(hits),
                      examples=named_entries(ds, hits), **values)]


def needs_audio(ds: SpeechDataset) -> Skip | None:
    """The skip of a check that judges decoded audio when none could be decoded."""
    return None if ds.stats() else Skip(SkipKind.NO_DATA, "no audio file could be decoded")


def needs_text(ds: SpeechDataset) -> Skip | None:
    """The skip of a check that judges transcripts when the dataset gives none."""
    return None if ds.transcripts() else Skip(SkipKind.NO_DATA, "the dataset gives no transcripts")


def broken_files(ds: SpeechDataset) -> list[tuple[int, str]]:
    """Listed files that exist but could not be read: undecodable, empty, not regular."""
    return [(i, a.detail) for i, a in enumerate(ds.audio) if isinstance(a, AudioProblem) and not a.missing]


# --- the report --------------------------------------------------------------------------

def _unjudgeable(ds: SpeechDataset) -> Finding | None:
    """No entry at all (a listing in which no line is a record, or nothing found), or
    entries none of whose audio could be read while nothing is missing or malformed:
    then the only thing learned is that nothing could be read."""
    if ds.entries:
        return _nothing_read(ds)
    if ds.bad_lines:
        line, reason = ds.bad_examples[0]
        detail = f"none of {ds.lines} lines is a record (line {line}: {reason})"
        return INVALID_INPUT.finding(Location(ds.path, line=line), detail=detail)
    what = "no audio files found" if ds.format == "audio-dir" else "no records"
    return NO_DATA.finding(Location(ds.path), detail=f"{what} in {ds.path}")


def _nothing_read(ds: SpeechDataset) -> Finding | None:
    broken = broken_files(ds)
    if ds.stats() or ds.bad_lines or len(broken) != len(ds.entries):
        return None
    label = {NOT_REGULAR: "not a regular file", EMPTY: "empty"}
    kinds = Counter(label.get(d, "undecodable") for _, d in broken)
    counts = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    detail = (f"none of the {len(broken)} listed audio files could be read ({counts}); "
              f"e.g. {named_entries(ds, broken)}")
    return NO_DATA.finding(entry_location(ds, broken[0][0]), detail=detail)


def _pass_values(ds: SpeechDataset) -> dict[str, Any]:
    seconds = sum(a.duration for _, a in ds.stats())
    return dict(n=len(ds.entries), seconds=seconds, hours=seconds / 3600)


statement(G, PASS, lambda ds: Location(ds.path), nothing_checked=NO_DATA, values=_pass_values,
          precheck=_unjudgeable)


def invalid_input(path: str, detail: str) -> Report:
    return Report(subject=path, format="unknown", kind="dataset",
                  findings=(INVALID_INPUT.finding(Location(path), detail=detail),))
