"""Speech dataset rules on the decoded audio: one sample rate and channel count across
the dataset, clip durations (and the manifest's declared ones), clipping, long silences
and byte-identical clips; and the sample levels the audio probe counts against."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from trainproof.model import Finding, Level, Skip, SkipKind
from trainproof.probes.audio import AudioStats, Levels
from trainproof.probes.speech_dataset import SpeechDataset
from trainproof.rules import data_files  # noqa: F401  (registered first: keeps the checks' order)
from trainproof.rules.base import Example, Rule, Threshold, check, rule
from trainproof.rules.data import SHOWN, G, clips, needs_audio, per_entry

# --- consistency -------------------------------------------------------------------------

INCONSISTENT_SR = rule(
    id="TP-DATA-INCONSISTENT-SR", level=Level.FAIL, group=G,
    title="Files have different sample rates.",
    evidence="{n_values} sample rates ({counts}); {n} files differ from {common} Hz; e.g. {examples}",
    summary="Not every decodable file has the dataset's most common sample rate.",
    why="Feature extractors assume one rate: a 44.1 kHz clip read as 22.05 kHz plays at half "
    "speed, an octave down, and poisons the model's pitch.",
    fix="Resample every file to one rate (sox/ffmpeg/torchaudio) before training.",
    fires=Example(clips({"sample_rate": 44100})),
    passes=Example(clips()),
)

INCONSISTENT_CHANNELS = rule(
    id="TP-DATA-INCONSISTENT-CHANNELS", level=Level.FAIL, group=G,
    title="Files have different channel counts.",
    evidence="{n_values} channel counts ({counts}); {n} files differ from {common}; e.g. {examples}",
    summary="Mono and stereo (or more) files are mixed.",
    why="A stereo clip fed where mono is expected doubles the frame count or breaks batch shapes.",
    fix="Downmix every file to the same channel count.",
    fires=Example(clips({"channels": 2})),
    passes=Example(clips()),
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
    fires=Example(clips({"seconds": 30.0})),
    passes=Example(clips()),
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
    fires=Example(clips({"seconds": 0.2})),
    passes=Example(clips()),
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
    fires=Example(clips({"declared_s": 5.0})),
    passes=Example(clips({"declared_s": 3.02})),
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
    fires=Example(clips({"peak": 1.0})),
    passes=Example(clips()),
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
    fires=Example(clips({"longest_silence_s": 2.5})),
    passes=Example(clips()),
    limits="Digital silence is found; a noisy room tone above the level is not.",
)

DUPLICATES = rule(
    id="TP-DATA-DUPLICATES", level=Level.WARN, group=G,
    title="Audio files are byte-identical.",
    evidence="{groups} groups of identical files ({extra} extra copies); e.g. {examples}",
    summary="Two entries point at the same bytes (the same file listed twice, or copies).",
    why="Duplicates over-weight those clips and leak between train and validation splits.",
    fix="Keep one entry per clip.",
    fires=Example(clips({"same_bytes": "a"}, {"same_bytes": "a"})),
    passes=Example(clips()),
    limits="Byte-identical only: the same take re-encoded or resampled is not found.",
)


def _uniform(r: Rule, ds: SpeechDataset, value: Callable[[AudioStats], int], unit: str) -> list[Finding] | Skip:
    skip = needs_audio(ds)
    if skip:
        return skip
    counts = Counter(value(a) for _, a in ds.stats())
    if len(counts) < 2:
        return []
    common = counts.most_common(1)[0][0]
    odd = [(i, f"{value(a)}{unit}") for i, a in ds.stats() if value(a) != common]
    shown = ", ".join(f"{v}{unit}: {c}" for v, c in counts.most_common())
    return per_entry(r, ds, odd, n_values=len(counts), counts=shown, common=common)


@check("sample-rate", INCONSISTENT_SR)
def mixed_sample_rates(ds: SpeechDataset) -> list[Finding] | Skip:
    return _uniform(INCONSISTENT_SR, ds, lambda a: a.samplerate, " Hz")


@check("channels", INCONSISTENT_CHANNELS)
def mixed_channels(ds: SpeechDataset) -> list[Finding] | Skip:
    return _uniform(INCONSISTENT_CHANNELS, ds, lambda a: a.channels, " ch")


@check("duration", DURATION_LONG, DURATION_SHORT)
def duration_bounds(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = needs_audio(ds)
    if skip:
        return skip
    long_ = [(i, f"{a.duration:.1f} s") for i, a in ds.stats() if a.duration > DURATION_LONG.t("max_s")]
    short = [(i, f"{a.duration:.2f} s") for i, a in ds.stats() if a.duration < DURATION_SHORT.t("min_s")]
    long_.sort(key=lambda h: -ds.audio[h[0]].duration)
    short.sort(key=lambda h: ds.audio[h[0]].duration)
    out = []
    if long_:
        out += per_entry(DURATION_LONG, ds, long_, longest=ds.audio[long_[0][0]].duration)
    if short:
        out += per_entry(DURATION_SHORT, ds, short, shortest=ds.audio[short[0][0]].duration)
    return out


@check("declared-duration", DURATION_MISMATCH)
def declared_durations(ds: SpeechDataset) -> list[Finding] | Skip:
    declared = [(i, ds.entries[i].duration, a.duration) for i, a in ds.stats()
                if ds.entries[i].duration is not None]
    if not declared:
        return needs_audio(ds) or Skip(SkipKind.NO_DATA, "no entry declares a duration")
    limit = DURATION_MISMATCH.t("max_diff_s")
    hits = sorted(((i, f"declared {d:g} s, decodes to {m:.2f} s") for i, d, m in declared if abs(d - m) > limit),
                  key=lambda h: -abs(ds.entries[h[0]].duration - ds.audio[h[0]].duration))
    if not hits:
        return []
    worst = abs(ds.entries[hits[0][0]].duration - ds.audio[hits[0][0]].duration)
    return per_entry(DURATION_MISMATCH, ds, hits, total=len(declared), worst=worst)


@check("clipping", CLIPPING)
def clipping(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = needs_audio(ds)
    if skip:
        return skip
    hits = [(i, f"peak {a.peak:.3f}, {a.clipped} samples") for i, a in ds.stats()
            if a.peak >= CLIPPING.t("peak")]
    hits.sort(key=lambda h: -ds.audio[h[0]].clipped)
    return per_entry(CLIPPING, ds, hits)


@check("silence", SILENCE)
def long_silences(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = needs_audio(ds)
    if skip:
        return skip
    hits = [(i, f"{a.longest_quiet_s:.1f} s at {a.quiet_start_s:.1f} s")
            for i, a in ds.stats() if a.longest_quiet_s > SILENCE.t("max_s")]
    if not hits:
        return []
    hits.sort(key=lambda h: -ds.audio[h[0]].longest_quiet_s)
    return per_entry(SILENCE, ds, hits, longest=ds.audio[hits[0][0]].longest_quiet_s)


@check("duplicates", DUPLICATES)
def duplicates(ds: SpeechDataset) -> list[Finding] | Skip:
    skip = needs_audio(ds)
    if skip:
        return skip
    if not ds.duplicates:
        return []
    hits = [(g[0], "same bytes as " + ", ".join(ds.where(j) for j in g[1:SHOWN + 1])) for g in ds.duplicates]
    return per_entry(DUPLICATES, ds, hits, groups=len(ds.duplicates),
                     extra=sum(len(g) - 1 for g in ds.duplicates))


def levels() -> Levels:
    """The sample levels the audio probe counts against, from the declarations."""
    return Levels(clip=CLIPPING.t("peak"), quiet=SILENCE.t("level"))
