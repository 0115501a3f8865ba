"""The start of a cross-entropy loss against chance: with V classes, a model that
knows nothing (uniform) scores ln V. A model that starts far above it is confidently
wrong about its targets - shuffled or misaligned labels - a failure that otherwise
needs a baseline to see. Runs only when the vocabulary (or class count) is known:
Run.meta["vocabulary"], set by the commands from probes/vocab.py."""

from __future__ import annotations

import math

import numpy as np

from trainproof.model import Finding, Level, Location, Run, Skip, SkipKind
from trainproof.probes.vocab import Vocabulary
from trainproof.rules.base import Example, Threshold, check, rule

G = "single_run"

START_ABOVE_CHANCE = rule(
    id="TP-START-ABOVE-CHANCE", level=Level.FAIL, group=G,
    title="The run starts far above chance for its vocabulary: the targets are not what the model predicts.",
    evidence="first loss {start:.3f} at step {step} > {max_start:.3f} = ln V {ln_v:.3f} "
    "+ {init_excess:.3f} a from-scratch init can add ({init_basis}) + {limit_tolerance} tolerance; "
    "V = {vocab} {kind} from {vocab_source}; the run never climbs above it (+{climb:.3f} <= "
    "{limit_max_climb})",
    summary="The first logged loss is above ln V by more than a randomly initialised model's "
    "logit spread can explain, and the run never climbs above it.",
    why="Cross-entropy over V classes is ln V for a uniform guess. A random init adds half the "
    "variance of its logits (for logits z_i ~ N(0, s^2) independent of the target, E[logsumexp z "
    "- z_y] is about ln V + s^2/2; after a LayerNorm/RMSNorm the output layer's logits have s^2 = "
    "width x init_std^2). A fine-tune from a pretrained model starts well below ln V. Above both, "
    "the model is confident and its targets disagree with it: labels shuffled, shifted by one "
    "position twice, or drawn from another tokenizer. The run can still fall and look healthy.",
    fix="Check the label pipeline: the collator's shift (HF causal LMs shift labels inside the "
    "model, so do not shift them yourself), the tokenizer matches the model, and labels are "
    "aligned with inputs after any shuffle or packing.",
    thresholds={
        "min_points": Threshold(1, "point", "The start is the first finite logged loss, the "
                                "nearest the log gets to the model as training found it. A "
                                "confidently wrong start does not last: the model unlearns it (the "
                                "gallery's bad_labels falls from 8.1 to 7.5 within 20 steps), so a "
                                "median over later points would measure the logging interval, not "
                                "the run. One batch cannot fake it: batch content moves a near-uniform "
                                "model's loss by tenths of a nat (from-scratch GPT-2 runs here first "
                                "logged 7.34 and 7.54, their untrained models 7.63 and 7.86 on another "
                                "batch; ln V 7.62), while a fine-tune's first batch sits nats below ln V."),
        "tolerance": Threshold(0.2, "nats", "Covers what the s^2/2 estimate leaves out: its "
                               "higher-order terms (under 0.05 nat for s^2 <= 1) and a first logged "
                               "point averaged over few tokens. The first optimizer steps lower "
                               "the loss from its init value unless the run diverges (max_climb)."),
        "max_climb": Threshold(0.5, "nats above the first loss", "A model that starts confidently "
                               "wrong only gets better at its targets from there: its first loss is "
                               "its highest, up to batch noise (tenths of a nat). A run whose loss "
                               "later climbs above its start by more is diverging, and a high first "
                               "loss is then its first logging window already inside the blow-up "
                               "(TP-DIVERGE / TP-NAN judge that), not a confidently wrong start."),
        "init_std": Threshold(0.02, "std of output-layer weights", "The initializer_range of GPT-2, "
                              "BERT, Llama and most Hugging Face configs, used when the config names none."),
        "max_width": Threshold(8192, "hidden units", "Assumed when no config gives the width (only "
                               "--vocab-size or a tokenizer is known): the widest common open decoders "
                               "(70B class). At init_std 0.02 a from-scratch start may then sit "
                               "8192 x 0.02^2 / 2 = 1.64 nats above ln V."),
        "max_file_bytes": Threshold(64 << 20, "bytes", "config.json is kilobytes and the largest "
                                    "common tokenizer.json files are tens of MB; a larger file is "
                                    "not read for the vocabulary."),
    },
    fires=Example({"loss": [8.11, 8.05, 8.0, 7.9, 7.6, 7.2], "vocab": 2048, "width": 64}),
    passes=Example({"loss": [7.64, 7.5, 7.1, 6.5, 6.0, 5.6], "vocab": 2048, "width": 64}),
    limits="Applies only to a loss that is a per-token mean cross-entropy in nats over V classes. "
    "It cannot see auxiliary terms added to the logged loss (MoE load balancing, z-loss: "
    "usually hundredths of a nat), and a loss logged in bits (fairseq logs base 2), summed over "
    "tokens, or not a softmax cross-entropy (a sigmoid, a regression, a distillation KL) would be "
    "misread - do not pass --vocab-size for those. Label smoothing does not raise a near-uniform "
    "start. A classifier with a freshly initialised head starts near ln(classes) whatever its "
    "labels, so shuffled labels there are caught only by a baseline. With only --vocab-size or "
    "a tokenizer, the width is assumed to be max_width, so a confidently wrong start less than "
    "about 1.8 nats above ln V passes; a config.json with the width tightens the limit. A first "
    "logged point that averages many steps (HF logging_steps in the tens or hundreds) mixes the "
    "start with its unlearning and can pass a bad-labels run. A log that begins inside a blow-up "
    "which then falls (its climb cut off) can fire.",
)


def init_excess(v: Vocabulary) -> tuple[float, str]:
    """What a from-scratch init adds to ln V at most, and the basis, as evidence says it."""
    r = START_ABOVE_CHANCE.t("init_std") if v.init_std is None else v.init_std
    where = "config" if v.init_std is not None else "default"
    if v.width is None:
        d = START_ABOVE_CHANCE.t("max_width")
        return d * r * r / 2, f"width unknown, assumed {d:g}; init std {r:g} ({where})"
    return v.width * r * r / 2, f"width {v.width} from {v.width_source}; init std {r:g} ({where})"


@check("chance-start", START_ABOVE_CHANCE)
def start_above_chance(run: Run) -> list[Finding] | Skip:
    vocab = run.meta.get("vocabulary")
    if not isinstance(vocab, Vocabulary):
        return Skip(SkipKind.NOT_REQUESTED, "no vocabulary: give --vocab-size N, or keep config.json "
                    "or tokenizer.json beside the log")
    loss = run.get("loss")
    if loss is None:
        return Skip(SkipKind.NO_DATA, "no loss")
    finite = np.isfinite(loss.values)
    k = int(START_ABOVE_CHANCE.t("min_points"))
    if int(finite.sum()) < k:
        return Skip(SkipKind.TOO_FEW, f"{int(finite.sum())} finite loss points, needs {k}")
    start, step = float(loss.values[finite][0]), float(loss.steps[finite][0])
    if vocab.size < 2 or start <= 0:
        return Skip(SkipKind.DEGENERATE, "not a positive cross-entropy over 2+ classes")
    ln_v = math.log(vocab.size)
    excess, basis = init_excess(vocab)
    max_start = ln_v + excess + START_ABOVE_CHANCE.t("tolerance")
    climb = float(np.max(loss.values[finite])) - start
    if start <= max_start or climb > START_ABOVE_CHANCE.t("max_climb"):
        return []
    return [START_ABOVE_CHANCE.finding(Location(run.path, step), start=start, step=step, max_start=max_start,
                                       ln_v=ln_v, init_excess=excess, init_basis=basis, vocab=vocab.size,
                                       kind=vocab.kind, vocab_source=vocab.source,
                                       width=vocab.width or "unknown", climb=climb)]
