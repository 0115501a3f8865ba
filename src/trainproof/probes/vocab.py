"""How many classes the loss chooses among, when something beside the log says so:
`--vocab-size N`, a Hugging Face `config.json` (vocab_size, or num_labels/id2label
for a classifier) or a `tokenizer.json`, in the log's directory or its parent run
directory. Also the width and init spread a from-scratch model of that config has.
Reads JSON only, size-capped; never imports or unpickles anything. Measures, never
judges: rules/vocab.py decides what the numbers mean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainproof.frozen import NamedTuple
from trainproof.parsers.base import number
from trainproof.parsers.jsonutil import loads

_WIDTH_KEYS = ("n_embd", "hidden_size", "d_model", "dim")
_INIT_KEYS = ("initializer_range", "init_std")


class Vocabulary(NamedTuple):
    """The size of the softmax the loss is taken over, and where that size came from."""

    size: int  # classes the loss is a softmax over
    kind: str  # "tokens" (an LM vocabulary), "labels" (a classifier's), "classes" (--vocab-size: either)
    source: str  # where `size` came from, as the evidence names it
    width: int | None = None  # hidden size feeding the output layer, when a config says
    init_std: float | None = None  # the config's initializer range, when it says
    width_source: str = ""


def find_vocabulary(log: Path, given: int | None, max_bytes: int) -> tuple[Vocabulary | None, list[str]]:
    """The vocabulary for the run logged at `log` (--vocab-size wins over files; a
    config.json over a tokenizer.json; the log's own directory over its parent), and
    notes on files that were there but could not be used."""
    notes: list[str] = []
    here = log if log.is_dir() else log.parent
    config_path = next((d / "config.json" for d in (here, here.parent) if (d / "config.json").is_file()), None)
    tokenizer_path = next((d / "tokenizer.json" for d in (here, here.parent)
                           if (d / "tokenizer.json").is_file()), None)
    config = _read(config_path, max_bytes, notes) if config_path is not None else None
    width, init, width_src = None, None, ""
    found: Vocabulary | None = None
    if isinstance(config, dict):
        width, init = _width(config), _init(config)
        width_src = str(config_path) if width else ""
        found = _from_config(config, str(config_path), notes)
    if given is not None:
        found = Vocabulary(given, "classes", "--vocab-size")
    elif found is None and tokenizer_path is not None:
        size = _tokenizer_size(_read(tokenizer_path, max_bytes, notes), notes, str(tokenizer_path))
        found = Vocabulary(size, "tokens", str(tokenizer_path)) if size else None
    if found is None:
        return None, notes
    return Vocabulary(found.size, found.kind, found.source, width, init, width_src), notes


def vocabulary_from_config(config: dict[str, Any], source: str) -> tuple[Vocabulary | None, list[str]]:
    """The vocabulary a model's configuration states (what a saved config.json holds, as
    the training callbacks see it in memory), with notes on why there is none."""
    notes: list[str] = []
    found = _from_config(config, source, notes)
    if found is None:
        return None, notes
    width = _width(config)
    return Vocabulary(found.size, found.kind, found.source, width, _init(config), source if width else ""), notes


def _read(p: Path, max_bytes: int, notes: list[str]) -> Any:
    try:
        if p.stat().st_size > max_bytes:
            notes.append(f"{p} is over {max_bytes} bytes: not read for the vocabulary")
            return None
        return loads(p.read_bytes())  # ValueError for too deep or 5,000-digit ints, too
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        notes.append(f"{p} could not be read for the vocabulary ({type(exc).__name__})")
        return None


def _positive_int(v: Any) -> int | None:
    return v if type(v) is int and v > 0 else None


def _from_config(c: dict[str, Any], src: str, notes: list[str]) -> Vocabulary | None:
    """A classifier's label count when the config says it is one, else the LM vocabulary."""
    archs = c.get("architectures") if isinstance(c.get("architectures"), list) else []
    classifier = any(isinstance(a, str) and "Classification" in a for a in archs)
    labels = _positive_int(c.get("num_labels"))
    if labels is None and isinstance(c.get("id2label"), dict):
        labels = len(c["id2label"]) or None
    if classifier or (labels is not None and _positive_int(c.get("vocab_size")) is None):
        if c.get("problem_type") in ("multi_label_classification", "regression") or (labels or 0) < 2:
            notes.append(f"{src}: not a single-label classifier (a sigmoid or regression loss): no class count")
            return None
        return Vocabulary(labels or 0, "labels", f"{src} (num_labels)")
    size = _positive_int(c.get("vocab_size"))
    text = c.get("text_config")
    if size is None and isinstance(text, dict):
        size = _positive_int(text.get("vocab_size"))
    return Vocabulary(size, "tokens", f"{src} (vocab_size)") if size else None


def _width(c: dict[str, Any]) -> int | None:
    for k in _WIDTH_KEYS:
        if (v := _positive_int(c.get(k))) is not None:
            return v
    return None


def _init(c: dict[str, Any]) -> float | None:
    for k in _INIT_KEYS:
        v = c.get(k)
        if type(v) in (int, float) and v > 0:
            return number(v)
    return None


def _tokenizer_size(doc: Any, notes: list[str], src: str) -> int | None:
    """Highest token id + 1, over the model's vocabulary and the added tokens."""
    if not isinstance(doc, dict):
        return None
    ids: list[int] = []
    vocab = doc.get("model", {}).get("vocab") if isinstance(doc.get("model"), dict) else None
    if isinstance(vocab, dict):
        ids += [v for v in vocab.values() if type(v) is int]
    elif isinstance(vocab, list):
        ids.append(len(vocab) - 1)
    added = doc.get("added_tokens")
    if isinstance(added, list):
        ids += [a["id"] for a in added if isinstance(a, dict) and type(a.get("id")) is int]
    if not ids:
        notes.append(f"{src}: no token ids found")
        return None
    return max(ids) + 1
