"""preflight --tokenizer: special-token structure, EOS at the end of training
sequences, context overflow and zero trainable tokens after a real chat template,
with a tokenizer trained and saved (transformers' save_pretrained) inside the tests."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from trainproof.cli import main

from .test_preflight import ids, run_json, write_jsonl
from .test_tokenizer import corpus, train_bpe

CHATML = (
    "{% for m in messages %}"
    "{% if loop.index0 > 0 and m['role'] == messages[loop.index0 - 1]['role'] %}"
    "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
    "<s>{{ m['role'] }}\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant\n{% endif %}"
)


def save_tokenizer(d: Path, tok_json: Path, **special) -> Path:
    from transformers import PreTrainedTokenizerFast

    t = PreTrainedTokenizerFast(tokenizer_file=str(tok_json), **special)
    t.save_pretrained(str(d))
    return d


@pytest.fixture(scope="module")
def tokenizers_dir(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("toks")
    tj = train_bpe(base / "tokenizer.json")
    return {
        "json": tj,
        "chat": save_tokenizer(base / "chat", tj, eos_token="</s>", pad_token="<pad>", bos_token="<s>",
                               unk_token="[UNK]", chat_template=CHATML, model_max_length=64),
        "pad_is_eos": save_tokenizer(base / "pad_is_eos", tj, eos_token="</s>", pad_token="</s>",
                                     unk_token="[UNK]"),
        "no_eos": save_tokenizer(base / "no_eos", tj, pad_token="<pad>", unk_token="[UNK]"),
    }


def chat(*turns: tuple[str, str]) -> dict:
    return {"messages": [{"role": r, "content": c} for r, c in turns]}


def test_pad_equals_eos_and_no_eos_appended(tmp_path, capsys, tokenizers_dir):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": s} for s in corpus(10)])
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["pad_is_eos"]), "--max-len", "512")
    assert code == 0
    f = ids(doc)
    assert f["TP-PRE-PAD-EQUALS-EOS"]["values"]["pad_id"] == f["TP-PRE-PAD-EQUALS-EOS"]["values"]["eos_id"]
    assert f["TP-PRE-NO-EOS-APPEND"]["values"]["count"] == 10
    assert f["TP-PRE-BOS-TOKEN-INFO"]["level"] == "INFO"
    assert "context" in doc["reports"][0]["checks"]["ran"]


def test_texts_that_carry_eos_are_not_flagged(tmp_path, capsys, tokenizers_dir):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": s + "</s>"} for s in corpus(10)])
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["chat"]))
    assert code == 0 and "TP-PRE-NO-EOS-APPEND" not in ids(doc)


def test_missing_eos_is_a_fail(tmp_path, capsys, tokenizers_dir):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": s} for s in corpus(5)])
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["no_eos"]), "--max-len", "64")
    assert code == 1 and "TP-PRE-MISSING-EOS-TOKEN" in ids(doc)


def test_bare_tokenizer_json_skips_role_checks_but_measures_lengths(tmp_path, capsys, tokenizers_dir):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": s} for s in corpus(5)] + [{"text": " ".join(corpus(20))}])
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["json"]), "--max-len", "32")
    rep = doc["reports"][0]
    assert "special-tokens" in rep["checks"]["skipped"]
    f = ids(doc)["TP-PRE-CONTEXT-OVERFLOW"]
    assert f["values"]["count"] == 1 and f["location"]["line"] == 6 and f["values"]["max"] > 32
    assert code == 0


def test_no_max_len_and_no_model_max_length_says_context_was_skipped(tmp_path, capsys, tokenizers_dir):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": s} for s in corpus(5)])
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["json"]))
    assert "TP-PRE-CONTEXT-CHECK-SKIPPED" in ids(doc) and "TP-PRE-OK" in ids(doc)
    assert code == 0


def test_chat_template_zero_trainable_tokens_and_template_errors(tmp_path, capsys, tokenizers_dir):
    long_prompt = " ".join(corpus(12))
    recs = [
        chat(("user", "the cat sat"), ("assistant", "on the mat")),
        chat(("system", "be brief"), ("user", long_prompt), ("assistant", "the dog ran")),  # cut off
        chat(("user", "where is the house")),  # nothing to train on, ends with the user
        chat(("user", "a"), ("user", "b"), ("assistant", "c")),  # the template raises
    ]
    p = write_jsonl(tmp_path / "chat.jsonl", recs)
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["chat"]), "--max-len", "48")
    f = ids(doc)
    assert code == 1
    assert f["TP-PRE-NO-TRAINABLE-TOKENS"]["values"]["count"] == 2
    assert f["TP-PRE-NO-TRAINABLE-TOKENS"]["values"]["first"] == "line 2, line 3"
    assert f["TP-PRE-CHAT-TEMPLATE-ERROR"]["location"]["line"] == 4
    assert "alternate" in f["TP-PRE-CHAT-TEMPLATE-ERROR"]["evidence"]
    assert f["TP-PRE-CHAT-LAST-NOT-ASSISTANT"]["values"]["count"] == 1
    assert f["TP-PRE-CHAT-ROLE-ORDER"]["values"]["count"] == 1
    assert f["TP-PRE-CONTEXT-OVERFLOW"]["values"]["count"] == 1


def test_chat_data_with_a_tokenizer_without_template_fails(tmp_path, capsys, tokenizers_dir):
    p = write_jsonl(tmp_path / "chat.jsonl", [chat(("user", "hi"), ("assistant", "hello"))])
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["pad_is_eos"]))
    assert code == 1 and "TP-PRE-NO-CHAT-TEMPLATE" in ids(doc)


def test_prompt_completion_truncated_away(tmp_path, capsys, tokenizers_dir):
    recs = [{"prompt": "the cat", "completion": "sat on the mat</s>"},
            {"prompt": " ".join(corpus(10)), "completion": "ran</s>"}]
    p = write_jsonl(tmp_path / "pc.jsonl", recs)
    code, doc = run_json(capsys, str(p), "--tokenizer", str(tokenizers_dir["chat"]), "--max-len", "40")
    f = ids(doc)
    assert f["TP-PRE-NO-TRAINABLE-TOKENS"]["values"]["first"] == "line 2"
    assert code == 0


def test_tokenizer_that_cannot_be_had_is_exit_2_fast(tmp_path, capsys):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": "a"}])
    t0 = time.monotonic()
    assert main(["preflight", str(p), "--tokenizer", "mistralai/Not-A-Cached-Model-7B"]) == 2
    assert time.monotonic() - t0 < 30
    err = capsys.readouterr().err
    assert "never downloads" in err and len(err.strip().splitlines()) == 1
    assert main(["preflight", str(p), "--tokenizer", str(tmp_path / "tok.model")]) == 2
    assert main(["preflight", str(p), "--max-len", "10"]) == 2
    assert "needs --tokenizer" in capsys.readouterr().err


def test_sarif_points_at_the_dataset_lines(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "d.jsonl", [{"text": "a"}, {"text": ""}, {"text": "a"}])
    assert main(["preflight", "d.jsonl", "--sarif", "out.sarif"]) == 1
    capsys.readouterr()
    sarif = json.loads((tmp_path / "out.sarif").read_text())
    results = sarif["runs"][0]["results"]
    empty = next(r for r in results if r["ruleId"] == "TP-PRE-EMPTY-TEXT")
    loc = empty["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "d.jsonl" and loc["region"]["startLine"] == 2


def test_sentencepiece_model_roles(tmp_path, capsys):
    from .test_tokenizer import train_spm

    model = train_spm(tmp_path / "sp")  # SentencePiece defaults: unk 0, bos 1, eos 2, no pad
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": s} for s in corpus(5)])
    code, doc = run_json(capsys, str(p), "--tokenizer", str(model), "--max-len", "64")
    f = ids(doc)
    assert code == 0
    assert "TP-PRE-MISSING-PAD-TOKEN" in f and "TP-PRE-MISSING-EOS-TOKEN" not in f
    assert f["TP-PRE-NO-EOS-APPEND"]["values"]["count"] == 5  # SentencePiece appends nothing


def test_chat_template_without_transformers_is_exit_2(tmp_path, capsys, tokenizers_dir, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed
    p = write_jsonl(tmp_path / "chat.jsonl", [chat(("user", "hi"), ("assistant", "hello"))])
    assert main(["preflight", str(p), "--tokenizer", str(tokenizers_dir["chat"])]) == 2
    assert "needs transformers" in capsys.readouterr().err
