"""Do verdicts on strangers' real runs move with how the run was logged? (#11 x #17)

Applies the perturbations of tests/perturbations.py (the ones tests/test_invariance.py
holds the galleries to: a log cut 1-3 points short, every other point dropped with or
without the first, HF's doubled logging interval, other loss units re-rounded to the
decimals the log printed, shifted steps) to every public run the tool may judge
(public_runs.scorable: a fresh half waiting for its first scoring is never judged here)
with at least MIN_POINTS train-loss points, and counts the judgements that move: the
verdict, or the set of rules that FAIL the run.

What matters most is a move to or from FAIL: each one is listed, and each must be a
stated exception (EXCEPTIONS: the run, the perturbation and the reason the move is
right); tests/test_public_invariance.py holds that line and bounds the total.

    python scripts/public_invariance.py           # per perturbation, and every move to/from FAIL
    python scripts/public_invariance.py --moves   # every move, one line each
    python scripts/public_invariance.py --write   # the summary into EVIDENCE_MATRIX.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import public_runs as pr  # noqa: E402  (the corpus loader, beside this script)
from tests.perturbations import PERTURBATIONS, verdict  # noqa: E402  (one home, shared with the tests)

MIN_POINTS = 8  # shorter train logs: most rules skip them, and a cut or halving leaves almost nothing
BEGIN, END = "<!-- public-invariance:begin -->", "<!-- public-invariance:end -->"

_FIRST_WITNESS = ("The stated exception of tests/test_invariance.py: the first logged point is the only "
                  "witness of what the run did in its first interval, and halving without it loses it. ")
_REASONS = {  # run id -> (perturbations, why the move to or from FAIL is right)
    # TP-DEAD-RUN's resolve_se (two standard errors, by the ends or the line through the blocks):
    # halving or pairing changes how much the log can tell, and the verdict follows the evidence
    "aloshdenny__kevin-token-compressor__trainer_state": (
        ("halve",),
        "FAIL -> WARN, never PASS: the full log's 100 points place its 7.6 % gain below 10 % by the "
        "line through 33 blocks; halved, 50 points at 5.6 % noise put the bound at 10.0 %, on the "
        "band: no clear progress (TP-NO-PROGRESS), no longer evidence of a dead run."),
    "artaccann__osol_backend__outputs-trainer_state": (
        ("mean_pairs",),
        "WARN -> FAIL: HF's doubled interval averages pairs of one-batch losses, halving the "
        "per-point noise (20.4 % -> 10.5 %); at -14.9 % the log then places the gain below 10 % at "
        "two standard errors, which one-batch points could not. A 60-step demo with no progress "
        "(labelled WARN): the less noisy log is evidence of no learning."),
    "joseph-rathan__finetuningcpu__results-checkpoint-250-trainer_state": (
        ("halve", "halve_drop_first", "mean_pairs"),
        "FAIL -> WARN, toward its label (WARN): 25 points at 16 % noise (the loss's 50-step cycles "
        "read as noise once halved) leave the -14 % 'gain' a bound of 19-21 % at two standard "
        "errors, and eight blocks are too few for the line: no clear progress, not shown dead."),
    "monashaim__harmonic-dense-network__dvclive": (
        ("halve",),
        "FAIL -> WARN, never PASS (labelled FAIL: the per-batch losses repeat exactly epoch after "
        "epoch): halved, 34 points at 8.9 % noise bound the gain at 11 % by the line through 11 "
        "blocks, just over the 10 % band; the full log's 68 points resolve it."),
    "gguan123__qwen2-5-lora-k8senv__model-trainer_state": (
        ("halve_drop_first",),
        _FIRST_WITNESS + "A LoRA that learned all it learned by step 20 (1.57 -> 1.44) and then plateaued for the "
        "rest of the epoch (labelled WARN, a plateau); without step 10 its train log is flat from start to end "
        "(1.436 -> 1.421, 0.3 standard errors), no eval loss beside it: nothing left tells it from a dead run."),
    "poludmik__qlora-fine-tune__output-trainer_state": (
        ("halve_drop_first",),
        _FIRST_WITNESS + "Wrecked at step 2 (1.64 -> 11.8) and stuck at 10.37 = ln 32000; without step 1 five "
        "points remain (11.8, 10.38, 10.37 x3), under every progress rule's minimum, so it passes unjudged."),
    "jubaerkhan49__bangla_stt__model-trainer_state": (
        ("halve",),
        "A train log with the shape of a start wrecked in its first steps: first point 0.27, then 0.5-0.97 "
        "for 300 steps, back to 0.24 at the end, while the eval loss falls 0.57 -> 0.35 - the shape of "
        "gallery2's lr x100 run (seed 44: 5.36, 9.11, ... 5.35, eval 6.56 -> 5.38), which must keep failing. "
        "The full log passes on a gain past clear_improvement (the end 13 % below the first point); halved, "
        "its end (a median of 8 points at 16 % noise) sits 9.8 % below, under the 10 % band by a fraction of "
        "a standard error. Trusting the falling eval loss or the end's sign here was tried: it passed "
        "gallery2's wrecked run too."),
    "vivekalex61__summary_creator__model-trainer_state": (
        ("halve_drop_first", "mean_pairs"),
        "Toward its label (PASS). The base FAIL is a listed disagreement (public_runs/disagreements.json): "
        "TP-DEAD-RUN rests on one first point (0.938) below the 1.79 that follows, and the run ends at 0.94; "
        "a verdict that hangs on that point and an end 0.4 % away from it moves when either moves."),
    "podolskydavid__optiver-nomidnightsnack__classification-results-checkpoint-2500-trainer_state": (
        ("cut3", "halve_drop_first"),
        "A marginal TP-DIVERGE on a train loss jittering at ~100 % per point near 0.001-0.1: the full log "
        "clears the bars by little (4.7 standard errors against 4, 18 % given back against 10 %); three "
        "points shorter (blocks of 4, not 5) or halved (its floor then in the last blocks) it does not. The "
        "run's failure is its eval loss (0.686 at the first evaluation, never better, 1.1 at the end), "
        "reported by TP-OVERFIT (WARN) at every perturbation: a FAIL resting on it is for an eval rule."),
    "vacantfury__cs6140-mugc-project__results-checkpoint-71792-trainer_state": (
        ("x0.5", "nats_to_bits"),
        "TP-PRIOR-ONLY reads the level ln K of a cross-entropy in nats (its stated limit): a loss written in "
        "other units is at another level and is not judged. Units-dependent, like the chance-level rules."),
    "ayushk0808__financial-advisor__results-checkpoint-40-trainer_state": (
        ("halve", "halve_drop_first", "mean_pairs"),
        "Eight points, all exactly 0; halved, four remain, under TP-ZERO-LOSS's five: NOT-CHECKED (exit 2), "
        "honest on a log that short, never a PASS."),
    "georgepearse__rf-detr-mask__lightning_logs-version_4-metrics": (
        ("cut2", "cut3"),
        "A verdict at TP-DEAD-RUN's bound, on a run labelled WARN (a 170-step RF-DETR fine-tune whose loss "
        "never falls): 17 points at 9 % noise, the loss 11 % above its first point, the gain's bound at "
        "two standard errors 11 % - just over the 10 % band, so no clear progress (TP-NO-PROGRESS). Two or "
        "three points shorter the end sits higher (16-21 % above the start) and the bound falls to 5-7 %: "
        "evidence enough of no progress for TP-DEAD-RUN. No progress either way; the severity moves at the "
        "bar."),
    "christina00000004__stock_predict__lightning_logs-version_7-metrics": (
        ("cut1", "cut2", "cut3", "halve_drop_first", "mean_pairs"),
        "FAIL -> WARN, never PASS, at TP-DEAD-RUN's bound (labelled FAIL: a stock-direction classifier at "
        "ln 2 for 20 epochs): 27 train points at 5 % noise, a gain of 2.6 % whose upper bound at two "
        "standard errors is 9.8 %, just under the 10 % band that makes the run dead rather than "
        "unresolved. One to three points shorter, halved or paired, the bound is 10.7-14.9 % and the "
        "run is TP-NO-PROGRESS (WARN). No progress either way; the severity moves at the bar."),
    "danyash759__mlops_homework__lightning_logs-version_0-metrics": (
        ("halve_drop_first",),
        "FAIL -> WARN, never PASS, at TP-DEAD-RUN's bound (labelled FAIL: a Lightning run whose loss and eval "
        "loss never move): halved without its first point, 12 points at 5.7 % noise put the gain's upper "
        "bound at 11.8 %, over the 10 % band, so no clear progress (TP-NO-PROGRESS). Before the wrecked-start "
        "guard looked only at the first third of the log, a noisy point late in the halved log counted as a "
        "wreck and resolved it; every other perturbation keeps the FAIL (bounds 6.0-9.8 %)."),
    "dangnq2501__rl-ait-3007__lightning_logs-version_9-metrics": (
        ("cut2", "cut3", "halve", "halve_drop_first", "mean_pairs"),
        "FAIL -> PASS, toward its label (PASS: an RL value loss, noisy and bounded; fresh18_review.json): "
        "TP-DIVERGE's full-log FAIL rests on a give-back of 11.6 % of the gain against the 10 % bar; two "
        "points shorter or thinned, the end block and the floor move and the give-back falls under the "
        "bar. A verdict at a bar moves when a point does."),
    "elaboy__retentiontimeestimators__lightning_logs-version_9-metrics": (
        ("halve_drop_first",),
        "PASS -> FAIL, toward its label (FAIL: a regressor whose loss does not move for 14,000 steps): the "
        "stated exception of tests/test_invariance.py - the first logged point (3,309, one batch before the "
        "plateau at ~2,300) is the only witness of a gain; halved without it, the plateau alone is a dead "
        "run (upper bound 3.4 %)."),
    "franciscosacouto__ai4lungs__lightning_logs-version_9-metrics": (
        ("cut1", "cut2", "cut3", "halve_drop_first"),
        "FAIL -> PASS or WARN at TP-DEAD-RUN's min_improvement band (labelled FAIL: train 3.36 -> 3.27, val "
        "4.24 -> 4.19 in 200 epochs): the full log's gain is 4.97 %, under the 5 % band, where only an eval "
        "loss that fell 2 % clears a run, and this one fell 1.2 %; one to three points shorter the gain is "
        "5 % or more, and the eval loss, smooth enough to have fallen beyond its noise, clears it. A verdict "
        "at a band moves when a point does; the weakness is the eval witness clearing a 1.2 % fall between "
        "the 5 % and 10 % bands."),
    "bastokr__kanjisaposedeep__runs-pose-train5-results": (
        ("cut1", "cut2", "cut3", "halve", "halve_drop_first", "mean_pairs"),
        "FAIL -> WARN, never PASS (labelled FAIL): a ten-epoch log, exactly TP-DEAD-RUN's minimum; any "
        "cut or thinning leaves fewer than ten points, which it does not judge, and the run's WARN "
        "findings stand."),
    "harmerz__pkm-kc__runs-pose-train2-results": (
        ("halve", "halve_drop_first", "mean_pairs"),
        "FAIL -> WARN, never PASS (labelled FAIL: train and eval both worse, eval 6.9 -> 14.9): "
        "TP-EVAL-DIVERGE needs the train loss not falling since the eval minimum (epoch 2); Ultralytics' "
        "per-epoch train loss is noisy there, 6.11 -> 6.33 on the full log and 6.18 -> 6.02 halved, so "
        "thinned it reads as overfitting (TP-OVERFIT, 2.2x its best) - the same climb, a milder name."),
    "annakompan__multimodal_action-emotion_detection__training_log": (
        ("cut1",),
        "Toward PASS from a marginal FAIL (labelled FAIL: stuck near ln 9): a Keras CSV run falling 2.21 -> "
        "2.11 (4.1 %, under the 5 % band) that TP-DEAD-RUN fails only because its steady-fall test stops "
        "at Mann-Kendall z 3.27 against 3.5; without its last epoch the 11 blocks regroup and z is 4.05, "
        "a steady fall, which the rule counts as learning. A verdict at a bar moves when one point does."),
    "ged1182__housesandboats__lightning_logs-version_14-metrics": (
        ("halve_drop_first", "mean_pairs"),
        _FIRST_WITNESS + "A classifier at ln 10 from its first point (2.30 at step 0) to its last, with one "
        "batch at 30.2 at step 1 (labelled FAIL: never learns): without step 0, or averaged with it, the "
        "log starts at that batch (30.2, or 16.3 paired) and the fall from it back to 2.3 reads as "
        "learning. Only the first point says where the model began."),
    "robertodr01__ethical-nlp__lightning_logs-version_17-metrics": (
        ("halve", "halve_drop_first", "mean_pairs"),
        "PASS -> FAIL, toward its label (FAIL: a constant 5-class prediction, epoch loss 1.634 -> 1.633): "
        "the full log passes TP-DEAD-RUN only because its first point, one batch at 1.815 among 836 at "
        "12.7 % noise, sits 10.5 % above the end, past clear_improvement at 0.9 standard errors "
        "(fresh26_review.json); halved, without that point or paired, the gain is 5.8-8.3 % and the line "
        "through the blocks bounds it under 10 %: dead, as it is."),
    "arnav0405__convlstmpytorchlightning__lightning_logs-version_3-metrics": (
        ("x0.5",),
        "TP-PRIOR-ONLY reads the level ln K of a cross-entropy in nats (its stated limit): a 10-class loss "
        "at ln 10 (2.32 -> 2.21, labelled WARN, barely above chance) halved sits at 1.16-1.10, within the "
        "band of ln 3, another class count's chance level. Units-dependent, like vacantfury's; read from "
        "its epoch column since the column choice by points, which made its curve the one judged."),
    "leemingo__sr-press__lightning_logs-version_19-metrics": (
        ("nats_to_bits",),
        "TP-PRIOR-ONLY reads the level ln K of a cross-entropy in nats (its stated limit): a binary loss "
        "barely moving at 0.447-0.438 nats (labelled WARN, barely learning) written in bits sits at "
        "0.645-0.631, within the band of ln 2 in nats. Units-dependent, like vacantfury's and arnav0405's."),
    "ni-vi__cluster__lightning_logs-version_104-metrics": (
        ("halve_drop_first", "mean_pairs"),
        "PASS -> FAIL, toward its label (FAIL: a constant classifier, 409 one-batch losses around 1.0 at 14 % "
        "noise, no trend): the full log passes TP-DEAD-RUN only because its first point, one batch at 1.15, "
        "sits 14 % above the end's median, past clear_improvement at 1.1 standard errors (fresh32_review.json); "
        "without that point, or paired, the line through 51 blocks shows no gain: dead, as it is."),
    "paksu64__neural_networks__lightning_logs-version_34-metrics": (
        ("cut2", "halve_drop_first", "mean_pairs"),
        "PASS -> FAIL, toward its label (FAIL: 0.017 -> 10.3 by the fifth point, then swinging 0.3-10): its "
        "swings set the noise yardstick (138 % per point), so the full log's 95x rise over its start sits at 2.8 "
        "standard errors, under TP-LOSS-ROSE's 3 (fresh32_review.json); cut by two, halved without its first "
        "point or paired, the end's median or the noise moves and the rise clears 3."),
    "rohannsahh__flood-prediction-using-temporal-fusion-transformer__lightning_logs-version_33-metrics": (
        ("halve_drop_first",),
        "WARN -> FAIL (labelled WARN: overfitting). A per-step MSE near 1e-5 at 117 % noise per point: halved "
        "without its first point, the log starts at one batch of 3.2e-7 (a near-perfect batch, 30x below its "
        "neighbours), and the end 45x above it clears TP-LOSS-ROSE at 3.3 standard errors. The stated exception "
        "of tests/test_invariance.py read the other way: the first logged point is the start's only witness, "
        "and here the point that takes its place is a low draw, not the untrained model. The full log and every "
        "other perturbation: WARN (TP-OVERFIT)."),
    "dpsfigo__yolov11-modelbox__runs-detect-train11-results": (
        ("halve", "halve_drop_first", "mean_pairs"),
        "FAIL -> WARN, never PASS (labelled FAIL: a YOLO detector at mAP exactly 0 for 13 epochs): halved it "
        "keeps 6-7 of its 13 points, under TP-DEAD-RUN's ten, so only its frozen scores and eval loss speak "
        "(TP-EVAL-METRIC-FROZEN, WARN)."),
    "yezhiheng0811__37100-project-chat__finetuned_model-checkpoint-1000-trainer_state": (
        ("halve_drop_first",),
        _FIRST_WITNESS + "An SFT that lost 2.07 -> 1.52 in its first 100 steps and plateaued for 900 (labelled "
        "WARN, an early plateau); halved without step 10, its log starts at step 100, after the drop, and the "
        "plateau alone is a dead run (at most 2.4 % at two standard errors)."),
    "mrkeaton1__cajal_course_ml_spike_project__lightning_logs-version_34-metrics": (
        ("cut2", "halve_drop_first", "mean_pairs"),
        "FAIL -> PASS, its label (WARN: barely learning) between the two. A marginal TP-DEAD-RUN: 1,822 per-step "
        "losses at 7.2 % noise fall 3.4 % along the line through 50 blocks at Mann-Kendall z 3.2, under the "
        "steady-fall test's 3.5 (fresh35_review.json); cut by two, halved without its first point or paired, z "
        "clears 3.5 and the slow fall counts as learning."),
    "amitesh-mishra-am__nlp-chatbot__results-checkpoint-126-trainer_state": (
        ("cut3", "halve", "halve_drop_first", "mean_pairs"),
        "FAIL -> PASS at TP-DEAD-RUN's minimum (labelled FAIL: a chatbot whose loss sits at 5.61-5.71 for all "
        "twelve of its points): cut by three or halved it keeps 9 or 6 points, under the ten the rule needs, "
        "and its 1.8 % range is far outside TP-FLAT's 0.1 % band: no other rule calls it dead."),
    "ayanmohd18__supplychain__notebooks-lightning_logs-version_1-metrics": (
        ("halve",),
        "PASS -> FAIL at TP-DEAD-RUN's bounds, its label (WARN: barely learning after the first epoch) between "
        "the two: halved, 39 per-step losses at 3.2 % noise gain 7.3 % at 2.1 standard errors (bar 2.5) and the "
        "line through the blocks bounds the gain at 9.5 % (bar 10 %); the full log's 78 points clear the "
        "noise test. fresh35's mrkeaton1 the other way."),
    "lerchal1__21_datathon_2024__lightning_logs-version_7-metrics": (
        ("cut3", "halve"),
        "WARN -> FAIL, toward its label (FAIL: a loss of 1e15-1e19 with no trend, the eval loss 5.48e18 and "
        "val accuracy 0.0038 identical at all nine evaluations): cut by three, a start block replaces the "
        "first point and the frozen eval loss makes the no-gain a dead run; halved, one logged 3.4e19 stands "
        "3,860x above the five before it (TP-LOSS-BLOWUP). The full log: WARN (TP-EVAL-METRIC-FROZEN)."),
    "narada98__gcntft__models-lightning_logs-version_1-metrics": (
        ("halve_drop_first",),
        _FIRST_WITNESS + "A forecaster at LR 0.03 whose loss fell 33.3 -> 18.7 in its first 150 steps and "
        "wandered at 17-25 with no trend for the rest (labelled WARN, an early plateau; no validation): halved "
        "without step 49 it starts at 23.5, inside the plateau, and the plateau alone is a dead run (a 5.7 % "
        "gain at 0.5 standard errors, bounded at 9.4 %)."),
    "rpribau__tca-reto__notebooks-lightning_logs-version_0-metrics": (
        ("mean_pairs",),
        "FAIL -> PASS, HF's doubled interval blurring the one witness (labelled FAIL: val MAE exactly 0.1667 "
        "and RMSE 0.4082 at all ten epochs, predictions that never change): TP-EVAL-DIVERGE's FAIL rests on "
        "two evaluations that dipped (0.149, 0.141 among 0.1665-0.1673) and gave it all back; paired, ten "
        "evaluations become five, the dip is halved and averaged into its neighbours, and the curve's noise on "
        "five points no longer separates it. The frozen MAE is not a higher-is-better score, which is all "
        "TP-EVAL-METRIC-FROZEN reads."),
    "hunorqwz__asset-vector__training-lightning_logs-version_1-metrics": (
        ("halve",),
        "WARN -> FAIL at TP-EVAL-DIVERGE's bar, its label (WARN: an erratic val loss, 823 at the first epoch, "
        "best 266, 1,574 at the end, and a val MAE that ends worse than its first) between the two: halved, "
        "nine evaluations at 47 % noise per evaluation give back 157 % of their drop at 3.0 standard errors "
        "(bar 3) while the train loss is not falling; the full log's eighteen, noisier at the scale of the "
        "end, stay under it and TP-OVERFIT reports the climb (5.9x its best)."),
    "john2408__two_tower_model__notebooks-lightning_logs-version_1-metrics": (
        ("halve_drop_first", "mean_pairs"),
        "WARN -> FAIL, toward its label (FAIL: a recommender whose val loss moves 0.01 % in ten epochs and whose "
        "train loss wanders at 7.4-7.7 for 291 logs): halved without its first point or paired, the first "
        "point (one batch at 7.97) no longer lifts the start, and the frozen eval loss beside a train loss that "
        "gained nothing is a dead run. The full log: WARN (TP-EVAL-LOSS-FROZEN)."),
    "thxi__icl_thesis__notebooks-lightning_logs-version_23-metrics": (
        ("halve_drop_first",),
        "WARN -> FAIL, toward its label (FAIL: a classifier that predicts one class, precision, recall and F1 "
        "exactly 0 and AUC 0.5 at all 156 epochs, train loss flat at 0.455 from epoch 1): halved without its "
        "first point (0.7355, the one batch before the plateau), the plateau alone is a dead run, bounded at "
        "0.5 %. The full log: WARN (TP-EVAL-METRIC-FROZEN), the first point counted as learning."),
}
# (run id, perturbation) -> why the move to or from FAIL is right. Nothing else may move so.
EXCEPTIONS: dict[tuple[str, str], str] = {(run, p): why for run, (ps, why) in _REASONS.items() for p in ps}

Judgement = tuple[str, frozenset[str]]


@dataclass(frozen=True)
class Move:
    run_id: str
    half: str
    label: str
    perturbation: str
    base: Judgement
    got: Judgement

    @property
    def crosses_fail(self) -> bool:
        """A verdict moved to or from FAIL (a change of which rules FAIL a FAIL is not one)."""
        return (self.base[0] == "FAIL") != (self.got[0] == "FAIL")

    def line(self) -> str:
        def show(j: Judgement) -> str:
            return j[0] + (f" {{{', '.join(sorted(j[1]))}}}" if j[1] else "")
        return (f"{self.half:7} {self.label:4} {self.perturbation:16} {show(self.base)} -> {show(self.got)}  "
                f"{self.run_id}")


@dataclass(frozen=True)
class Sweep:
    runs: int
    moves: tuple[Move, ...]

    @property
    def judgements(self) -> int:
        return self.runs * len(PERTURBATIONS)

    def fail_moves(self) -> list[Move]:
        return [m for m in self.moves if m.crosses_fail]

    def unexplained(self) -> list[Move]:
        """Moves to or from FAIL that no stated exception covers."""
        return [m for m in self.fail_moves() if (m.run_id, m.perturbation) not in EXCEPTIONS]


def _read(doc: Mapping):
    from trainproof.model import InputError
    from trainproof.parsers import read_run

    with tempfile.TemporaryDirectory() as tmp:
        try:
            return read_run(pr.rebuild(doc, Path(tmp)))
        except InputError:
            return None


def sweep(docs: Iterable[Mapping]) -> Sweep:
    """Every perturbation on every run with at least MIN_POINTS train-loss points."""
    runs, moves = 0, []
    for doc in docs:
        run = _read(doc)
        if run is None or "loss" not in run.series or len(run.series["loss"]) < MIN_POINTS:
            continue
        runs += 1
        base = verdict(run)
        for name, perturb in PERTURBATIONS.items():
            got = verdict(perturb(run))
            if got != base:
                moves.append(Move(doc["id"], doc["half"], doc["label"]["verdict"], name, base, got))
    return Sweep(runs, tuple(moves))


def public_sweep() -> Sweep:
    return sweep(pr.scorable(pr.load_corpus()))


def render(s: Sweep) -> str:
    """The section of EVIDENCE_MATRIX.md: per perturbation, and every move to or from FAIL."""
    moved = Counter(m.perturbation for m in s.moves)
    verdicts = Counter(m.perturbation for m in s.moves if m.base[0] != m.got[0])
    fails = Counter(m.perturbation for m in s.fail_moves())
    lines = [BEGIN, "## Public runs, logged otherwise (scripts/public_invariance.py)", "",
             "The perturbations of tests/perturbations.py (those tests/test_invariance.py holds the galleries "
             f"to) applied to the {s.runs} public runs of the shown "
             f"halves with at least {MIN_POINTS} train-loss points ({s.judgements} judgements). A judgement "
             "*moved* when the verdict or the set of FAIL rules changed; the scalings are re-rounded to the "
             "decimals the log printed (tests/perturbations.py).", "",
             "| perturbation | judgements moved | verdicts moved | to or from FAIL |", "|---|---|---|---|"]
    lines += [f"| {n} | {moved[n]} | {verdicts[n]} | {fails[n]} |" for n in PERTURBATIONS]
    lines += [f"| all | {len(s.moves)} | {sum(verdicts.values())} | {len(s.fail_moves())} |", ""]
    lines.append("Moves to or from FAIL, each a stated exception (`EXCEPTIONS` in the script):" if s.fail_moves()
                 else "No verdict moves to or from FAIL.")
    lines.append("")
    by_run: dict[str, list[Move]] = {}
    for m in s.fail_moves():
        by_run.setdefault(m.run_id, []).append(m)
    for run_id, ms in by_run.items():
        moved_how = "; ".join(f"{m.perturbation}: {m.base[0]} -> {m.got[0]} ({', '.join(sorted(m.base[1] ^ m.got[1]))})"
                              for m in ms)
        whys = {EXCEPTIONS.get((m.run_id, m.perturbation), "NOT EXPLAINED") for m in ms}
        lines.append(f"- `{run_id}` ({ms[0].half}, labelled {ms[0].label}) - {moved_how}. {' '.join(sorted(whys))}")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_matrix(text: str) -> None:
    """Replace the section between its markers, or add it after the public-runs section."""
    doc = pr.MATRIX.read_text(encoding="utf-8")
    if BEGIN in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + text + rest.split(END, 1)[1].lstrip("\n")
    else:
        head, rest = doc.split(pr.END, 1)
        doc = head + pr.END + "\n\n" + text + rest.lstrip("\n")
    pr.MATRIX.write_text(doc, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite the section in {pr.MATRIX.name}")
    ap.add_argument("--moves", action="store_true", help="every move, one line each")
    opts = ap.parse_args(argv)
    s = public_sweep()
    text = render(s)
    if opts.write:
        write_matrix(text)
        print(f"wrote {pr.MATRIX.name}")
    else:
        sys.stdout.write(text)
    if opts.moves:
        print(f"\n{len(s.moves)} moves:")
        for m in s.moves:
            print(("FAIL " if m.crosses_fail else "     ") + m.line())
    return 1 if s.unexplained() else 0


if __name__ == "__main__":
    sys.exit(main())
