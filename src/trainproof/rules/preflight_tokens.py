"""Preflight rules on the tokenizer (--tokenizer): the special tokens it declares, and
what encoding the records with it leaves - sequences without EOS, records past the
context window, records with no trainable token, conversations its chat template
cannot render. probes/dataset_tokens.py counts; the verdicts are declared here."""

from __future__ import annotations

from trainproof.model import Finding, Level, Skip, SkipKind
from trainproof.probes.tokenizer_load import SpecialTokens
from trainproof.rules import preflight_records  # noqa: F401  (registered first: keeps the checks' order)
from trainproof.rules.base import Example, check, rule
from trainproof.rules.preflight import G, Preflight, first_places, location, share_of


def _special(s: Preflight) -> SpecialTokens | Skip:
    if s.special is None:
        return Skip(SkipKind.NOT_REQUESTED, "no --tokenizer")
    if not s.special.declared:
        return Skip(SkipKind.NO_DATA, "a bare tokenizer.json records no eos/pad/bos roles; pass the "
                    "saved tokenizer directory")
    return s.special


MISSING_EOS = rule(
    id="TP-PRE-MISSING-EOS-TOKEN", level=Level.FAIL, group=G,
    title="The tokenizer declares no EOS token.",
    evidence="tokenizer {tokenizer} has no eos_token",
    summary="No end-of-sequence token is declared.",
    why="Without an EOS token the model is never shown where an answer ends: it learns to "
    "ramble on until max_new_tokens.",
    fix="Set tokenizer.eos_token (the base model's, e.g. '</s>' or '<|im_end|>') and save it with the tokenizer.",
    fires=Example({"records": [{"text": "a"}], "special": {"declared": True}}),
    passes=Example({"records": [{"text": "a"}], "special": {"declared": True, "eos": "</s>", "eos_id": 2,
                                                            "pad": "<pad>", "pad_id": 0}}),
)

MISSING_PAD = rule(
    id="TP-PRE-MISSING-PAD-TOKEN", level=Level.WARN, group=G,
    title="The tokenizer declares no PAD token.",
    evidence="tokenizer {tokenizer} has no pad_token",
    summary="No padding token is declared.",
    why="Batching raises 'Asking to pad but the tokenizer does not have a padding token'; the "
    "common quick fix (pad = eos) walks into TP-PRE-PAD-EQUALS-EOS.",
    fix="Add a dedicated pad token (or reuse an unused reserved token) rather than the EOS.",
    fires=Example({"records": [{"text": "a"}], "special": {"declared": True, "eos": "</s>", "eos_id": 2}}),
    passes=Example({"records": [{"text": "a"}], "special": {"declared": True, "eos": "</s>", "eos_id": 2,
                                                            "pad": "<pad>", "pad_id": 0}}),
)

PAD_IS_EOS = rule(
    id="TP-PRE-PAD-EQUALS-EOS", level=Level.WARN, group=G,
    title="The PAD token is the EOS token.",
    evidence="pad_token {pad} (id {pad_id}) == eos_token {eos} (id {eos_id})",
    summary="pad_token_id equals eos_token_id.",
    why="Collators mask padding out of the labels by id (DataCollatorForLanguageModeling sets "
    "every pad id to -100), which masks the real EOS too: the model never learns to stop.",
    fix="Use a distinct pad token, or a collator that masks by attention mask, not by id.",
    fires=Example({"records": [{"text": "a"}], "special": {"declared": True, "eos": "</s>", "eos_id": 2,
                                                           "pad": "</s>", "pad_id": 2}}),
    passes=Example({"records": [{"text": "a"}], "special": {"declared": True, "eos": "</s>", "eos_id": 2,
                                                            "pad": "<pad>", "pad_id": 0}}),
)

BOS_INFO = rule(
    id="TP-PRE-BOS-TOKEN-INFO", level=Level.INFO, group=G,
    title="How this tokenizer starts a sequence.",
    evidence="bos_token {bos}; encoding {adds} it",
    summary="Context: the BOS token and whether encoding prepends it.",
    why="A chat template that writes the BOS itself plus a tokenizer that prepends one gives a "
    "double BOS; a model pretrained with a BOS and fine-tuned without one drifts.",
    fix="Nothing to fix by itself; make sure exactly one BOS starts each training sequence.",
)


@check("special-tokens", MISSING_EOS, MISSING_PAD, PAD_IS_EOS, BOS_INFO)
def special_tokens(s: Preflight) -> list[Finding] | Skip:
    sp = _special(s)
    if isinstance(sp, Skip):
        return sp
    loc = location(s.data, None)
    out = []
    if sp.eos is None:
        out.append(MISSING_EOS.finding(loc, tokenizer=s.tokenizer))
    if sp.pad is None:
        out.append(MISSING_PAD.finding(loc, tokenizer=s.tokenizer))
    elif sp.eos_id is not None and sp.pad_id == sp.eos_id:
        out.append(PAD_IS_EOS.finding(loc, pad=sp.pad, pad_id=sp.pad_id, eos=sp.eos, eos_id=sp.eos_id))
    out.append(BOS_INFO.finding(loc, bos=sp.bos, adds="prepends" if sp.adds_bos else "does not prepend"))
    return out


NO_EOS_APPEND = rule(
    id="TP-PRE-NO-EOS-APPEND", level=Level.WARN, group=G,
    title="Training sequences do not end with EOS.",
    evidence="{count} of {units} sequences end without {eos} (the tokenizer {appends} it and the "
    "text does not carry it); first: {first}",
    summary="Encoding a record as a plain pipeline would (tokenizer defaults, or the chat template) "
    "does not end the target with the EOS token.",
    why="A model that never sees EOS after an answer does not learn to stop.",
    fix="Append tokenizer.eos_token to each target (TRL's SFTTrainer does this itself for "
    "non-chat data), or use a chat template that closes the assistant turn with EOS.",
    fires=Example({"records": [{"text": "a"}], "special": {"declared": True, "eos": "</s>", "eos_id": 2},
                   "tokens": {"no_eos": 1}}),
    passes=Example({"records": [{"text": "a"}], "special": {"declared": True, "eos": "</s>", "eos_id": 2},
                    "tokens": {"no_eos": 0}}),
    limits="Judges the tokenizer and the data as they are; a training script that appends EOS "
    "itself is not visible here.",
)


@check("eos-append", NO_EOS_APPEND)
def eos_appended(s: Preflight) -> list[Finding] | Skip:
    sp = _special(s)
    if isinstance(sp, Skip):
        return sp
    if sp.eos is None:
        return Skip(SkipKind.NO_DATA, "no eos_token (see TP-PRE-MISSING-EOS-TOKEN)")
    t = s.tokens
    if t is None or t.units == 0:
        return Skip(SkipKind.NO_DATA, "no record was tokenised")
    if t.no_eos.count == 0:
        return []
    return [NO_EOS_APPEND.finding(location(s.data, t.no_eos.first[0]), count=t.no_eos.count, units=t.units,
                                  eos=sp.eos, appends="appends" if sp.adds_eos else "does not append",
                                  first=first_places(s.data, t.no_eos, with_detail=False))]


CONTEXT_OVERFLOW = rule(
    id="TP-PRE-CONTEXT-OVERFLOW", level=Level.WARN, group=G,
    title="Records longer than the context window.",
    evidence="{count} of {units} records ({share:.2%}) exceed {max_len} tokens (p50 {p50}, p99 "
    "{p99}, max {max}); first: {first}",
    summary="A record's token count is above --max-len (or the tokenizer's model_max_length).",
    why="Truncation silently drops the end of these records - for completion-style data, the "
    "answer the loss was meant to train on, and with it the EOS that teaches the model to stop.",
    fix="Raise --max-len if the model allows, split long records, or filter them out.",
    fires=Example({"records": [{"text": "a"}], "special": {"declared": True}, "tokens": {"overflow": 1}}),
    passes=Example({"records": [{"text": "a"}], "special": {"declared": True}, "tokens": {"overflow": 0}}),
)

CONTEXT_SKIPPED = rule(
    id="TP-PRE-CONTEXT-CHECK-SKIPPED", level=Level.INFO, group=G,
    title="Context length was not checked.",
    evidence="{detail}",
    summary="A tokenizer was given but no context window is known (no --max-len, no model_max_length).",
    why="Overflow cannot be judged without a limit; the report says so rather than implying it passed.",
    fix="Pass --max-len N.",
)


@check("context", CONTEXT_OVERFLOW, CONTEXT_SKIPPED)
def context_overflow(s: Preflight) -> list[Finding] | Skip:
    if s.special is None or s.tokens is None:
        return Skip(SkipKind.NOT_REQUESTED, "no --tokenizer")
    t, loc = s.tokens, location(s.data, None)
    if t.max_len is None:
        return [CONTEXT_SKIPPED.finding(loc, detail="no --max-len and the tokenizer declares no "
                                        "model_max_length; token lengths: " +
                                        ", ".join(f"{k} {v}" for k, v in t.length_stats().items()))]
    if t.units == 0:
        return Skip(SkipKind.NO_DATA, "no record was tokenised")
    if t.overflow.count == 0:
        return []
    return [CONTEXT_OVERFLOW.finding(location(s.data, t.overflow.first[0]), count=t.overflow.count,
                                     units=t.units, share=share_of(t.overflow.count, t.units), max_len=t.max_len,
                                     first=first_places(s.data, t.overflow), **t.length_stats())]


NO_TRAINABLE = rule(
    id="TP-PRE-NO-TRAINABLE-TOKENS", level=Level.WARN, group=G,
    title="Records with no trainable tokens after templating and truncation.",
    evidence="{count} of {units} records keep no target token within {max_len} tokens; first: {first}",
    summary="After the chat template (or prompt + completion) and truncation to the context "
    "window, no token of the target / assistant turns is left to train on.",
    why="Their labels are all -100: a batch made only of such records has a NaN loss, and "
    "otherwise they cost compute for nothing.",
    fix="Shorten the prompts or raise the context length; drop records without an assistant answer.",
    fires=Example({"records": [{"text": "a"}], "special": {"declared": True}, "tokens": {"zero_trainable": 1}}),
    passes=Example({"records": [{"text": "a"}], "special": {"declared": True}, "tokens": {"zero_trainable": 0}}),
)

NO_TEMPLATE = rule(
    id="TP-PRE-NO-CHAT-TEMPLATE", level=Level.FAIL, group=G,
    title="Chat records, but the tokenizer has no chat template.",
    evidence="{count} conversations; tokenizer {tokenizer} defines no chat_template",
    summary="The dataset is conversations and the tokenizer cannot render them.",
    why="apply_chat_template raises ('tokenizer.chat_template is not set'), so SFT on "
    "conversations fails at the first batch - or a fallback template the model never saw is used.",
    fix="Use the instruct model's tokenizer (it carries the template), or set one explicitly.",
)

TEMPLATE_ERROR = rule(
    id="TP-PRE-CHAT-TEMPLATE-ERROR", level=Level.FAIL, group=G,
    title="The chat template raises on some conversations.",
    evidence="{count} of {n} conversations; first: {first}",
    summary="Rendering a conversation with the tokenizer's chat template raised an error.",
    why="Training stops with that error when the batch holding the record comes up.",
    fix="Fix the listed conversations (role order, roles the template rejects).",
)


@check("trainable-tokens", NO_TRAINABLE, NO_TEMPLATE, TEMPLATE_ERROR)
def trainable_tokens(s: Preflight) -> list[Finding] | Skip:
    if s.special is None or s.tokens is None:
        return Skip(SkipKind.NOT_REQUESTED, "no --tokenizer")
    t, m = s.tokens, s.data
    out = []
    if t.chat_units and not t.rendered:
        out.append(NO_TEMPLATE.finding(location(m, None), count=t.chat_units, tokenizer=s.tokenizer))
    if t.unrenderable.count:
        out.append(TEMPLATE_ERROR.finding(location(m, t.unrenderable.first[0]), count=t.unrenderable.count,
                                          n=t.chat_units, first=first_places(m, t.unrenderable)))
    if t.zero_trainable.count:
        out.append(NO_TRAINABLE.finding(location(m, t.zero_trainable.first[0]), count=t.zero_trainable.count,
                                        units=t.units, max_len=t.max_len or "unlimited",
                                        first=first_places(m, t.zero_trainable, with_detail=False)))
    if not out and t.units == 0:
        return Skip(SkipKind.NO_DATA, "no record was tokenised")
    return out
