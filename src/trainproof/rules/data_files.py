"""Speech dataset rules on the listing and the files it names: manifest lines that are
not records, listed audio that is missing, cannot be decoded or is cut short."""

from __future__ import annotations

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.audio import AudioProblem
from trainproof.probes.speech_dataset import SpeechDataset
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.data import G, broken_files, clips, per_entry

MALFORMED = rule(
    id="TP-DATA-MALFORMED-RECORD", level=Level.FAIL, group=G,
    title="Manifest lines cannot be read as records.",
    evidence="{n} of {lines} lines unreadable; first: line {line}: {reason}",
    summary="A manifest line is not JSON, not UTF-8, lacks an audio path, or is over the line cap; "
    "an LJSpeech line lacks id|text.",
    why="Data loaders stop at the first line they cannot parse (NeMo, HF datasets' json "
    "builder), hours into a job, or drop it silently.",
    fix="Fix or remove the named lines; write manifests with json.dumps(..., ensure_ascii=False) "
    "one object per line.",
    thresholds={"max_line_bytes": Threshold(1 << 20, "bytes", "A line carries one path and one "
                                            "transcript; a mebibyte is a hundred times the longest real one, "
                                            "and the cap keeps memory bounded on a binary file.")},
    fires=Example({**clips(), "bad_lines": 1}),
    passes=Example(clips()),
)

MISSING_AUDIO = rule(
    id="TP-DATA-MISSING-AUDIO", level=Level.FAIL, group=G,
    title="Listed audio files do not exist.",
    evidence="{n} of {total} listed files are missing; e.g. {examples}",
    summary="The manifest or metadata.csv names an audio file that is not there.",
    why="The loader raises on the first missing file, or the sampler skips it and the "
    "epoch silently shrinks.",
    fix="Relative paths resolve against the manifest's directory (LJSpeech: wavs/ID.wav beside "
    "metadata.csv); regenerate the manifest or restore the files.",
    fires=Example(clips({"missing": True})),
    passes=Example(clips()),
)

UNREADABLE = rule(
    id="TP-DATA-UNREADABLE-AUDIO", level=Level.WARN, group=G,
    title="Audio files cannot be decoded.",
    evidence="{n} of {total} files unreadable; e.g. {examples}",
    summary="A listed file exists but soundfile (libsndfile) cannot decode it, or it is not a "
    "regular file (a FIFO, a device).",
    why="A corrupt or mislabelled file crashes a worker or is skipped, depending on the loader.",
    fix="Re-export the files (e.g. `ffmpeg -i in -ar 22050 -ac 1 out.wav`) or drop them.",
    fires=Example(clips({"unreadable": True})),
    passes=Example(clips()),
    limits="Formats libsndfile lacks (AAC, M4A) are reported here too.",
)

MOSTLY_UNREADABLE = rule(
    id="TP-DATA-MOSTLY-UNREADABLE", level=Level.FAIL, group=G,
    title="Most of the dataset's audio cannot be decoded.",
    evidence="{n} of {total} files unreadable ({share:.0%}, over {limit_max_share:.0%}); "
    "{decoded} decoded; e.g. {examples}",
    summary="More than the declared share of the listed files exist but cannot be decoded or are "
    "not regular files; replaces TP-DATA-UNREADABLE-AUDIO's WARN. When none decodes and none is "
    "missing, nothing was checked: TP-DATA-NO-DATA, exit 2.",
    why="The set that trains is then a minority remnant of the set that was listed: loaders "
    "crash on the rest or drop it silently, and the checks that ran saw a sample of nothing in "
    "particular.",
    fix="Re-export the files from the source (`ffmpeg -i in -ar 22050 -ac 1 out.wav`), or "
    "point at the right directory or manifest.",
    thresholds={"max_share": Threshold(0.5, "share of listed files", "Past half, what decodes is "
                                       "no longer the dataset with a few bad files, it is a few good "
                                       "files in a broken dataset.")},
    fires=Example(clips({"unreadable": True}, {"unreadable": True})),
    passes=Example(clips({"unreadable": True})),
)

TRUNCATED = rule(
    id="TP-DATA-TRUNCATED-AUDIO", level=Level.WARN, group=G,
    title="WAV files are shorter than their headers say.",
    evidence="{n} WAV files hold fewer bytes than their header declares; e.g. {examples}",
    summary="The RIFF data chunk claims more bytes than the file has: an interrupted copy or write.",
    why="Decoders clamp silently, so the clip is cut mid-word while its transcript is whole.",
    fix="Copy or export the files again from the source.",
    fires=Example(clips({"wav_missing_bytes": 4096})),
    passes=Example(clips()),
)


@check("manifest", MALFORMED)
def malformed_records(ds: SpeechDataset) -> list[Finding] | Skip:
    if ds.format in ("audio-dir", "audio-file"):
        return Skip(SkipKind.NO_DATA, "no manifest: the audio files themselves were given")
    if not ds.bad_lines:
        return []
    line, reason = ds.bad_examples[0]
    return [MALFORMED.finding(Location(ds.path, line=line), n=ds.bad_lines, lines=ds.lines,
                              line=line, reason=reason)]


@check("files", MISSING_AUDIO, UNREADABLE, MOSTLY_UNREADABLE, TRUNCATED)
def file_integrity(ds: SpeechDataset) -> list[Finding]:
    missing = [(i, "") for i, a in enumerate(ds.audio) if isinstance(a, AudioProblem) and a.missing]
    broken = broken_files(ds)
    short = [(i, f"{a.missing_bytes} bytes short") for i, a in ds.stats() if a.missing_bytes]
    total = len(ds.entries)
    share = len(broken) / total if total else 0.0
    unreadable = (per_entry(MOSTLY_UNREADABLE, ds, broken, total=total, share=share,
                            decoded=len(ds.stats()))
                  if share > MOSTLY_UNREADABLE.t("max_share") else
                  per_entry(UNREADABLE, ds, broken, total=total))
    return [*per_entry(MISSING_AUDIO, ds, missing, total=total), *unreadable,
            *per_entry(TRUNCATED, ds, short)]
