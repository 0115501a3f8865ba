"""Train the fault-injection galleries for real on CPU through the HuggingFace Trainer.

Six configurations x three seeds, one knob broken at a time. Like the fine-tunes the
galleries stand for, every run starts from the same pretrained base: a tiny model
built from a config and pretrained here (plain loop, seed 0) on the first part of a
text that ships with Python, with a tokenizer trained here on that text. The runs
fine-tune it on the rest of the text and evaluate on its last blocks. Nothing is
downloaded. Two families share this machinery and differ in everything else:

- `gpt2` (examples/gallery/): GPT-2, standard-library docstrings, byte-level BPE,
  linear decay, a log entry every 4 steps.
- `llama` (examples/gallery2/, the out-of-sample gallery): a Llama-style decoder
  (RMSNorm, rotary positions, SwiGLU, grouped-query attention), the language
  reference topics of `pydoc_data`, a SentencePiece-style BPE, cosine decay, a log
  entry every 5 steps.

    nice -n 10 python scripts/make_gallery.py                # the first gallery
    nice -n 10 python scripts/make_gallery.py --family llama # the second
    nice -n 10 python scripts/make_gallery.py --only healthy --seeds 42

Each run keeps only what the Trainer wrote as its log (`trainer_state.json`, via
`Trainer.save_state()`) plus a `run_meta.json` (config, seed, wall time, versions);
weights and checkpoints never leave the temporary output directory.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "examples" / "gallery"
OUT2 = ROOT / "examples" / "gallery2"
SEEDS = (42, 43, 44)

# Standard-library modules whose docstrings (and their members') make the gpt2 text.
# A fixed list so the corpus does not depend on what else happens to be installed.
TEXT_MODULES = (
    "abc", "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "cmd", "codecs",
    "collections", "colorsys", "concurrent.futures", "configparser", "contextlib", "copy",
    "csv", "dataclasses", "datetime", "decimal", "difflib", "email", "enum", "fractions",
    "ftplib", "functools", "getopt", "gettext", "glob", "gzip", "hashlib", "heapq", "hmac",
    "html", "http.client", "imaplib", "inspect", "io", "ipaddress", "itertools", "json",
    "logging", "mailbox", "mimetypes", "numbers", "operator", "optparse", "os", "pathlib",
    "pickle", "pprint", "queue", "random", "re", "sched", "secrets", "selectors", "shlex",
    "shutil", "smtplib", "socket", "sqlite3", "statistics", "string", "struct", "subprocess",
    "tarfile", "tempfile", "textwrap", "threading", "timeit", "tokenize", "trace",
    "traceback", "typing", "unittest", "urllib.parse", "uuid", "wave", "weakref", "zipfile",
)
TOPIC_LIMIT: int | None = None  # llama text: how many pydoc topics (None: all; tests cut it)

PRETRAIN_SHARE = 0.6  # leading share of the blocks the base model is pretrained on
EVAL_BLOCKS = 64     # held-out sequences (the last ones of the text)
OVERFIT_BLOCKS = 16  # the overfit run's whole training set


@dataclass(frozen=True)
class Config:
    """One gallery configuration. Only what `broken` names differs from healthy."""

    name: str
    broken: str
    learning_rate: float = 1e-3
    max_steps: int = 200
    batch_size: int = 8
    logging_steps: int = 4
    eval_steps: int = 10
    max_grad_norm: float = 1.0
    train_blocks: int | None = None  # None: every training block
    shuffle_labels: bool = False
    fp16_no_scaler: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    lr_scheduler: str = "linear"
    warmup_steps: int = 10


def sci(x: float) -> str:
    """1e-3, 2e-1: a learning rate as the gallery READMEs write it."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def fault_configs(healthy: Config) -> dict[str, Config]:
    """The six configurations: healthy and one broken knob each, scaled from healthy's
    learning rate so both families break the same knobs by the same factors."""
    lr = healthy.learning_rate
    epochs = healthy.max_steps * healthy.batch_size // OVERFIT_BLOCKS
    return {c.name: c for c in (
        healthy,
        replace(healthy, name="lr_hot", broken=f"learning rate x100 ({sci(lr)} -> {sci(lr * 100)})",
                learning_rate=round(lr * 100, 12)),
        replace(healthy, name="lr_zero", broken="learning rate 0", learning_rate=0.0),
        replace(healthy, name="nan",
                broken="fp16 autocast without a loss scaler, no clipping, learning rate x300",
                learning_rate=round(lr * 300, 12), max_grad_norm=1e30, fp16_no_scaler=True,
                notes=("forward and backward run under torch.autocast('cpu', float16) with "
                       "no GradScaler (the Trainer's fp16=True needs a GPU and adds a scaler)",
                       "max_grad_norm=1e30 turns clipping off while keeping the Trainer's "
                       "grad_norm in the log (max_grad_norm=0 would stop it logging)")),
        replace(healthy, name="bad_labels", broken="labels shuffled within each sequence",
                shuffle_labels=True),
        replace(healthy, name="overfit",
                broken=f"training set cut to {OVERFIT_BLOCKS} sequences ({epochs} epochs)",
                train_blocks=OVERFIT_BLOCKS),
    )}


@dataclass(frozen=True)
class Family:
    """One gallery: its text, tokenizer, model and healthy recipe."""

    name: str
    out: Path
    text: Callable[[], str]
    text_source: str
    tokenizer: Callable[[str, int], object]
    model: Callable[[Family, int], object]
    model_meta: dict
    healthy: Config
    block: int
    vocab: int
    pretrain_steps: int
    cache_tag: str

    @property
    def configs(self) -> dict[str, Config]:
        return fault_configs(self.healthy)


def docstring_text() -> str:
    """Docstrings of the fixed stdlib modules and of their public members, in order."""
    parts: list[str] = []
    for name in TEXT_MODULES:
        mod = importlib.import_module(name)
        for obj in [mod] + [getattr(mod, a) for a in sorted(dir(mod)) if not a.startswith("_")]:
            doc = inspect.getdoc(obj) if (obj is mod or getattr(obj, "__module__", None)
                                          == mod.__name__) else None
            if doc:
                parts.append(doc)
    return "\n\n".join(dict.fromkeys(parts))  # drop repeats, keep order


corpus_text = docstring_text  # the first gallery's name for it


def topics_text() -> str:
    """The Python language reference topics `pydoc` ships (`pydoc_data.topics`), in key
    order: prose about the language, not the library docstrings the gpt2 text uses."""
    from pydoc_data.topics import topics

    keys = sorted(topics)[:TOPIC_LIMIT]
    return "\n\n".join(topics[k] for k in keys)


def byte_bpe(text: str, vocab: int):
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(text.split("\n\n"), vocab_size=vocab, min_frequency=2,
                            show_progress=False)
    return tok


def sentencepiece_bpe(text: str, vocab: int):
    from tokenizers import SentencePieceBPETokenizer

    tok = SentencePieceBPETokenizer()
    tok.train_from_iterator(text.split("\n\n"), vocab_size=vocab, min_frequency=2,
                            show_progress=False)
    return tok


def build_blocks(text: str, family: Family | None = None) -> tuple[object, list[list[int]]]:
    family = family or FAMILIES["gpt2"]
    tok = family.tokenizer(text, family.vocab)
    ids = tok.encode(text).ids
    n = family.block
    return tok, [ids[i:i + n] for i in range(0, len(ids) - n + 1, n)]


def gpt2_model(family: Family, vocab: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_positions=family.block, n_embd=64,
                                      n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0))


def llama_model(family: Family, vocab: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    m = family.model_meta
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=vocab, hidden_size=m["hidden_size"], intermediate_size=m["intermediate_size"],
        num_hidden_layers=m["num_hidden_layers"], num_attention_heads=m["num_attention_heads"],
        num_key_value_heads=m["num_key_value_heads"], max_position_embeddings=family.block,
        bos_token_id=0, eos_token_id=0, pad_token_id=0, tie_word_embeddings=False))


FAMILIES = {f.name: f for f in (
    Family("gpt2", OUT, docstring_text, "docstrings of a fixed list of Python standard-library "
           "modules", byte_bpe, gpt2_model,
           {"architecture": "GPT2LMHeadModel from config", "n_layer": 2, "n_embd": 64, "n_head": 2},
           Config("healthy", "nothing"), block=32, vocab=2048, pretrain_steps=1500,
           cache_tag="gallery"),
    Family("llama", OUT2, topics_text, "the Python language reference topics in "
           "pydoc_data.topics (sorted by key)", sentencepiece_bpe, llama_model,
           {"architecture": "LlamaForCausalLM from config", "num_hidden_layers": 2,
            "hidden_size": 64, "intermediate_size": 176, "num_attention_heads": 4,
            "num_key_value_heads": 2, "tie_word_embeddings": False},
           Config("healthy", "nothing", learning_rate=2e-3, max_steps=200, logging_steps=5,
                  eval_steps=20, lr_scheduler="cosine", warmup_steps=12),
           block=40, vocab=1024, pretrain_steps=1000, cache_tag="gallery2-llama"),
)}
CONFIGS = FAMILIES["gpt2"].configs  # the first gallery's, as before


class Blocks:
    """A map-style dataset of fixed-length token blocks; labels optionally shuffled."""

    def __init__(self, blocks: list[list[int]], shuffle_seed: int | None = None) -> None:
        self.blocks = blocks
        self.labels = blocks
        if shuffle_seed is not None:
            rng = random.Random(shuffle_seed)
            self.labels = [rng.sample(b, len(b)) for b in blocks]

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        return {"input_ids": self.blocks[i], "labels": self.labels[i]}


def fp16_trainer_class():
    """A Trainer whose forward and backward run under float16 autocast with no
    GradScaler: fp16 compute as `fp16=True` does on a GPU, minus the loss scaling."""
    import torch
    from transformers import Trainer

    class Fp16NoScalerTrainer(Trainer):
        def compute_loss(self, model, inputs, *args, **kwargs):
            with torch.autocast("cpu", dtype=torch.float16):
                return super().compute_loss(model, inputs, *args, **kwargs)

    return Fp16NoScalerTrainer


def pretrained_base(family: Family, vocab: int, blocks: list[list[int]], text_sha: str) -> dict:
    """The base every run fine-tunes: pretrained once (plain AdamW loop, seed 0) and
    cached under the temp dir, keyed by the text, so trials do not repeat it."""
    import torch

    steps = family.pretrain_steps
    cache = (Path(tempfile.gettempdir())
             / f"trainproof-{family.cache_tag}-base-{text_sha[:12]}-{steps}.pt")
    if cache.exists():
        return torch.load(cache, weights_only=True)
    torch.manual_seed(0)
    model = family.model(family, vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = torch.tensor(blocks)
    gen = torch.Generator().manual_seed(0)
    for step in range(steps):
        batch = data[torch.randint(0, len(data), (16,), generator=gen)]
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 250 == 0 or step == steps - 1:
            print(f"base pretraining step {step}: loss {loss.item():.3f}", flush=True)
    state = model.state_dict()
    torch.save(state, cache)
    return state


def split(blocks: list[list[int]]) -> tuple[list, list, list]:
    """(pretraining, fine-tuning, held-out eval) blocks, in text order."""
    cut = int(len(blocks) * PRETRAIN_SHARE)
    return blocks[:cut], blocks[cut:-EVAL_BLOCKS], blocks[-EVAL_BLOCKS:]


def train_one(family: Family, cfg: Config, seed: int, base: dict, vocab: int,
              blocks: list[list[int]], dest: Path) -> dict:
    import torch
    from transformers import Trainer, TrainingArguments, set_seed

    set_seed(seed)
    _, train_blocks, eval_blocks = split(blocks)
    if cfg.train_blocks is not None:
        train_blocks = train_blocks[:cfg.train_blocks]
    train = Blocks(train_blocks, seed if cfg.shuffle_labels else None)
    model = family.model(family, vocab)
    model.load_state_dict(base)
    with tempfile.TemporaryDirectory(prefix="gallery-") as tmp:
        args = TrainingArguments(
            output_dir=tmp, max_steps=cfg.max_steps, learning_rate=cfg.learning_rate,
            per_device_train_batch_size=cfg.batch_size, per_device_eval_batch_size=32,
            logging_steps=cfg.logging_steps, eval_strategy="steps", eval_steps=cfg.eval_steps,
            save_strategy="no", report_to=[], seed=seed, use_cpu=True,
            max_grad_norm=cfg.max_grad_norm, warmup_steps=cfg.warmup_steps,
            lr_scheduler_type=cfg.lr_scheduler, disable_tqdm=True, dataloader_num_workers=0)
        trainer_class = fp16_trainer_class() if cfg.fp16_no_scaler else Trainer
        trainer = trainer_class(model=model, args=args, train_dataset=train,
                                eval_dataset=Blocks(eval_blocks))
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0
        trainer.save_state()
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(tmp) / "trainer_state.json", dest / "trainer_state.json")
    return {"train_sequences": len(train), "eval_sequences": len(eval_blocks),
            "wall_seconds": round(wall, 1), "torch_threads": torch.get_num_threads()}


def versions() -> dict[str, str]:
    import tokenizers
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "platform": platform.platform()}


def run_dir(out: Path, name: str, seed: int) -> Path:
    return out / name if seed == SEEDS[0] else out / name / f"seed{seed}"


def write_meta(family: Family, cfg: Config, seed: int, text: str, stats: dict,
               dest: Path) -> None:
    meta = {"config": cfg.name, "broken": cfg.broken, "seed": seed, "family": family.name,
            "settings": {k: v for k, v in asdict(cfg).items() if k not in ("name", "broken")},
            "model": {**family.model_meta, "block_tokens": family.block, "vocab": family.vocab,
                      "init": f"base pretrained here: {family.pretrain_steps} AdamW steps (lr "
                              f"3e-3, batch 16, seed 0) on the first {PRETRAIN_SHARE:.0%} of "
                              "the text"},
            "text": {"source": family.text_source, "characters": len(text),
                     "sha256": hashlib.sha256(text.encode()).hexdigest()},
            "device": "cpu", "precision": "fp16 autocast, no GradScaler (see notes)"
            if cfg.fp16_no_scaler else "fp32",
            **stats, "versions": versions(),
            "command": "python scripts/make_gallery.py"
            + ("" if family.name == "gpt2" else f" --family {family.name}")}
    (dest / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=sorted(FAMILIES), default="gpt2",
                    help="gpt2: examples/gallery/; llama: examples/gallery2/")
    ap.add_argument("--only", nargs="*", choices=sorted(CONFIGS), help="configurations to run")
    ap.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the box is shared)")
    ap.add_argument("--out", type=Path, help="trials: write somewhere else")
    ap.add_argument("--lr", type=float, help="trials: override the learning rate")
    ap.add_argument("--steps", type=int, help="trials: override max_steps")
    opts = ap.parse_args(argv)
    import torch

    torch.set_num_threads(opts.threads)
    family = FAMILIES[opts.family]
    text = family.text()
    tok, blocks = build_blocks(text, family)
    vocab = tok.get_vocab_size()
    print(f"{family.name}: text {len(text)} chars, {len(blocks)} blocks of {family.block} "
          f"tokens, vocab {vocab}", flush=True)
    text_sha = hashlib.sha256(text.encode()).hexdigest()
    base = pretrained_base(family, vocab, split(blocks)[0], text_sha)
    configs = family.configs
    for name in opts.only or list(configs):
        for seed in opts.seeds:
            cfg = configs[name]
            cfg = replace(cfg, learning_rate=opts.lr) if opts.lr is not None else cfg
            cfg = replace(cfg, max_steps=opts.steps) if opts.steps else cfg
            dest = run_dir(opts.out or family.out, name, seed)
            stats = train_one(family, cfg, seed, base, vocab, blocks, dest)
            write_meta(family, cfg, seed, text, stats, dest)
            print(f"{name} seed {seed}: {stats['wall_seconds']} s -> {dest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
