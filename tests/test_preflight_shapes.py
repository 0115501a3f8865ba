"""preflight on the record shapes people fine-tune on, from the fixtures that
scripts/fixtures/make_preflight_fixtures.py writes (pyarrow Parquet, JSON, JSONL)."""

from __future__ import annotations

from pathlib import Path

from test_preflight import ids, run_json, write_jsonl

FIX = Path(__file__).parent / "fixtures" / "preflight"


def test_chat_parquet_turn_problems(capsys):
    code, doc = run_json(capsys, str(FIX / "chat.parquet"))
    f = ids(doc)
    assert code == 0  # warnings only
    assert doc["reports"][0]["notes"] == ["shape: chat (messages)"]
    assert f["TP-PRE-CHAT-EMPTY-TURN"]["values"]["first"] == "row 3 (turn 1 (assistant))"
    assert f["TP-PRE-CHAT-LAST-NOT-ASSISTANT"]["values"]["first"] == "row 4 (last turn is user)"
    assert f["TP-PRE-CHAT-ROLE-ORDER"]["values"]["first"].startswith("row 6")
    assert f["TP-PRE-DUPLICATE-TEXT"]["values"]["first"] == "row 5 = row 1"
    assert "line" not in f["TP-PRE-DUPLICATE-TEXT"]["location"]  # Parquet rows are not lines


def test_preference_pairs(capsys):
    code, doc = run_json(capsys, str(FIX / "preference.jsonl"))
    f = ids(doc)
    assert code == 1
    assert f["TP-PRE-CHOSEN-EQUALS-REJECTED"]["location"]["line"] == 2
    assert f["TP-PRE-EMPTY-TEXT"]["values"]["first"] == "line 4 (rejected)"


def test_alpaca_json_array_positions_are_real_lines(capsys):
    code, doc = run_json(capsys, str(FIX / "alpaca.json"))
    f = ids(doc)
    assert code == 1
    assert f["TP-PRE-EMPTY-TEXT"]["location"]["line"] == 12  # the third object's opening brace
    assert f["TP-PRE-MISSING-FIELD"]["values"]["first"] == "line 22 (output is missing)"
    assert f["TP-PRE-MISSING-FIELD"]["values"]["count"] == 1  # a null input is allowed


def test_sharegpt_conversations_unknown_role(capsys):
    code, doc = run_json(capsys, str(FIX / "sharegpt.jsonl"))
    f = ids(doc)
    assert code == 1
    assert "unknown role 'robot'" in f["TP-PRE-CHAT-MALFORMED"]["values"]["first"]


def test_prompt_completion_empty_completion(tmp_path, capsys):
    p = write_jsonl(tmp_path / "pc.jsonl", [{"prompt": "Q1", "completion": "A1"},
                                            {"prompt": "Q2", "completion": ""}])
    code, doc = run_json(capsys, str(p))
    assert code == 1 and ids(doc)["TP-PRE-EMPTY-TEXT"]["values"]["first"] == "line 2 (completion)"
    assert doc["reports"][0]["notes"] == ["shape: prompt-completion (prompt, completion)"]


def test_conversational_preference_and_identical_messages(tmp_path, capsys):
    msgs = [{"role": "assistant", "content": "Same."}]
    p = write_jsonl(tmp_path / "pref.jsonl", [
        {"prompt": [{"role": "user", "content": "Hi"}], "chosen": msgs, "rejected": msgs},
        {"prompt": [{"role": "user", "content": "Hi"}], "chosen": msgs,
         "rejected": [{"role": "assistant", "content": "Other."}]}])
    code, doc = run_json(capsys, str(p))
    assert code == 0
    assert ids(doc)["TP-PRE-CHOSEN-EQUALS-REJECTED"]["values"]["count"] == 1


def test_duplicates_compare_decoded_text_not_json_escapes(tmp_path, capsys):
    p = tmp_path / "d.jsonl"
    p.write_text('{"text": "caf\\u00e9 a/b"}\n{"text": "café a\\/b"}\n{"text": "other"}\n', encoding="utf-8")
    code, doc = run_json(capsys, str(p))
    assert code == 0 and ids(doc)["TP-PRE-DUPLICATE-TEXT"]["values"]["first"] == "line 2 = line 1"
