"""The text-log patterns of NLP trainers (spaCy `spacy train`, OpenNMT-py): what each
prints, which column is the step and what is a loss, kept here in one place per writer.
The scanner (parsers/textlog.py) tries them after the patterns of textlog_patterns.py.

spaCy v3 (`spacy/training/loggers.py` console_logger, `spacy/training/loop.py`
train_while_improving): after `Pipeline: [...]` it prints a table heading `E  #  LOSS
TOK2VEC  LOSS NER  ENTS_F ... SCORE`, a rule of dashes (one run per column, its width),
and one row per evaluation. E is the epoch (passes over the data completed), # the step
(optimizer updates so far, from 0). Each `LOSS X` is component X's loss summed over the
updates since the previous row (loop.py resets its `losses` dict after every evaluation):
the first row, at step 0, holds one update, each later one `eval_frequency` updates. The
task components (ner, tagger, parser, textcat, ...) add the loss their `get_loss` returns,
whose gradient is what is back-propagated; their sum is the objective of the shared
embedding. `LOSS TOK2VEC` (and `LOSS TRANS...`, spacy-transformers' `transformer`) is not
a term of it: Tok2Vec.update adds the squared sum of the gradients its listeners send
back, a gradient size. So `loss` here = the sum of the task components' printed losses
divided by the updates since the previous row (the objective per update); every printed
column is kept as printed. The score columns (ENTS_F, TAG_ACC, CATS_SCORE, ...: x 100)
and SCORE (the weighted score, 0-1) are evaluation scores, not losses."""

from __future__ import annotations

import re

from trainproof.parsers.textlog_patterns import Hit, Pattern, State, Value, say

# --- spaCy v3 `spacy train` ------------------------------------------------------------
# the default names of the components whose printed "loss" is the gradient their listeners
# sent back, not an objective (loggers.py cuts a name over 13 characters to 10 + "...")
SPACY_EMBEDDERS = frozenset({"LOSS TOK2VEC", "LOSS TRANS..."})
_SPACY_RULE = re.compile(r"-+")
_SPACY_NOTE = ("spaCy: step = the # column (updates from 0), E kept as `epoch`; `loss` = the task components' "
               "LOSS columns (not LOSS TOK2VEC/TRANSFORMER, a gradient size) summed and divided by the updates "
               "since the previous row (spaCy sums each component's loss between evaluations)")


def _spacy_heading(m: re.Match[str], state: State) -> Hit | None:
    state["spacy_heading"] = m.string.rstrip()
    state.pop("spacy_cols", None)  # a new table (another `spacy train` in the same output)
    return None


def _spacy_rule(m: re.Match[str], state: State) -> Hit | None:
    heading = state.pop("spacy_heading", None)
    if heading is None:
        return None
    rule = m.string.rstrip()
    # the heading's names are right-aligned in the widths the dashes give
    cols = [heading[d.start():d.end()].strip() for d in _SPACY_RULE.finditer(rule)]
    if cols[:2] == ["E", "#"] and all(cols) and len(set(cols)) == len(cols):
        state["spacy_cols"] = cols
        state.setdefault("spacy_step", -1.0)  # a second table's step 0 says its run is another
    return None


def _spacy_row(m: re.Match[str], state: State) -> Hit | None:
    cols = state.get("spacy_cols")
    cells = m.group(0).split()
    if cols is None or len(cells) != len(cols):
        return None
    step = float(cells[1])
    before = state["spacy_step"]
    if step <= before:  # the count went back: the rows before were another run's
        say(state, "spaCy's step went back {n} time(s): this output holds more than one run, on one step axis")
        before = -1.0
    state["spacy_step"] = step
    values: list[tuple[str, Value]] = [("epoch", cells[0])]
    values += [(c, v) for c, v in zip(cols[2:], cells[2:], strict=True)]
    parts = [_number(v) for c, v in values if c.startswith("LOSS ") and c not in SPACY_EMBEDDERS]
    if parts and None not in parts:
        values.append(("loss", sum(p for p in parts if p is not None) / (step - before)))
    say(state, _SPACY_NOTE)
    return Hit(values, step)


def _number(v: Value) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


NLP_PATTERNS: tuple[Pattern, ...] = (
    Pattern("spacy_heading", b"#", re.compile(r"^E {2,}# {2,}\S"), _spacy_heading, "",
            "spaCy v3 spacy/training/loggers.py console_logger"),
    Pattern("spacy_rule", b"--- ", re.compile(r"^-{3} {2}-{6}(?: {2}-+)+ *$"), _spacy_rule, "",
            "spaCy v3 spacy/training/loggers.py console_logger"),
    Pattern("spacy", b".", re.compile(r"^ *\d+ +\d+(?: +\S+)+ *$"), _spacy_row,
            "the # column (updates from 0)", "spaCy v3 spacy/training/loggers.py console_logger"),
)
