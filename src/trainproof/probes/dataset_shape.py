"""Record shapes people fine-tune on, detected from the fields of the first records:
plain `text`; `prompt`/`completion`; Alpaca `instruction`/`input`/`output`; chat
`messages` (or ShareGPT `conversations` with from/value); preference
`prompt`/`chosen`/`rejected`. The inspector turns each record into the string whose
exact duplicates matter (its "key") and counts what is wrong with its shape."""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TEXT, PROMPT_COMPLETION, ALPACA, CHAT, PREFERENCE = (
    "text", "prompt-completion", "alpaca", "chat", "preference")

ROLE_ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant"}
KNOWN_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function", "ipython"})
_SEP = "\x1f"  # joins the parts of a record's key; cannot occur by accident in real text


@dataclass(frozen=True)
class Shape:
    kind: str
    fields: tuple[str, ...]  # the fields the shape reads, in the order they are joined

    @property
    def single_text_field(self) -> str | None:
        """The field the fast path decodes, for shapes that are one string per record."""
        f = self.fields[0]
        return f if self.kind == TEXT and f.isidentifier() and not keyword.iskeyword(f) else None

    def describe(self) -> str:
        return f"{self.kind} ({', '.join(self.fields)})"


def detect_shape(records: Iterable[Mapping[str, Any]], text_field: str | None = None) -> Shape | None:
    """The shape most of the sampled records have, or None when no known field is present."""
    counts: dict[str, int] = {}
    samples: dict[str, Any] = {}
    for r in records:
        for k, v in r.items():
            counts[k] = counts.get(k, 0) + 1
            samples.setdefault(k, v)
    if text_field is not None:
        return Shape(CHAT if isinstance(samples.get(text_field), list) else TEXT, (text_field,))
    has = counts.__contains__
    if has("messages") or has("conversations"):
        return Shape(CHAT, ("messages" if has("messages") else "conversations",))
    if has("chosen") and has("rejected"):
        return Shape(PREFERENCE, ("prompt", "chosen", "rejected"))
    if has("prompt") and has("completion"):
        return Shape(PROMPT_COMPLETION, ("prompt", "completion"))
    if has("instruction") and has("output"):
        return Shape(ALPACA, ("instruction", "input", "output"))
    if has("text"):
        return Shape(TEXT, ("text",))
    return None


def fields_seen(records: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for r in records:
        seen.update(dict.fromkeys(r))
    return list(seen)


@dataclass
class Tally:
    """How many records have one problem, and where the first few are."""

    count: int = 0
    first: list[int] = field(default_factory=list)
    detail: list[str] = field(default_factory=list)

    def add(self, w: int, detail: str = "", keep: int = 5) -> None:
        self.count += 1
        if len(self.first) < keep:
            self.first.append(w)
            self.detail.append(detail)


PROBLEMS = ("missing", "empty", "chat_malformed", "chat_empty_turn", "chat_last_not_assistant",
            "chat_role_order", "chosen_equals_rejected")


@dataclass(frozen=True)
class Unit:
    """What a tokenizer check needs of one record: a conversation, or a prompt and
    the target the loss is taken on (prompt "" for plain text: every token trains)."""

    prompt: str = ""
    target: str = ""
    messages: tuple[Mapping[str, str], ...] | None = None


def _is_blank(s: str) -> bool:
    return not s or s.isspace()


def normalise_messages(value: Any) -> tuple[list[dict[str, str]] | None, str]:
    """Messages as role/content dicts, or (None, why) when the list is not a conversation."""
    if not isinstance(value, list):
        return None, f"messages is a {type(value).__name__}, not a list"
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict):
            return None, f"turn {i} is a {type(m).__name__}, not an object"
        role = m.get("role", m.get("from"))
        content = m.get("content", m.get("value"))
        if not isinstance(role, str) or not isinstance(content, str):
            return None, f"turn {i} lacks a string role/content"
        role = ROLE_ALIASES.get(role, role)
        if role not in KNOWN_ROLES:
            return None, f"turn {i} has unknown role {role!r}"
        out.append({"role": role, "content": content})
    return out, ""


class Inspector:
    """Per-shape record inspection; `keys` are what duplicate detection hashes."""

    def __init__(self, shape: Shape, want_units: bool = False) -> None:
        self.shape = shape
        self.want_units = want_units
        self.tallies = {p: Tally() for p in PROBLEMS}
        self._inspect = {TEXT: self._text, PROMPT_COMPLETION: self._pair, ALPACA: self._alpaca,
                         CHAT: self._chat, PREFERENCE: self._preference}[shape.kind]

    def records(self, dicts: list[Any], wheres: list[int]) -> tuple[list[str], list[int], list[Unit]]:
        keys: list[str] = []
        kept: list[int] = []
        units: list[Unit] = []
        for rec, w in zip(dicts, wheres, strict=False):
            out = self._inspect(rec, w)
            if out is not None:
                keys.append(out[0])
                kept.append(w)
                if self.want_units:
                    units.append(out[1])
        return keys, kept, units

    def _strings(self, rec: Mapping[str, Any], w: int, names: tuple[str, ...],
                 optional: tuple[str, ...] = ()) -> list[str] | None:
        vals = []
        for name in names:
            v = rec.get(name)
            if v is None and name in optional:
                v = ""
            if not isinstance(v, str):
                self.tallies["missing"].add(w, f"{name} is {'missing' if v is None else type(v).__name__}")
                return None
            vals.append(v)
        return vals

    def _text(self, rec: Mapping[str, Any], w: int) -> tuple[str, Unit] | None:
        vals = self._strings(rec, w, self.shape.fields)
        if vals is None:
            return None
        if _is_blank(vals[0]):
            self.tallies["empty"].add(w)
        return vals[0], Unit(target=vals[0])

    def _pair(self, rec: Mapping[str, Any], w: int) -> tuple[str, Unit] | None:
        vals = self._strings(rec, w, ("prompt", "completion"))
        if vals is None:
            return None
        if _is_blank(vals[1]):
            self.tallies["empty"].add(w, "completion")
        return _SEP.join(vals), Unit(prompt=vals[0], target=vals[1])

    def _alpaca(self, rec: Mapping[str, Any], w: int) -> tuple[str, Unit] | None:
        vals = self._strings(rec, w, ("instruction", "input", "output"), optional=("input",))
        if vals is None:
            return None
        for name, v in (("instruction", vals[0]), ("output", vals[2])):
            if _is_blank(v):
                self.tallies["empty"].add(w, name)
                break
        prompt = vals[0] + (f"\n\n{vals[1]}" if vals[1].strip() else "")
        return _SEP.join(vals), Unit(prompt=prompt, target=vals[2])

    def _chat(self, rec: Mapping[str, Any], w: int) -> tuple[str, Unit] | None:
        raw = rec.get(self.shape.fields[0])
        if raw is None:
            self.tallies["missing"].add(w, f"{self.shape.fields[0]} is missing")
            return None
        msgs, why = normalise_messages(raw)
        if msgs is None:
            self.tallies["chat_malformed"].add(w, why)
            return None
        self._conversation(msgs, w)
        key = _SEP.join(f"{m['role']}\x1e{m['content']}" for m in msgs)
        return key, Unit(messages=tuple(msgs))

    def _conversation(self, msgs: list[dict[str, str]], w: int) -> None:
        if not msgs:
            self.tallies["empty"].add(w, "no turns")
            return
        empty = [i for i, m in enumerate(msgs) if _is_blank(m["content"])]
        if empty:
            self.tallies["chat_empty_turn"].add(w, f"turn {empty[0]} ({msgs[empty[0]]['role']})")
        if msgs[-1]["role"] != "assistant":
            self.tallies["chat_last_not_assistant"].add(w, f"last turn is {msgs[-1]['role']}")
        dialog = [m["role"] for m in msgs if m["role"] in ("user", "assistant")]
        for i in range(1, len(dialog)):
            if dialog[i] == dialog[i - 1]:
                self.tallies["chat_role_order"].add(w, f"two {dialog[i]} turns in a row")
                break

    def _side(self, v: Any, name: str, w: int) -> str | None:
        """A preference side: a string, or a list of messages (TRL's conversational form)."""
        if isinstance(v, str):
            return v
        msgs, why = normalise_messages(v) if v is not None else (None, f"{name} is missing")
        if msgs is None:
            self.tallies["missing" if v is None else "chat_malformed"].add(w, why)
            return None
        return "\n".join(m["content"] for m in msgs)

    def _preference(self, rec: Mapping[str, Any], w: int) -> tuple[str, Unit] | None:
        sides = [self._side(rec.get(n), n, w) if rec.get(n) is not None or n != "prompt" else ""
                 for n in ("prompt", "chosen", "rejected")]
        if any(s is None for s in sides):
            return None
        prompt, chosen, rejected = sides  # type: ignore[misc]
        if _is_blank(chosen) or _is_blank(rejected):
            self.tallies["empty"].add(w, "chosen" if _is_blank(chosen) else "rejected")
        elif chosen == rejected:
            self.tallies["chosen_equals_rejected"].add(w)
        longer = chosen if len(chosen) >= len(rejected) else rejected
        return _SEP.join((prompt, chosen, rejected)), Unit(prompt=prompt, target=longer)
