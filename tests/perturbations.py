"""The ways of logging the same run that a verdict must not depend on, in one place.

tests/test_invariance.py holds the galleries, generated curves and evidence/ to them;
scripts/public_invariance.py applies the same perturbations to the public runs and keeps
the count of verdicts that move. Both import them from here, so the measurement and the
tests can never drift apart.

Perturbations, each a real way of logging the same run: `cut` a log stopped earlier;
`halve` a logger that records the instantaneous loss every 2k steps and also logs step 0
(nanoGPT); `halve_drop_first` the same without step 0 (points at 2k, 4k, ...);
`mean_pairs` HF Trainer with logging_steps doubled, whose logged loss is the mean over
the steps since the last log (transformers 5.24's Trainer._maybe_log_save_evaluate divides
the summed loss by the steps since the previous log; grad_norm and the LR are the last
step's), so each point is the mean of two original points and the first holds the first
2k steps; the scalings other loss units; the offsets a resumed or shifted step counter.

The scalings re-round: a logger that prints its loss to 4 decimals (HF Trainer rounds the
logged train loss to 4) prints it to 4 decimals in bits too, so a scaled series is rounded
back to the decimals its own values were printed with (`printed_decimals`). A series written
at full float precision is left unrounded. Without this, a converged rounded log scaled to
bits reads as one that stopped being rounded - values like 0.00014 where the log could only
say 0.0001 or 0.0 - which no real log in bits would show.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trainproof.engine import judge_run
from trainproof.model import Level, Run, Series

LOSSES = ("loss", "eval_loss")
PER_STEP = ("loss", "grad_norm", "lr", "step_time")  # what a trainer logs every logging interval
MAX_PRINTED_DECIMALS = 10  # more than this is a float written at full precision, not a printed one

Perturbation = Callable[[Run], Run]


def verdict(run: Run) -> tuple[str, frozenset[str]]:
    """The verdict and the set of rule IDs that FAIL the run."""
    r = judge_run(run)
    return r.verdict.value, frozenset(f.rule_id for f in r.findings if f.level is Level.FAIL)


def _map(run: Run, fn: Callable[[Series], Series]) -> Run:
    """fn applied to every series, those the reader kept in meta included (the held-out
    scores TP-EVAL-METRIC-FROZEN reads are the same log: cut and shifted with it)."""
    meta = dict(run.meta)
    if isinstance(held := meta.get("heldout_metrics"), dict):
        meta["heldout_metrics"] = {k: fn(s) for k, s in held.items()}
    return Run(run.path, run.format, {k: fn(s) for k, s in run.series.items()}, run.records,
               run.columns, run.notes, meta)


def _keep(s: Series, mask: np.ndarray) -> Series:
    return Series(s.name, s.steps[mask], s.values[mask])


def cut(k: int) -> Perturbation:
    """The log stopped k loss points earlier (every metric up to that step)."""
    def apply(run: Run) -> Run:
        last = run.series["loss"].steps[-1 - k]
        return _map(run, lambda s: _keep(s, s.steps <= last))
    return apply


def halve(first: bool) -> Perturbation:
    """Every other per-step point dropped: the first kept (first=True) or dropped."""
    def apply(run: Run) -> Run:
        loss_steps = run.series["loss"].steps
        kept = loss_steps[0 if first else 1::2]
        return _map(run, lambda s: _keep(s, np.isin(s.steps, kept)) if s.name in PER_STEP else s)
    return apply


def thin(k: int) -> Perturbation:
    """Every k-th per-step point kept (the logging interval times k), the first kept."""
    def apply(run: Run) -> Run:
        kept = run.series["loss"].steps[::k]
        return _map(run, lambda s: _keep(s, np.isin(s.steps, kept)) if s.name in PER_STEP else s)
    return apply


def mean_pairs(run: Run) -> Run:
    """HF Trainer's logging_steps doubled: each logged loss is the mean over its interval,
    so a point at every other step holds the mean of two of the original points."""
    def pair(s: Series) -> Series:
        if s.name != "loss" or len(s) < 2:
            return s
        m = len(s) // 2 * 2
        return Series(s.name, s.steps[1:m:2], (s.values[0:m:2] + s.values[1:m:2]) / 2)
    halved = halve(first=False)(run)
    return _map(halved, lambda s: pair(run.series["loss"]) if s.name == "loss" else s)


def printed_decimals(values: np.ndarray) -> int | None:
    """The decimals a series was printed with: the fewest that reproduce every finite value,
    or None when some value needs more than MAX_PRINTED_DECIMALS (written at full precision)."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return None
    tol = 1e-12 * np.maximum(1.0, np.abs(v))
    for d in range(MAX_PRINTED_DECIMALS + 1):
        if np.all(np.abs(np.round(v, d) - v) <= tol):
            return d
    return None


def _rescaled(s: Series, f: float) -> Series:
    d = printed_decimals(s.values)
    values = s.values * f
    return Series(s.name, s.steps, values if d is None else np.round(values, d))


def scale(f: float) -> Perturbation:
    """The losses written in other units, printed to the decimals the log printed them with."""
    return lambda run: _map(run, lambda s: _rescaled(s, f) if s.name in LOSSES else s)


def offset(d: float) -> Perturbation:
    return lambda run: _map(run, lambda s: Series(s.name, s.steps + d, s.values))


PERTURBATIONS: dict[str, Perturbation] = {
    "cut1": cut(1), "cut2": cut(2), "cut3": cut(3), "halve": halve(first=True),
    "halve_drop_first": halve(first=False), "mean_pairs": mean_pairs, "x0.5": scale(0.5), "x2": scale(2.0),
    "nats_to_bits": scale(1.0 / np.log(2.0)), "steps+1000": offset(1000.0), "steps-37": offset(-37.0),
}
UNIT_FREE = tuple(n for n in PERTURBATIONS if not n.startswith(("x", "nats")))  # ln V, ln K are in nats

END_VS_START = frozenset({"TP-LOSS-ROSE", "TP-DEAD-RUN"})
BLURS_FIRST = ("halve_drop_first", "mean_pairs")  # the first logged point is lost or averaged


def exempt(name: str, base: tuple[str, frozenset[str]], got: tuple[str, frozenset[str]]) -> bool:
    """The stated exception: only the end-vs-start rules (TP-LOSS-ROSE, TP-DEAD-RUN) may
    move, only on a run they fail, only when the first point is lost or blurred."""
    if name not in BLURS_FIRST or not (base[1] ^ got[1]) <= END_VS_START:
        return False
    return bool(base[1] & END_VS_START)
