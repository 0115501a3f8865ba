"""The data rules' executable examples: how an Example's clips (each what differs from
an ordinary clip) become a measured speech dataset, so that tests and `trainproof rule`
run every rule's fires/passes pair."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainproof.probes.audio import AudioProblem, AudioStats
from trainproof.probes.speech_dataset import SpeechDataset
from trainproof.probes.speech_manifest import Entry
from trainproof.rules.base import example_subject
from trainproof.rules.data import CLIP, G
from trainproof.rules.data_audio import CLIPPING


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
    clips = [{**CLIP, **c} for c in data["clips"]]
    entries = [Entry(f"clip{i}.wav", c["text"], c.get("declared_s"), i + 1) for i, c in enumerate(clips)]
    labels: dict[str, list[int]] = {}
    for i, c in enumerate(clips):
        labels.setdefault(c.get("same_bytes", f"clip{i}"), []).append(i)
    bad = data.get("bad_lines", 0)
    ds = SpeechDataset("manifest.jsonl", "jsonl-manifest", entries, [_example_audio(c) for c in clips],
                       [g for g in labels.values() if len(g) > 1], bad,
                       [(len(clips) + 1, "not JSON")] * min(bad, 1), len(clips) + bad)
    return G, ds
