"""No silent choices and no internal errors from one bad line. A CSV that names a
column twice reads the first under the name and says so in a note (the others are
NAME#2, ... for --map); a JSONL line nested 1,000 deep or holding a 400-digit integer
is one unreadable line or value, counted in the notes, in a log that is otherwise
judged as it would be without it - through orjson and the standard library alike;
the same for CSV cells, HF Trainer prints in a text log and trainer_state.json."""

from __future__ import annotations

import json

import pytest

from trainproof.parsers import jsonutil, typed
from trainproof.parsers.incremental import CsvDecoder

BIG = "9" * 400
DEEP = "[" * 1000 + "]" * 1000


@pytest.fixture(params=["fast", "stdlib"])
def decoder(request, monkeypatch):
    """Each test runs with the installed fast decoders and with the standard library alone."""
    if request.param == "stdlib":
        monkeypatch.setattr(jsonutil, "_orjson", None)
        monkeypatch.setattr(typed, "msgspec", None)
    return request.param


def _judge(run_cli, path, *extra) -> tuple[int, dict]:
    code, out, err = run_cli("epoch", path, "--json", *extra)
    assert "Traceback" not in out + err and "internal error" not in out + err
    return code, json.loads(out)["reports"][0]


def _healthy(n: int = 100) -> list[dict]:
    return [{"step": i, "loss": 3 - 0.01 * i} for i in range(n)]


@pytest.mark.parametrize(("bad", "note"), [
    (DEEP, "1 non-object line(s)"),
    ("[" * 5000 + "]" * 5000, "1 non-object line(s)"),
    ('{"step": 50, "loss": ' + DEEP + "}", "1 "),
    ('{"step": 50, "loss": ' + BIG + "}", "1 non-numeric value(s) in column 'loss' ignored"),
    ('{"step": 50, "loss": "' + BIG + '"}', "1 non-numeric value(s) in column 'loss' ignored"),
    ('{"step": 50, "loss": ' + "9" * 5000 + "}", "1 malformed JSON line(s) skipped"),
])
def test_one_bad_jsonl_line_is_counted_not_fatal(run_cli, tmp_path, decoder, bad, note):
    lines = [json.dumps(r) for r in _healthy()]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join([*lines[:50], bad, *lines[50:]]) + "\n")
    code, rep = _judge(run_cli, p)
    assert code == 0 and rep["verdict"] == "PASS"
    assert any(n.startswith(note) for n in rep["notes"]), rep["notes"]


def test_a_huge_int_in_trainer_state_is_one_ignored_value(run_cli, tmp_path, decoder):
    hist = [{"step": i, "loss": 3 - 0.01 * i, "learning_rate": 1e-3} for i in range(1, 100)]
    text = json.dumps({"log_history": hist, "global_step": 99, "max_steps": 99})
    text = text.replace('"loss": 2.5,', f'"loss": {BIG},', 1)
    assert BIG in text
    (tmp_path / "trainer_state.json").write_text(text)
    code, rep = _judge(run_cli, tmp_path / "trainer_state.json")
    assert code == 0 and "1 non-numeric value(s) in column 'loss' ignored" in rep["notes"]


def test_a_csv_cell_past_float_range_is_not_an_infinite_loss(run_cli, tmp_path):
    rows = [f"{i},{3 - 0.01 * i}" for i in range(100)]
    rows[50] = f"50,{BIG}"
    rows[51] = "51,1e400"
    (tmp_path / "m.csv").write_text("step,loss\n" + "\n".join(rows) + "\n")
    code, rep = _judge(run_cli, tmp_path / "m.csv")
    assert code == 0 and "2 non-numeric value(s) in column 'loss' ignored" in rep["notes"]
    rows[50] = "50,inf"  # a real infinity is still evidence
    (tmp_path / "m.csv").write_text("step,loss\n" + "\n".join(rows) + "\n")
    assert _judge(run_cli, tmp_path / "m.csv")[0] == 1


def test_a_printed_trainer_dict_past_float_range_is_one_ignored_value(run_cli, tmp_path):
    lines = [f"{{'loss': {3 - 0.01 * i:.4f}, 'grad_norm': 1.0, 'learning_rate': 0.001, 'epoch': {i / 100}}}"
             for i in range(100)]
    lines.insert(50, f"{{'loss': {BIG}, 'grad_norm': 1.0, 'learning_rate': 0.001, 'epoch': 0.5}}")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    code, rep = _judge(run_cli, tmp_path / "train.log")
    assert code == 0 and "1 non-numeric value(s) in column 'loss' ignored" in rep["notes"]


def _two_losses(tmp_path):
    rows = [f"{i},{3 - 0.02 * i},0.001,{1 + 0.5 * i}" for i in range(60)]
    p = tmp_path / "metrics.csv"
    p.write_text("step,loss,lr,loss\n" + "\n".join(rows) + "\n")
    return p


def test_two_loss_columns_read_the_first_and_say_so(run_cli, tmp_path):
    p = _two_losses(tmp_path)
    note = "2 columns are named 'loss': column 2 is read as 'loss', column 4 as 'loss#2' (--map can name another)"
    code, rep = _judge(run_cli, p)
    assert code == 0 and note in rep["notes"]  # the first (falling) loss, not the second (rising)
    code, rep = _judge(run_cli, p, "--map", "loss=loss#2")
    assert code == 1 and "TP-DIVERGE" in {f["id"] for f in rep["findings"]}


def test_watch_reads_a_repeated_column_the_same_way(tmp_path):
    dec = CsvDecoder()
    dec.feed(_two_losses(tmp_path).read_bytes())
    raw = dec.raw()
    assert raw.columns["loss"][1][-1] == pytest.approx(3 - 0.02 * 59)
    assert raw.columns["loss#2"][1][-1] == pytest.approx(1 + 0.5 * 59)
    assert any("column 4 as 'loss#2'" in n for n in raw.notes)
