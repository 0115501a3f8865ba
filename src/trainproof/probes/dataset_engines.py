"""Where the pieces of a dataset are measured when not in this process: N local
processes (`--workers N`), or the workers of a Dask or Ray cluster (`--engine`).
Every engine runs the same two task functions - count the lines of a byte range,
measure one piece into summary bytes - and this process merges what comes back
(`DatasetSummary.from_bytes`: JSON and int64 arrays, never unpickled).

Workers read the shards themselves, by path: the dataset must be on a filesystem every
worker sees at the same path (a local disk for local workers; NFS, Lustre, a FUSE mount
of object storage... on a cluster). A JSONL file larger than a range is cut into byte
ranges at line boundaries so one big file spreads over the workers too; the lines
before each range are counted first (a cheap pass of its own), so every record keeps
the (file, line) id one process would give it. The engine packages are imported only
when asked for."""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Callable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from trainproof.model import InputError
from trainproof.probes.dataset import Piece, PieceSpec, measure_piece
from trainproof.probes.dataset_read import count_newlines, line_ranges
from trainproof.probes.dataset_summary import DatasetSummary, Duplicates

ENGINES = ("dask", "ray")
# Byte ranges per JSONL file: about 4 per worker over the whole dataset, within these
# bounds (a range much smaller than this costs more in task overhead than it saves).
MIN_RANGE, MAX_RANGE = 16 << 20, 256 << 20
_ERROR = b"TPERR\n"
# Cluster engines count exact duplicates per hash partition, each partition on one
# worker, with at most about PART_BYTES of digests in it. Digests are 16 bytes a record,
# at most 1/DIGEST_SHARE of the dataset's bytes for records of 128 bytes or more.
PART_BYTES, DIGEST_SHARE = 1 << 30, 8


# ---------------------------------------------------------------- the tasks (run on workers)


def measure_task(piece: Piece, spec: PieceSpec) -> bytes:
    """One piece's summary as bytes; a piece the single process would reject (an
    unreadable shard) comes back as its one-line message, not as an engine traceback."""
    try:
        return measure_piece(piece, spec).to_bytes()
    except InputError as exc:
        return _ERROR + str(exc).encode("utf-8", "replace")


def count_task(path: str, start: int, end: int) -> int:
    return count_newlines(Path(path), start, end)


def measure_parts_task(piece: Piece, spec: PieceSpec, n: int) -> list[bytes]:
    """A piece's summary without its digests, then its digests split into `n` hash
    partitions: each goes to the reduce task of its partition, not to the driver."""
    try:
        s = measure_piece(piece, spec)
    except InputError as exc:
        return [_ERROR + str(exc).encode("utf-8", "replace")] * (n + 1)
    parts = s.partitions(n)
    s.chunks, s.blank = [], {}
    return [s.to_bytes(), *(DatasetSummary(spec.hash_name, tallies={}, chunks=c, blank=b).to_bytes()
                            for c, b in parts)]


def reduce_task(hash_name: str, *parts: bytes) -> bytes:
    """The exact duplicates of one hash partition, from every piece's share of it."""
    for b in parts:
        if b.startswith(_ERROR):
            return b
    d = merge_blobs(parts, hash_name).duplicates()
    return json.dumps([d.records, d.blank, d.distinct, d.distinct_blank, d.examples]).encode()


def _duplicates(blobs: Sequence[bytes]) -> Duplicates:
    out = Duplicates()
    for b in blobs:
        if b.startswith(_ERROR):
            raise InputError(b[len(_ERROR):].decode("utf-8", "replace"))
        r, bl, d, db, ex = json.loads(b)
        out = out.combine(Duplicates(int(r), int(bl), int(d), int(db), tuple((int(x), int(y)) for x, y in ex)))
    return out


# ---------------------------------------------------------------- engines


class Engine:
    """Runs tasks somewhere and returns their results in submission order."""

    name = "processes"

    def __init__(self, workers: int, range_bytes: int | None = None) -> None:
        self.workers = workers
        self.range_bytes = range_bytes  # fixed range size (tests); None: from the dataset's size

    def map(self, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> list[Any]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop what this engine started (never an existing cluster it connected to)."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map_reduce(self, pieces: Sequence[Piece], spec: PieceSpec, n: int) -> tuple[list[bytes], list[bytes]]:
        """(each piece's summary without digests, each hash partition's duplicates):
        digests go from the measuring worker to the partition's reduce worker. Only
        engines that can pass results between workers have it (Dask, Ray)."""
        raise NotImplementedError

    partitioned = False  # whether exact duplicates are counted by map_reduce

    def run(self, files: Sequence[Path], kinds: Sequence[str], spec: PieceSpec,
            timing: dict[str, float]) -> tuple[DatasetSummary, Duplicates | None]:
        """Plan the pieces, measure them on the workers, merge the summaries here; with
        a cluster, the duplicates are counted per hash partition on the workers too."""
        t0 = time.perf_counter()
        pieces = self.plan(files, kinds)
        t1 = time.perf_counter()
        dups = None
        if self.partitioned:
            n = _partitions(files, self.workers)
            heads, counted = self.map_reduce(pieces, spec, n)
            t2 = time.perf_counter()
            summary, dups = merge_blobs(heads, spec.hash_name), _duplicates(counted)
            timing["partitions"] = n
        else:
            blobs = self.map(measure_task, [(p, spec) for p in pieces])
            t2 = time.perf_counter()
            summary = merge_blobs(blobs, spec.hash_name)
        timing.update(split=t1 - t0, measure=t2 - t1, merge=time.perf_counter() - t2, pieces=len(pieces))
        return summary, dups

    def plan(self, files: Sequence[Path], kinds: Sequence[str]) -> list[Piece]:
        size = self.range_bytes or _range_size(files, kinds, self.workers)
        pieces: list[Piece] = []
        ranged: list[tuple[int, list[tuple[int, int]]]] = []
        for i, (f, k) in enumerate(zip(files, kinds, strict=True)):
            spans = line_ranges(f, size) if k == "jsonl" else []
            if len(spans) > 1:
                ranged.append((i, spans))
            else:
                pieces.append(Piece(i, str(f), k))
        if ranged:  # line counts of every range but each file's last, counted by the workers
            jobs = [(str(files[i]), a, b) for i, spans in ranged for a, b in spans[:-1]]
            counts = iter(self.map(count_task, jobs))
            for i, spans in ranged:
                starts = accumulate((next(counts) for _ in spans[:-1]), initial=1)
                pieces += [Piece(i, str(files[i]), "jsonl", (a, b, line0))
                           for (a, b), line0 in zip(spans, starts, strict=True)]
        return sorted(pieces, key=lambda p: (p.file_index, p.span or (0, 0, 0)))


def _partitions(files: Sequence[Path], workers: int) -> int:
    """Hash partitions for the duplicate count: a power of two, at least two per worker,
    and enough that one partition's digests stay under about PART_BYTES."""
    total = sum(f.stat().st_size for f in files)
    want = max(2 * workers, total // DIGEST_SHARE // PART_BYTES + 1)
    return 1 << (want - 1).bit_length()


def _range_size(files: Sequence[Path], kinds: Sequence[str], workers: int) -> int:
    total = sum(f.stat().st_size for f, k in zip(files, kinds, strict=True) if k == "jsonl")
    return max(MIN_RANGE, min(MAX_RANGE, total // max(1, 4 * workers)))


def merge_blobs(blobs: Sequence[bytes], hash_name: str) -> DatasetSummary:
    """The merged summary; the first failed piece (in dataset order) raises its message."""
    for b in blobs:
        if b.startswith(_ERROR):
            raise InputError(b[len(_ERROR):].decode("utf-8", "replace"))
    out = DatasetSummary(hash_name, sketches=[])
    for b in blobs:
        out.absorb(DatasetSummary.from_bytes(b))
    return out


class Processes(Engine):
    """N local processes (spawned: safe under any start method and with threads)."""

    def __init__(self, workers: int, range_bytes: int | None = None) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        super().__init__(workers, range_bytes)
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))

    def map(self, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> list[Any]:
        return list(self.pool.map(fn, *zip(*args, strict=True))) if args else []

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)


class Dask(Engine):
    """A dask.distributed Client: on the scheduler at `address`, or on a LocalCluster of
    `workers` single-threaded processes started here."""

    name = "dask"

    def __init__(self, workers: int, address: str | None, range_bytes: int | None = None) -> None:
        try:
            import logging

            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise InputError("--engine dask needs dask.distributed: pip install 'trainproof[dask]'") from None
        super().__init__(workers, range_bytes)
        self.cluster = None
        try:
            if address:
                self.client = Client(address, timeout="20s")
            else:
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                            dashboard_address=None, silence_logs=logging.ERROR)
                self.client = Client(self.cluster)
        except (OSError, TimeoutError) as exc:
            raise InputError(f"--engine dask: cannot reach the scheduler at {address}: {exc}") from None
        self.workers = len(self.client.scheduler_info().get("workers", {})) or workers

    partitioned = True

    def map(self, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> list[Any]:
        futures = [self.client.submit(fn, *a, pure=False) for a in args]
        return list(self.client.gather(futures))

    def map_reduce(self, pieces: Sequence[Piece], spec: PieceSpec, n: int) -> tuple[list[bytes], list[bytes]]:
        c = self.client
        outs = [c.submit(measure_parts_task, p, spec, n, pure=False) for p in pieces]
        heads = [c.submit(operator.getitem, o, 0, pure=False) for o in outs]
        counted = [c.submit(reduce_task, spec.hash_name, *(c.submit(operator.getitem, o, k + 1, pure=False)
                                                           for o in outs), pure=False) for k in range(n)]
        return list(c.gather(heads)), list(c.gather(counted))

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class Ray(Engine):
    """Ray remote functions: on the cluster at `address`, or on a local Ray started here
    with `workers` CPUs."""

    name = "ray"

    def __init__(self, workers: int, address: str | None, range_bytes: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise InputError("--engine ray needs ray: pip install 'trainproof[ray]'") from None
        super().__init__(workers, range_bytes)
        self.ray, self.started = ray, not ray.is_initialized()
        try:
            if self.started:
                ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                         log_to_driver=False, logging_level="ERROR")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"--engine ray: cannot connect to {address}: {exc}".splitlines()[0]) from None
        self.workers = int(ray.cluster_resources().get("CPU", workers))
        self._remote: dict[Callable[..., Any], Any] = {}

    partitioned = True

    def map(self, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> list[Any]:
        remote = self._remote.setdefault(fn, self.ray.remote(num_cpus=1)(fn))
        return list(self.ray.get([remote.remote(*a) for a in args]))

    def map_reduce(self, pieces: Sequence[Piece], spec: PieceSpec, n: int) -> tuple[list[bytes], list[bytes]]:
        ray = self.ray
        measure = ray.remote(num_cpus=1, num_returns=n + 1)(measure_parts_task)
        count = ray.remote(num_cpus=1)(reduce_task)
        outs = [measure.remote(p, spec, n) for p in pieces]  # n + 1 object refs each
        counted = [count.remote(spec.hash_name, *(o[k + 1] for o in outs)) for k in range(n)]
        return list(ray.get([o[0] for o in outs])), list(ray.get(counted))

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def open_engine(engine: str | None, workers: int | None, address: str | None,
                range_bytes: int | None = None) -> Engine | None:
    """None (measure in this process) for one worker and no engine; else the engine."""
    if address and not engine:
        raise InputError("--address needs --engine dask or --engine ray")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError(f"--workers must be a positive number of processes, got {workers}")
    if engine is None:
        return None if (workers or 1) == 1 else Processes(workers or 1, range_bytes)
    import os

    n = workers or os.cpu_count() or 1
    if engine == "dask":
        return Dask(n, address, range_bytes)
    if engine == "ray":
        return Ray(n, address, range_bytes)
    raise InputError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
