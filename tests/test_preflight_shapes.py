"""preflight on the record shapes people fine-tune on, from the fixtures that
scripts/fixtures/make_preflight_fixtures.py writes (pyarrow Parquet, JSON, JSONL)."""

from __future__ import annotations

from pathlib import Path

from .test_preflight import ids, run_json, write_jsonl

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


def test_arrow_directory_as_save_to_disk_writes_it(tmp_path, capsys):
    """datasets.save_to_disk writes Arrow IPC streams plus JSON metadata files; the
    metadata are not records. (datasets is not installed here: pyarrow's stream writer
    is the one it uses.)"""
    import pyarrow as pa

    t = pa.table({"text": ["alpha", "beta", "alpha", " "], "id": [1, 2, 3, 4]})
    with pa.OSFile(str(tmp_path / "data-00000-of-00001.arrow"), "wb") as sink, \
            pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    (tmp_path / "dataset_info.json").write_text('{\n  "features": {}\n}\n')
    (tmp_path / "state.json").write_text('{\n  "_data_files": []\n}\n')
    code, doc = run_json(capsys, str(tmp_path))
    f = ids(doc)
    assert code == 1 and doc["reports"][0]["format"] == "arrow"
    assert f["TP-PRE-DUPLICATE-TEXT"]["values"]["first"] == "row 3 = row 1"
    assert f["TP-PRE-EMPTY-TEXT"]["values"]["count"] == 1


def test_json_array_with_an_element_too_long_to_read(tmp_path, capsys):
    p = tmp_path / "big.json"
    with open(p, "w") as f:
        f.write('[{"text": "ok"},\n{"text": "' + "z" * (17 << 20) + '"}, {"text": "never reached"}]')
    code, doc = run_json(capsys, str(p))
    f = ids(doc)
    assert f["TP-PRE-OVERSIZED-RECORD"]["location"]["line"] == 2
    assert doc["reports"][0]["records"] == 2 and code == 0
