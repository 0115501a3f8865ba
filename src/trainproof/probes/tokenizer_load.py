"""Loads a tokenizer from a local path, offline, behind one small interface: a
HuggingFace `tokenizer.json` (the `tokenizers` library), a saved tokenizer
directory (its tokenizer.json plus the special-token roles its config declares),
or a SentencePiece `.model`. A name that is not a path is looked up only in the
local HuggingFace cache, never downloaded. transformers is imported only to
render a chat template."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainproof.files import require_regular
from trainproof.parsers.jsonutil import loads
from trainproof.parsers.tfevents_proto import Undecodable, fields

LENGTH_BATCH = 256  # texts per tokenizer call when only lengths are needed


class TokenizerLoadError(Exception):
    """The tokenizer cannot be loaded; `dependency` names a missing package, if that is why."""

    def __init__(self, message: str, dependency: str | None = None) -> None:
        super().__init__(message)
        self.dependency = dependency


@dataclass(frozen=True)
class SpecialTokens:
    """Which special tokens the tokenizer declares and what encoding adds by default."""

    declared: bool  # False for a bare tokenizer.json: roles (eos, pad, bos) are not recorded there
    eos: str | None = None
    eos_id: int | None = None
    pad: str | None = None
    pad_id: int | None = None
    bos: str | None = None
    bos_id: int | None = None
    adds_bos: bool = False
    adds_eos: bool = False
    model_max_length: int | None = None
    chat_template: bool = False


@dataclass(frozen=True)
class Piece:
    id: int
    start: int  # character offsets into the text
    end: int


class Tokenizer:
    """What trainproof asks of any tokenizer. Subclasses wrap one library each."""

    kind = "tokenizer"
    path = ""
    special: SpecialTokens
    unk_id: int | None = None

    def encode(self, texts: Sequence[str], special: bool = True) -> list[list[int]]:
        raise NotImplementedError

    def lengths(self, texts: Sequence[str], special: bool = True) -> list[int]:
        """Token counts, in sub-batches so the library's per-token objects stay small."""
        out: list[int] = []
        for i in range(0, len(texts), LENGTH_BATCH):
            out.extend(self._lengths(texts[i: i + LENGTH_BATCH], special))
        return out

    def _lengths(self, texts: Sequence[str], special: bool) -> list[int]:
        return [len(ids) for ids in self.encode(texts, special)]

    def pieces(self, text: str) -> list[Piece]:
        raise NotImplementedError

    def pieces_batch(self, texts: Sequence[str]) -> list[list[Piece]]:
        return [self.pieces(t) for t in texts]

    def is_byte(self, token_id: int) -> bool:
        raise NotImplementedError

    def render_chat(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool) -> str:
        raise TokenizerLoadError("this tokenizer has no chat template")


def _token_str(v: Any) -> str | None:
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) else None


def _added_around(with_special: list[int], plain: list[int]) -> tuple[list[int], list[int]]:
    """The ids encoding adds before and after the plain ids (what the post-processor does)."""
    n = len(plain)
    for k in range(len(with_special) - n + 1):
        if with_special[k: k + n] == plain:
            return with_special[:k], with_special[k + n:]
    return [], []


class HFTokenizer(Tokenizer):
    kind = "tokenizers"

    def __init__(self, path: Path, config: Mapping[str, Any] | None, template_dir: Path | None) -> None:
        try:
            from tokenizers import Tokenizer as RustTokenizer
        except ImportError:
            raise TokenizerLoadError("reading tokenizer.json needs the tokenizers package "
                                     "(pip install tokenizers)", "tokenizers") from None
        self.path = str(path)
        try:
            self.tok = RustTokenizer.from_file(str(path))
        except Exception as exc:  # the Rust side raises its own Exception type
            raise TokenizerLoadError(f"{path}: not a tokenizer.json: {exc}".splitlines()[0]) from None
        self.tok.no_padding()
        self.tok.no_truncation()
        model = json.loads(self.tok.to_str()).get("model", {})
        unk = model.get("unk_token")
        self.unk_id = self.tok.token_to_id(unk) if isinstance(unk, str) else model.get("unk_id")
        self._template_dir = template_dir
        self.special = self._special(config)

    def _special(self, config: Mapping[str, Any] | None) -> SpecialTokens:
        if config is None:
            return SpecialTokens(declared=False)
        names = {k: _token_str(config.get(f"{k}_token")) for k in ("eos", "pad", "bos")}
        ids = {k: (self.tok.token_to_id(v) if v else None) for k, v in names.items()}
        lead, trail = _added_around(self.tok.encode("a").ids, self.tok.encode("a", add_special_tokens=False).ids)
        mml = config.get("model_max_length")
        return SpecialTokens(
            declared=True, eos=names["eos"], eos_id=ids["eos"], pad=names["pad"], pad_id=ids["pad"],
            bos=names["bos"], bos_id=ids["bos"],
            adds_bos=ids["bos"] is not None and ids["bos"] in lead,
            adds_eos=ids["eos"] is not None and ids["eos"] in trail,
            model_max_length=int(mml) if isinstance(mml, (int, float)) and 0 < mml < 1e9 else None,
            chat_template=bool(config.get("chat_template")) or bool(
                self._template_dir and (self._template_dir / "chat_template.jinja").is_file()),
        )

    def encode(self, texts: Sequence[str], special: bool = True) -> list[list[int]]:
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=special)]

    def _lengths(self, texts: Sequence[str], special: bool) -> list[int]:
        return [len(e) for e in self.tok.encode_batch(list(texts), add_special_tokens=special)]

    def pieces(self, text: str) -> list[Piece]:
        return self.pieces_batch([text])[0]

    def pieces_batch(self, texts: Sequence[str]) -> list[list[Piece]]:
        out = self.tok.encode_batch(list(texts), add_special_tokens=False)
        return [[Piece(i, a, b) for i, (a, b) in zip(e.ids, e.offsets, strict=True)] for e in out]

    def is_byte(self, token_id: int) -> bool:
        t = self.tok.id_to_token(token_id) or ""
        return len(t) == 6 and t.startswith("<0x") and t.endswith(">")

    def render_chat(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool) -> str:
        if not hasattr(self, "_hf"):
            self._hf = _transformers_tokenizer(self._template_dir or Path(self.path).parent)
        out = self._hf.apply_chat_template(list(messages), tokenize=False,
                                           add_generation_prompt=add_generation_prompt)
        return out if isinstance(out, str) else str(out)


class SPTokenizer(Tokenizer):
    kind = "sentencepiece"

    def __init__(self, path: Path) -> None:
        try:
            import sentencepiece as spm
        except ImportError:
            raise TokenizerLoadError("reading a SentencePiece .model needs the sentencepiece package "
                                     "(pip install sentencepiece)", "sentencepiece") from None
        self.path = str(path)
        try:
            self.sp = spm.SentencePieceProcessor(model_file=str(path))
        except (OSError, RuntimeError) as exc:
            raise TokenizerLoadError(f"{path}: not a SentencePiece model: {exc}".splitlines()[0]) from None
        self.unk_id = self.sp.unk_id()

        def name(i: int) -> tuple[str | None, int | None]:
            return (self.sp.id_to_piece(i), i) if i >= 0 else (None, None)

        (eos, eos_id), (pad, pad_id), (bos, bos_id) = name(self.sp.eos_id()), name(self.sp.pad_id()), \
            name(self.sp.bos_id())
        self.special = SpecialTokens(declared=True, eos=eos, eos_id=eos_id, pad=pad, pad_id=pad_id,
                                     bos=bos, bos_id=bos_id)

    def encode(self, texts: Sequence[str], special: bool = True) -> list[list[int]]:
        return self.sp.encode(list(texts))

    def pieces(self, text: str) -> list[Piece]:
        return self.pieces_batch([text])[0]

    def pieces_batch(self, texts: Sequence[str]) -> list[list[Piece]]:
        """Ids and offsets from the serialized SentencePieceText, decoded here: the
        `proto` return type needs the protobuf package, which no extra of ours declares,
        and sentencepiece itself does not. SentencePiece returns an unknown span as its
        original surface, so unknown characters are counted through the id, not the text."""
        blobs = self.sp.encode(list(texts), out_type="serialized_proto")
        return [_char_pieces(t, _spt_pieces(b)) for t, b in zip(texts, blobs, strict=True)]

    def is_byte(self, token_id: int) -> bool:
        return bool(self.sp.is_byte(token_id))


# SentencePieceText (sentencepiece.proto): field 2 is each SentencePiece, whose fields
# 2, 4 and 5 are its id, begin and end (UTF-8 byte offsets into the input).
_SPT_PIECES, _SP_ID, _SP_BEGIN, _SP_END = 2, 2, 4, 5


def _spt_pieces(blob: bytes) -> list[Piece]:
    """(id, begin byte, end byte) of each piece of one serialized SentencePieceText."""
    out = []
    try:
        for num, wt, span in fields(blob, 0, len(blob)):
            if num == _SPT_PIECES and wt == 2:
                got = {n: v for n, w, v in fields(blob, *span) if w == 0}
                out.append(Piece(got.get(_SP_ID, 0), got.get(_SP_BEGIN, 0), got.get(_SP_END, 0)))
    except Undecodable as exc:  # sentencepiece wrote it: a failure here is ours to report
        raise TokenizerLoadError(f"sentencepiece returned an unreadable SentencePieceText: {exc}") from None
    return out


def _char_pieces(text: str, pieces: list[Piece]) -> list[Piece]:
    """Proto pieces carry UTF-8 byte offsets; reports speak in characters."""
    if text.isascii():
        return pieces
    char_at = [0] * (len(text.encode("utf-8")) + 1)
    pos = 0
    for i, ch in enumerate(text):
        n = len(ch.encode("utf-8"))
        for k in range(n):
            char_at[pos + k] = i
        pos += n
    char_at[pos] = len(text)
    last = len(char_at) - 1
    return [Piece(p.id, char_at[min(p.start, last)], char_at[min(p.end, last)]) for p in pieces]


def _transformers_tokenizer(path: Path | str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise TokenizerLoadError("rendering a chat template needs transformers (pip install transformers)",
                                 "transformers") from None
    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise TokenizerLoadError(f"{path}: {exc}".splitlines()[0]) from None


def _read_config(d: Path) -> dict[str, Any]:
    cfg: dict[str, Any] = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        p = d / name
        if p.is_file():
            try:
                data = loads(p.read_bytes())
            except (OSError, ValueError) as exc:
                raise TokenizerLoadError(f"{p}: unreadable: {exc}") from None
            if isinstance(data, dict):
                cfg.update(data)
    return cfg


def _from_dir(d: Path) -> Tokenizer:
    cfg = _read_config(d)
    if (d / "tokenizer.json").is_file():
        return HFTokenizer(d / "tokenizer.json", cfg, d)
    if (d / "tokenizer.model").is_file():
        sp = SPTokenizer(d / "tokenizer.model")
        return sp
    raise TokenizerLoadError(f"{d}: no tokenizer.json or tokenizer.model in this directory")


def load_tokenizer(name: str) -> Tokenizer:
    """A local path, or a name already in the local HuggingFace cache (never fetched)."""
    p = Path(name)
    if p.is_dir():
        return _from_dir(p)
    if p.exists():
        require_regular(p)
        if p.suffix == ".model":
            return SPTokenizer(p)
        if p.name == "tokenizer.json" and (p.parent / "tokenizer_config.json").is_file():
            return _from_dir(p.parent)
        return HFTokenizer(p, None, None)
    if name.endswith((".json", ".model")) or os.sep in name.rstrip("/").split("/", 1)[-1]:
        raise TokenizerLoadError(f"{name}: no such file or directory")
    return _from_cache(name)


def _from_cache(name: str) -> Tokenizer:
    """A hub name resolved offline: only files already in the local cache are used."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise TokenizerLoadError(f"{name}: not a local path (and huggingface_hub is not installed "
                                 "to look in the local cache)", "huggingface_hub") from None
    try:
        d = snapshot_download(name, local_files_only=True,
                              allow_patterns=["tokenizer*", "special_tokens_map.json", "*.jinja"])
    except Exception:  # hub errors have many types; any of them means "not cached"
        raise TokenizerLoadError(f"{name}: not a local path and not in the local HuggingFace cache; "
                                 "trainproof never downloads - pass a saved tokenizer directory, "
                                 "a tokenizer.json or a SentencePiece .model") from None
    return _from_dir(Path(d))
