"""Compare rules: a run judged against a known-good baseline of the same task. They
catch what no single curve can - a run that learns, just far worse than it should
(shuffled labels, a broken tokenizer, the wrong data)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.run import edge_medians, loss_blocks

G = "compare"


@dataclass(frozen=True)
class Pair:
    baseline: Run
    run: Run


def _positive_loss(run: Run) -> Series | None:
    s = run.get("loss")
    if s is None:
        return None
    f = s.finite_only()
    return f if len(f) >= 2 and f.values.min() > 0 else None


def comparable(pair: Pair) -> str | None:
    """Why the pair cannot be compared at all, or None when it can."""
    for side, r in (("baseline", pair.baseline), ("run", pair.run)):
        if _positive_loss(r) is None:
            return f"{side} {r.path} has no positive finite loss series of 2+ points"
    return None


def _floor(s: Series) -> tuple[float, float]:
    b = loss_blocks(s)
    i = int(b.medians.argmin())
    return float(b.medians[i]), float(b.steps[i])


def ranking_row(pair: Pair) -> dict[str, object]:
    """The numbers of the N-way table for one comparable pair."""
    b, r = _positive_loss(pair.baseline), _positive_loss(pair.run)
    assert b is not None and r is not None
    (bf, _), (rf, _) = _floor(b), _floor(r)
    _, be, _ = edge_medians(b)
    rs, re_, _ = edge_medians(r)
    return {"run": pair.run.path, "floor": rf, "end": re_, "floor_ratio": rf / bf,
            "end_ratio": re_ / be, "improvement": (rs - re_) / rs}


def _loc(pair: Pair, step: float | None = None) -> Location:
    return Location(pair.run.path, step)


FLOOR_RATIO = rule(
    id="TP-FLOOR-RATIO", level=Level.FAIL, group=G,
    title="Loss floor is far above the baseline's.",
    evidence="run floor {run_floor} vs baseline floor {base_floor} (ratio {ratio:.2f}x > {limit_ratio})",
    summary="The best loss the run reached is a multiple of the best loss the baseline reached.",
    why="Same task, same model, several times the achievable loss: the run learns something, "
    "but not the task - shuffled labels, a wrong tokenizer, corrupted data.",
    fix="Diff the run's data pipeline and config against the baseline's.",
    thresholds={"ratio": Threshold(2.0, "x baseline floor", "Seeds of one healthy config "
                                   "differ by a few percent; 2x is a different regime.")},
    fires=Example({"baseline": {"loss": [1.5, 1.2, 1.0, 0.95, 0.94]},
                   "run": {"loss": [15.0, 9.0, 6.0, 5.7, 5.6]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.2, 1.0, 0.95, 0.94]},
                    "run": {"loss": [1.5, 1.25, 1.05, 0.97, 0.95]}}),
)


@check("floor-ratio", FLOOR_RATIO)
def floor_ratio(pair: Pair) -> list[Finding] | Skip:
    b, r = _positive_loss(pair.baseline), _positive_loss(pair.run)
    assert b is not None and r is not None  # guaranteed by comparable()
    (bf, _), (rf, rstep) = _floor(b), _floor(r)
    ratio = rf / bf
    if ratio > FLOOR_RATIO.t("ratio"):
        return [FLOOR_RATIO.finding(_loc(pair, rstep), run_floor=rf, base_floor=bf, ratio=ratio)]
    return []


END_RATIO = rule(
    id="TP-END-RATIO", level=Level.FAIL, group=G,
    title="End loss is far above the baseline's.",
    evidence="run end {run_end} vs baseline end {base_end} (medians of the last {k} points; "
    "ratio {ratio:.2f}x > {limit_ratio})",
    summary="Where the run finished is a multiple of where the baseline finished.",
    why="The result you would ship is several times worse than the one you know is achievable.",
    fix="Look for what differs from the baseline: learning rate, data, precision, seed-only "
    "changes should not do this.",
    thresholds={"ratio": Threshold(2.0, "x baseline end", "As for the floor: 2x is outside "
                                   "seed-to-seed variation.")},
    fires=Example({"baseline": {"loss": [1.5, 1.2, 1.1, 1.08, 1.06]},
                   "run": {"loss": [1.4, 3.0, 6.0, 7.4, 7.5]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.2, 1.1, 1.08, 1.06]},
                    "run": {"loss": [1.5, 1.25, 1.12, 1.09, 1.07]}}),
)


@check("end-ratio", END_RATIO)
def end_ratio(pair: Pair) -> list[Finding] | Skip:
    b, r = _positive_loss(pair.baseline), _positive_loss(pair.run)
    assert b is not None and r is not None
    _, b_end, kb = edge_medians(b)
    _, r_end, kr = edge_medians(r)
    ratio = r_end / b_end
    if ratio > END_RATIO.t("ratio"):
        return [END_RATIO.finding(_loc(pair), run_end=r_end, base_end=b_end, ratio=ratio,
                                  k=kr if kr == kb else f"{kr}/{kb}")]
    return []


NEG_IMPROVE = rule(
    id="TP-NEG-IMPROVE", level=Level.FAIL, group=G,
    title="The run got worse from start to end.",
    evidence="start {start} -> end {end} (medians of {k} points), while the baseline went "
    "{base_start} -> {base_end}",
    summary="The run's end loss is above its start loss while the baseline improved.",
    why="Training made the model worse than its initialisation; whatever it is doing is not "
    "the task.",
    fix="Lower the learning rate; check precision (fp16 overflow) and data.",
    fires=Example({"baseline": {"loss": [1.5, 1.3, 1.2, 1.1, 1.0]},
                   "run": {"loss": [1.4, 2.0, 4.0, 6.0, 7.0]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.3, 1.2, 1.1, 1.0]},
                    "run": {"loss": [1.5, 1.35, 1.2, 1.15, 1.05]}}),
)

IMPROVE_DEFICIT = rule(
    id="TP-IMPROVE-DEFICIT", level=Level.FAIL, group=G,
    title="The run improved far less than the baseline.",
    evidence="run improved {run_imp:.1%} vs baseline {base_imp:.1%} ({share:.2f} of the "
    "baseline's < {limit_share})",
    summary="The run's relative start-to-end improvement is a small fraction of the baseline's.",
    why="A run that barely moves while the same recipe moved a lot is not training: lr 0, "
    "frozen weights, a scheduler stuck in warm-up.",
    fix="Compare the logged lr and the trainable parameter count with the baseline's.",
    thresholds={"share": Threshold(0.25, "of the baseline's improvement", "Seeds of one "
                                   "healthy config improve within 2x of each other.")},
    fires=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0, 0.95, 0.94, 0.94]},
                   "run": {"loss": [1.52, 1.50, 1.51, 1.49, 1.50, 1.50, 1.49, 1.48, 1.49, 1.49]}}),
    passes=Example({"baseline": {"loss": [1.5, 1.4, 1.3, 1.2, 1.1, 1.0, 1.0, 0.95, 0.94, 0.94]},
                    "run": {"loss": [1.5, 1.4, 1.32, 1.2, 1.1, 1.05, 1.0, 0.97, 0.95, 0.95]}}),
)


@check("improvement", NEG_IMPROVE, IMPROVE_DEFICIT)
def improvement(pair: Pair) -> list[Finding] | Skip:
    b, r = _positive_loss(pair.baseline), _positive_loss(pair.run)
    assert b is not None and r is not None
    bs, be, _ = edge_medians(b)
    rs, re_, k = edge_medians(r)
    base_imp, run_imp = (bs - be) / bs, (rs - re_) / rs
    if re_ > rs and base_imp > 0:
        return [NEG_IMPROVE.finding(_loc(pair), start=rs, end=re_, k=k, base_start=bs, base_end=be)]
    if base_imp <= 0:
        return Skip(SkipKind.DEGENERATE, "the baseline did not improve; relative improvement is meaningless")
    share = run_imp / base_imp
    if share < IMPROVE_DEFICIT.t("share"):
        return [IMPROVE_DEFICIT.finding(_loc(pair), run_imp=run_imp, base_imp=base_imp, share=share)]
    return []


GRADNORM_RATIO = rule(
    id="TP-GRADNORM-RATIO", level=Level.WARN, group=G,
    title="Gradient norms are far above the baseline's.",
    evidence="run median grad_norm {run_med} vs baseline {base_med} ({ratio:.2f}x > {limit_ratio})",
    summary="The run's typical gradient norm is a multiple of the baseline's.",
    why="Persistently large gradients mean a sharper, less stable optimisation than the "
    "recipe is known to produce.",
    fix="Check the learning rate, loss scaling and clipping against the baseline's config.",
    thresholds={"ratio": Threshold(5.0, "x baseline median", "Medians are robust to single "
                                   "spikes; 5x is a different optimisation regime.")},
    fires=Example({"baseline": {"loss": [1.0] * 3, "grad_norm": [0.4, 0.5, 0.45]},
                   "run": {"loss": [1.0] * 3, "grad_norm": [4.0, 5.0, 4.5]}}),
    passes=Example({"baseline": {"loss": [1.0] * 3, "grad_norm": [0.4, 0.5, 0.45]},
                    "run": {"loss": [1.0] * 3, "grad_norm": [0.5, 0.6, 0.55]}}),
)


@check("gradnorm-ratio", GRADNORM_RATIO)
def gradnorm_ratio(pair: Pair) -> list[Finding] | Skip:
    gb, gr = pair.baseline.get("grad_norm"), pair.run.get("grad_norm")
    if gb is None or gr is None:
        return Skip(SkipKind.NO_DATA, "grad_norm missing on one side")
    bm = stats.robust_median(gb.finite_only().values)
    rm = stats.robust_median(gr.finite_only().values)
    if not bm > 0 or not np.isfinite(rm):
        return Skip(SkipKind.DEGENERATE, "no positive finite grad_norm median on one side")
    ratio = rm / bm
    if ratio > GRADNORM_RATIO.t("ratio"):
        return [GRADNORM_RATIO.finding(_loc(pair), run_med=rm, base_med=bm, ratio=ratio)]
    return []


BAD_BASELINE = rule(
    id="TP-BAD-BASELINE", level=Level.WARN, group=G,
    title="The baseline itself fails single-run checks.",
    evidence="baseline {path} is {verdict}: {ids}",
    summary="The run was compared against a baseline that is not known-good.",
    why="Ratios against a broken baseline can pass a broken run.",
    fix="Pick a baseline that passes `trainproof epoch`.",
)
