"""Tokenizer rules: does this tokenizer represent these transcripts well enough to
train on them - unknown tokens, characters it cannot represent, byte fallback,
fertility, tokens per second of audio, numbers and dates split oddly. Judges read
probes/tokenizer.py's measurement; every rule is declared here once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.tokenizer import TokenizerMeasurement
from trainproof.probes.tokenizer_transcripts import TranscriptTally
from trainproof.rules.base import Example, Threshold, check, example_subject, rule, statement

G = "tokenizer"


def _loc(m: TokenizerMeasurement, line: int | None = None) -> Location:
    return Location(m.transcripts, line=line)


# ---------------------------------------------------------------- outcome statements

PASS = rule(
    id="TP-TOK-PASS", level=Level.PASS, group=G,
    title="The tokenizer covers these transcripts.",
    evidence="{lines} lines, {tokens} tokens (OOV {oov:.3%}, coverage {coverage:.3%}, {fertility:.2f} "
    "tokens/word). Ran: {ran}. Skipped: {skipped}.",
    summary="The PASS statement: no tokenizer rule fired; lists what ran and what was skipped.",
    why="Says what was measured, so a PASS is not read as covering more.",
    fix="Nothing to fix.",
)

LOAD_FAIL = rule(
    id="TP-TOK-LOAD-FAIL", level=Level.NOT_CHECKED, group=G,
    title="The tokenizer could not be loaded.",
    evidence="{detail}",
    summary="The tokenizer path is missing, unreadable, not a tokenizer, or a hub name that is "
    "not in the local cache; exit 2.",
    why="A tokenizer that cannot be loaded says nothing about the transcripts.",
    fix="Pass tokenizer.json, a saved tokenizer directory, or a SentencePiece .model.",
)

SPM_MISSING = rule(
    id="TP-TOK-SPM-MISSING", level=Level.NOT_CHECKED, group=G,
    title="A tokenizer library is not installed.",
    evidence="{detail}",
    summary="The tokenizer needs sentencepiece (a .model) or tokenizers (tokenizer.json), "
    "which is not installed; exit 2.",
    why="A missing optional dependency is a tooling problem, never a verdict about the data.",
    fix="pip install sentencepiece (or tokenizers).",
)

NO_TRANSCRIPTS = rule(
    id="TP-TOK-NO-TRANSCRIPTS", level=Level.NOT_CHECKED, group=G,
    title="No transcripts could be read.",
    evidence="{detail}",
    summary="The transcripts file is missing, empty, or no line in it carries a text; exit 2.",
    why="Coverage of nothing is not coverage.",
    fix="Pass a text file (one transcript per line), JSONL with a text field, or an LJSpeech metadata.csv.",
    thresholds={"max_line_bytes": Threshold(1 << 20, "bytes", "A transcript is a sentence or a "
                                            "paragraph; a megabyte line is a file that is not a "
                                            "transcript list. Longer lines are skipped and counted "
                                            "(a note), so reading stays bounded.")},
)

NOT_MEASURED = rule(
    id="TP-TOK-NOT-MEASURED", level=Level.NOT_CHECKED, group=G,
    title="The transcripts produced no tokens.",
    evidence="{lines} transcript lines gave 0 tokens",
    summary="Every transcript tokenised to nothing (whitespace only); exit 2.",
    why="No rate can be computed over zero tokens.",
    fix="Check the text field of the transcripts.",
)

# ---------------------------------------------------------------- coverage

HIGH_OOV = rule(
    id="TP-TOK-HIGH-OOV", level=Level.FAIL, group=G,
    title="Too many unknown tokens.",
    evidence="{unk} of {tokens} tokens ({rate:.3%}) are the unknown token (id {unk_id}) > {limit_max_rate:.1%}; "
    "first lines: {lines}",
    summary="The share of tokens that are the tokenizer's unknown token, counted by id.",
    why="Every unknown token is text the model can neither read nor produce: those words are "
    "lost in training and unspeakable in inference.",
    fix="Use a tokenizer trained on this language/domain, extend the vocabulary, or normalise "
    "the text (see the unknown characters named by TP-TOK-LOW-COVERAGE).",
    thresholds={"max_rate": Threshold(0.001, "of tokens", "One unknown per thousand tokens is already "
                                      "several per minute of speech.")},
    fires=Example({"tokens": 1000, "unk_tokens": 5}),
    passes=Example({"tokens": 1000, "unk_tokens": 0}),
    limits="Byte-level BPE tokenizers (GPT-2 style) have no unknown token: see TP-TOK-BYTE-FALLBACK "
    "and TP-TOK-HIGH-FERTILITY for how badly they may spell a text instead.",
)

LOW_COVERAGE = rule(
    id="TP-TOK-LOW-COVERAGE", level=Level.WARN, group=G,
    title="Characters the tokenizer cannot represent.",
    evidence="{coverage:.3%} of {chars} non-space characters land in known tokens < {limit_min_coverage:.1%}; "
    "unknown: {unknown}",
    summary="The share of (non-space) characters not swallowed by an unknown token.",
    why="Names the characters that are lost: a script the tokenizer never saw, or typographic "
    "characters (curly quotes, dashes) a normaliser would fix.",
    fix="Normalise the listed characters, or choose a tokenizer that covers them.",
    thresholds={"min_coverage": Threshold(0.999, "of characters", "SentencePiece's own default "
                                          "character_coverage is 0.9995; below 0.999 whole words go missing.")},
    fires=Example({"tokens": 1000, "chars": 1000, "unk_chars": 5, "unknown": {"ø": 5}}),
    passes=Example({"tokens": 1000, "chars": 1000, "unk_chars": 0}),
)


@check("coverage", HIGH_OOV, LOW_COVERAGE)
def unknown_tokens(m: TokenizerMeasurement) -> list[Finding] | Skip:
    if m.unk_id is None:
        return Skip(SkipKind.NO_DATA, "the tokenizer has no unknown token (byte-level)")
    out = []
    if m.oov_rate > HIGH_OOV.t("max_rate"):
        out.append(HIGH_OOV.finding(_loc(m, m.unk_lines[0] if m.unk_lines else None), unk=m.unk_tokens,
                                    tokens=m.tokens, rate=m.oov_rate, unk_id=m.unk_id,
                                    lines=", ".join(map(str, m.unk_lines))))
    if m.coverage < LOW_COVERAGE.t("min_coverage"):
        shown = ", ".join(f"{c!r} x{n}" for c, n in Counter(m.unknown_chars).most_common(8))
        out.append(LOW_COVERAGE.finding(_loc(m, m.unk_lines[0] if m.unk_lines else None), coverage=m.coverage,
                                        chars=m.chars, unknown=shown or "-"))
    return out


BYTE_FALLBACK = rule(
    id="TP-TOK-BYTE-FALLBACK", level=Level.WARN, group=G,
    title="Text is spelled out in byte tokens.",
    evidence="{count} of {tokens} tokens ({share:.2%}) are byte-fallback tokens > {limit_max_share:.0%}",
    summary="The share of tokens that are byte-fallback pieces (<0xNN>).",
    why="Byte fallback keeps unknown characters representable, but each costs 1-4 tokens the "
    "model must learn to assemble: sequences grow, and the characters are learnt poorly.",
    fix="Use a tokenizer whose vocabulary covers the script, or extend it.",
    thresholds={"max_share": Threshold(0.01, "of tokens", "In-domain text falls back to bytes for "
                                       "rare symbols only - well under 1 %.")},
    fires=Example({"tokens": 1000, "byte_tokens": 50}),
    passes=Example({"tokens": 1000, "byte_tokens": 2}),
)


@check("byte-fallback", BYTE_FALLBACK)
def byte_fallback(m: TokenizerMeasurement) -> list[Finding]:
    if m.byte_share > BYTE_FALLBACK.t("max_share"):
        return [BYTE_FALLBACK.finding(_loc(m), count=m.byte_tokens, tokens=m.tokens, share=m.byte_share)]
    return []


HIGH_FERTILITY = rule(
    id="TP-TOK-HIGH-FERTILITY", level=Level.WARN, group=G,
    title="Words are split into many tokens.",
    evidence="{fertility:.2f} tokens per word over {words} words > {limit_max_fertility}",
    summary="Fertility: tokens per whitespace-separated word.",
    why="A tokenizer that needs many pieces per word does not know the language: sequences are "
    "several times longer (slower, shorter effective context) and harder to learn.",
    fix="Use a tokenizer trained on this language.",
    thresholds={
        "max_fertility": Threshold(3.0, "tokens/word", "English BPE tokenizers run 1.2-1.5 and "
                                   "well-covered languages under 2.5; 3 is a poor fit."),
        "max_chars_per_word": Threshold(20, "chars/word", "Above this the text does not separate "
                                        "words with spaces (Chinese, Japanese, Thai): fertility is "
                                        "meaningless and the check is skipped."),
    },
    fires=Example({"tokens": 400, "words": 100, "chars": 500}),
    passes=Example({"tokens": 130, "words": 100, "chars": 500}),
)


@check("fertility", HIGH_FERTILITY)
def fertility(m: TokenizerMeasurement) -> list[Finding] | Skip:
    if m.words == 0:
        return Skip(SkipKind.NO_DATA, "no words")
    if m.chars / m.words > HIGH_FERTILITY.t("max_chars_per_word"):
        return Skip(SkipKind.DEGENERATE, f"{m.chars / m.words:.0f} characters per space-separated word: "
                    "the text does not separate words with spaces")
    if m.fertility > HIGH_FERTILITY.t("max_fertility"):
        return [HIGH_FERTILITY.finding(_loc(m), fertility=m.fertility, words=m.words)]
    return []


HIGH_TPS = rule(
    id="TP-TOK-HIGH-TPS", level=Level.WARN, group=G,
    title="Too many tokens per second of audio.",
    evidence="{tps:.1f} tokens per second over {lines} timed lines ({seconds:.1f} s of audio) > "
    "{limit_max_tps}; densest lines: {worst}",
    summary="Tokens of transcript per second of audio, over lines that carry a duration.",
    why="Speech runs at 2-4 words a second; far more tokens per second means the tokenizer "
    "shreds the text (or durations are wrong), and a TTS/ASR model must align many more "
    "tokens to the same audio.",
    fix="Use a tokenizer with a better fit (see fertility), or check the durations.",
    thresholds={"max_tps": Threshold(50, "tokens/s of audio", "Even character-level tokens of fast "
                                     "speech stay around 15-25 per second.")},
    fires=Example({"tokens": 600, "timed_tokens": 600, "seconds": 10.0, "timed_lines": 2}),
    passes=Example({"tokens": 60, "timed_tokens": 60, "seconds": 10.0, "timed_lines": 2}),
)

TPS_NOT_MEASURED = rule(
    id="TP-TOK-TPS-NOT-MEASURED", level=Level.INFO, group=G,
    title="Tokens per second were not measured.",
    evidence="{detail}",
    summary="No transcript line carries an audio duration, so tokens per second cannot be measured.",
    why="Says that the rate check did not run, rather than letting a clean report imply it did.",
    fix="Give JSONL transcripts with a `duration` (seconds) or `start`/`end` per line.",
)


@check("tokens-per-second", HIGH_TPS, TPS_NOT_MEASURED)
def tokens_per_second(m: TokenizerMeasurement) -> list[Finding]:
    tps = m.tps
    if tps is None:
        return [TPS_NOT_MEASURED.finding(_loc(m), detail=f"none of {m.lines} lines carries a duration "
                                         f"({m.read.format} transcripts)")]
    if tps > HIGH_TPS.t("max_tps"):
        worst = ", ".join(f"line {ln} ({r:.0f}/s)" for r, ln in m.worst_tps[:3])
        return [HIGH_TPS.finding(_loc(m, m.worst_tps[0][1] if m.worst_tps else None), tps=tps,
                                 lines=m.timed_lines, seconds=m.seconds, worst=worst)]
    return []


SUSPICIOUS_SPLIT = rule(
    id="TP-TOK-SUSPICIOUS-SPLIT", level=Level.WARN, group=G,
    title="Numbers or dates are split suspiciously.",
    evidence="{count} of {spans} number/date spans tokenise into unknown or byte pieces, or into more "
    "pieces than characters; e.g. {examples}",
    summary="A digit sequence (number, date, time) contains unknown or byte-fallback pieces, or "
    "takes more tokens than it has characters.",
    why="The model cannot read or say these numbers reliably; for speech, digits should be "
    "normalised to words before training.",
    fix="Normalise numbers and dates to words in the transcripts, or use a tokenizer that covers digits.",
    fires=Example({"tokens": 100, "number_spans": 4, "suspicious_spans": 2, "suspicious_examples": ["'2023' -> 4"]}),
    passes=Example({"tokens": 100, "number_spans": 4, "suspicious_spans": 0}),
    limits="Splitting digits one per token is a design choice (Llama, Mistral), not flagged by itself.",
)


@check("number-splits", SUSPICIOUS_SPLIT)
def number_splits(m: TokenizerMeasurement) -> list[Finding] | Skip:
    if m.number_spans == 0:
        return Skip(SkipKind.NO_DATA, "no numbers or dates in the transcripts")
    if m.suspicious_spans:
        return [SUSPICIOUS_SPLIT.finding(_loc(m), count=m.suspicious_spans, spans=m.number_spans,
                                         examples="; ".join(m.suspicious_examples))]
    return []


def _unjudgeable(m: TokenizerMeasurement) -> Finding | None:
    """No transcript lines, or lines that gave no tokens: nothing to measure rates on."""
    if m.lines == 0:
        detail = "no transcript lines" + (f"; {m.read.skipped} skipped (first: line {m.read.first_skipped[0]}: "
                                          f"{m.read.first_skipped[1]})" if m.read.first_skipped else "")
        return NO_TRANSCRIPTS.finding(_loc(m), detail=detail)
    if m.tokens == 0:
        return NOT_MEASURED.finding(_loc(m), lines=m.lines)
    return None


def _pass_values(m: TokenizerMeasurement) -> dict[str, Any]:
    return dict(lines=m.lines, tokens=m.tokens, oov=m.oov_rate, coverage=m.coverage, fertility=m.fertility)


statement(G, PASS, _loc, values=_pass_values, precheck=_unjudgeable)


@example_subject(G)
def _example(data: Mapping[str, Any]) -> tuple[str, TokenizerMeasurement]:
    fields = dict(data)
    unknown = Counter(fields.pop("unknown", {}))
    m = TokenizerMeasurement(tokenizer="example", kind="example", transcripts="example.txt",
                             read=TranscriptTally(lines=1), lines=1, unk_id=0, unknown_chars=unknown,
                             **{"chars": fields.get("tokens", 0), "words": fields.get("tokens", 1), **fields})
    return G, m
