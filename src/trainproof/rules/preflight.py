"""Preflight rules: is this fine-tuning dataset (and, with --tokenizer, this tokenizer)
safe to start training on. Judges read the measurements of probes/dataset.py and
probes/dataset_tokens.py; every rule is declared here once."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainproof.model import Finding, Level, Location, Skip, SkipKind
from trainproof.probes.dataset import DatasetMeasurement
from trainproof.probes.dataset_contamination import Contamination
from trainproof.probes.dataset_near import NearDuplicates
from trainproof.probes.dataset_read import unpack
from trainproof.probes.dataset_shape import CHAT, PREFERENCE, Tally
from trainproof.probes.dataset_tokens import TokenCounts
from trainproof.probes.tokenizer_load import SpecialTokens
from trainproof.rules.base import Example, Threshold, check, example_subject, rule, statement

G = "preflight"


@dataclass(frozen=True)
class Preflight:
    """The subject the preflight checks judge."""

    data: DatasetMeasurement
    special: SpecialTokens | None = None  # None: no --tokenizer
    tokens: TokenCounts | None = None
    tokenizer: str = ""
    near: NearDuplicates | None = None  # None: no --near-dup
    contamination: Contamination | None = None  # None: no --eval
    eval_files: tuple[str, ...] = ()
    eval_notes: tuple[str, ...] = ()  # eval records that could not be read into the index


def place(m: DatasetMeasurement, w: int) -> str:
    """A record's position as a user finds it: `line 12`, or `shard.jsonl:12` across shards."""
    fi, pos = unpack(w)
    unit = "row" if m.kinds[fi] in ("parquet", "arrow") else "line"
    return f"{Path(m.files[fi]).name}:{pos}" if len(m.files) > 1 else f"{unit} {pos}"


def location(m: DatasetMeasurement, w: int | None) -> Location:
    if w is None:
        return Location(m.files[0] if len(m.files) == 1 else m.path)
    fi, pos = unpack(w)
    return Location(m.files[fi], line=None if m.kinds[fi] in ("parquet", "arrow") else pos)


def _first(m: DatasetMeasurement, t: Tally, with_detail: bool = True) -> str:
    parts = [place(m, w) + (f" ({d})" if with_detail and d else "") for w, d in zip(t.first, t.detail, strict=False)]
    more = ", ..." if t.count > len(t.first) else ""
    return ", ".join(parts) + more


def _share(n: int, total: int) -> float:
    return n / total if total else 0.0


def _tally_finding(r: Any, s: Preflight, name: str, **extra: Any) -> list[Finding]:
    t = s.data.tallies.get(name)
    if t is None or t.count == 0:
        return []
    return [r.finding(location(s.data, t.first[0]), count=t.count, n=s.data.records,
                      share=_share(t.count, s.data.records), first=_first(s.data, t), **extra)]


# ---------------------------------------------------------------- outcome statements

OK = rule(
    id="TP-PRE-OK", level=Level.PASS, group=G,
    title="Dataset is safe to start on.",
    evidence="{n} records ({shape}). Ran: {ran}. Skipped: {skipped}.",
    summary="The PASS statement: no preflight rule fired; lists what ran and what was skipped.",
    why="A PASS that does not say what it covered invites reading it as covering everything.",
    fix="Nothing to fix. Skipped checks are not passed checks: pass --tokenizer and --max-len "
    "to have the token checks run.",
    limits="Preflight checks the mechanics of the data (it parses, it is not empty, it is not "
    "repeated, it fits), not whether the content teaches what you want.",
)

NO_RECORDS = rule(
    id="TP-PRE-NO-RECORDS", level=Level.NOT_CHECKED, group=G,
    title="The dataset holds no records.",
    evidence="{detail}",
    summary="Nothing could be read as a record (an empty file, or no line parsed); exit 2.",
    why="An empty dataset is not a safe dataset: a PASS would be a lie, and a FAIL would blame "
    "data that is simply not there.",
    fix="Check the path; preflight reads JSONL, a JSON array of objects, Parquet, Arrow "
    "(datasets.save_to_disk), or a directory of those.",
)

UNKNOWN_SHAPE = rule(
    id="TP-PRE-UNKNOWN-SHAPE", level=Level.NOT_CHECKED, group=G,
    title="No known text field in the records.",
    evidence="fields seen: {fields}. Known shapes: text; prompt+completion; instruction+output; "
    "messages/conversations; chosen+rejected. Name the field with --text-field.",
    summary="The records have none of the fields the known shapes use; exit 2.",
    why="Checking the wrong field would judge data the training never reads.",
    fix="Pass --text-field FIELD.",
)

# ---------------------------------------------------------------- parsing

MALFORMED = rule(
    id="TP-PRE-MALFORMED-JSONL", level=Level.FAIL, group=G,
    title="Lines that are not JSON records.",
    evidence="{count} of {total} lines are not JSON objects; first: {first}",
    summary="A line is not valid JSON, not UTF-8, or not a JSON object.",
    why="datasets.load_dataset('json') stops at the first such line; a hand-written loader "
    "that skips it silently trains on less data than you think.",
    fix="Fix or drop the listed lines (a half-written last line means the export was cut short).",
    fires=Example({"lines": ['{"text": "a"}', '{"text": "b"']}),
    passes=Example({"lines": ['{"text": "a"}', '{"text": "b"}']}),
)

OVERSIZED = rule(
    id="TP-PRE-OVERSIZED-RECORD", level=Level.WARN, group=G,
    title="Records too long to read were skipped.",
    evidence="{count} line(s) longer than {limit_max_bytes} bytes were not read; first: {first}",
    summary="A single line is longer than any real training record; it is skipped unread.",
    why="A line of many megabytes is an export bug (a whole file on one line, binary data); "
    "reading it would hold it all in memory, and a loader that does will stall.",
    fix="Look at the listed line: split it into records, or drop it.",
    thresholds={"max_bytes": Threshold(16 << 20, "bytes per line", "Sixteen MiB is thousands of "
                                       "times a long-context sample; memory stays bounded.")},
)


@check("malformed", MALFORMED, OVERSIZED)
def malformed_lines(s: Preflight) -> list[Finding]:
    rt, m = s.data.read, s.data
    out = []
    if rt.malformed_count:
        first = ", ".join(f"{place(m, w)} ({why})" for w, why in rt.malformed)
        more = ", ..." if rt.malformed_count > len(rt.malformed) else ""
        out.append(MALFORMED.finding(location(m, rt.malformed[0][0]), count=rt.malformed_count,
                                     total=m.records + rt.malformed_count, first=first + more))
    if rt.oversized_count:
        first = ", ".join(place(m, w) for w in rt.oversized)
        out.append(OVERSIZED.finding(location(m, rt.oversized[0]), count=rt.oversized_count, first=first))
    return out


# ---------------------------------------------------------------- record contents

MISSING_FIELD = rule(
    id="TP-PRE-MISSING-FIELD", level=Level.FAIL, group=G,
    title="Records lack the dataset's text field.",
    evidence="{count} of {n} records ({share:.2%}) lack a string {fields}; first: {first}",
    summary="A record does not carry the shape's field, or carries it as null or a non-string.",
    why="The training script's formatting function raises on it (KeyError, TypeError) after "
    "the run has started, or silently trains on the string 'None'.",
    fix="Fill or drop the listed records; if the shape was detected wrongly, pass --text-field.",
    fires=Example({"records": [{"text": "a"}, {"text": None}, {"text": "b"}]}),
    passes=Example({"records": [{"text": "a"}, {"text": "c"}, {"text": "b"}]}),
)

EMPTY_TEXT = rule(
    id="TP-PRE-EMPTY-TEXT", level=Level.FAIL, group=G,
    title="Empty or whitespace-only text found.",
    evidence="{count} of {n} records ({share:.2%}) are empty or whitespace-only; first: {first}",
    summary="The text a record trains on (text, completion, output, chosen/rejected, a "
    "conversation with no turns) is empty or only whitespace.",
    why="An empty target gives a sample with no trainable tokens: NaN loss when a whole batch "
    "is empty, wasted steps otherwise; it usually marks a broken export.",
    fix="Drop the listed records, or fix the step that produced them.",
    fires=Example({"records": [{"text": "a"}, {"text": "  "}]}),
    passes=Example({"records": [{"text": "a"}, {"text": "b"}]}),
)


@check("fields", MISSING_FIELD, EMPTY_TEXT)
def record_fields(s: Preflight) -> list[Finding]:
    fields = "/".join(s.data.shape.fields) if s.data.shape else "?"
    return [*_tally_finding(MISSING_FIELD, s, "missing", fields=fields), *_tally_finding(EMPTY_TEXT, s, "empty")]


DUPLICATE = rule(
    id="TP-PRE-DUPLICATE-TEXT", level=Level.WARN, group=G,
    title="Exact duplicate records found.",
    evidence="{count} records repeat an earlier record exactly ({distinct} distinct texts are "
    "repeated{blank_note}); first: {first}",
    summary="A record's content (all of its shape's fields) is byte-identical to an earlier record's.",
    why="Duplicates are trained on several times per epoch: the model memorises them, and an "
    "eval split drawn from the same file leaks into training.",
    fix="Deduplicate (exact first; near-duplicates need MinHash or similar, not checked here).",
    fires=Example({"records": [{"text": "a"}, {"text": "b"}, {"text": "a"}]}),
    passes=Example({"records": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}),
    limits="Counts exact copies only, by a 64-bit hash of the decoded content; near "
    "duplicates (a changed word) are not found. Copies of empty texts are reported by "
    "TP-PRE-EMPTY-TEXT and counted here only in the values (dup_records_with_blank).",
)


@check("duplicates", DUPLICATE)
def duplicate_records(s: Preflight) -> list[Finding]:
    d, m = s.data.duplicates, s.data
    real = d.records - d.blank
    if real <= 0:
        return []
    shown = [(later, first) for later, first in d.examples][:5]
    first = ", ".join(f"{place(m, a)} = {place(m, b)}" for a, b in shown)
    note = f"; {d.blank} more are copies of blank texts" if d.blank else ""
    return [DUPLICATE.finding(location(m, shown[0][0]) if shown else location(m, None), count=real,
                              distinct=d.distinct - d.distinct_blank, blank_note=note, first=first, n=m.records,
                              dup_records_with_blank=d.records, distinct_with_blank=d.distinct)]


# ---------------------------------------------------------------- chat and preference shapes

CHAT_MALFORMED = rule(
    id="TP-PRE-CHAT-MALFORMED", level=Level.FAIL, group=G,
    title="Conversations that are not lists of role/content turns.",
    evidence="{count} of {n} records; first: {first}",
    summary="messages is not a list of objects with a string role and content, or a role is "
    "not one chat templates know (system, developer, user, assistant, tool; ShareGPT's "
    "human/gpt are accepted).",
    why="apply_chat_template raises on these, mid-run, or renders them into nonsense.",
    fix="Fix the listed records' turns.",
    fires=Example({"records": [{"messages": [{"role": "user", "content": "hi"}, {"role": "bot2", "content": "x"}]}]}),
    passes=Example({"records": [{"messages": [{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": "hello"}]}]}),
)

CHAT_EMPTY_TURN = rule(
    id="TP-PRE-CHAT-EMPTY-TURN", level=Level.WARN, group=G,
    title="Conversations with empty turns.",
    evidence="{count} of {n} conversations have an empty turn; first: {first}",
    summary="A turn's content is empty or whitespace-only.",
    why="An empty assistant turn trains the model to answer with nothing; an empty user turn "
    "is usually an export bug.",
    fix="Drop or repair the listed conversations.",
    fires=Example({"records": [{"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": ""}]}]}),
    passes=Example({"records": [{"messages": [{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": "hello"}]}]}),
)

CHAT_LAST = rule(
    id="TP-PRE-CHAT-LAST-NOT-ASSISTANT", level=Level.WARN, group=G,
    title="Conversations that do not end with the assistant.",
    evidence="{count} of {n} conversations end with another role; first: {first}",
    summary="The last turn is not an assistant turn.",
    why="With assistant-only loss the final user turn trains nothing, and a conversation with "
    "no assistant turn at all has zero trainable tokens.",
    fix="Trim trailing non-assistant turns, or drop those conversations.",
    fires=Example({"records": [{"messages": [{"role": "user", "content": "hi"}]}]}),
    passes=Example({"records": [{"messages": [{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": "hello"}]}]}),
)

CHAT_ORDER = rule(
    id="TP-PRE-CHAT-ROLE-ORDER", level=Level.WARN, group=G,
    title="Conversations whose user and assistant turns do not alternate.",
    evidence="{count} of {n} conversations; first: {first}",
    summary="Two user turns or two assistant turns follow each other (system and tool turns aside).",
    why="Several chat templates (Llama 2, Mistral, Gemma) raise 'Conversation roles must "
    "alternate' on these.",
    fix="Merge consecutive same-role turns.",
    fires=Example({"records": [{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                                             {"role": "assistant", "content": "c"}]}]}),
    passes=Example({"records": [{"messages": [{"role": "user", "content": "a"},
                                              {"role": "assistant", "content": "c"}]}]}),
)


@check("chat", CHAT_MALFORMED, CHAT_EMPTY_TURN, CHAT_LAST, CHAT_ORDER)
def chat_turns(s: Preflight) -> list[Finding] | Skip:
    if s.data.shape is None or s.data.shape.kind != CHAT:
        if s.data.tallies.get("chat_malformed") and s.data.tallies["chat_malformed"].count:
            return _tally_finding(CHAT_MALFORMED, s, "chat_malformed")
        return Skip(SkipKind.NO_DATA, "not a chat dataset")
    pairs = ((CHAT_MALFORMED, "chat_malformed"), (CHAT_EMPTY_TURN, "chat_empty_turn"),
             (CHAT_LAST, "chat_last_not_assistant"), (CHAT_ORDER, "chat_role_order"))
    return [f for r, name in pairs for f in _tally_finding(r, s, name)]


CHOSEN_EQ_REJECTED = rule(
    id="TP-PRE-CHOSEN-EQUALS-REJECTED", level=Level.WARN, group=G,
    title="Preference pairs whose chosen and rejected answers are identical.",
    evidence="{count} of {n} pairs ({share:.2%}); first: {first}",
    summary="chosen and rejected are the same text.",
    why="DPO-style losses see a zero margin on such a pair: it carries no preference, only "
    "noise, and usually marks a broken pairing step.",
    fix="Drop the listed pairs or regenerate their rejected answers.",
    fires=Example({"records": [{"prompt": "p", "chosen": "same", "rejected": "same"}]}),
    passes=Example({"records": [{"prompt": "p", "chosen": "good", "rejected": "bad"}]}),
)


@check("preference", CHOSEN_EQ_REJECTED)
def preference_pairs(s: Preflight) -> list[Finding] | Skip:
    if s.data.shape is None or s.data.shape.kind != PREFERENCE:
        return Skip(SkipKind.NO_DATA, "not a preference dataset")
    return _tally_finding(CHOSEN_EQ_REJECTED, s, "chosen_equals_rejected")


# ---------------------------------------------------------------- tokenizer structure (--tokenizer)

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
                                  first=_first(s.data, t.no_eos, with_detail=False))]


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
                                     units=t.units, share=_share(t.overflow.count, t.units), max_len=t.max_len,
                                     first=_first(s.data, t.overflow), **t.length_stats())]


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
                                          n=t.chat_units, first=_first(m, t.unrenderable)))
    if t.zero_trainable.count:
        out.append(NO_TRAINABLE.finding(location(m, t.zero_trainable.first[0]), count=t.zero_trainable.count,
                                        units=t.units, max_len=t.max_len or "unlimited",
                                        first=_first(m, t.zero_trainable, with_detail=False)))
    if not out and t.units == 0:
        return Skip(SkipKind.NO_DATA, "no record was tokenised")
    return out


# ---------------------------------------------------------------- examples

def _tokens_from(spec: Mapping[str, int], n: int) -> TokenCounts:
    t = TokenCounts(max_len=spec.get("max_len", 8), units=n)
    for name in ("overflow", "zero_trainable", "no_eos"):
        for _ in range(spec.get(name, 0)):
            getattr(t, name).add(1)
    return t


def _no_records_detail(m: DatasetMeasurement) -> str:
    rt = m.read
    if rt.malformed_count:
        _w, why = rt.malformed[0]
        return f"{rt.malformed_count} line(s), none parsed as a JSON object (first error: {why})"
    if rt.oversized_count:
        return f"{rt.oversized_count} line(s), all longer than {OVERSIZED.t('max_bytes'):.0f} bytes"
    return "the dataset is empty"


def _unjudgeable(s: Preflight) -> Finding | None:
    """Fields whose shape is unknown, or no record at all: no preflight check can run."""
    m = s.data
    if m.shape is None and m.fields:
        return UNKNOWN_SHAPE.finding(location(m, None), fields=", ".join(m.fields))
    if m.records == 0:
        return NO_RECORDS.finding(location(m, None), detail=_no_records_detail(m))
    return None


def _ok_values(s: Preflight) -> dict[str, Any]:
    return dict(n=s.data.records, shape=s.data.shape.describe() if s.data.shape else "?")


statement(G, OK, lambda s: location(s.data, None), values=_ok_values, precheck=_unjudgeable)


@example_subject(G)
def _example(data: Mapping[str, Any]) -> tuple[str, Preflight]:
    from trainproof.commands.preflight import overlap_subject

    lines = data.get("lines") or [json.dumps(r) for r in data["records"]]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "example.jsonl"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        evals = []
        if "eval" in data:
            evals = [str(Path(d) / "eval.jsonl")]
            Path(evals[0]).write_text("".join(json.dumps(r) + "\n" for r in data["eval"]), encoding="utf-8")
        m, near, contamination, eval_files, eval_notes = overlap_subject(p, None, bool(data.get("near_dup")),
                                                                         evals)
    special = SpecialTokens(**data["special"]) if "special" in data else None
    tokens = _tokens_from(data.get("tokens", {}), m.records) if special is not None else None
    return G, Preflight(m, special, tokens, "example", near, contamination, eval_files, eval_notes)
