"""Speech dataset rules (`trainproof data`): is this TTS/ASR corpus safe to train on —
audio integrity and consistency, durations, clipping and silence, byte-identical
clips, and transcripts (empty, misaligned, unnormalised, mixed scripts). Each rule
reports one finding with the count, the first offending entries and where they are."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from trainproof.model import Finding, Level, Location, Report, Skip, SkipKind
from trainproof.probes.audio import EMPTY, NOT_REGULAR, AudioProblem, AudioStats, Levels
from trainproof.probes.speech_dataset import SpeechDataset
from trainproof.probes.speech_manifest import Entry
from trainproof.probes.speech_text import normaliser, rewritten, scripts_of, what_needs_reading
from trainproof.rules.base import Example, Threshold, check, example_subject, rule, statement

G = "data"
SHOWN = 3  # offending entries named in an evidence line

# A clip in an Example lists only what differs from _CLIP, an ordinary clip; "missing" or
# "unreadable" replace its measurement, clips with equal "same_bytes" labels are identical
# files, and "declared_s" is the manifest's duration field.
_CLIP = {"sample_rate": 22050, "channels": 1, "seconds": 3.0, "text": "a short and ordinary sentence.",
         "peak": 0.5, "longest_silence_s": 0.2}


def _clips(*changes: Mapping[str, Any], n: int = 3) -> dict[str, Any]:
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

# --- the listing -------------------------------------------------------------------------

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
    fires=Example({**_clips(), "bad_lines": 1}),
    passes=Example(_clips()),
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
    fires=Example(_clips({"missing": True})),
    passes=Example(_clips()),
)

UNREADABLE = rule(
    id="TP-DATA-UNREADABLE-AUDIO", level=Level.WARN, group=G,
    title="Audio files cannot be decoded.",
    evidence="{n} of {total} files unreadable; e.g. {examples}",
    summary="A listed file exists but soundfile (libsndfile) cannot decode it, or it is not a "
    "regular file (a FIFO, a device).",
    why="A corrupt or mislabelled file crashes a worker or is skipped, depending on the loader.",
    fix="Re-export the files (e.g. `ffmpeg -i in -ar 22050 -ac 1 out.wav`) or drop them.",
    fires=Example(_clips({"unreadable": True})),
    passes=Example(_clips()),
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
    fires=Example(_clips({"unreadable": True}, {"unreadable": True})),
    passes=Example(_clips({"unreadable": True})),
)

TRUNCATED = rule(
    id="TP-DATA-TRUNCATED-AUDIO", level=Level.WARN, group=G,
    title="WAV files are shorter than their headers say.",
    evidence="{n} WAV files hold fewer bytes than their header declares; e.g. {examples}",
    summary="The RIFF data chunk claims more bytes than the file has: an interrupted copy or write.",
    why="Decoders clamp silently, so the clip is cut mid-word while its transcript is whole.",
    fix="Copy or export the files again from the source.",
    fires=Example(_clips({"wav_missing_bytes": 4096})),
    passes=Example(_clips()),
)

# --- consistency -------------------------------------------------------------------------

INCONSISTENT_SR = rule(
    id="TP-DATA-INCONSISTENT-SR", level=Level.FAIL, group=G,
    title="Files have different sample rates.",
    evidence="{n_values} sample rates ({counts}); {n} files differ from {common} Hz; e.g. {examples}",
    summary="Not every decodable file has the dataset's most common sample rate.",
    why="Feature extractors assume one rate: a 44.1 kHz clip read as 22.05 kHz plays at half "
    "speed, an octave down, and poisons the model's pitch.",
    fix="Resample every file to one rate (sox/ffmpeg/torchaudio) before training.",
    fires=Example(_clips({"sample_rate": 44100})),
    passes=Example(_clips()),
)

INCONSISTENT_CHANNELS = rule(
    id="TP-DATA-INCONSISTENT-CHANNELS", level=Level.FAIL, group=G,
    title="Files have different channel counts.",
    evidence="{n_values} channel counts ({counts}); {n} files differ from {common}; e.g. {examples}",
    summary="Mono and stereo (or more) files are mixed.",
    why="A stereo clip fed where mono is expected doubles the frame count or breaks batch shapes.",
    fix="Downmix every file to the same channel count.",
    fires=Example(_clips({"channels": 2})),
    passes=Example(_clips()),
)

# --- per clip ----------------------------------------------------------------------------

DURATION_LONG = rule(
    id="TP-DATA-DURATION-LONG", level=Level.WARN, group=G,
    title="Clips are too long.",
    evidence="{n} clips over {limit_max_s} s (longest {longest:.1f} s); e.g. {examples}",
    summary="A clip is longer than most TTS/ASR recipes accept.",
    why="Long clips dominate padded batches, run attention out of memory, and are usually "
    "unsegmented recordings whose alignment is poor.",
    fix="Segment long recordings on pauses, or filter them with the recipe's max_duration.",
    thresholds={"max_s": Threshold(25, "s", "Above common recipe caps (NeMo/Coqui max_duration "
                                   "around 20-30 s); LJSpeech's longest clip is about 10 s.")},
    fires=Example(_clips({"seconds": 30.0})),
    passes=Example(_clips()),
)

DURATION_SHORT = rule(
    id="TP-DATA-DURATION-SHORT", level=Level.WARN, group=G,
    title="Clips are too short.",
    evidence="{n} clips under {limit_min_s} s (shortest {shortest:.2f} s); e.g. {examples}",
    summary="A clip is too short to hold a spoken word.",
    why="Sub-half-second clips are usually cut-offs, clicks or empty takes; they teach the model "
    "to stop early and may be shorter than the transcript's minimum alignment length.",
    fix="Listen to the named clips; drop or re-cut them.",
    thresholds={"min_s": Threshold(0.5, "s", "Shorter than a single stressed syllable with its onset.")},
    fires=Example(_clips({"seconds": 0.2})),
    passes=Example(_clips()),
)

DURATION_MISMATCH = rule(
    id="TP-DATA-DURATION-MISMATCH", level=Level.WARN, group=G,
    title="Manifest durations do not match the audio.",
    evidence="{n} of {total} declared durations are off by more than {limit_max_diff_s} s "
    "(worst {worst:.2f} s); e.g. {examples}",
    summary="The manifest's `duration` field differs from the decoded length of its file.",
    why="Recipes filter and bucket by the declared duration (NeMo's max_duration, batch "
    "bucketing); a stale manifest, written before the audio was trimmed or re-encoded, "
    "lets over-long clips through and mis-sizes batches.",
    fix="Regenerate the manifest's durations from the audio files.",
    thresholds={"max_diff_s": Threshold(0.1, "s", "Well above encoder padding (Vorbis/Opus/MP3 "
                                        "priming is tens of milliseconds), well below a word.")},
    fires=Example(_clips({"declared_s": 5.0})),
    passes=Example(_clips({"declared_s": 3.02})),
)

CLIPPING = rule(
    id="TP-DATA-CLIPPING", level=Level.WARN, group=G,
    title="Clips reach full scale (clipping).",
    evidence="{n} clips peak at or above {limit_peak}; e.g. {examples}",
    summary="A clip's peak sample is at or near digital full scale.",
    why="Clipped waveforms carry harsh distortion the model learns to reproduce.",
    fix="Re-record or re-export at lower gain; peak-normalise to about -1 dBFS (0.89) or lower.",
    thresholds={"peak": Threshold(0.99, "full scale", "Within 0.1 dB of full scale: a peak this "
                                  "close is either clipped or normalised to the edge.")},
    fires=Example(_clips({"peak": 1.0})),
    passes=Example(_clips()),
    limits="A file peak-normalised to exactly full scale fires too; the evidence counts the "
    "samples at that level, so a single touching sample is told apart from sustained clipping.",
)

SILENCE = rule(
    id="TP-DATA-SILENCE", level=Level.WARN, group=G,
    title="Clips contain long silences.",
    evidence="{n} clips hold a silent run over {limit_max_s} s (longest {longest:.1f} s); e.g. {examples}",
    summary="A run of samples at or below the quiet level on every channel lasts too long.",
    why="Long pauses (or leading/trailing silence) misalign text and audio; TTS models learn "
    "to pause at random or fail to stop.",
    fix="Trim leading/trailing silence and split on long pauses (e.g. `sox ... silence`).",
    thresholds={"max_s": Threshold(2.0, "s", "Longer than a sentence pause in read speech."),
                "level": Threshold(0.005, "full scale", "About -46 dBFS: below room tone of a "
                                   "typical recording, above dither.")},
    fires=Example(_clips({"longest_silence_s": 2.5})),
    passes=Example(_clips()),
    limits="Digital silence is found; a noisy room tone above the level is not.",
)

DUPLICATES = rule(
    id="TP-DATA-DUPLICATES", level=Level.WARN, group=G,
    title="Audio files are byte-identical.",
    evidence="{groups} groups of identical files ({extra} extra copies); e.g. {examples}",
    summary="Two entries point at the same bytes (the same file listed twice, or copies).",
    why="Duplicates over-weight those clips and leak between train and validation splits.",
    fix="Keep one entry per clip.",
    fires=Example(_clips({"same_bytes": "a"}, {"same_bytes": "a"})),
    passes=Example(_clips()),
    limits="Byte-identical only: the same take re-encoded or resampled is not found.",
)

# --- transcripts -------------------------------------------------------------------------

EMPTY_TRANSCRIPT = rule(
    id="TP-DATA-EMPTY-TRANSCRIPT", level=Level.WARN, group=G,
    title="Transcripts are empty.",
    evidence="{n} of {total} transcripts are empty or whitespace; e.g. {examples}",
    summary="An entry has a transcript field (or sidecar file) with no text in it.",
    why="Audio paired with no text teaches a TTS model to babble and an ASR model to emit "
    "nothing for speech.",
    fix="Transcribe the clips or drop them.",
    fires=Example(_clips({"text": "  "})),
    passes=Example(_clips()),
)

CHAR_RATE = rule(
    id="TP-DATA-CHAR-RATE-OUTLIER", level=Level.WARN, group=G,
    title="Transcript length does not fit the audio length.",
    evidence="{n} clips speak far faster or slower than the median {median:.1f} chars/s "
    "(over {limit_ratio}x or under 1/{limit_ratio}); e.g. {examples}",
    summary="Characters per second of a clip are far from the dataset's median: a likely "
    "misaligned pair (wrong transcript, or a cut clip).",
    why="Misaligned pairs are the most damaging label noise in speech data; attention-based "
    "TTS fails to align on them.",
    fix="Listen to the named clips next to their transcripts; fix the pairing or drop them.",
    thresholds={"ratio": Threshold(3, "x median chars/s", "Read speech varies about 1.5x between "
                                   "speakers and styles; 3x is beyond natural variation."),
                "min_records": Threshold(10, "records", "A median of fewer clips is not a norm.")},
    fires=Example(_clips({"seconds": 12.0}, n=12)),  # 30 characters over 12 s: 2.5 chars/s against 10
    passes=Example(_clips(n=12)),
    limits="Characters are counted after stripping surrounding whitespace; scripts with dense "
    "characters (CJK) compare fine within one dataset but not across datasets.",
)

UNNORMALIZED = rule(
    id="TP-DATA-UNNORMALIZED", level=Level.WARN, group=G,
    title="Transcripts hold text a TTS model cannot read as written.",
    evidence="{n} of {total} transcripts need normalising ({kinds}); e.g. {examples}",
    summary="ttsproof's normaliser rewrites words of the transcript: digits, dates, clock times, acronyms.",
    why="A model trained on '3/4/2021' never hears how it is spoken; it learns to mumble or skip "
    "such tokens, and the same text reads differently at inference.",
    fix="Normalise transcripts before training (the same normaliser at inference), e.g. "
    "ttsproof.normalize_text or the recipe's text frontend.",
    fires=Example(_clips({"text": "we met at 10:30 on 3/4/2021."})),
    passes=Example(_clips()),
    limits="Roman numerals, currency symbols and abbreviations such as 'Mr.' are not the "
    "normaliser's business and are not reported; an ASR corpus that keeps digits on purpose "
    "can ignore this rule.",
)

MIXED_SCRIPTS = rule(
    id="TP-DATA-MIXED-SCRIPTS", level=Level.WARN, group=G,
    title="Transcripts mix writing systems.",
    evidence="{n} transcripts mix scripts; e.g. {examples}",
    summary="A transcript holds letters of more than one script (e.g. Latin with Cyrillic); kana "
    "and kanji count as one.",
    why="Look-alike letters from another script (Cyrillic 'а' in English) are separate symbols to "
    "the model: they split the vocabulary and are never pronounced right.",
    fix="Replace homoglyphs; transliterate or drop foreign-script words.",
    fires=Example(_clips({"text": "hеllo"})),  # the e is Cyrillic
    passes=Example(_clips()),
    limits="Code-switched corpora mix scripts by design.",
)


# --- judges ------------------------------------------------------------------------------

def _examples(ds: SpeechDataset, items: Iterable[tuple[int, str]]) -> str:
    shown = [f"{ds.where(i)}{': ' + note if note else ''}" for i, note in list(items)[:SHOWN]]
    return "; ".join(shown)


def _location(ds: SpeechDataset, i: int) -> Location:
    e = ds.entries[i]
    return Location(ds.path, line=e.line) if e.line is not None else Location(e.audio)


def _per_entry(r, ds: SpeechDataset, hits: list[tuple[int, str]], **values: Any) -> list[Finding]:
    """One finding per rule: the count, the first entries, located at the first one."""
    if not hits:
        return []
    return [r.finding(_location(ds, hits[0][0]), n=len(hits),
                      examples=_examples(ds, hits), **values)]


def _needs_audio(ds: SpeechDataset) -> Skip | None:
    return None if ds.stats() else Skip(SkipKind.NO_DATA, "no audio file could be decoded")


def _needs_text(ds: SpeechDataset) -> Skip | None:
    return None if ds.transcripts() else Skip(SkipKind.NO_DATA, "the dataset gives no transcripts")


@check("manifest", MALFORMED)
def malformed_records(ds: SpeechDataset) -> list[Finding] | Skip:
    if ds.format in ("audio-dir", "audio-file"):
        return Skip(SkipKind.NO_DATA, "no manifest: the audio files themselves were given")
    if not ds.bad_lines:
        return []
    line, reason = ds.bad_examples[0]
    return [MALFORMED.finding(Location(ds.path, line=line), n=ds.bad_lines, lines=ds.lines,
                              line=line, reason=reason)]


def _broken(ds: SpeechDataset) -> list[tuple[int, str]]:
    """Listed files that exist but could not be read: undecodable, empty, not regular."""
    return [(i, a.detail) for i, a in enumerate(ds.audio) if isinstance(a, AudioProblem) and not a.missing]


@check("files", MISSING_AUDIO, UNREADABLE, MOSTLY_UNREADABLE, TRUNCATED)
def file_integrity(ds: SpeechDataset) -> list[Finding]:
    missing = [(i, "") for i, a in enumerate(ds.audio) if isinstance(a, AudioProblem) and a.missing]
    broken = _broken(ds)
    short = [(i, f"{a.missing_bytes} bytes short") for i, a in ds.stats() if a.missing_bytes]
    total = len(ds.entries)
    share = len(broken) / total if total else 0.0
    unreadable = (_per_entry(MOSTLY_UNREADABLE, ds, broken, total=total, share=share,
                             decoded=len(ds.stats()))
                  if share > MOSTLY_UNREADABLE.t("max_share") else
                  _per_entry(UNREADABLE, ds, broken, total=total))
    return [*_per_entry(MISSING_AUDIO, ds, missing, total=total), *unreadable,
            *_per_entry(TRUNCATED, ds, short)]


def _uniform(r, ds: SpeechDataset, value: Callable[[AudioStats], int], unit: str) -> list[Finding] | Skip:
    skip = _needs_audio(ds)
    if skip:
        return skip
    counts = Counter(value(a) for _, a in ds.stats())
    if len(counts) < 2:
        return []
    common = counts.most_common(1)[0][0]
    odd = [(i, f"{value(a)}{unit}") for i, a in ds.stats() if value(a) != common]
    shown = ", ".join(f"{v}{unit}: {c}" for v, c in counts.most_common())
    return _per_entry(r, ds, odd, n_values=len(counts), counts=shown, common=common)


@check("sample-rate", INCONSISTENT_SR)
def mixed_sample_rates(ds: SpeechDataset) -> list[Finding] | Skip:
    return _uniform(INCONSISTENT_SR, ds, lambda a: a.samplerate, " Hz")


@check("channels", INCONSISTENT_CHANNELS)
def mixed_channels(ds: SpeechDataset) -> list[Finding] | Skip:
    return _uniform(INCONSISTENT_CHANNELS, ds, lambda a: a.channels, " ch")


@check("duration", DURATION_LONG, DURATION_SHORT)
def duration_bounds(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = _needs_audio(ds)
    if skip:
        return skip
    long_ = [(i, f"{a.duration:.1f} s") for i, a in ds.stats() if a.duration > DURATION_LONG.t("max_s")]
    short = [(i, f"{a.duration:.2f} s") for i, a in ds.stats() if a.duration < DURATION_SHORT.t("min_s")]
    long_.sort(key=lambda h: -ds.audio[h[0]].duration)
    short.sort(key=lambda h: ds.audio[h[0]].duration)
    out = []
    if long_:
        out += _per_entry(DURATION_LONG, ds, long_, longest=ds.audio[long_[0][0]].duration)
    if short:
        out += _per_entry(DURATION_SHORT, ds, short, shortest=ds.audio[short[0][0]].duration)
    return out


@check("declared-duration", DURATION_MISMATCH)
def declared_durations(ds: SpeechDataset) -> list[Finding] | Skip:
    declared = [(i, ds.entries[i].duration, a.duration) for i, a in ds.stats()
                if ds.entries[i].duration is not None]
    if not declared:
        return _needs_audio(ds) or Skip(SkipKind.NO_DATA, "no entry declares a duration")
    limit = DURATION_MISMATCH.t("max_diff_s")
    hits = sorted(((i, f"declared {d:g} s, decodes to {m:.2f} s") for i, d, m in declared if abs(d - m) > limit),
                  key=lambda h: -abs(ds.entries[h[0]].duration - ds.audio[h[0]].duration))
    if not hits:
        return []
    worst = abs(ds.entries[hits[0][0]].duration - ds.audio[hits[0][0]].duration)
    return _per_entry(DURATION_MISMATCH, ds, hits, total=len(declared), worst=worst)


@check("clipping", CLIPPING)
def clipping(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = _needs_audio(ds)
    if skip:
        return skip
    hits = [(i, f"peak {a.peak:.3f}, {a.clipped} samples") for i, a in ds.stats()
            if a.peak >= CLIPPING.t("peak")]
    hits.sort(key=lambda h: -ds.audio[h[0]].clipped)
    return _per_entry(CLIPPING, ds, hits)


@check("silence", SILENCE)
def long_silences(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = _needs_audio(ds)
    if skip:
        return skip
    hits = [(i, f"{a.longest_quiet_s:.1f} s at {a.quiet_start_s:.1f} s")
            for i, a in ds.stats() if a.longest_quiet_s > SILENCE.t("max_s")]
    if not hits:
        return []
    hits.sort(key=lambda h: -ds.audio[h[0]].longest_quiet_s)
    return _per_entry(SILENCE, ds, hits, longest=ds.audio[hits[0][0]].longest_quiet_s)


@check("duplicates", DUPLICATES)
def duplicates(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = _needs_audio(ds)
    if skip:
        return skip
    if not ds.duplicates:
        return []
    hits = [(g[0], "same bytes as " + ", ".join(ds.where(j) for j in g[1:SHOWN + 1])) for g in ds.duplicates]
    return _per_entry(DUPLICATES, ds, hits, groups=len(ds.duplicates),
                      extra=sum(len(g) - 1 for g in ds.duplicates))


def _snippet(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[:width - 3] + "...")


@check("empty-transcript", EMPTY_TRANSCRIPT)
def empty_transcripts(ds: SpeechDataset) -> list[Finding] | Skip:
    texts = ds.transcripts()
    if not texts:
        return _needs_text(ds)
    hits = [(i, "") for i, t in texts if not t.strip()]
    return _per_entry(EMPTY_TRANSCRIPT, ds, hits, total=len(texts))


@check("char-rate", CHAR_RATE)
def char_rate_outliers(ds: SpeechDataset) -> list[Finding] | Skip:
    if not ds.transcripts():
        return _needs_text(ds)
    pairs = [(i, len(e.text.strip()) / a.duration) for i, a in ds.stats()
             if (e := ds.entries[i]).text and e.text.strip() and a.duration > 0]
    need = int(CHAR_RATE.t("min_records"))
    if len(pairs) < need:
        return Skip(SkipKind.TOO_FEW, f"{len(pairs)} clips with both text and audio, needs {need}")
    median = float(np.median([r for _, r in pairs]))
    ratio = CHAR_RATE.t("ratio")
    hits = [(i, f"{r:.1f} chars/s") for i, r in pairs if r > ratio * median or r < median / ratio]
    return _per_entry(CHAR_RATE, ds, hits, median=median)


@check("normalisation", UNNORMALIZED)
def unnormalised_text(ds: SpeechDataset) -> list[Finding] | Skip:
    texts = [(i, t) for i, t in ds.transcripts() if t.strip()]
    if not texts:
        return _needs_text(ds) or Skip(SkipKind.NO_DATA, "every transcript is empty")
    normalise = normaliser()
    if normalise is None:
        return Skip(SkipKind.FAILED, "ttsproof is not installed (pip install ttsproof)")
    hits, kinds = [], Counter()
    for i, t in texts:
        spoken = rewritten(t, normalise)
        if spoken is not None:
            kind = what_needs_reading(t)
            kinds.update(kind.split(", "))
            hits.append((i, f"{_snippet(t)} reads {_snippet(spoken)}"))
    shown = ", ".join(f"{k} {c}" for k, c in kinds.most_common())
    return _per_entry(UNNORMALIZED, ds, hits, total=len(texts), kinds=shown)


@check("scripts", MIXED_SCRIPTS)
def mixed_scripts(ds: SpeechDataset) -> list[Finding] | Skip:
    if not ds.transcripts():
        return _needs_text(ds)
    hits = []
    for i, t in ds.transcripts():
        scripts = scripts_of(t)
        if len(scripts) > 1:
            hits.append((i, f"{'+'.join(scripts)} in {_snippet(t, 40)}"))
    return _per_entry(MIXED_SCRIPTS, ds, hits)


# --- the report --------------------------------------------------------------------------

def levels() -> Levels:
    """The sample levels the audio probe counts against, from the declarations."""
    return Levels(clip=CLIPPING.t("peak"), quiet=SILENCE.t("level"))


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
    broken = _broken(ds)
    if ds.stats() or ds.bad_lines or len(broken) != len(ds.entries):
        return None
    label = {NOT_REGULAR: "not a regular file", EMPTY: "empty"}
    kinds = Counter(label.get(d, "undecodable") for _, d in broken)
    counts = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    detail = (f"none of the {len(broken)} listed audio files could be read ({counts}); "
              f"e.g. {_examples(ds, broken)}")
    return NO_DATA.finding(_location(ds, broken[0][0]), detail=detail)


def _pass_values(ds: SpeechDataset) -> dict[str, Any]:
    seconds = sum(a.duration for _, a in ds.stats())
    return dict(n=len(ds.entries), seconds=seconds, hours=seconds / 3600)


statement(G, PASS, lambda ds: Location(ds.path), nothing_checked=NO_DATA, values=_pass_values,
          precheck=_unjudgeable)


def invalid_input(path: str, detail: str) -> Report:
    return Report(subject=path, format="unknown", kind="dataset",
                  findings=(INVALID_INPUT.finding(Location(path), detail=detail),))


def _example_audio(clip: Mapping[str, Any]) -> AudioStats | AudioProblem:
    if clip.get("missing"):
        return AudioProblem(True, "no such file")
    if clip.get("unreadable"):
        return AudioProblem(False, "Format not recognised.")
    sr = clip["sample_rate"]
    return AudioStats(samplerate=sr, channels=clip["channels"], frames=round(clip["seconds"] * sr),
                      peak=clip["peak"], clipped=int(clip["peak"] >= CLIPPING.t("peak")),
                      longest_quiet=round(clip["longest_silence_s"] * sr), quiet_start=0, size=1000,
                      container="WAV", missing_bytes=clip.get("wav_missing_bytes", 0))


@example_subject(G)
def _run_example(data: Mapping[str, Any]) -> tuple[str, SpeechDataset]:
    clips = [{**_CLIP, **c} for c in data["clips"]]
    entries = [Entry(f"clip{i}.wav", c["text"], c.get("declared_s"), i + 1) for i, c in enumerate(clips)]
    labels: dict[str, list[int]] = {}
    for i, c in enumerate(clips):
        labels.setdefault(c.get("same_bytes", f"clip{i}"), []).append(i)
    bad = data.get("bad_lines", 0)
    ds = SpeechDataset("manifest.jsonl", "jsonl-manifest", entries, [_example_audio(c) for c in clips],
                       [g for g in labels.values() if len(g) > 1], bad,
                       [(len(clips) + 1, "not JSON")] * min(bad, 1), len(clips) + bad)
    return G, ds
