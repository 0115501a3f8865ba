"""`trainproof tokenizer MODEL TRANSCRIPTS`: how well a tokenizer represents a set of
transcripts - unknown tokens (by id), coverage, byte fallback, fertility, tokens per
second of audio, numbers and dates. Could-not-judge outcomes are findings with
their own IDs (exit 2), so scripts can tell them apart."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainproof import engine
from trainproof.model import InputError, Location, Report, ReportSet
from trainproof.probes.tokenizer import TokenizerMeasurement, measure_tokenizer
from trainproof.probes.tokenizer_load import TokenizerLoadError, load_tokenizer
from trainproof.rules import tokenizer as T
from trainproof.rules.base import Rule

NAME = "tokenizer"
HELP = "tokenizer coverage of transcripts: OOV by id, byte fallback, fertility, tokens/s of audio"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="tokenizer.json, a saved tokenizer directory, or a SentencePiece .model")
    p.add_argument("transcripts", metavar="TRANSCRIPTS",
                   help="text (one transcript per line), JSONL (text + duration seconds), or LJSpeech metadata.csv")


def _statement(subject: str, rule: Rule, **values: object) -> Report:
    f = rule.finding(Location(subject), **values)
    return Report(subject=subject, format="transcripts", findings=(f,), kind="tokenizer")


def run(args: argparse.Namespace) -> ReportSet:
    from trainproof import api

    return ReportSet(NAME, (api.tokenizer(args.model, args.transcripts),))


def check_tokenizer(model: str, transcripts: str) -> Report:
    """The work behind `trainproof.tokenizer`: could-not-judge outcomes are reports."""
    try:
        tok = load_tokenizer(model)
    except TokenizerLoadError as exc:
        rule = T.SPM_MISSING if exc.dependency in ("sentencepiece", "tokenizers") else T.LOAD_FAIL
        return _statement(transcripts, rule, detail=str(exc))
    except InputError as exc:
        return _statement(transcripts, T.LOAD_FAIL, detail=str(exc))
    try:
        m = measure_tokenizer(tok, Path(transcripts), int(T.NO_TRANSCRIPTS.t("max_line_bytes")))
    except InputError as exc:
        return _statement(transcripts, T.NO_TRANSCRIPTS, detail=str(exc))
    return engine.report(T.G, m, subject=transcripts, format=m.read.format, records=m.lines, kind="tokenizer",
                         notes=_notes(m))


def _notes(m: TokenizerMeasurement) -> tuple[str, ...]:
    notes = [f"tokenizer: {m.tokenizer} ({m.kind})"]
    if m.read.skipped and m.read.first_skipped:
        line, why = m.read.first_skipped
        notes.append(f"{m.read.skipped} line(s) skipped (first: line {line}: {why})")
    return tuple(notes)
