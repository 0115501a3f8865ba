"""Measurement for #14 (not a reader trainproof ships): a JSONL log read by one process,
or split over two - a child forked after the imports decodes the second half with the
same typed path (parsers/jsonl.py, typed.py) and sends its columns back through a pipe
while the parent decodes the first half. A prototype: it skips what the real reader
does across the split (notes, progress fields, a half-written tail, steps carried from
the previous row), so it measures the cost and the gain, nothing more.

    PYTHONPATH=src python bench/bench_parallel_read.py /tmp/bench/log_5m.jsonl one
    PYTHONPATH=src python bench/bench_parallel_read.py /tmp/bench/log_5m.jsonl two
"""

from __future__ import annotations

import functools
import os
import resource
import sys
import time
from typing import Any

import numpy as np

from trainproof.parsers import jsonl
from trainproof.parsers.base import Columns, LineBlocks
from trainproof.parsers.rows import add_columns, add_rows, find_step_key
from trainproof.parsers.typed import Template

Cols = dict[str, tuple[np.ndarray, np.ndarray]]


class Window:
    """A file read from its current position for `n` bytes only."""

    def __init__(self, fh: Any, n: int) -> None:
        self.fh, self.left = fh, n

    def read(self, n: int) -> bytes:
        data = self.fh.read(min(n, self.left))
        self.left -= len(data)
        return data


def read_range(path: str, a: int, b: int) -> Cols:
    """The columns of the lines in bytes [a, b) (both at line starts), as jsonl.read takes them."""
    cols, tally, planned, template = Columns(), jsonl.Tally(), jsonl.Planned(), Template()
    step_key, decided = None, False
    with open(path, "rb") as fh:
        fh.seek(a)
        for chunk in LineBlocks(Window(fh, b - a), jsonl.BLOCK, jsonl.MAX_LINE):
            typed = jsonl._typed_block(chunk, template) if decided else None
            if typed is None:
                rows = jsonl.decode_block(chunk, tally, planned)
                if not decided:
                    step_key, decided = find_step_key(set().union(*rows[:100])), True
                add_rows(rows, cols, tally.records, step_key, False)
                template.learn(rows)
                tally.records += len(rows)
            else:
                get = functools.partial(template.column, typed)
                add_columns(typed, template.keys, get, cols, tally.records, step_key, may_have_bools=False)
                tally.records += len(typed)
    return cols.arrays()


def send(fd: int, cols: Cols) -> None:
    with os.fdopen(fd, "wb") as f:
        for k, (s, v) in cols.items():
            name = k.encode()
            f.write(len(name).to_bytes(4, "little") + name + s.size.to_bytes(8, "little"))
            f.write(memoryview(s).cast("B"))
            f.write(memoryview(v).cast("B"))


def receive(fd: int) -> Cols:
    out = {}
    with os.fdopen(fd, "rb") as f:
        while head := f.read(4):
            name = f.read(int.from_bytes(head, "little")).decode()
            n = int.from_bytes(f.read(8), "little")
            out[name] = (np.frombuffer(f.read(8 * n)), np.frombuffer(f.read(8 * n)))
    return out


def two(path: str, size: int) -> tuple[Cols, float]:
    with open(path, "rb") as fh:
        fh.seek(size // 2)
        fh.readline()
        mid = fh.tell()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        send(w, read_range(path, mid, size))
        os._exit(0)
    os.close(w)
    first = read_range(path, 0, mid)
    second = receive(r)
    _, _, usage = os.wait4(pid, 0)
    out = {k: (np.concatenate([first[k][0], second[k][0]]), np.concatenate([first[k][1], second[k][1]]))
           for k in first}
    return out, usage.ru_utime + usage.ru_stime


def main() -> int:
    path, mode = sys.argv[1], sys.argv[2]
    size = os.path.getsize(path)
    t0, c0 = time.perf_counter(), time.process_time()
    child = 0.0
    if mode == "one":
        out = read_range(path, 0, size)
    else:
        out, child = two(path, size)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{mode}: wall {wall:.2f} s, CPU {cpu:.2f} s + child {child:.2f} s, peak {peak:.0f} MB, "
          f"{out['loss'][1].size} loss points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
