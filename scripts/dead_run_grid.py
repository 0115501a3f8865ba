"""What TP-DEAD-RUN / TP-NO-PROGRESS make of generated runs: a constant loss under batch noise
(dead) and a loss that falls by 10-30 % (learning), at 0.5-30 % noise per point and 12-200
points, many seeds. Prints the verdicts per cell; the CHANGELOG quotes its totals.

    PYTHONPATH=src python scripts/dead_run_grid.py
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from trainproof.engine import judge_run
from trainproof.examples import run_from

LENGTHS = (12, 30, 60, 200)


def verdict(loss: np.ndarray) -> str:
    rep = judge_run(run_from({"loss": loss.tolist()}))
    fails = sorted({f.rule_id for f in rep.findings if f.level.value == "FAIL"})
    return rep.verdict.value + (":" + ",".join(fails) if fails else "")


def main() -> None:
    dead: Counter = Counter()
    for noise in (0.005, 0.02, 0.05, 0.1, 0.2, 0.3):
        cell = Counter(verdict(3.0 * np.exp(np.random.default_rng(seed).normal(0, noise, n)))
                       for n in LENGTHS for seed in range(20))
        dead.update(cell)
        print(f"dead, noise {noise:.3f}: {dict(cell)}")
    print(f"dead, all: {dict(dead)}")
    learning: Counter = Counter()
    for gain in (0.1, 0.2, 0.3):
        for noise in (0.05, 0.1, 0.2, 0.3):
            cell = Counter()
            for n in LENGTHS:
                t = np.linspace(0, 1, n)
                curve = 3.0 * (1 - gain * (1 - np.exp(-4 * t)) / (1 - np.exp(-4)))
                for seed in range(10):
                    cell[verdict(curve * np.exp(np.random.default_rng(seed).normal(0, noise, n)))] += 1
            learning.update(cell)
            print(f"learning {gain:.0%}, noise {noise:.2f}: {dict(cell)}")
    print(f"learning, all: {dict(learning)}")


if __name__ == "__main__":
    main()
