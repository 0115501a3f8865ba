"""Single-run rules for policy-gradient RL fine-tunes (GRPO, RLOO, PPO-style) that log a
reward. In these runs the logged loss is a surrogate built from zero-mean advantages: it
sits near 0 whether the policy improves or not, so the loss rules cannot judge them and
the reward is the curve that shows progress. GRPO also logs the share of prompt groups
whose completions all scored the same (`frac_reward_zero_std`): such a group has zero
advantage and contributes no gradient. Declared once here; the judge below is the only
code that decides whether these rules fire."""

from __future__ import annotations

import numpy as np

from trainproof import stats
from trainproof.model import Finding, Level, Location, Run, Series, Skip, SkipKind
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.gate import not_yet, progress_gate

G = "single_run"

_MIN_POINTS = Threshold(
    20, "reward points",
    "A start and an end quarter of at least 5 logged steps each: a GRPO batch mean moves by "
    "a large share of its own level from one step to the next, so fewer points cannot "
    "separate a trend from that noise.")
_EDGE = Threshold(
    0.25, "of the reward points",
    "Start and end are medians of the first and last quarter: wide enough to damp per-step "
    "batch noise, narrow enough that a run which improved mid-way still shows it at the end.")
_MIN_GAIN_SE = Threshold(
    2.5, "standard errors",
    "The end must beat the start by this many standard errors of the reward's own step-to-"
    "step noise (robust MAD of first differences), the bar TP-DEAD-RUN sets for a loss: a "
    "flat reward crosses 2.5 standard errors about once in 160 runs by chance.")

REWARD_FLAT = rule(
    id="TP-RL-REWARD-FLAT", level=Level.WARN, group=G,
    title="The reward did not improve over the run.",
    evidence="reward start {start} (median of the first {k} points, to step {start_to}) vs end "
    "{end} (median of the last {k}, from step {end_from}): {gain_se:+.1f} standard errors of "
    "its step-to-step noise ({noise} per step); an improving run gains >= {limit_min_gain_se}",
    summary="In an RL fine-tune that logs a reward, the reward at the end is not meaningfully "
    "above the reward at the start.",
    why="A policy-gradient run exists to raise its reward; its loss is a surrogate that stays "
    "near 0 either way, so a flat reward is the only sign that the run is spending its budget "
    "without learning: a learning rate too low to move the policy, a reward function that "
    "cannot tell completions apart, prompts too hard (or too easy) for any completion to differ.",
    fix="Check the reward function on a handful of completions by hand, the share of groups "
    "with identical rewards (frac_reward_zero_std), the learning rate actually applied, and "
    "whether the prompts' difficulty matches the model.",
    thresholds={"min_points": _MIN_POINTS, "edge": _EDGE, "min_gain_se": _MIN_GAIN_SE},
    fires=Example({"loss": [0.0] * 40, "reward": [1.8, 1.9, 1.7, 1.85, 1.75] * 8}),
    passes=Example({"loss": [0.0] * 40, "reward": [0.2 + 0.02 * i + (0.05 if i % 2 else -0.05)
                                                  for i in range(40)]}),
    limits="Judged on the mean reward the trainer logs (TRL's `reward`), from the end of the LR "
    "warm-up on, once the progress gate (TP-TOO-EARLY) opens. A reward that rose and fell back is "
    "flat here; a reward that saturated at its maximum rose first and is not flagged.",
)

NO_SIGNAL = rule(
    id="TP-RL-NO-SIGNAL", level=Level.FAIL, group=G,
    title="Almost every prompt group carried no reward variance, so almost nothing was learned.",
    evidence="median frac_reward_zero_std {share:.1%} over the last half of the run (steps "
    "{from_step}-{step}) >= {limit_share:.0%}, and the reward did not improve ({gain_se:+.1f} "
    "standard errors, start {start}, end {end})",
    summary="In a GRPO-style run, at least nine groups in ten gave every completion the same "
    "reward through the second half of the run, and the reward did not rise.",
    why="GRPO's advantage is a completion's reward minus its group's mean: a group whose "
    "completions all score the same has zero advantage and adds nothing to the gradient. With "
    "nine groups in ten like that the update comes from a tenth of the batch, and when the "
    "reward is not rising either, the groups are uniform because every completion fails (or "
    "every one succeeds from the start): the run is not learning and will not start to "
    "without a change. Dynamic-sampling methods (DAPO) drop such groups for this reason.",
    fix="Look at the rewards of a few groups: all zero means the task is too hard for the model "
    "or the reward parser rejects every completion (format mismatch); all maximal means the "
    "prompts are too easy. Adjust the prompts' difficulty or the reward, raise the number of "
    "generations per prompt, or filter zero-variance groups.",
    thresholds={
        "share": Threshold(0.9, "of prompt groups",
                           "Nine groups in ten with zero advantage leave a tenth of the batch to "
                           "carry the gradient; a learning GRPO run keeps a clear share of groups "
                           "with differing completions (that is what it learns from)."),
        "min_points": Threshold(10, "frac_reward_zero_std points",
                                "A median over the last half needs at least 5 logged steps."),
        "reward_min_points": _MIN_POINTS, "min_gain_se": _MIN_GAIN_SE,
    },
    fires=Example({"loss": [0.0] * 40, "reward": [0.05, 0.0, 0.02, 0.0] * 10,
                   "frac_reward_zero_std": [0.95, 1.0, 0.97, 1.0] * 10}),
    passes=Example({"loss": [0.0] * 40,
                    "reward": [0.2 + 0.02 * i + (0.05 if i % 2 else -0.05) for i in range(40)],
                    "frac_reward_zero_std": [0.95, 1.0, 0.97, 1.0] * 10},
                   note="groups mostly uniform, but the reward climbs: the run saturates as it learns"),
    limits="Needs `frac_reward_zero_std` (TRL's GRPOTrainer logs it) beside the reward.",
)


def _gain(reward: Series) -> dict | None:
    """Start and end medians of the reward and the end's gain in standard errors of its noise."""
    n = len(reward)
    if n < REWARD_FLAT.t("min_points"):
        return None
    k = max(1, int(n * REWARD_FLAT.t("edge")))
    v = reward.values
    start, end = float(stats.median(v[:k])), float(stats.median(v[-k:]))
    noise = stats.point_noise(v)  # in the reward's own units: rewards can be 0 or negative
    se = noise * stats.MEDIAN_SE * np.sqrt(2.0 / k)
    gain_se = (end - start) / se if se > 0 else (np.inf if end > start else 0.0)
    return {"start": start, "end": end, "k": k, "gain_se": float(gain_se), "noise": noise,
            "start_to": float(reward.steps[k - 1]), "end_from": float(reward.steps[-k])}


@check("reward", REWARD_FLAT, NO_SIGNAL, loss_curve=True)
def reward_progress(run: Run) -> list[Finding] | Skip:
    """The reward is an RL run's objective curve, so this check counts as judging the run."""
    reward = run.get("reward")
    if reward is None:
        return Skip(SkipKind.NO_DATA, "no reward column in the log: not an RL run")
    reward = reward.finite_only()
    gate = progress_gate(run, reward)
    if not gate.open:  # in warm-up the policy has barely moved: flat by construction
        return not_yet(gate)
    if gate.start is not None:
        keep = reward.steps >= gate.start
        reward = Series(reward.name, reward.steps[keep], reward.values[keep])
    g = _gain(reward)
    if g is None:
        return Skip(SkipKind.TOO_FEW, f"{len(reward)} finite reward points < "
                    f"{REWARD_FLAT.t('min_points'):.0f}")
    if g["gain_se"] >= REWARD_FLAT.t("min_gain_se"):
        return []
    where = Location(run.path, float(reward.steps[-1]))
    zero = run.get("frac_reward_zero_std")
    if zero is not None:
        zero = zero.finite_only()
        late = zero.values[len(zero) // 2:]
        if len(zero) >= NO_SIGNAL.t("min_points") and stats.median(late) >= NO_SIGNAL.t("share"):
            return [NO_SIGNAL.finding(where, share=float(stats.median(late)),
                                      from_step=float(zero.steps[len(zero) // 2]),
                                      step=float(zero.steps[-1]), gain_se=g["gain_se"],
                                      start=g["start"], end=g["end"])]
    return [REWARD_FLAT.finding(where, **g)]
