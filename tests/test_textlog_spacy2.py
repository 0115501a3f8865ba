"""spaCy v2 `spacy train` stdout read by the text-log scanner (spacy2_* patterns in
parsers/textlog_nlp.py).

spacy2/*.log are the real stdout of spaCy 2.3.9's `python -m spacy train en ...` (thinc
7.4.6, blank `en` pipelines on made-up sentences in spaCy v2's JSON training format) for
two pipeline shapes, written by scripts/fixtures/make_spacy2_fixtures.py with what spaCy
passed to the row it printed (`<name>.expected.json`: the iteration, the losses summed over
it and the dev scores, unrounded); the values read must be those, as printed (`{:.3f}`,
words per second `{:.0f}`). Before, such a file was "no line of this text log matches a
known training-log pattern", exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trainproof.model import InputError
from trainproof.parsers import detect, read_run, textlog
from trainproof.parsers.incremental import TextlogDecoder

from .conftest import ROOT

SPACY2 = ROOT / "tests" / "fixtures" / "textlog" / "spacy2"
# printed column -> where spaCy's row got it (spacy/cli/train.py _get_progress)
LOSSES = {"Tag Loss": "tagger", "Dep Loss": "parser", "NER Loss": "ner", "Textcat Loss": "textcat"}
SCORES = {"Tag %": "tags_acc", "UAS": "uas", "LAS": "las", "NER P": "ents_p", "NER R": "ents_r",
          "NER F": "ents_f", "Textcat": "textcat_score", "Token %": "token_acc"}
SHAPES = {"tagger_parser_ner": ["Tag Loss", "Tag %", "Dep Loss", "UAS", "LAS", "NER Loss", "NER P", "NER R",
                                "NER F", "Token %", "CPU WPS"],
          "textcat": ["Textcat Loss", "Textcat", "Token %", "CPU WPS"]}


def _rows(name: str) -> list[dict]:
    return json.loads((SPACY2 / f"{name}.expected.json").read_text())["rows"]


def _p(v: float) -> float:
    return float(f"{v:.3f}")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_rows_equal_what_spacy_printed(name):
    rows, raw = _rows(name), textlog.read(SPACY2 / f"{name}.log")
    steps = [float(r["itn"]) for r in rows]
    assert steps == [float(i) for i in range(1, len(rows) + 1)]
    assert sorted(raw.columns) == sorted([*SHAPES[name], "epoch", "loss"])
    for col in SHAPES[name]:
        got_steps, got = raw.columns[col]
        assert got_steps.tolist() == steps, col
        if col in LOSSES:
            want = [_p(r["losses"][LOSSES[col]]) for r in rows]
        elif col == "CPU WPS":
            want = [float(f"{r['cpu_wps']:.0f}") for r in rows]
        else:
            want = [_p(r["scores"][SCORES[col]]) for r in rows]
        assert got.tolist() == want, col
    assert raw.columns["epoch"][1].tolist() == steps
    assert raw.meta["patterns"] == {"spacy2": len(rows)}
    assert detect(SPACY2 / f"{name}.log").name == "textlog"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_loss_is_the_printed_losses_summed(name):
    rows, raw = _rows(name), textlog.read(SPACY2 / f"{name}.log")
    want = [sum(_p(v) for v in r["losses"].values()) for r in rows]
    np.testing.assert_allclose(raw.columns["loss"][1], want, rtol=1e-12)
    run = read_run(SPACY2 / f"{name}.log")
    assert run.series["loss"].steps.tolist() == [float(r["itn"]) for r in rows]
    assert any("spaCy v2" in n for n in run.notes)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_judged_end_to_end(run_cli, name):
    """A verdict, not exit 2: both runs learn (the losses fall, the dev scores rise)."""
    code, out, _ = run_cli("epoch", SPACY2 / f"{name}.log")
    assert code == 0 and "TP-PASS" in out, out


def test_rows_without_heading_and_rule_are_not_read(tmp_path):
    text = (SPACY2 / "textcat.log").read_text()
    rows = text[text.index("  1 "):].splitlines()[:10]
    p = tmp_path / "train.log"
    p.write_text("\n".join(rows) + "\n")
    assert detect(p) is None
    with pytest.raises(InputError, match="no line of this text log matches"):
        textlog.read(p)


def test_second_run_in_one_output_is_said(tmp_path):
    text = (SPACY2 / "textcat.log").read_text()
    p = tmp_path / "train.log"
    p.write_text(text + text)
    raw = textlog.read(p)
    assert len(raw.columns["loss"][0]) == 2 * len(_rows("textcat"))
    assert any("went back 1 time" in n for n in raw.notes)


def test_incremental_decoder_matches_read():
    data = (SPACY2 / "tagger_parser_ner.log").read_bytes()
    cut = data.index(b"\n", data.index(b"---  ") + 10) + 1  # between the rule and the rows after it
    dec = TextlogDecoder()
    dec.feed(data[:cut])
    dec.feed(data[cut:])
    whole = textlog.read(SPACY2 / "tagger_parser_ner.log")
    for key in ("loss", "NER F", "Dep Loss"):
        np.testing.assert_array_equal(dec.raw().columns[key][1], whole.columns[key][1])
