"""Eight tiny GRPO runs with TRL's real GRPOTrainer on CPU, for the RL rules' evidence.

    python -m venv --system-site-packages /tmp/venv-trl   # or reuse /tmp/venv-shortlogs-trl
    /tmp/venv-trl/bin/pip install trl==1.16.0 torch==2.13.0
    nice -n 10 /tmp/venv-shortlogs-trl/bin/python scripts/make_evidence_trl.py [run ...]

Made with trl 1.16.0, transformers 5.24.0, torch 2.13.0+cpu, datasets 5.2.0, tokenizers
0.23.3 (each run_meta.json records them). Nothing is downloaded: the policy is a
2-layer GPT-2 built from a config with random weights, the tokenizer a character-level
BPE trained here on lower-cased lines of Python standard-library docstrings, which are
also the prompts. Seed 42, one CPU thread, about a minute per run (all eight: ~8 minutes
on a shared 2-core machine). Deterministic: a rerun writes the same log_history apart
from the timing fields.

Writes evidence/trl/<run>/trainer_state.json (the Trainer's own state, saved with
`trainer.state.save_to_json`, exactly as transformers writes it) and run_meta.json for:

- grpo_healthy: reward = share of the completion's letters that are vowels; random
  tokens score ~0.3, a policy that emits only vowels scores 1. Learning rate 1e-3.
- grpo_no_signal: the same run, but the reward parser wants an `<answer>` tag that the
  vocabulary cannot spell, so every completion scores 0 and every group is uniform.
- grpo_lr_zero: the healthy reward with learning rate 0: the policy cannot move, the
  groups still differ.
- grpo_lr_tiny: the same with learning rate 1e-7, which no lr rule sees as broken.
- grpo_healthy_slow: the healthy run at learning rate 2e-4, a slower climb: the
  false-alarm probe for TP-RL-REWARD-FLAT.
- grpo_sparse_saturates: reward 1 only for a completion holding 'zz' (a few % of random
  completions): learned to 1.0, after which every group is uniform again.
- grpo_sparse_slow: the same sparse reward at lr 1e-4: most groups uniform, a slow climb.
- grpo_echo: reward 1 only when the completion opens with the prompt's last two letters:
  too hard for this policy, almost every group scores all 0, yet the loss is not 0.
"""

from __future__ import annotations

import json
import platform
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_evidence_common import EVIDENCE, TEXT_MODULES

SEED = 42
ALPHABET = "abcdefghijklmnopqrstuvwxyz ,."
VOWELS = frozenset("aeiou")
N_PROMPTS = 400


@dataclass(frozen=True)
class GrpoRecipe:
    name: str
    what: str
    reward: str           # a key of REWARDS
    learning_rate: float
    max_steps: int = 150
    per_device_train_batch_size: int = 16
    num_generations: int = 4
    max_completion_length: int = 12
    logging_steps: int = 3
    temperature: float = 1.0


RECIPES = {
    "grpo_healthy": GrpoRecipe("grpo_healthy", "learnable reward (share of vowels), lr 1e-3",
                               "vowels", 1e-3),
    "grpo_no_signal": GrpoRecipe("grpo_no_signal", "reward parser rejects every completion "
                                 "(needs an <answer> tag the vocabulary cannot spell)",
                                 "answer_tag", 1e-3),
    "grpo_sparse_saturates": GrpoRecipe("grpo_sparse_saturates", "reward only for a completion "
                                        "holding 'zz' (~2 % at first), lr 1e-3: learned, then "
                                        "every group scores 1", "zz", 1e-3),
    "grpo_sparse_slow": GrpoRecipe("grpo_sparse_slow", "the same sparse reward at lr 1e-4: few "
                                   "successes to learn from, a slow climb", "zz", 1e-4),
    "grpo_echo": GrpoRecipe("grpo_echo", "reward only when the completion opens with the "
                            "prompt's last two letters", "echo", 1e-3),
    "grpo_lr_zero": GrpoRecipe("grpo_lr_zero", "learnable reward, learning rate 0",
                               "vowels", 0.0),
    "grpo_lr_tiny": GrpoRecipe("grpo_lr_tiny", "learnable reward, learning rate 1e-7 (too "
                               "low to move the policy in 150 steps)", "vowels", 1e-7),
    "grpo_healthy_slow": GrpoRecipe("grpo_healthy_slow", "learnable reward, lr 2e-4: a "
                                    "slower, noisier climb", "vowels", 2e-4),
}


def prompt_lines() -> list[str]:
    """Lower-cased docstring lines of the stdlib modules the other evidence uses, kept to
    ALPHABET, 20-60 characters, first N_PROMPTS distinct ones."""
    import importlib
    import inspect

    keep = re.compile(f"[^{re.escape(ALPHABET)}]")
    out: dict[str, None] = {}
    for name in TEXT_MODULES:
        mod = importlib.import_module(name)
        for line in (inspect.getdoc(mod) or "").splitlines():
            text = " ".join(keep.sub(" ", line.lower()).split())
            if 20 <= len(text) <= 60:
                out[text] = None
    lines = list(out)
    if len(lines) < N_PROMPTS:  # module docstrings alone are short: add the members'
        for name in TEXT_MODULES:
            mod = importlib.import_module(name)
            for attr in sorted(dir(mod)):
                for line in (inspect.getdoc(getattr(mod, attr)) or "").splitlines():
                    text = " ".join(keep.sub(" ", line.lower()).split())
                    if 20 <= len(text) <= 60:
                        out[text] = None
        lines = list(out)
    return lines[:N_PROMPTS]


def char_tokenizer(lines: list[str]):
    """A BPE trained on the prompts with a vocabulary of the alphabet plus a few merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_next")
    tok.decoder = decoders.Fuse()
    trainer = trainers.BpeTrainer(vocab_size=48, special_tokens=["<pad>", "<eos>", "<unk>"],
                                  initial_alphabet=list(ALPHABET), show_progress=False)
    tok.train_from_iterator(lines, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   unk_token="<unk>")
    fast.padding_side = "left"
    return fast


def vowel_share(completions: list[str], **_: object) -> list[float]:
    """Share of the completion's letters that are vowels (0 for a completion with none)."""
    out = []
    for text in completions:
        letters = [c for c in text if c.isalpha()]
        out.append(sum(c in VOWELS for c in letters) / len(letters) if letters else 0.0)
    return out


def answer_tag(completions: list[str], **_: object) -> list[float]:
    """1 for a completion holding <answer>...</answer>, else 0: a strict format parser."""
    return [1.0 if re.search(r"<answer>.+</answer>", text) else 0.0 for text in completions]


def double_z(completions: list[str], **_: object) -> list[float]:
    """1 for a completion that writes 'zz' anywhere, else 0: a task too hard for the policy."""
    return [1.0 if "zz" in text else 0.0 for text in completions]


def echo(prompts: list[str], completions: list[str], **_: object) -> list[float]:
    """1 when the completion's first two letters are the prompt's last two, else 0."""
    def letters(text: str) -> str:
        return "".join(c for c in text if c.isalpha())

    return [1.0 if len(letters(p)) >= 2 and letters(c)[:2] == letters(p)[-2:] else 0.0
            for p, c in zip(prompts, completions, strict=True)]


REWARDS = {"vowels": vowel_share, "answer_tag": answer_tag, "zz": double_z, "echo": echo}


def run(recipe: GrpoRecipe, lines: list[str]) -> None:
    import torch
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel, set_seed
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    set_seed(SEED)
    tok = char_tokenizer(lines)
    config = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=2, n_positions=128,
                        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id,
                        pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(config)
    dest = EVIDENCE / "trl" / recipe.name
    dest.mkdir(parents=True, exist_ok=True)
    args = GRPOConfig(
        output_dir=f"/tmp/trl-evidence-{recipe.name}", seed=SEED, use_cpu=True,
        report_to="none", save_strategy="no", disable_tqdm=True,
        learning_rate=recipe.learning_rate, lr_scheduler_type="constant",
        max_steps=recipe.max_steps, logging_steps=recipe.logging_steps,
        per_device_train_batch_size=recipe.per_device_train_batch_size,
        num_generations=recipe.num_generations,
        max_completion_length=recipe.max_completion_length, temperature=recipe.temperature)
    trainer = GRPOTrainer(model=model, reward_funcs=REWARDS[recipe.reward], args=args, processing_class=tok,
                          train_dataset=Dataset.from_dict({"prompt": lines}))
    t0 = time.time()
    trainer.train()
    wall = time.time() - t0
    trainer.state.save_to_json(str(dest / "trainer_state.json"))
    write_meta(dest, recipe, wall, len(tok))


def write_meta(dest: Path, recipe: GrpoRecipe, wall: float, vocab: int) -> None:
    import datasets
    import tokenizers
    import torch
    import transformers
    import trl

    meta = {"framework": "trl", "run": recipe.name, "what": recipe.what, "seed": SEED,
            "recipe": asdict(recipe),
            "task": "GRPO on lower-cased stdlib docstring lines as prompts; policy GPT-2 from "
            f"config (n_layer 2, n_embd 64, n_head 2, random init), character-level BPE vocab "
            f"{vocab}; reward {recipe.reward}",
            "wall_seconds": round(wall, 1), "logs": ["trainer_state.json"],
            "versions": {"python": platform.python_version(), "trl": trl.__version__,
                         "transformers": transformers.__version__, "torch": torch.__version__,
                         "datasets": datasets.__version__, "tokenizers": tokenizers.__version__},
            "command": "python scripts/make_evidence_trl.py"}
    (dest / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def main(argv: list[str]) -> int:
    names = argv or list(RECIPES)
    lines = prompt_lines()
    for name in names:
        run(RECIPES[name], lines)
        print(f"wrote {EVIDENCE / 'trl' / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
