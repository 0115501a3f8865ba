"""Token measurements of a dataset, taken during the same streaming pass as the
record checks: sequence lengths against the context window, whether each
training sequence ends with EOS, and how many tokens the loss is taken on after
templating and truncation.

Trainable tokens: for prompt/completion, Alpaca and preference records, the
target's tokens (what completion-only loss trains on); for plain text, every
token; for chat records, the tokens of the assistant turns, located by rendering
the conversation up to each assistant turn (with the generation prompt) and
through it. Truncation keeps the first `max_len` tokens, as HF tokenizers do."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

import numpy as np

from trainproof.probes.dataset_shape import Tally, Unit
from trainproof.probes.tokenizer_load import Tokenizer, TokenizerLoadError


@dataclass
class TokenCounts:
    max_len: int | None  # the window judged against (None: no limit known)
    units: int = 0
    chat_units: int = 0
    rendered: bool = False  # chat records went through the chat template
    overflow: Tally = field(default_factory=Tally)
    zero_trainable: Tally = field(default_factory=Tally)
    no_eos: Tally = field(default_factory=Tally)
    unrenderable: Tally = field(default_factory=Tally)  # the template raised on a conversation
    lengths: array = field(default_factory=lambda: array("i"))  # 4 bytes per record

    def length_stats(self) -> dict[str, int]:
        if not self.lengths:
            return {"p50": 0, "p99": 0, "max": 0}
        a = np.frombuffer(self.lengths, dtype=np.int32)
        return {"p50": int(np.percentile(a, 50)), "p99": int(np.percentile(a, 99)), "max": int(a.max())}


class TokenVisitor:
    """Called with each block's units; tokenises them in batches."""

    def __init__(self, tok: Tokenizer, max_len: int | None) -> None:
        self.tok = tok
        self.counts = TokenCounts(max_len=max_len)
        self.limit = max_len if max_len is not None else math.inf
        self.eos = tok.special.eos

    def __call__(self, units: list[Unit], wheres: list[int]) -> None:
        plain = [(u, w) for u, w in zip(units, wheres, strict=False) if u.messages is None]
        chats = [(u, w) for u, w in zip(units, wheres, strict=False) if u.messages is not None]
        if plain:
            self._plain([u for u, _ in plain], [w for _, w in plain])
        if chats:
            self.counts.chat_units += len(chats)
            if self.tok.special.chat_template:
                self.counts.rendered = True
                for u, w in chats:
                    self._chat(u, w)

    def _record(self, length: int, trainable: int, ends_eos: bool, w: int) -> None:
        c = self.counts
        c.units += 1
        if length > self.limit:
            c.overflow.add(w, str(length))
        if trainable <= 0:
            c.zero_trainable.add(w, str(length))
        if not ends_eos:
            c.no_eos.add(w)
        c.lengths.append(length)

    def _plain(self, units: list[Unit], wheres: list[int]) -> None:
        """Only lengths are taken from the tokenizer (no id lists): EOS at the end is
        either appended by the tokenizer's post-processor or written in the text."""
        full = self.tok.lengths([u.prompt + u.target for u in units])
        prompts = [u.prompt for u in units if u.prompt]
        prompt_lengths = iter(self.tok.lengths(prompts) if prompts else [])
        trail = 1 if self.tok.special.adds_eos else 0
        appends = self.tok.special.adds_eos
        for u, n, w in zip(units, full, wheres, strict=True):
            n_prompt = next(prompt_lengths) - trail if u.prompt else 0
            trainable = min(n, self.limit) - n_prompt
            ends = appends or bool(self.eos and u.target.rstrip().endswith(self.eos))
            self._record(n, int(trainable), ends, w)

    def _chat(self, u: Unit, w: int) -> None:
        msgs = list(u.messages or ())
        try:
            full_text = self.tok.render_chat(msgs, add_generation_prompt=False)
            spans = []
            for i, m in enumerate(msgs):
                if m["role"] != "assistant":
                    continue
                before = self.tok.render_chat(msgs[:i], add_generation_prompt=True) if i else ""
                through = self.tok.render_chat(msgs[: i + 1], add_generation_prompt=False)
                a, b = self.tok.lengths([before, through], special=False)
                spans.append((a if before else 0, b))
        except TokenizerLoadError:
            raise  # transformers missing: could not judge, not a fault of the data
        except Exception as exc:  # a template raising (raise_exception) is a finding, not a crash
            self.counts.unrenderable.add(w, f"{type(exc).__name__}: {exc}".splitlines()[0][:120])
            return
        n = self.tok.lengths([full_text], special=False)[0]
        trainable = sum(max(0, min(b, self.limit) - a) for a, b in spans)
        last = msgs[-1]["content"] if msgs and msgs[-1]["role"] == "assistant" else None
        if not (last or "").strip():  # no final answer: judged by the chat rules, not here
            ends = True
        else:
            tail = full_text[full_text.rfind(last) + len(last):]
            ends = bool(self.eos) and self.eos in tail  # type: ignore[operator]
        self._record(n, int(trainable), ends, w)
