"""spaCy v3 `spacy train` stdout read by the text-log scanner (spacy_* patterns in
parsers/textlog_nlp.py).

spacy/*.log are the real stdout of `python -m spacy train` (spaCy 3.8.18, thinc 8.3.14,
blank `en` pipelines on made-up sentences) for two pipeline shapes, written by
scripts/fixtures/make_spacy_fixtures.py with the JSONL spaCy's own ConsoleLogger.v3 wrote
beside the table (`<name>.expected.json`, unrounded); the values read must be those, as
printed (`{:.2f}`)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from trainproof.discover import discover
from trainproof.model import InputError
from trainproof.parsers import detect, read_run, textlog
from trainproof.parsers.incremental import TextlogDecoder

from .conftest import ROOT

SPACY = ROOT / "tests" / "fixtures" / "textlog" / "spacy"
SHAPES = {"ner": ("LOSS NER", ["ENTS_F", "ENTS_P", "ENTS_R"]),
          "tagger_textcat": ("LOSS TAGGER", ["TAG_ACC", "POS_ACC", "CATS_SCORE"])}


def _rows(name: str) -> list[dict]:
    return json.loads((SPACY / f"{name}.expected.json").read_text())["rows"]


def _col(raw, key: str) -> tuple[list[float], list[float]]:
    steps, values = raw.columns[key]
    return steps.tolist(), values.tolist()


def _p(v: float) -> float:
    return float(f"{v:.2f}")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_rows_equal_what_spacy_recorded(name):
    rows, raw = _rows(name), textlog.read(SPACY / f"{name}.log")
    steps = [float(r["step"]) for r in rows]
    assert _col(raw, "epoch") == (steps, [float(r["epoch"]) for r in rows])
    for pipe in rows[0]["losses"]:
        assert _col(raw, f"LOSS {pipe.upper()}") == (steps, [_p(r["losses"][pipe]) for r in rows])
    for score in SHAPES[name][1]:
        assert _col(raw, score) == (steps, [_p(r["scores"][score.lower()]) for r in rows])
    assert _col(raw, "SCORE") == (steps, [_p(r["score"]) for r in rows])
    assert raw.meta["patterns"] == {"spacy": len(rows)}
    assert detect(SPACY / f"{name}.log").name == "textlog"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_loss_is_the_task_losses_per_update(name):
    """The sum of the task components' printed losses (tok2vec's is a gradient size, left
    out) over the updates since the row before: 1 at step 0, then eval_frequency (20)."""
    rows, raw = _rows(name), textlog.read(SPACY / f"{name}.log")
    updates = np.diff([-1.0] + [r["step"] for r in rows])
    tasks = [p for p in rows[0]["losses"] if p != "tok2vec"]
    want = [sum(_p(r["losses"][p]) for p in tasks) / n for r, n in zip(rows, updates, strict=True)]
    np.testing.assert_allclose(raw.columns["loss"][1], want, rtol=1e-12)
    assert updates.tolist() == [1.0] + [20.0] * (len(rows) - 1)
    run = read_run(SPACY / f"{name}.log")
    assert run.series["loss"].steps.tolist() == [float(r["step"]) for r in rows]
    assert "epoch" in run.series


@pytest.mark.parametrize("name, code", [("ner", 1), ("tagger_textcat", 0)])
def test_judged_end_to_end_and_found_as_train_log(tmp_path, run_cli, name, code):
    """A verdict, not exit 2. The NER run's loss is 1e-10 or 0 from step 60 on (spaCy's
    JSONL says so: 30 made-up sentences learnt by heart), which TP-ZERO-LOSS-ONSET names."""
    got, out, _ = run_cli("epoch", SPACY / f"{name}.log")
    assert got == code, out
    assert ("TP-ZERO-LOSS-ONSET" in out) == (name == "ner")
    shutil.copy(SPACY / f"{name}.log", tmp_path / "train.log")
    shutil.copy(SPACY / f"{name}.log", tmp_path / "spacy_output.txt")
    assert sorted(p.name for p, _ in discover(tmp_path, 10).logs) == ["spacy_output.txt", "train.log"]
    got, out, _ = run_cli("doctor", tmp_path)
    assert got == code and "train.log" in out and "spacy_output.txt" in out


def test_rows_without_heading_and_rule_are_not_read(tmp_path):
    body = "".join(f"  {e}      {s}          0.00     {49 - e:.2f}    0.00    0.00    0.00    0.00\n"
                   for e, s in ((0, 0), (1, 20), (2, 40)))
    p = tmp_path / "train.log"
    p.write_text(body)
    assert detect(p) is None
    with pytest.raises(InputError, match="no line of this text log matches"):
        textlog.read(p)
    # the heading without its rule of dashes gives no widths: still not a table
    p.write_text("E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE \n" + body)
    with pytest.raises(InputError):
        textlog.read(p)


def test_second_run_and_short_row_and_nan(tmp_path):
    text = (SPACY / "ner.log").read_text()
    table = text[text.index("E    #"):]
    lines = table.splitlines()
    p = tmp_path / "train.log"
    # a row cut short is not read; a second run's table starts the per-update count again
    p.write_text(text + lines[2][:20] + "\n" + "\n".join(lines[:3]) + "\n"
                 + lines[3].replace("951.27", "   nan") + "\n")
    raw = textlog.read(p)
    steps, loss = _col(raw, "loss")
    assert steps[-2:] == [0.0, 20.0] and np.isnan(loss[-1]) and loss[-2] == _p(_rows("ner")[0]["losses"]["ner"])
    assert any("went back 1 time" in n for n in raw.notes)


def test_incremental_decoder_matches_read():
    data = (SPACY / "tagger_textcat.log").read_bytes()
    cut = data.index(b"\n", data.index(b"------") + 10) + 1  # between the rule and the rows after it
    dec = TextlogDecoder()
    dec.feed(data[:cut])
    dec.feed(data[cut:])
    whole = textlog.read(SPACY / "tagger_textcat.log")
    for key in ("loss", "SCORE", "LOSS TEXTCAT"):
        np.testing.assert_array_equal(dec.raw().columns[key][1], whole.columns[key][1])


def test_table_pasted_with_an_indent_reads_the_same(tmp_path):
    """People paste the table indented (a code block copied out of a README, an issue)."""
    text = (SPACY / "tagger_textcat.log").read_text()
    table = text[text.index("E    #"):]
    p = tmp_path / "notes.txt"
    p.write_text("".join("    " + line + "\n" for line in table.splitlines()))
    got, whole = textlog.read(p), textlog.read(SPACY / "tagger_textcat.log")
    assert sorted(got.columns) == sorted(whole.columns)
    for key in whole.columns:
        np.testing.assert_array_equal(got.columns[key][1], whole.columns[key][1])
