"""The text-log patterns of NLP trainers (spaCy `spacy train`, OpenNMT-py, Flair's
training.log): what each prints, which column is the step and what is a loss, kept here
in one place per writer. The scanner (parsers/textlog.py) tries them after the patterns
of textlog_patterns.py.

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
and SCORE (the weighted score, 0-1) are evaluation scores, not losses.

spaCy v2 (`spacy/cli/train.py`, 2.x): a heading of the pipeline's columns (`Itn  Tag Loss
Tag %  Dep Loss  UAS  LAS  NER Loss  NER P  NER R  NER F  Textcat Loss  Textcat  Token %
CPU WPS`, `Beam W.` second with --beam-width, `GPU WPS` last on a GPU), right-aligned
under a rule of dashes as wide as each name, then one row per iteration (a full pass over
the training data) after its evaluation: Itn from 1, each loss `{:.3f}`, the dev scores
(x 100) and words per second. A row's losses are summed over the iteration's updates
(train() resets its `losses` dict every iteration). The tagger's and the greedy parser's
and NER's losses are sums over tokens and transitions, so an iteration's sum does not
depend on how the compounding batch size splits it; textcat's (pipes.pyx get_loss) is a
mean per batch of (error / batch size)^2, its sum follows the number of batches, which the
growing batch size slowly lowers. So step = Itn (kept as `epoch` too: iterations
completed), `loss` = the sum of the printed losses, every printed column kept under its
heading's name."""

from __future__ import annotations

import math
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
    state.pop("spacy2_cols", None)
    return None


def _spacy_rule(m: re.Match[str], state: State) -> Hit | None:
    heading = state.pop("spacy_heading", None)
    if heading is None:
        return None
    rule = m.string.rstrip()
    # each name of the heading lies inside its column's run of dashes (names are left-aligned,
    # cells right-aligned, in the same widths): split there, `LOSS NER` stays one name
    cols = [heading[d.start():d.end()].strip() for d in _SPACY_RULE.finditer(rule)]
    if not all(cols) or len(set(cols)) != len(cols):
        return None
    if cols[:2] == ["E", "#"]:
        state["spacy_cols"] = cols
        state.setdefault("spacy_step", -1.0)  # a second table's step 0 says its run is another
    elif cols[0] == "Itn" and len(cols) > 1:  # spaCy v2
        state["spacy2_cols"] = cols
        state.setdefault("spacy2_itn", 0.0)
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


# the v2 columns whose printed value is a component's loss summed over the iteration
SPACY2_LOSSES = frozenset({"Tag Loss", "Dep Loss", "NER Loss", "Textcat Loss"})
_SPACY2_NOTE = ("spaCy v2: step = Itn (iterations, each a full pass over the training data; kept as `epoch`); "
                "`loss` = the printed Tag/Dep/NER/Textcat losses summed (each summed over the iteration's updates)")


def _spacy2_row(m: re.Match[str], state: State) -> Hit | None:
    cols = state.get("spacy2_cols")
    cells = m.group(0).split()
    if cols is None or len(cells) != len(cols):
        return None
    itn = float(cells[0])
    if itn <= state["spacy2_itn"]:  # the count went back: the rows before were another run's
        say(state, "spaCy's iteration count went back {n} time(s): this output holds more than one run, "
                   "on one step axis")
    state["spacy2_itn"] = itn
    values: list[tuple[str, Value]] = [("epoch", cells[0])]
    values += [(c, v) for c, v in zip(cols[1:], cells[1:], strict=True)]
    parts = [_number(v) for c, v in values if c in SPACY2_LOSSES]
    if parts and None not in parts:
        values.append(("loss", sum(p for p in parts if p is not None)))
    say(state, _SPACY2_NOTE)
    return Hit(values, itn)


def _number(v: Value) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


# --- OpenNMT-py `onmt_train` (its logger: `[2021-03-21 00:29:15,279 INFO] ...`) -----------
# onmt/utils/statistics.py Statistics.output, one line per `report_every` steps:
# 3.x `Step 50/ 1000; acc: 3.9; ppl: 147677.6; xent: 11.9; lr: 0.00100; sents: 160; bsz:
# 83/ 99/16; 2954/2927 tok/s; 24 sec;` (then ` NAME: value` of any train metrics), 1.x-2.x
# `Step 50/ 1000; acc:   3.91; ppl: 147677.56; xent: 11.90; lr: 1.00000; 2954/2927 tok/s;
# 24 sec` (no `/ 1000` without train_steps). xent is the mean cross-entropy per target
# token over the steps since the previous line (loss / n_words), ppl = exp(min(xent, 100)):
# xent is the loss, since ppl saturates. onmt/utils/report_manager.py ReportMgr._report_step,
# at each `valid_steps`, after that step's line: `Validation perplexity: %g`, `Validation
# accuracy: %g`, which carry no step (the last `Step N` is theirs) and no xent: the eval
# loss `valid_xent` = ln(Validation perplexity), the name OpenNMT's TensorBoard gives it.
# `Train perplexity` / `Train accuracy` printed beside them are cumulative since the start:
# kept as printed, not a loss.
_ONMT_ITEM = re.compile(r"^\s*([A-Za-z][\w ()/]*?):\s*(\S+)\s*$")
_ONMT_RATE = re.compile(r"^\s*(\S+)/\s*(\S+) tok/s\s*$")
_ONMT_PAIR = re.compile(r"(\S+): (\S+)")
_ONMT_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)", re.IGNORECASE)
_ONMT_NOTE = ("OpenNMT-py: step = N of `Step N/M`; loss = xent (cross-entropy per target token since the "
              "previous line); eval loss `valid_xent` = ln(Validation perplexity), at the last `Step N` before it")
_ONMT_CAP = 100.0  # Statistics.ppl() = exp(min(xent, 100)): a printed exp(100) is a cap, not a value


def _onmt_step(m: re.Match[str], state: State) -> Hit | None:
    step = float(m.group(1))
    values: list[tuple[str, Value]] = []
    for piece in m.group(3).split(";"):
        item, rate = _ONMT_ITEM.match(piece), _ONMT_RATE.match(piece)
        if item is not None and _ONMT_NUMBER.fullmatch(item.group(2)):
            values.append((item.group(1), item.group(2)))  # bsz `83/ 99/16` is not one number
        elif rate is not None:
            values += [("src_tok/s", rate.group(1)), ("tgt_tok/s", rate.group(2))]
        elif piece.strip().endswith(" sec"):
            values.append(("elapsed", piece.strip()[:-4]))  # seconds since training began: a clock
        else:  # 3.x appends its train metrics after the last `;`: ` BLEU: 12.3 TER: 45.6`
            values += [(k, v) for k, v in _ONMT_PAIR.findall(piece) if _ONMT_NUMBER.fullmatch(v)]
    if "xent" not in dict(values):
        return None
    state["onmt_step"] = step
    if m.group(2) is not None:
        state.setdefault("meta", {})["max_steps"] = int(m.group(2))  # train_steps: planned updates
    say(state, _ONMT_NOTE)
    return Hit(values, step)


def _onmt_valid(m: re.Match[str], state: State) -> Hit | None:
    step = state.get("onmt_step")
    if step is None:  # no `Step N` line yet: nothing to place it at
        return None
    kind, name, value = m.group(1), f"{m.group(1)} {m.group(2)}", m.group(3)
    values: list[tuple[str, Value]] = [(name, value)]
    ppl = _number(value)
    if kind == "Validation" and m.group(2) == "perplexity" and ppl is not None and ppl > 0:
        xent = math.log(ppl)
        if xent >= _ONMT_CAP * (1 - 1e-5):  # %g keeps 6 digits of exp(100)
            # Censored, not measured: read as an eval loss, a run of caps looks like a curve
            # that never moved (the dead-run rule's "the weights never changed").
            say(state, "OpenNMT-py printed {n} validation perplexity(ies) of exp(100), its cap: "
                       "the eval loss there is at least 100 and is not read as a value")
        else:
            values.append(("valid_xent", xent))
    return Hit(values, step, "eval" if kind == "Validation" else "train")


# --- Flair ModelTrainer `training.log` (and its stdout) ------------------------------------
# flair/trainers/trainer.py: `EPOCH 3 done: loss 0.3774 - lr: 0.100000` (0.13+; several
# parameter groups `lr: 0.100000,0.010000`; 0.4-0.12 `- lr 0.1000`, some `- bad epochs 2`),
# then per evaluated split `DEV : loss 0.7167 - f1-score (micro avg)  0.3667` (`TEST`,
# `TRAIN_SAMPLE`; 0.4-0.6 `- score 0.85`). The epoch's loss is its mean training loss; the
# `epoch 3 - iter 4/15 - loss ...` lines between are running means since the epoch began
# (they restart every epoch): not points. Step = the epoch; `DEV loss` is the eval loss
# (`TEST loss` where no DEV is), `loss` the train loss, the first group's `lr` the LR.
_FLAIR_ITEM = re.compile(r"^([A-Za-z][A-Za-z ]*?):? +(\S+?)\.?$")
_FLAIR_NOTE = ("Flair training.log: one point per epoch (step = N of `EPOCH N done`, its mean training loss), "
               "each split's `DEV : loss` at that epoch; the `iter` lines (running means within an epoch) are "
               "not points")


def _flair_epoch(m: re.Match[str], state: State) -> Hit | None:
    values: list[tuple[str, Value]] = [("loss", m.group(2))]
    for piece in (m.group(3) or "").split(" - "):
        item = _FLAIR_ITEM.match(piece.strip())
        if item is not None:  # `lr: 0.1,0.01`: the first parameter group's
            values.append((item.group(1), item.group(2).split(",", 1)[0]))
    state["flair_epoch"] = float(m.group(1))
    say(state, _FLAIR_NOTE)
    return Hit(values, float(m.group(1)))


def _flair_eval(m: re.Match[str], state: State) -> Hit | None:
    epoch = state.get("flair_epoch")
    if epoch is None:  # before any `EPOCH N done` line: no epoch to stand at
        return None
    split = m.group(1)
    values: list[tuple[str, Value]] = [(f"{split} loss", m.group(2))]
    if m.group(3) is not None:
        values.append((f"{split} {m.group(3)}", m.group(4)))
    return Hit(values, epoch, "eval")


NLP_PATTERNS: tuple[Pattern, ...] = (
    Pattern("spacy_heading", b"#", re.compile(r"^ *E {2,}# {2,}\S"), _spacy_heading, "",
            "spaCy v3 spacy/training/loggers.py console_logger"),
    Pattern("spacy2_heading", b"Itn  ", re.compile(r"^ *Itn {2,}\S"), _spacy_heading, "",
            "spaCy v2 spacy/cli/train.py"),
    # v3's rule (`---  ------  ...`) and v2's (`---  ---------  ...`): the heading before it says which
    Pattern("spacy_rule", b"--- ", re.compile(r"^ *-{3}(?: {2}-+)+ *$"), _spacy_rule, "",
            "spaCy v2 spacy/cli/train.py, v3 spacy/training/loggers.py console_logger"),
    Pattern("spacy", b".", re.compile(r"^ *\d+ +\d+(?: +\S+)+ *$"), _spacy_row,
            "the # column (updates from 0)", "spaCy v3 spacy/training/loggers.py console_logger"),
    Pattern("spacy2", b".", re.compile(r"^ *\d+(?: +\S+)+ *$"), _spacy2_row,
            "the Itn column (iterations from 1)", "spaCy v2 spacy/cli/train.py"),
    Pattern("opennmt", b"xent:", re.compile(r"\bStep +(\d+)(?:/ *(\d+))?;(.*)$"), _onmt_step,
            "N of `Step N/M`", "OpenNMT-py onmt/utils/statistics.py Statistics.output"),
    Pattern("opennmt_valid", b"y: ",  # `perplexity: `, `accuracy: `
            re.compile(r"\b(Validation|Train) (perplexity|accuracy): (\S+)\s*$"), _onmt_valid,
            "the last `Step N` before it", "OpenNMT-py onmt/utils/report_manager.py ReportMgr._report_step"),
    Pattern("flair", b" done: loss ", re.compile(r"\bEPOCH (\d+) done: loss (\S+?)(?: - (.*))?$"), _flair_epoch,
            "N of `EPOCH N done`", "Flair flair/trainers/trainer.py ModelTrainer.train_custom"),
    Pattern("flair_eval", b" : loss ", re.compile(r"\b([A-Z][A-Z_]*) : loss (\S+)(?: - (.+?) +(\S+))?\s*$"),
            _flair_eval, "the N of the `EPOCH N done` before it", "Flair flair/trainers/trainer.py"),
)
