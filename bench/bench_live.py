#!/usr/bin/env python3
"""What the live guardian costs, as ratios against references measured in the same run.

1. Callback: the HF TrainproofCallback's work per log event (record + judge, with the
   deterministic thinning) and per step (two perf_counter calls), against one training
   step of the tiny GPT-2 the tests train (the cheapest step a real run has).
2. watch: one poll after 1,000 lines were appended to a large JSONL log (read only the
   new bytes, rebuild the series, judge), against re-reading the whole file with
   `read_run` and judging it (what a non-incremental watch pays every poll).

    python bench/bench_live.py [--lines 1000000] [--events 2000]

Large inputs go under /tmp only."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def callback_costs(events: int) -> dict[str, float]:
    import torch
    import transformers

    from trainproof.integrations.hf import TrainproofCallback

    torch.set_num_threads(1)
    cfg = transformers.GPT2Config(vocab_size=256, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    model = transformers.GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = torch.randint(0, 256, (8, 32))
    step_times = []
    for _ in range(30):
        t = time.perf_counter()
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        step_times.append(time.perf_counter() - t)
    step = statistics.median(step_times[5:])

    args = transformers.TrainingArguments(output_dir=tempfile.mkdtemp(), use_cpu=True, report_to=[])
    state, control = transformers.TrainerState(max_steps=events), transformers.TrainerControl()
    cb = TrainproofCallback(policy="stop_on_fail")
    cb.on_train_begin(args, state, control)
    rng = random.Random(0)
    t = time.perf_counter()
    for i in range(1, events + 1):
        state.global_step = i
        cb.on_step_begin(args, state, control)
        cb.on_step_end(args, state, control)
        logs = {"loss": 3.0 * math.exp(-i / events) + 0.05 * rng.random(), "grad_norm": 1.0 + rng.random(),
                "learning_rate": 1e-3, "epoch": i / 100}
        cb.on_log(args, state, control, logs=logs)
    per_event = (time.perf_counter() - t) / events
    t = time.perf_counter()
    for _ in range(100_000):
        cb.on_step_begin(args, state, control)
        cb.on_step_end(args, state, control)
    per_step_hooks = (time.perf_counter() - t) / 100_000
    assert not cb.errors and cb.stopped_at is None, (cb.errors, cb.stopped_at)
    return {"tiny_gpt2_step_ms": step * 1e3, "per_log_event_ms": per_event * 1e3,
            "per_step_hooks_us": per_step_hooks * 1e6,
            "log_event_vs_step": per_event / step, "step_hooks_vs_step": per_step_hooks / step}


def write_log(path: Path, first: int, count: int) -> None:
    rng = random.Random(first)
    with open(path, "a") as fh:
        fh.writelines(json.dumps({"step": i, "loss": 3.0 * math.exp(-i / 5e5) + 0.1 * rng.random(),
                                  "lr": 1e-3, "grad_norm": 1.0 + rng.random()}) + "\n"
                      for i in range(first, first + count))


def watch_costs(lines: int) -> dict[str, float]:
    from trainproof.engine import judge_run
    from trainproof.parsers import read_run
    from trainproof.parsers.incremental import LineSource

    path = Path(tempfile.mkdtemp(dir="/tmp")) / "train.jsonl"
    write_log(path, 1, lines)
    source = LineSource(path, "jsonl", str(path), {})
    t = time.perf_counter()
    source.update()
    judge_run(source.run())
    catch_up = time.perf_counter() - t
    polls, rereads = [], []
    for k in range(5):
        write_log(path, lines + 1 + k * 1000, 1000)
        t = time.perf_counter()
        source.update()
        report = judge_run(source.run())
        polls.append(time.perf_counter() - t)
        t = time.perf_counter()
        whole = judge_run(read_run(path, "jsonl"))
        rereads.append(time.perf_counter() - t)
        assert whole.findings == report.findings or whole.verdict == report.verdict
    size = path.stat().st_size
    path.unlink()
    poll, reread = statistics.median(polls), statistics.median(rereads)
    return {"lines": lines, "mb": size / 1e6, "catch_up_s": catch_up, "poll_1000_new_lines_s": poll,
            "whole_reread_s": reread, "poll_vs_reread": poll / reread,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--events", type=int, default=2000)
    a = ap.parse_args()
    with contextlib.redirect_stderr(io.StringIO()):  # the callback's own messages
        out = {"watch": watch_costs(a.lines), "callback": callback_costs(a.events)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
