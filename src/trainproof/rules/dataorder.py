"""Single-run rule on what the order of the data leaves in the training curve
(TP-EPOCH-SAWTOOTH): a loss that climbs inside every epoch and drops back at each
epoch boundary, the same shape epoch after epoch, is a dataset read in one fixed order
that is sorted by something the loss cares about (length, source, difficulty). The
epoch comes from the log's `epoch` column (HF Trainer, Lightning), else from
trainer_state.json's num_train_epochs and max_steps. Declared here with its thresholds;
the judge below is the only code that decides."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.frozen import NamedTuple
from trainproof.model import Finding, Level, Run, Series, Skip, SkipKind
from trainproof.rules import evalcurve  # noqa: F401  (imported first, as the package would: keeps the catalogue's order)
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.frozen import loss_frozen
from trainproof.rules.gate import interp_at
from trainproof.rules.gradients import G, where
from trainproof.rules.run import positive_loss


def _sorted_epochs(epochs: int, per: int, lo: float = 1.0, hi: float = 3.0) -> list[float]:
    """Example data: each epoch rises from lo to hi (a curriculum read in order)."""
    return [round(lo + (hi - lo) * k / (per - 1) - 0.01 * e, 4) for e in range(epochs) for k in range(per)]


def _epoch_col(epochs: int, per: int) -> list[float]:
    return [round((i + 1) / per, 4) for i in range(epochs * per)]


EPOCH_SAWTOOTH = rule(
    id="TP-EPOCH-SAWTOOTH", level=Level.WARN, group=G,
    title="The loss repeats a climb inside every epoch: the data is read in a fixed, sorted order.",
    evidence="within each of {epochs} epochs after the first ({per} logged points each), the loss "
    "climbs {rise:.0%} from {lo:.0%} to {hi:.0%} of the way through the epoch ({z:.0f} noise units "
    "> {limit_strength}, > {limit_min_rise:.0%}), in {agree} of {epochs} epochs (>= "
    "{limit_consistency:.0%}), and drops back at the next epoch; epoch from {origin}",
    summary="Averaged over the epochs after the first, the training loss rises from one part "
    "of the epoch to a later part by far more than the log's noise, in nearly every epoch: a "
    "periodic sawtooth at the epoch length.",
    why="A training loss falls as the run goes on; inside an epoch it climbs far, again and "
    "again at the same place, only when the batches there are harder than the ones before them "
    "every time - a dataset sorted by length, source or label and read without shuffling "
    "(a shuffled run that memorises climbs a little: see the strength threshold). "
    "The model then forgets the early part of the epoch while it fits the late one, and its "
    "final weights favour whatever came last (evidence/curve/epochs_sorted: each epoch climbs "
    "from 1.1 to 5.2; shuffled, the same data falls smoothly to 1.9).",
    fix="Shuffle the training set every epoch (DataLoader(shuffle=True), a sampler's "
    "set_epoch, Dataset.shuffle with a per-epoch seed for streaming data); if an order is "
    "intended (a curriculum), mix sources within each batch.",
    thresholds={
        "strength": Threshold(3, "noise units",
                              "The climb between two parts of the epoch profile (each the mean of "
                              "the log-loss residuals of every epoch at that part, after removing "
                              "each epoch's mean) in standard errors of those means; the noise is "
                              "the robust scatter the profile leaves unexplained, so a coarse log "
                              "whose parts hold much of the climb is not judged noisier for it. "
                              "Three standard errors: with min_rise and consistency, a profile of "
                              "noise does not pass. The sorted evidence run sits at 22 (14 logged "
                              "half as often, 4 at a fifth)."),
        "min_rise": Threshold(0.4, "of the loss",
                              "Shuffled runs climb too once they memorise: an example met late in "
                              "an epoch was last seen up to 1.5 epochs before, one met early 0.5 "
                              "epochs before on average, so it is more forgotten. On the public "
                              "runs that climb reaches 17-19 % on healthy multi-epoch fine-tunes "
                              "in nearly every epoch and 28 % on one labelled FAIL; a fixed sorted "
                              "order climbs by multiples of that (the evidence run 154 %, still "
                              "53 % logged five times less often)."),
        "consistency": Threshold(0.75, "of the judged epochs",
                                 "The same climb (later part above earlier part) in three epochs "
                                 "of four at least: a pattern, not one bad epoch averaged in."),
        "min_epochs": Threshold(3, "full epochs after the first",
                                "The first epoch holds the initial drop and is left out; a "
                                "repeat needs three more to be a pattern."),
        "full_epoch": Threshold(0.75, "of the typical epoch's logged points",
                                "An epoch counts when it holds at least this share of the median "
                                "epoch's points: the last epoch of a run stopped early is partial "
                                "and its profile would be the start of an epoch only."),
        "part_points": Threshold(3, "logged points per part of an epoch",
                                 "An epoch is cut into parts of about three logged points (at least "
                                 "two parts, at most max_parts), so each part's mean over the epochs "
                                 "damps batch noise whatever the logging rate."),
        "max_parts": Threshold(10, "parts per epoch",
                               "Ten parts resolve where in the epoch the climb happens; more only "
                               "adds pairs for noise to win."),
        "min_points": Threshold(16, "loss points", "The first epoch and min_epochs more, of "
                                "min_per_epoch points each."),
        "min_per_epoch": Threshold(4, "logged points per epoch",
                                   "Two parts of an epoch of two points each, averaged over the "
                                   "epochs: fewer points per epoch (a log per epoch, Keras) cannot "
                                   "show a shape inside it."),
    },
    fires=Example({"loss": _sorted_epochs(5, 10), "epoch": _epoch_col(5, 10)},
                  note="five epochs, each climbing from 1.0 to 3.0"),
    passes=Example({"loss": [3.0 * 0.995 ** i for i in range(50)], "epoch": _epoch_col(5, 10)},
                   note="a smooth descent over the same five epochs"),
    limits="Needs the epoch: an `epoch` column, or num_train_epochs and max_steps in "
    "trainer_state.json; a log with neither is not judged (no autocorrelation guess). A loss "
    "that only drops at each epoch boundary (the model meeting data it has seen) is not a "
    "climb and is not flagged; a learning-rate schedule restarted every epoch can climb "
    "inside it and would be.",
)


class Profile(NamedTuple):
    lo: int  # bin where the climb starts
    hi: int  # later bin where it peaks
    rise: float  # in log loss
    z: float  # in standard errors
    agree: int  # epochs that climb from lo to hi
    epochs: int
    per: int  # logged points per epoch
    bins: int


def _epochs(run: Run, s: Series) -> tuple[np.ndarray, str] | None:
    """The epoch (fractional) at every loss step, and where it came from."""
    e = run.get("epoch")
    if e is not None and len(f := e.finite_only()) >= 2 and np.all(np.diff(f.values) >= 0):
        return interp_at(s.steps, f), "the epoch column"
    meta = run.meta if hasattr(run.meta, "get") else {}
    n_ep, max_steps = meta.get("num_train_epochs"), meta.get("max_steps")
    if isinstance(n_ep, (int, float)) and isinstance(max_steps, (int, float)) and n_ep > 0 and max_steps > 0:
        return s.steps / (max_steps / n_ep), "num_train_epochs and max_steps"
    return None


def _profile(v: np.ndarray, epoch: np.ndarray) -> Profile | None:
    r = EPOCH_SAWTOOTH
    span = float(epoch[-1] - epoch[0]) if np.isfinite(epoch).all() else np.inf
    if not 0 < span <= v.size / r.t("min_per_epoch"):
        return None  # odd epoch values, or epochs too short to hold a shape: nothing to read
    # An epoch value of exactly k is the end of epoch k-1 (HF logs epoch = step / steps per epoch).
    idx = np.ceil(epoch - 1e-9).astype(int) - 1
    counts = np.bincount(idx - idx.min())
    full_from = idx.min() + 1  # the first epoch is the initial drop's
    per = int(stats.median(counts[1:-1])) if counts.size > 2 else 0
    keep_ep = [k for k in range(full_from, idx.max() + 1)
               if counts[k - idx.min()] >= max(per * r.t("full_epoch"), 1)]
    if per < r.t("min_per_epoch") or len(keep_ep) < r.t("min_epochs"):
        return None
    bins = max(2, min(int(per // r.t("part_points")), int(r.t("max_parts"))))
    phase = np.clip(epoch - idx, 0.0, 1.0 - 1e-9)
    # Each point's epoch row and part of the epoch; means per (row, part) by bincount, so
    # the cost is linear in the points however many epochs there are.
    sel = np.isin(idx, keep_ep)
    row = np.searchsorted(np.asarray(keep_ep), idx[sel])
    vv, part = v[sel], (phase[sel] * bins).astype(int)
    n_rows = len(keep_ep)
    res = vv - (np.bincount(row, weights=vv, minlength=n_rows) / np.bincount(row, minlength=n_rows))[row]
    cell = row * bins + part
    cell_n = np.bincount(cell, minlength=n_rows * bins)
    if (cell_n == 0).any():
        return None  # a part of some epoch holds no point: the epochs are not evenly logged
    rows = (np.bincount(cell, weights=res, minlength=n_rows * bins) / cell_n).reshape(n_rows, bins)
    counts_b = cell_n.reshape(n_rows, bins).sum(axis=0)
    prof = rows.mean(axis=0)
    # The noise is what the pattern leaves: each point's residual less its part's profile
    # value, as a robust sigma (a noise from point-to-point differences would count the
    # sawtooth's own climb and drop as noise, and more so the coarser the log).
    left = res - prof[part]
    sigma = float(1.4826 * stats.median(np.abs(left - stats.median(left))))
    diff = prof[None, :] - prof[:, None]  # diff[a, b] = climb from part a to later part b
    diff[np.tril_indices(bins)] = -np.inf
    a, b = np.unravel_index(int(np.argmax(diff)), diff.shape)
    rise = float(diff[a, b])
    se = sigma * np.sqrt(1.0 / counts_b[a] + 1.0 / counts_b[b])
    z = rise / se if se > 0 else np.inf
    agree = int(np.sum(rows[:, b] > rows[:, a]))
    return Profile(int(a), int(b), rise, float(z), agree, len(keep_ep), per, bins)


@check("epoch-sawtooth", EPOCH_SAWTOOTH)
def epoch_sawtooth(run: Run) -> list[Finding] | Skip:
    r = EPOCH_SAWTOOTH
    s = positive_loss(run, int(r.t("min_points")), "a climb is judged as a ratio")
    if isinstance(s, Skip):
        return s
    got = _epochs(run, s)
    if got is None:
        return Skip(SkipKind.NO_DATA, "no epoch column and no num_train_epochs/max_steps")
    epoch, source = got
    p = _profile(np.log(s.values), epoch)
    if p is None:
        return Skip(SkipKind.TOO_FEW, f"fewer than {int(r.t('min_epochs'))} full epochs of "
                    f">= {int(r.t('min_per_epoch'))} logged points after the first")
    if not (p.z > r.t("strength") and np.expm1(p.rise) > r.t("min_rise")
            and p.agree >= r.t("consistency") * p.epochs):
        return []
    return [r.finding(where(run), epochs=p.epochs, per=p.per, rise=float(np.expm1(p.rise)),
                      lo=p.lo / p.bins, hi=(p.hi + 1) / p.bins, z=p.z, agree=p.agree, origin=source)]


# ---------------------------------------------------------------- a loader stuck on one batch

STUCK_BATCH = rule(
    id="TP-STUCK-BATCH", level=Level.WARN, group=G,
    title="The loss fell to near zero along a noiseless curve: the same batch every step?",
    evidence="the loss fell from {start} to {end} ({fall:.3g}x >= {limit_min_fall}x), and over its "
    "last {k} points it moves with {noise:.3%} point-to-point noise (< {limit_max_noise:.1%}): "
    "no batch-to-batch scatter at all{eval_note}",
    summary="The training loss ended at a hundredth of its start or less, and in its second half "
    "it has no batch-to-batch scatter: every step saw the same data.",
    why="Fresh batches scatter a logged loss by several percent per point even when it is a "
    "mean over many steps, and the scatter grows relative to the loss as the loss falls. A "
    "loss that drops to near zero as one smooth curve is a model memorising a single batch: "
    "a data loader that yields the same batch every step (an iterator re-created each step, "
    "a cached first batch, a sampler with one index). The run looks perfect and has learned "
    "nothing (evidence/curve/stuck_batch: 4.8 -> 0.0005 while the validation loss rose from "
    "7.2 to 7.9; with fresh batches the same model ends at 2.4, noise 4 %).",
    fix="Check that the training loop draws a new batch each step (iterate the DataLoader "
    "once per epoch, do not call next(iter(loader)) inside the loop) and look at a few "
    "batches' sample ids.",
    thresholds={
        "min_fall": Threshold(100, "x the first logged loss",
                              "Real data has an irreducible loss (language, labels that overlap), "
                              "far above a hundredth of a model's untrained start; memorised data "
                              "has none."),
        "max_noise": Threshold(0.01, "of the loss, per logged point",
                               "Second-difference noise of the log loss over the last half (a "
                               "smooth trend cancels): fresh-batch evidence runs sit at 3-5 %, the "
                               "quietest public or gallery run that fell 100x at 2.9 % (a memorising "
                               "run grows noisier as its loss falls, not quieter). The stuck-batch "
                               "run sits at 0.03 %, and at 0.65 % logged five times less often (its "
                               "decay's curvature)."),
        "end_fraction": Threshold(0.25, "of the loss points",
                                  "The end level is the median of the last quarter of the log (at "
                                  "least three points): one lucky batch is not where the loss ended."),
        "min_points": Threshold(10, "points", "A second half of five points at least to measure "
                                "its noise on."),
    },
    fires=Example({"loss": [4.8 * 0.6 ** i for i in range(20)]},
                  note="falling by the same factor every point, to a 16,000th of its start"),
    passes=Example({"loss": [4.8 * 0.6 ** i * (1 + 0.1 * (-1) ** i) for i in range(20)]},
                   note="the same fall with a fresh batch's 10 % scatter"),
    limits="Full-batch training (the whole dataset is one batch) gives the same curve and is "
    "flagged too: it is rare on a dataset worth training on, and the WARN says what was seen. "
    "A loss that reaches exactly 0 is TP-ZERO-LOSS's and is not judged here, a tail that repeats one "
    "value TP-LOSS-FROZEN's; nor is one printed "
    "so rounded (HF's 4 decimals near 0.0002) that its rounding step exceeds max_noise.",
)


_MOST_DECIMALS = 12  # beyond this a loss was not printed rounded


@check("stuck-batch", STUCK_BATCH)
def stuck_batch(run: Run) -> list[Finding] | Skip:
    r = STUCK_BATCH
    s = positive_loss(run, int(r.t("min_points")), "exact zeros are zero-loss's")
    if isinstance(s, Skip):
        return s
    k = len(s) // 2
    end = float(stats.median(s.values[-max(3, int(len(s) * r.t("end_fraction"))):]))
    fall = float(s.values[0]) / end
    d = stats.printed_decimals(s.values[-k:], _MOST_DECIMALS)
    if d <= _MOST_DECIMALS and 10.0 ** -d / end > r.t("max_noise"):
        # a logger that rounds (HF prints 4 decimals) makes a loss near 0 a staircase whose
        # steps are larger than the scatter this rule looks for: no noise can be measured
        return Skip(SkipKind.DEGENERATE, f"loss printed at {d} decimals: too coarse near {end:.2g} "
                    "to measure its scatter")
    noise = stats.log_noise_detrended(s.values[-k:])
    if fall < r.t("min_fall") or noise >= r.t("max_noise"):
        return []
    frozen = loss_frozen(run)
    if not isinstance(frozen, Skip) and frozen:
        # no scatter because the loss stopped changing altogether: one finding, TP-LOSS-FROZEN's
        return Skip(SkipKind.COVERED, "the loss's tail repeats one value: judged by frozen-loss")
    ev = run.get("eval_loss")
    ev = ev.finite_only() if ev is not None else None
    eval_note = (f"; the eval loss went from {ev.values[0]:.4g} to {ev.values[-1]:.4g}"
                 if ev is not None and len(ev) >= 2 else "")
    return [r.finding(where(run, float(s.steps[-k])), start=float(s.values[0]), end=end, fall=fall, k=k,
                      noise=noise, eval_note=eval_note)]
