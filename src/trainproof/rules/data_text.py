"""Speech dataset rules on the transcripts: empty ones, ones whose length does not fit
their audio, text a TTS model cannot read as written, and mixed writing systems."""

from __future__ import annotations

from collections import Counter

import numpy as np

from trainproof.model import Finding, Level, Skip, SkipKind
from trainproof.probes.speech_dataset import SpeechDataset
from trainproof.probes.speech_text import normaliser, rewritten, scripts_of, what_needs_reading
from trainproof.rules import data_audio  # noqa: F401  (registered first: keeps the checks' order)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.data import G, clips, needs_text, per_entry

EMPTY_TRANSCRIPT = rule(
    id="TP-DATA-EMPTY-TRANSCRIPT", level=Level.WARN, group=G,
    title="Transcripts are empty.",
    evidence="{n} of {total} transcripts are empty or whitespace; e.g. {examples}",
    summary="An entry has a transcript field (or sidecar file) with no text in it.",
    why="Audio paired with no text teaches a TTS model to babble and an ASR model to emit "
    "nothing for speech.",
    fix="Transcribe the clips or drop them.",
    fires=Example(clips({"text": "  "})),
    passes=Example(clips()),
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
    fires=Example(clips({"seconds": 12.0}, n=12)),  # 30 characters over 12 s: 2.5 chars/s against 10
    passes=Example(clips(n=12)),
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
    fires=Example(clips({"text": "we met at 10:30 on 3/4/2021."})),
    passes=Example(clips()),
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
    fires=Example(clips({"text": "hеllo"})),  # the e is Cyrillic
    passes=Example(clips()),
    limits="Code-switched corpora mix scripts by design.",
)


def _snippet(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[:width - 3] + "...")


@check("empty-transcript", EMPTY_TRANSCRIPT)
def empty_transcripts(ds: SpeechDataset) -> list[Finding] | Skip:
    texts = ds.transcripts()
    if not texts:
        return needs_text(ds)
    hits = [(i, "") for i, t in texts if not t.strip()]
    return per_entry(EMPTY_TRANSCRIPT, ds, hits, total=len(texts))


@check("char-rate", CHAR_RATE)
def char_rate_outliers(ds: SpeechDataset) -> list[Finding] | Skip:
    if not ds.transcripts():
        return needs_text(ds)
    pairs = [(i, len(e.text.strip()) / a.duration) for i, a in ds.stats()
             if (e := ds.entries[i]).text and e.text.strip() and a.duration > 0]
    need = int(CHAR_RATE.t("min_records"))
    if len(pairs) < need:
        return Skip(SkipKind.TOO_FEW, f"{len(pairs)} clips with both text and audio, needs {need}")
    median = float(np.median([r for _, r in pairs]))
    ratio = CHAR_RATE.t("ratio")
    hits = [(i, f"{r:.1f} chars/s") for i, r in pairs if r > ratio * median or r < median / ratio]
    return per_entry(CHAR_RATE, ds, hits, median=median)


@check("normalisation", UNNORMALIZED)
def unnormalised_text(ds: SpeechDataset) -> list[Finding] | Skip:
    texts = [(i, t) for i, t in ds.transcripts() if t.strip()]
    if not texts:
        return needs_text(ds) or Skip(SkipKind.NO_DATA, "every transcript is empty")
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
    return per_entry(UNNORMALIZED, ds, hits, total=len(texts), kinds=shown)


@check("scripts", MIXED_SCRIPTS)
def mixed_scripts(ds: SpeechDataset) -> list[Finding] | Skip:
    if not ds.transcripts():
        return needs_text(ds)
    hits = []
    for i, t in ds.transcripts():
        scripts = scripts_of(t)
        if len(scripts) > 1:
            hits.append((i, f"{'+'.join(scripts)} in {_snippet(t, 40)}"))
    return per_entry(MIXED_SCRIPTS, ds, hits)
