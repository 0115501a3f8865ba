"""`trainproof data PATH`: is this speech dataset (a directory of audio, a JSONL manifest
or an LJSpeech metadata.csv) safe to train on. Reads the listing, measures every audio
file in parallel, judges with the `data` rules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainproof import engine
from trainproof.model import InputError, Report, ReportSet
from trainproof.rules import data as rules
from trainproof.rules.data_audio import levels
from trainproof.rules.data_files import MALFORMED

NAME = "data"
HELP = "check a speech dataset: audio integrity, durations, clipping, silence, duplicates, transcripts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH",
                   help="a directory of audio, a JSONL manifest, or an LJSpeech metadata.csv (or its directory)")
    p.add_argument("--workers", type=int, default=0, metavar="N",
                   help="files decoded in parallel (default: CPU count, at most 8)")


def run(args: argparse.Namespace) -> ReportSet:
    from trainproof import api

    return ReportSet(NAME, (api.data(args.path, workers=args.workers, progress=sys.stderr.isatty()),))


def check_speech(path: str, *, workers: int = 0, progress: bool = False) -> Report:
    """The work behind `trainproof.data`."""
    from trainproof.probes.audio import soundfile_module
    from trainproof.probes.native_stderr import native_stderr_silenced
    from trainproof.probes.speech_dataset import measure_dataset
    from trainproof.probes.speech_manifest import read_listing

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise InputError("--workers must be 0 (automatic) or more")
    try:
        soundfile_module()
    except (ImportError, OSError) as exc:  # OSError: soundfile present, libsndfile not
        raise InputError(str(exc)) from None
    try:
        listing = read_listing(Path(path), int(MALFORMED.t("max_line_bytes")))
    except InputError as exc:
        return rules.invalid_input(path, str(exc))
    with native_stderr_silenced():  # libsndfile's decoders write notes to descriptor 2
        ds = measure_dataset(listing, levels(), workers, _progress if progress else None)
    return engine.report(rules.G, ds, subject=ds.path, format=ds.format, records=len(ds.entries),
                         kind="dataset", notes=tuple(ds.notes))


def _progress(done: int, total: int) -> None:
    """A line on the terminal, rewritten in place about a hundred times a run."""
    if done == total or done % max(1, total // 100) == 0:
        end = "\r" if done < total else "\r" + " " * 60 + "\r"
        sys.stderr.write(f"trainproof data: {done}/{total} files measured{end}")
        sys.stderr.flush()
