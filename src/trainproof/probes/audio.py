"""Measures audio files through soundfile (libsndfile: WAV, FLAC, OGG/Vorbis/Opus, ...):
format, length, peak, clipped samples and the longest quiet run, decoded block by block
with numpy over each block, files measured in parallel. Also finds byte-identical files.
The levels that decide what is "clipped" or "quiet" come in from the rule declarations;
this module holds no thresholds and never judges."""

from __future__ import annotations

import hashlib
import os
import stat
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from trainproof.probes.audio_header import HEAD_BYTES, wav_missing_bytes

BLOCK_FRAMES = 1 << 16  # 64 Ki frames: a few hundred KiB per block, whatever the file's length
AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3")


@dataclass(frozen=True, slots=True)
class Levels:
    """Sample levels the measurement counts against (full scale = 1.0)."""

    clip: float
    quiet: float


@dataclass(frozen=True, slots=True)
class AudioStats:
    samplerate: int
    channels: int
    frames: int  # frames actually decoded
    peak: float  # max |sample| over all channels
    clipped: int  # samples at or above the clip level
    longest_quiet: int  # frames in the longest run where every channel is at or below the quiet level
    quiet_start: int  # first frame of that run
    size: int  # bytes on disk
    container: str  # libsndfile's format name: WAV, FLAC, OGG, ...
    missing_bytes: int  # bytes a WAV header promises beyond the end of the file

    @property
    def duration(self) -> float:
        return self.frames / self.samplerate if self.samplerate else 0.0


@dataclass(frozen=True, slots=True)
class AudioProblem:
    missing: bool  # True: no such file; False: present but not decodable
    detail: str


def soundfile_module() -> ModuleType:
    """soundfile is optional for users who never check speech data."""
    try:
        import soundfile
    except ImportError as exc:  # libsndfile missing raises OSError, caught by the caller
        raise ImportError("`trainproof data` needs soundfile: pip install soundfile") from exc
    return soundfile


def _quiet_runs(quiet: np.ndarray, carry: int, offset: int, best: tuple[int, int]) -> tuple[int, tuple[int, int]]:
    """Longest run of True across blocks: `carry` is the run still open from the previous
    block (ending at `offset`), `best` is (length, start). Returns the new carry and best."""
    loud = np.flatnonzero(~quiet)
    if loud.size == 0:
        carry += quiet.size
        return carry, max(best, (carry, offset + quiet.size - carry), key=lambda b: b[0])
    head = carry + int(loud[0])
    if head > best[0]:
        best = (head, offset - carry)
    if loud.size > 1:
        gaps = np.diff(loud) - 1
        i = int(np.argmax(gaps))
        if gaps[i] > best[0]:
            best = (int(gaps[i]), offset + int(loud[i]) + 1)
    return quiet.size - 1 - int(loud[-1]), best


def _decode(sf, path: str, levels: Levels) -> tuple[tuple[int, int, str], int, float, int, tuple[int, int]]:
    """One pass over the samples, block by block; memory is one block whatever the length."""
    with sf.SoundFile(path) as f:
        info = (int(f.samplerate), int(f.channels), str(f.format))
        buf = np.empty((BLOCK_FRAMES, f.channels), dtype=np.float32)
        frames, peak, clipped, carry, best = 0, 0.0, 0, 0, (0, 0)
        while True:
            block = f.read(BLOCK_FRAMES, dtype="float32", always_2d=True, out=buf)
            n = block.shape[0]
            if n == 0:
                break
            mag = np.abs(block).max(axis=1) if block.shape[1] > 1 else np.abs(block[:, 0])
            peak = max(peak, float(mag.max()))
            clipped += int(np.count_nonzero(np.abs(block) >= levels.clip))
            carry, best = _quiet_runs(mag <= levels.quiet, carry, frames, best)
            frames += n
            if n < BLOCK_FRAMES:
                break
        return info, frames, peak, clipped, best


def measure_audio(path: str, levels: Levels) -> AudioStats | AudioProblem:
    """Measure one file. Anything but a regular file (a FIFO, a device) is refused before
    it is opened: opening a FIFO would block and /dev/zero never ends."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return AudioProblem(True, "no such file")
    except OSError as exc:
        return AudioProblem(False, exc.strerror or type(exc).__name__)
    if not stat.S_ISREG(st.st_mode):
        return AudioProblem(False, "not a regular file")
    sf = soundfile_module()
    try:
        (rate, channels, container), frames, peak, clipped, best = _decode(sf, path, levels)
        with open(path, "rb") as fh:
            missing = wav_missing_bytes(fh.read(HEAD_BYTES), st.st_size) or 0
    except (RuntimeError, OSError, ValueError, TypeError) as exc:  # LibsndfileError is a RuntimeError
        return AudioProblem(False, _one_line(exc, path))
    return AudioStats(samplerate=rate, channels=channels, frames=frames, peak=peak, clipped=clipped,
                      longest_quiet=best[0], quiet_start=best[1], size=int(st.st_size),
                      container=container, missing_bytes=missing)


def _one_line(exc: BaseException, path: str) -> str:
    text = str(exc).replace(f"Error opening {path!r}: ", "").strip()
    return " ".join(text.split())[:200] or type(exc).__name__


def _measure_task(args: tuple[str, Levels]) -> AudioStats | AudioProblem:
    return measure_audio(*args)


def make_executor(workers: int, kind: str = "thread") -> Executor:
    if kind == "process":
        return ProcessPoolExecutor(max_workers=workers)
    return ThreadPoolExecutor(max_workers=workers)


def measure_many(paths: Sequence[str], levels: Levels, workers: int = 0,
                 kind: str = "thread") -> list[AudioStats | AudioProblem]:
    """Measure files in parallel, results in input order. libsndfile releases the GIL while
    it decodes and numpy does while it reduces a block, so threads scale without the cost
    of pickling results across processes."""
    workers = workers or default_workers()
    tasks = [(p, levels) for p in paths]
    if workers <= 1 or len(tasks) <= 1:
        return [measure_audio(*t) for t in tasks]
    with make_executor(workers, kind) as pool:
        return list(pool.map(_measure_task, tasks, chunksize=8 if kind == "process" else 1))


def default_workers() -> int:
    return min(8, os.cpu_count() or 1)


def _digest(path: str) -> str | None:
    h = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def identical_groups(files: Iterable[tuple[int, str, int]], workers: int = 0,
                     digest: Callable[[str], str | None] = _digest) -> list[list[int]]:
    """Groups of keys whose files are byte-identical, from (key, path, size) triples; one
    file listed under two keys is a group too. Only files that share a size are hashed,
    so a dataset of distinct clips costs no second read."""
    by_size: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for key, path, size in files:
        by_size[size].append((key, os.path.realpath(path)))
    candidates = [kp for group in by_size.values() if len(group) > 1 for kp in group]
    if not candidates:
        return []
    unique = sorted({p for _, p in candidates})
    with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
        digests = dict(zip(unique, pool.map(digest, unique), strict=True))
    by_digest: dict[str, list[int]] = defaultdict(list)
    for key, path in candidates:
        if digests[path] is not None:
            by_digest[digests[path]].append(key)
    return sorted(sorted(g) for g in by_digest.values() if len(g) > 1)
