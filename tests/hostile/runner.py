"""Runs the campaign's command lines, each in its own process, and measures them.

A fresh `python -m trainproof` costs ~0.4 s of start-up, and the campaign makes more
than a thousand runs on 2 CPUs; so this process imports trainproof once and forks one
child per run. The child is what `python -m trainproof ARGS` is: `trainproof.cli.main`
with stdout and stderr on files, stdin on /dev/null, its own process group, an
address-space limit, and the exit status the interpreter would give (an exception
escaping main prints its traceback and exits 1). The parent waits with a deadline,
kills the whole group past it, and takes the child's peak RSS from wait4.
tests/hostile/test_campaign.py also runs a sample through a real `python -m
trainproof` to show the two agree.

    python -m tests.hostile.runner CASES.json RESULTS.json OUT_DIR
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path

TIME_LIMIT_S = 60.0  # wall seconds: a run still going then is a hang, killed (oracle.CPU_LIMIT_S bounds the work)
AS_LIMIT = 3 << 30  # bytes of address space a run may map: a runaway allocation fails instead of swapping
PARALLEL = 4  # runs in flight at once: watch runs mostly sleep
BIG = "@@BIG@@"


def _child(argv: list[str], out: str, err: str) -> None:
    code = 1
    try:
        os.setpgid(0, 0)
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            f = os.open(path, flags, 0o644)
            os.dup2(f, fd)
            os.close(f)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = ["trainproof", *argv]
        from trainproof.cli import main

        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # what the interpreter does with an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed or full stdout: the exit code stands
                stream.flush()
        os._exit(code if isinstance(code, int) else 1)


def _expand(path: str, size: int) -> bytes:
    """Write the 100 MB line in place of the BIG token; returns the small original."""
    small = Path(path).read_bytes()
    head, _, tail = small.partition(BIG.encode())
    chunk = b"a" * (1 << 20)
    with open(path, "wb") as f:
        f.write(head)
        for _ in range(size >> 20):
            f.write(chunk)
        f.write(tail)
    return small


def run_all(cases: list[dict], out_dir: Path) -> list[dict]:
    results: list[dict] = []
    pending = list(enumerate(cases))
    running: dict[int, tuple[int, dict, float, str, str, bytes | None]] = {}
    while pending or running:
        while pending and len(running) < PARALLEL:
            big_busy = any(r[1].get("big_file") for r in running.values())
            i, case = pending[0]
            if big_busy or (case.get("big_file") and running):
                break  # a 100 MB input runs alone, and is the only one on disk at a time
            pending.pop(0)
            small = _expand(case["big_file"], case["big_size"]) if case.get("big_file") else None
            out, err = str(out_dir / f"{i}.out"), str(out_dir / f"{i}.err")
            pid = os.fork()
            if pid == 0:
                _child(case["argv"], out, err)
            running[pid] = (i, case, time.monotonic(), out, err, small)
        _reap(running, results)
        time.sleep(0.005)
    results.sort(key=lambda r: r["index"])
    return results


def _reap(running: dict, results: list[dict]) -> None:
    for pid in list(running):
        i, case, start, out, err, small = running[pid]
        done, status, usage = os.wait4(pid, os.WNOHANG)
        timed_out = False
        if done == 0:
            if time.monotonic() - start < TIME_LIMIT_S:
                continue
            timed_out = True
            os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # anything the run left behind (a pool, a probe)
        wall = time.monotonic() - start
        del running[pid]
        if small is not None:
            Path(case["big_file"]).write_bytes(small)
        rc = os.waitstatus_to_exitcode(status)
        results.append({"index": i, "id": case["id"], "rc": rc, "timed_out": timed_out, "wall_s": round(wall, 3),
                        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
                        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
                        "stdout": out, "stderr": err})


def preload() -> None:
    """Import trainproof's own modules once, before forking, so that each run pays for
    its work and not for imports. Third-party readers (pyarrow, soundfile, tokenizers)
    stay unimported: they would add their memory to every child's peak RSS."""
    import importlib
    import pkgutil

    import trainproof

    for mod in pkgutil.walk_packages(trainproof.__path__, "trainproof."):
        skip = ("trainproof.integrations", "trainproof.probes._import_child", "trainproof.__main__")
        if mod.name.startswith(skip):
            continue  # the framework callbacks import torch; the import probe's child runs alone
        with contextlib.suppress(ImportError):  # an optional reader without its library
            importlib.import_module(mod.name)
    _warm_up()
    gc.collect()
    gc.freeze()  # the children's collector then leaves the parent's objects (and their pages) alone


def _warm_up() -> None:
    """Judge one healthy log with each log command, output discarded: lazily built
    tables (the rule catalogue, compiled patterns) are then built once, not per run."""
    import io
    import tempfile

    from trainproof.cli import main

    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "metrics.jsonl"
        log.write_text("".join(f'{{"step": {i}, "loss": {3.0 / (i + 1)}}}\n' for i in range(30)))
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            for argv in (["epoch", str(log)], ["doctor", str(log)], ["compare", str(log), str(log)]):
                main([*argv, "--json"])


def main(argv: list[str]) -> int:
    cases = json.loads(Path(argv[0]).read_text())
    out_dir = Path(argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    preload()
    Path(argv[1]).write_text(json.dumps(run_all(cases, out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
