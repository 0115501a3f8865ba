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
the (file, line) id one process would give it. A Parquet file with several row groups
is cut into runs of whole row groups, their first rows known from the footer. The
engine packages are imported only when asked for."""

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
from trainproof.probes.dataset_read import BLOCK, ByteRange, count_lf, parquet_row_groups
from trainproof.probes.dataset_summary import DatasetSummary, Duplicates

ENGINES = ("dask", "ray")
# Pieces of large JSONL and Parquet files: about 4 per worker over the whole dataset,
# within these bounds (a much smaller piece costs more in task overhead than it saves).
MIN_RANGE, MAX_RANGE = 16 << 20, 256 << 20
_ERROR = b"TPERR\n"
# Cluster engines count exact duplicates per hash partition, each partition on one
# worker, with at most about PART_BYTES of digests in it. Digests are 16 bytes a record,
# at most 1/DIGEST_SHARE of the dataset's bytes for records of 128 bytes or more.
PART_BYTES, DIGEST_SHARE = 1 << 30, 8
GROUPS_PER_WORKER = 4  # map tasks per worker on a cluster (balance against shuffle edges)


# ---------------------------------------------------------------- the tasks (run on workers)


def _error(piece: Piece, exc: InputError) -> bytes:
    """A failed piece: its place in the dataset (so the driver can report the first one,
    as one process would) and its one-line message."""
    where = f"{piece.file_index} {piece.span[0] if piece.span else 0}\n"
    return _ERROR + where.encode() + str(exc).encode("utf-8", "replace")


def _raise_first_error(blobs: Sequence[bytes]) -> None:
    errors = [b[len(_ERROR):].split(b"\n", 1) for b in blobs if b.startswith(_ERROR)]
    if errors:
        first = min(errors, key=lambda e: tuple(map(int, e[0].split())))
        raise InputError(first[1].decode("utf-8", "replace"))


def measure_task(piece: Piece, spec: PieceSpec) -> bytes:
    """One piece's summary as bytes; a piece the single process would reject (an
    unreadable shard) comes back as its one-line message, not as an engine traceback."""
    try:
        return measure_piece(piece, spec).to_bytes()
    except InputError as exc:
        return _error(piece, exc)


def count_task(path: str, start: int, end: int) -> int:
    return count_newlines(Path(path), start, end)


def measure_parts_task(pieces: Sequence[Piece], spec: PieceSpec, n: int) -> list[bytes]:
    """A group of pieces measured into one summary: first the summary without its
    digests, then the digests split into `n` hash partitions, each bound for the reduce
    task of its partition (never for the driver)."""
    s = DatasetSummary(spec.hash_name, sketches=[])
    for piece in pieces:
        try:
            s.absorb(measure_piece(piece, spec))
        except InputError as exc:
            return [_error(piece, exc)] * (n + 1)
    parts = s.partitions(n)
    s.chunks, s.blank = [], {}
    return [s.to_bytes(), *(DatasetSummary(spec.hash_name, tallies={}, chunks=c, blank=b).to_bytes()
                            for c, b in parts)]


def reduce_task(hash_name: str, *parts: bytes) -> bytes:
    """The exact duplicates of one hash partition, from every piece's share of it."""
    errors = [b for b in parts if b.startswith(_ERROR)]
    if errors:
        return errors[0]  # the same failure reaches the driver through the summaries too
    d = merge_blobs(parts, hash_name).duplicates()
    return json.dumps([d.records, d.blank, d.distinct, d.distinct_blank, d.examples]).encode()


def _duplicates(blobs: Sequence[bytes]) -> Duplicates:
    _raise_first_error(blobs)
    out = Duplicates()
    for b in blobs:
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

    def map_reduce(self, groups: Sequence[Sequence[Piece]], spec: PieceSpec,
                   n: int) -> tuple[list[bytes], list[bytes]]:
        """(each group's summary without digests, each hash partition's duplicates):
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
            groups = _groups(pieces, GROUPS_PER_WORKER * self.workers)
            heads, counted = self.map_reduce(groups, spec, n)
            t2 = time.perf_counter()
            summary = merge_blobs(heads, spec.hash_name)
            dups = _duplicates(counted)
            timing.update(partitions=n, groups=len(groups))
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
            elif k == "parquet":
                pieces += _row_group_pieces(i, f, size)
            else:
                pieces.append(Piece(i, str(f), k))
        if ranged:  # line counts of every range but each file's last, counted by the workers
            jobs = [(str(files[i]), a, b) for i, spans in ranged for a, b in spans[:-1]]
            counts = iter(self.map(count_task, jobs))
            for i, spans in ranged:
                starts = accumulate((next(counts) for _ in spans[:-1]), initial=1)
                pieces += [Piece(i, str(files[i]), "jsonl", (a, b, line0), b - a)
                           for (a, b), line0 in zip(spans, starts, strict=True)]
        return sorted(pieces, key=lambda p: (p.file_index, p.span or (0, 0, 0)))


def line_ranges(path: Path, size: int) -> list[tuple[int, int]]:
    """(start, end) byte ranges of about `size` bytes covering the file, each starting
    just after a newline (or at 0), so every line lies in exactly one range."""
    total = path.stat().st_size
    cuts = [0]
    with open(path, "rb") as f:
        while cuts[-1] + size < total:
            f.seek(cuts[-1] + size)
            skipped = 0
            while block := f.read(BLOCK):  # to the end of the line the nominal cut falls in
                nl = block.find(b"\n")
                if nl >= 0:
                    skipped += nl + 1
                    break
                skipped += len(block)
            if cuts[-1] + size + skipped >= total:
                break
            cuts.append(cuts[-1] + size + skipped)
    return list(zip(cuts, [*cuts[1:], total], strict=True))


def count_newlines(path: Path, start: int, end: int) -> int:
    """Newlines in bytes [start, end): the line numbers a later range starts at."""
    n = 0
    with open(path, "rb") as raw:
        f = ByteRange(raw, start, end)
        while block := f.read(4 << 20):
            n += count_lf(block)
    return n


def _groups(pieces: Sequence[Piece], n: int) -> list[list[Piece]]:
    """Pieces in at most `n` groups of about equal bytes (largest first, each to the
    lightest group): the shuffle has groups x partitions edges, not pieces x partitions."""
    sizes = [_piece_bytes(p) for p in pieces]
    groups: list[list[Piece]] = [[] for _ in range(min(n, len(pieces)))]
    load = [0] * len(groups)
    for i in sorted(range(len(pieces)), key=lambda i: -sizes[i]):
        g = load.index(min(load))
        groups[g].append(pieces[i])
        load[g] += sizes[i]
    return [sorted(g, key=lambda p: (p.file_index, p.span or (0, 0, 0))) for g in groups if g]


def _piece_bytes(p: Piece) -> int:
    return p.nbytes or Path(p.path).stat().st_size


def _row_group_pieces(i: int, f: Path, size: int) -> list[Piece]:
    """A Parquet file as runs of whole row groups of about `size` bytes (uncompressed),
    each knowing the row it starts at from the footer; one piece when it has one group."""
    groups = parquet_row_groups(f)
    if len(groups) < 2:
        return [Piece(i, str(f), "parquet")]
    pieces, start, row, acc = [], 0, 1, 0
    for g, (_, nbytes) in enumerate(groups):
        acc += nbytes
        if acc >= size or g == len(groups) - 1:
            pieces.append(Piece(i, str(f), "parquet", (start, g + 1, row), acc))
            row += sum(r for r, _ in groups[start:g + 1])
            start, acc = g + 1, 0
    return pieces if len(pieces) > 1 else [Piece(i, str(f), "parquet")]


def _partitions(files: Sequence[Path], workers: int) -> int:
    """Hash partitions for the duplicate count: a power of two, at least two per worker,
    and enough that one partition's digests stay under about PART_BYTES."""
    total = sum(f.stat().st_size for f in files)
    want = max(2 * workers, total // DIGEST_SHARE // PART_BYTES + 1)
    return 1 << (want - 1).bit_length()


def _range_size(files: Sequence[Path], kinds: Sequence[str], workers: int) -> int:
    total = sum(f.stat().st_size for f, k in zip(files, kinds, strict=True) if k in ("jsonl", "parquet"))
    return max(MIN_RANGE, min(MAX_RANGE, total // max(1, 4 * workers)))


def merge_blobs(blobs: Sequence[bytes], hash_name: str) -> DatasetSummary:
    """The merged summary; the first failed piece (in dataset order) raises its message."""
    _raise_first_error(blobs)
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

    def map_reduce(self, groups: Sequence[Sequence[Piece]], spec: PieceSpec,
                   n: int) -> tuple[list[bytes], list[bytes]]:
        c = self.client
        outs = [c.submit(measure_parts_task, list(g), spec, n, pure=False) for g in groups]
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

    def map_reduce(self, groups: Sequence[Sequence[Piece]], spec: PieceSpec,
                   n: int) -> tuple[list[bytes], list[bytes]]:
        ray = self.ray
        measure = ray.remote(num_cpus=1, num_returns=n + 1)(measure_parts_task)
        count = ray.remote(num_cpus=1)(reduce_task)
        outs = [measure.remote(list(g), spec, n) for g in groups]  # n + 1 object refs each
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
