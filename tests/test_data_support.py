"""Helpers for the `data` tests (no tests here): real audio written by soundfile into
tmp_path, manifests beside it, and the CLI run as users run it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from trainproof.cli import main

SR = 16000


def tone(seconds: float, sr: int = SR, amp: float = 0.3, freq: float = 220.0, channels: int = 1) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    x = (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return x if channels == 1 else np.repeat(x[:, None], channels, axis=1)


def write(path: Path, audio: np.ndarray, sr: int = SR, **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, audio, sr, **kw)
    return path


def healthy_clips(root: Path, n: int = 12, sr: int = SR) -> list[tuple[str, str]]:
    """n distinct tone clips (different pitch, 1.5-3 s) with plain transcripts at a
    steady speaking rate; returns (file name, transcript) pairs."""
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "birds", "sing"]
    out = []
    for i in range(n):
        seconds = 1.5 + (i % 4) * 0.5
        text = " ".join(words[j % len(words)] for j in range(int(seconds * 2.5) + i % 2))
        name = f"clip_{i:03d}.wav"
        write(root / name, tone(seconds, sr, freq=200.0 + 15 * i), sr, subtype="PCM_16")
        out.append((name, text))
    return out


def write_manifest(path: Path, rows: Sequence[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def manifest_for(root: Path, clips: Sequence[tuple[str, str]]) -> Path:
    return write_manifest(root / "manifest.jsonl", [{"audio_filepath": a, "text": t} for a, t in clips])


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["data", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def ids(doc: dict) -> set[str]:
    return {f["id"] for r in doc["reports"] for f in r["findings"]}


def finding(doc: dict, rule_id: str) -> dict:
    return next(f for r in doc["reports"] for f in r["findings"] if f["id"] == rule_id)
