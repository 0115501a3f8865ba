"""Preflight rules on what the records hold: the shape's text field present and not
empty, exact duplicate records, conversations that chat templates can render, and
preference pairs that carry a preference."""

from __future__ import annotations

from trainproof.model import Finding, Level, Skip, SkipKind
from trainproof.probes.dataset_shape import CHAT, PREFERENCE
from trainproof.rules.base import Example, check, rule
from trainproof.rules.preflight import G, Preflight, location, place, tally_finding

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
    return [*tally_finding(MISSING_FIELD, s, "missing", fields=fields), *tally_finding(EMPTY_TEXT, s, "empty")]


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
            return tally_finding(CHAT_MALFORMED, s, "chat_malformed")
        return Skip(SkipKind.NO_DATA, "not a chat dataset")
    pairs = ((CHAT_MALFORMED, "chat_malformed"), (CHAT_EMPTY_TURN, "chat_empty_turn"),
             (CHAT_LAST, "chat_last_not_assistant"), (CHAT_ORDER, "chat_role_order"))
    return [f for r, name in pairs for f in tally_finding(r, s, name)]


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
    return tally_finding(CHOSEN_EQ_REJECTED, s, "chosen_equals_rejected")
