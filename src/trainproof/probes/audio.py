"""Measures audio files through soundfile (libsndfile: WAV, FLAC, OGG/Vorbis/Opus, ...):
format, length, peak, clipped samples and the longest quiet run, decoded block by block
with numpy over each block, files measured in parallel. Also finds byte-identical files.
The levels that decide what is "clipped" or "quiet" come in from the rule declarations;
this module holds no thresholds and never judges."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from trainproof.probes.audio_header import HEAD_BYTES, wav_missing_bytes

if TYPE_CHECKING:  # concurrent.futures is imported when a pool runs, not by every command
    from concurrent.futures import Executor

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
    longest_quiet: int  # frames in the longest run where every channel is at or below the quiet
    #                     level; exact from 2 * QUIET_CHUNK - 1 frames up, never over-reported
    quiet_start: int  # first frame of that run
    size: int  # bytes on disk
    container: str  # libsndfile's format name: WAV, FLAC, OGG, ...
    missing_bytes: int  # bytes a WAV header promises beyond the end of the file

    @property
    def duration(self) -> float:
        return self.frames / self.samplerate if self.samplerate else 0.0

    @property
    def longest_quiet_s(self) -> float:
        return self.longest_quiet / self.samplerate if self.samplerate else 0.0

    @property
    def quiet_start_s(self) -> float:
        return self.quiet_start / self.samplerate if self.samplerate else 0.0


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


QuietRun = tuple[int, int]  # (length in frames, first frame)
_FULL_SCALE = 32768  # int16 samples per unit of full scale
QUIET_CHUNK = 64  # frames; quiet runs from 127 frames (6 ms at 22.05 kHz) up are measured exactly
_INT_SUBTYPES = ("PCM_16", "PCM_24", "PCM_32", "PCM_S8", "PCM_U8")  # decoded as int16: 4x cheaper


def _quiet_runs(quiet: np.ndarray, offset: int, open_run: QuietRun, best: QuietRun) -> tuple[QuietRun, QuietRun]:
    """Longest run of True over consecutive blocks; `open_run` is the run still going at the
    end of the previous block. Exact for runs of at least 2 * QUIET_CHUNK - 1 frames: each
    holds a wholly quiet aligned chunk, so runs are found on chunk flags (n / 64 of them) and
    only their two edge chunks are looked into. Speech crosses zero hundreds of times a
    second, so following every quiet sample would cost far more than the decode."""
    n = quiet.size
    candidates: list[QuietRun] = []
    head = _leading(quiet)
    if head:
        candidates.append((open_run[0] + head, open_run[1] if open_run[0] else offset))
        if head == n:
            return candidates[0], max(best, candidates[0], key=lambda r: r[0])
    tail = _leading(quiet[::-1])
    candidates += _inner_runs(quiet, head, n - tail, offset)
    if tail:
        candidates.append((tail, offset + n - tail))
    for run in candidates:
        if run[0] > best[0]:
            best = run
    return ((tail, offset + n - tail) if tail else (0, 0)), best


def _leading(quiet: np.ndarray) -> int:
    """How many True values open the array."""
    k = int(np.argmin(quiet)) if quiet.size else 0
    return quiet.size if quiet.size and quiet[k] else k


def _inner_runs(quiet: np.ndarray, lo: int, hi: int, offset: int) -> list[QuietRun]:
    """Runs within quiet[lo:hi] (which starts and ends loud) spanning a whole chunk, in order."""
    whole = quiet.size - quiet.size % QUIET_CHUNK
    if hi - lo < 2 * QUIET_CHUNK - 1 or not whole:
        return []
    chunks = quiet[:whole].reshape(-1, QUIET_CHUNK)
    full = chunks.all(axis=1)
    if not full.any():
        return []
    padded = np.zeros(full.size + 2, dtype=bool)
    padded[1:-1] = full
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    first, stop = edges[0::2], edges[1::2]  # runs of wholly quiet chunks: [first, stop)
    # the chunks beside a run are not wholly quiet, so argmin finds their first loud sample
    before = np.argmin(chunks[np.maximum(first - 1, 0), ::-1], axis=1)
    after = np.argmin(chunks[np.minimum(stop, len(chunks) - 1)], axis=1)
    after[stop == len(chunks)] = _leading(quiet[whole:])
    start = first * QUIET_CHUNK - np.where(first > 0, before, 0)
    end = stop * QUIET_CHUNK + after
    keep = (start > lo) & (end < hi)  # runs touching the block's ends are the head and tail
    return list(zip((end - start)[keep].tolist(), (start[keep] + offset).tolist(), strict=True))


def _block_float(block: np.ndarray, levels: Levels) -> tuple[float, int, np.ndarray]:
    """Peak, samples at the clip level, and the frames quiet on every channel."""
    mag = np.abs(block)
    peak = float(mag.max())
    clipped = int(np.count_nonzero(mag >= levels.clip)) if peak >= levels.clip else 0
    quiet = mag <= levels.quiet
    return peak, clipped, quiet[:, 0] if quiet.shape[1] == 1 else quiet.all(axis=1)


def _block_int16(block: np.ndarray, clip: int, quiet_level: int) -> tuple[float, int, np.ndarray]:
    """The same on int16 samples, without abs (abs(-32768) overflows): |x| <= q is one
    unsigned compare after shifting by q, wrapping modulo 2**16."""
    peak_int = max(int(block.max()), -int(block.min()))
    clipped = int(np.count_nonzero(block >= clip) + np.count_nonzero(block <= -clip)) if peak_int >= clip else 0
    shifted = np.add(block.view(np.uint16), np.uint16(quiet_level), dtype=np.uint16)
    quiet = shifted <= 2 * quiet_level
    return peak_int / _FULL_SCALE, clipped, quiet[:, 0] if quiet.shape[1] == 1 else quiet.all(axis=1)


def _decode(sf, path: str, levels: Levels) -> tuple[tuple[int, int, str], int, float, int, QuietRun]:
    """One pass over the samples, block by block; memory is one block whatever the length."""
    with sf.SoundFile(path) as f:
        info = (int(f.samplerate), int(f.channels), str(f.format))
        as_int = f.subtype in _INT_SUBTYPES
        dtype = "int16" if as_int else "float32"
        clip_int = int(np.ceil(levels.clip * _FULL_SCALE))
        quiet_int = int(np.floor(levels.quiet * _FULL_SCALE))
        buf = np.empty((BLOCK_FRAMES, f.channels), dtype=dtype)
        frames, peak, clipped, open_run, best = 0, 0.0, 0, (0, 0), (0, 0)
        while (n := (block := f.read(BLOCK_FRAMES, dtype=dtype, always_2d=True, out=buf)).shape[0]) > 0:
            p, c, quiet = (_block_int16(block, clip_int, quiet_int) if as_int
                           else _block_float(block, levels))
            peak, clipped = max(peak, p), clipped + c
            open_run, best = _quiet_runs(quiet, frames, open_run, best)
            frames += n
            if n < BLOCK_FRAMES:
                break
        return info, frames, peak, clipped, best


NOT_REGULAR, EMPTY = "not a regular file", "0 bytes"  # AudioProblem details the data rules count by kind


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
        return AudioProblem(False, NOT_REGULAR)
    if st.st_size == 0:
        return AudioProblem(False, EMPTY)
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
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor  # only `data` runs a pool

    if kind == "process":
        return ProcessPoolExecutor(max_workers=workers)
    return ThreadPoolExecutor(max_workers=workers)


def measure_many(paths: Sequence[str], levels: Levels, workers: int = 0, kind: str = "thread",
                 progress: Callable[[int, int], None] | None = None) -> list[AudioStats | AudioProblem]:
    """Measure files in parallel, results in input order; `progress(done, total)` is called
    as they arrive. libsndfile releases the GIL while it decodes and numpy does while it
    reduces a block, so threads scale without pickling results across processes."""
    workers = workers or default_workers()
    tasks = [(p, levels) for p in paths]
    out: list[AudioStats | AudioProblem] = []
    with contextlib.ExitStack() as stack:
        if workers > 1 and len(tasks) > 1:
            pool = stack.enter_context(make_executor(workers, kind))
            results = pool.map(_measure_task, tasks, chunksize=8 if kind == "process" else 1)
        else:
            results = map(_measure_task, tasks)
        for result in results:
            out.append(result)
            if progress is not None:
                progress(len(out), len(tasks))
    return out


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
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
        digests = dict(zip(unique, pool.map(digest, unique), strict=True))
    by_digest: dict[str, list[int]] = defaultdict(list)
    for key, path in candidates:
        if digests[path] is not None:
            by_digest[digests[path]].append(key)
    return sorted(sorted(g) for g in by_digest.values() if len(g) > 1)
