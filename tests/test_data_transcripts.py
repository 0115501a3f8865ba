"""Transcript rules: empty text, characters-per-second outliers (on real espeak-ng speech
when the Debian package is installed), text ttsproof's normaliser would rewrite, and
letters from more than one script."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from trainproof.probes.speech_text import rewritten, scripts_of, what_needs_reading

from .test_data_support import finding, healthy_clips, ids, manifest_for, run_json, write_manifest

ttsproof = pytest.importorskip("ttsproof", reason="ttsproof provides the TTS text normaliser")

SENTENCES = [
    "The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.",
    "It is easy to tell the depth of a well.", "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.", "The juice of lemons makes fine punch.",
    "Kick the ball straight and follow through.", "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.", "A large size in stockings is hard to sell.",
    "The source of the huge river is the clear spring.", "A rod is used to catch pink salmon.",
]


@pytest.fixture(scope="module")
def spoken(tmp_path_factory) -> Path:
    """Twelve Harvard sentences spoken by espeak-ng, with a matching manifest. (espeak-ng
    peaks at 0.995 full scale on some sentences, e.g. "The box was thrown beside the parked truck.",
    which TP-DATA-CLIPPING rightly reports; these twelve stay below 0.99.)"""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng); real-speech tests need it")
    root = tmp_path_factory.mktemp("espeak")
    for i, text in enumerate(SENTENCES):
        subprocess.run(["espeak-ng", "-w", str(root / f"s{i:02d}.wav"), text], check=True)
    return root


def _rows(root: Path) -> list[dict]:
    return [{"audio_filepath": f"s{i:02d}.wav", "text": t} for i, t in enumerate(SENTENCES)]


def test_real_speech_with_matching_transcripts_passes(capsys, spoken):
    code, doc = run_json(capsys, str(write_manifest(spoken / "ok.jsonl", _rows(spoken))))
    assert code == 0 and ids(doc) == {"TP-DATA-PASS"}, doc
    assert "char-rate" in doc["reports"][0]["checks"]["ran"]


def test_real_speech_with_swapped_transcript_is_a_char_rate_outlier(capsys, spoken):
    rows = _rows(spoken)
    rows[3]["text"] = " ".join(SENTENCES)  # a paragraph paired with one short sentence
    rows[5]["text"] = "Yes."
    code, doc = run_json(capsys, str(write_manifest(spoken / "bad.jsonl", rows)))
    f = finding(doc, "TP-DATA-CHAR-RATE-OUTLIER")
    assert code == 0 and f["values"]["n"] == 2
    assert "line 4" in f["evidence"] and "line 6" in f["evidence"]


def test_char_rate_needs_ten_clips(capsys, tmp_path):
    clips = healthy_clips(tmp_path, n=9)
    code, doc = run_json(capsys, str(manifest_for(tmp_path, clips)))
    skipped = doc["reports"][0]["checks"]["skipped"]
    assert code == 0 and skipped["char-rate"] == "9 clips with both text and audio, needs 10"


def test_empty_transcripts_warn(capsys, tmp_path):
    clips = healthy_clips(tmp_path, n=4)
    clips[1] = (clips[1][0], "   ")
    code, doc = run_json(capsys, str(manifest_for(tmp_path, clips)))
    assert code == 0 and finding(doc, "TP-DATA-EMPTY-TRANSCRIPT")["values"]["n"] == 1


def test_unnormalised_and_mixed_script_transcripts(capsys, tmp_path):
    clips = healthy_clips(tmp_path, n=5)
    clips[0] = (clips[0][0], "The meeting is at 10:30 PM.")
    clips[1] = (clips[1][0], "Call the FBI on 3/4/2021.")
    clips[2] = (clips[2][0], "Привет, hеllo")  # Cyrillic greeting; the 'е' in hello is Cyrillic too
    code, doc = run_json(capsys, str(manifest_for(tmp_path, clips)))
    assert code == 0
    unnorm = finding(doc, "TP-DATA-UNNORMALIZED")
    assert unnorm["values"]["n"] == 2 and "clock time" in unnorm["evidence"] and "acronym" in unnorm["evidence"]
    mixed = finding(doc, "TP-DATA-MIXED-SCRIPTS")
    assert mixed["values"]["n"] == 1 and "CYRILLIC+LATIN" in mixed["evidence"]


@pytest.mark.parametrize("text", ["hello, world.", "Mr. Smith said \u201cyes\u201d\u2026", "  spaced   out  ",
                                  "Printing, in the only sense with which we are at present concerned."])
def test_text_the_normaliser_only_tidies_is_not_reported(text):
    assert rewritten(text, ttsproof.normalize_text) is None


@pytest.mark.parametrize("text,kind", [("at 10:30", "clock time"), ("on 3/4/2021", "date"),
                                        ("25 dollars", "digits"), ("the NASA team", "acronym")])
def test_what_the_normaliser_rewrites(text, kind):
    assert rewritten(text, ttsproof.normalize_text) is not None
    assert what_needs_reading(text) == kind


@pytest.mark.parametrize("text,scripts", [("hello", ("LATIN",)), ("日本語のテキストです", ("CJK",)),
                                           ("café 42!", ("LATIN",)), ("Ελλάδα and Rome", ("GREEK", "LATIN")),
                                           ("la 1ª vez, 5 µm", ("LATIN",)), ("ｶﾀｶﾅ and かな", ("CJK", "LATIN")),
                                           ("नमस्ते", ("DEVANAGARI",))])
def test_scripts_of(text, scripts):
    assert scripts_of(text) == scripts
