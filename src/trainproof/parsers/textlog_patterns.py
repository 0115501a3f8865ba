"""The declared line patterns of the text-log reader (parsers/textlog.py): what the
training libraries print to stdout, one entry per kind of line.

Each pattern has a name, a byte string every such line holds (the cheap prefilter,
tried before any regex or decode), a regex searched in the decoded line, an extractor
that turns the match into named values, and how the step is found. The print formats
are those of the libraries' own source (named in `source`); values stay text until
the scanner parses them, so `nan` and `inf` are kept as the non-finite values they are.
Column names are what the library prints (`lm loss`, `learning rate`), so `--map`
takes what the user sees; only unit conversions and the skip counters are renamed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainproof.parsers.columns import looks_like_metric
from trainproof.parsers.jsonutil import loads

Value = str | float


@dataclass
class Hit:
    """One line's record: values by column, and where it sits."""

    values: list[tuple[str, Value]]
    step: float | None = None  # None: the next ordinal (a line that prints no step)
    role: str = "train"  # "train"; "eval" (without a step: at the latest train step); "summary"


State = dict[str, Any]  # per-file memory a pattern may keep (running counters, notes)
Extract = Callable[[re.Match[str], State], Hit | None]


@dataclass(frozen=True)
class Pattern:
    name: str
    needle: bytes  # every line of this kind holds it: lines without it never reach the regex
    regex: re.Pattern[str]
    extract: Extract
    step: str  # how the step is found, in words (README, notes)
    source: str = ""


# Key/value layouts, each taken apart by one findall (the scanner's hot path):
# (greedy character classes, no backtracking; keys and values are stripped after)
PIPE_COLON = re.compile(r"([^|:]+):([^|]*)")  # `a b: 1 | c: 2 |`
PIPE_SPACE = re.compile(r"([^|]*?)\s+([^|\s]+)\s*(?:\||$)")  # `loss 8.9 | num_updates 100`
COMMA_EQ = re.compile(r"([^,=]+)=([^,]*)")  # `loss=9.2, num_updates=10`
SPACE_COLON = re.compile(r"(\S+?):\s*(\S+)")  # `loss:4.3 lr:0.001`, `moe_loss: 0.1`


def _pairs(text: str, layout: re.Pattern[str]) -> list[tuple[str, str]]:
    out = []
    for k, v in layout.findall(text):
        k, v = k.strip(), v.strip()
        if k and v:
            out.append((k, v))
    return out


def say(state: State, note: str) -> None:
    """A note for the report, counted: `{n}` in it becomes the count."""
    notes = state.setdefault("notes", {})
    notes[note] = notes.get(note, 0) + 1


def _ms(value: str) -> Value:
    try:
        return float(value) / 1000.0
    except ValueError:
        return value


# --- HuggingFace Trainer / TRL: the dict ProgressCallback.on_log writes --------------
_HF_ITEM = re.compile(r"'([^'\\]+)':\s*('[^']*'|[^,}]+)")


def _hf(m: re.Match[str], state: State) -> Hit | None:
    items = [(k, v.strip().strip("'")) for k, v in _HF_ITEM.findall(m.group(1))]
    keys = [k for k, _ in items]
    if "epoch" not in keys:  # Trainer.log adds the epoch to every dict it prints in training
        return None
    if "train_runtime" in keys:
        return Hit(items, role="summary")
    if any(k.startswith("eval_") for k in keys):
        return Hit([(k, v) for k, v in items if k.startswith("eval_")], role="eval")
    if not any(looks_like_metric(k) for k in keys):
        return None  # some other dict the program printed
    epoch = _float(dict(items)["epoch"])
    if epoch is not None:
        if epoch < state.get("hf_epoch", 0.0):  # the epoch went back: another train() began
            say(state, "the HF Trainer's epoch went back {n} time(s): this output holds more than one "
                       "training run, numbered on as one")
        state["hf_epoch"] = epoch
    return Hit(items)


# --- nanoGPT train.py -----------------------------------------------------------------
def _nanogpt_iter(m: re.Match[str], state: State) -> Hit:
    values: list[tuple[str, Value]] = [("loss", m.group(2)), ("step_time", _ms(m.group(3)))]
    mfu = m.group(4)
    if mfu is not None and not mfu.startswith("-"):  # -100% means "not measured yet"
        values.append(("mfu_percent", mfu))
    return Hit(values, float(m.group(1)))


def _nanogpt_eval(m: re.Match[str], state: State) -> Hit:
    return Hit([("eval_train_loss", m.group(2)), ("val_loss", m.group(3))], float(m.group(1)), "eval")


# --- Megatron-LM (and NeMo on Megatron): training_log / evaluate_and_print_results ----
_MEGATRON_RENAME = {"number of skipped iterations": "skipped_iters", "number of nan iterations": "nan_iters"}


def _megatron_train(m: re.Match[str], state: State) -> Hit:
    values: list[tuple[str, Value]] = []
    for key, value in _pairs(m.group(3), PIPE_COLON):
        if key == "elapsed time per iteration (ms)":
            values.append(("step_time", _ms(value)))
        else:
            values.append((_MEGATRON_RENAME.get(key, key), value))
    return Hit(values, float(m.group(1)))


def _megatron_valid(m: re.Match[str], state: State) -> Hit:
    suffix, step, test = m.group(1), m.group(2), m.group(3)
    prefix = ("test" if test else "eval") + suffix.replace("-", "_")
    values: list[tuple[str, Value]] = []
    for key, value in _pairs(m.group(4), PIPE_COLON):
        if key.endswith(" value"):
            values.append((f"{prefix}_{key[:-6]}", value))
        elif key.endswith(" PPL"):
            values.append((f"{prefix}_{key[:-4]}_ppl", value))
    return Hit(values, float(step), "eval")


def _nemo_printer(m: re.Match[str], state: State) -> Hit:
    values = _pairs(m.group(4), PIPE_COLON)
    step = _float(dict(values).get("global_step"))
    rows = [("step_time" if k == "train_step_timing in s" else k, v) for k, v in values if k != "global_step"]
    return Hit(rows, float(m.group(2)) if step is None else step)


def _nemo_bar(m: re.Match[str], state: State) -> Hit | None:
    values = _pairs(m.group(1), COMMA_EQ)
    found = dict(values)
    step = _float(found.get("global_step"))
    if step is None:
        return None
    rows = [("step_time" if k == "train_step_timing in s" else k, v) for k, v in values
            if k not in ("global_step", "v_num")]
    return Hit(rows, step)


def _float(v: str | None) -> float | None:
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


# --- DeepSpeed engine --------------------------------------------------------------------
def _deepspeed_progress(m: re.Match[str], state: State) -> Hit:
    total = int(m.group(2))
    # `skipped=` counts every skipped step since the start; the series holds the steps
    # skipped since the previous progress line, as Megatron's counter does
    fresh = total - state.get("ds_skipped", 0)
    state["ds_skipped"] = total
    lrs = m.group(3).split(",")
    values: list[tuple[str, Value]] = [("skipped_iters", float(max(fresh, 0)))]
    if lrs and lrs[0].strip():
        values.append(("lr", lrs[0].strip()))
    return Hit(values, float(m.group(1)))


def _deepspeed_pipe(m: re.Match[str], state: State) -> Hit:
    values: list[tuple[str, Value]] = [("loss", m.group(2))]
    values.extend(_pairs(m.group(3), SPACE_COLON) if m.group(3).strip() else [])
    values += [("step_time", m.group(4)), ("samples_per_sec", m.group(5))]
    return Hit(values, float(m.group(1)))


# --- fairseq: json and simple progress bars -------------------------------------------
def _fairseq_json(m: re.Match[str], state: State) -> Hit | None:
    tag = m.group(1) or ""
    try:
        row = loads(m.group(2).encode())
    except (ValueError, UnicodeDecodeError):
        return None
    if type(row) is not dict:
        return None
    step = _float(_text(row.get(f"{tag}_num_updates", row.get("num_updates"))))
    values = [(k, v) for k, v in row.items()
              if not k.endswith("num_updates") and type(v) in (str, int, float)]  # a bool is not a number
    if not any(looks_like_metric(k) for k, _ in values):
        return None
    role = "eval" if tag.startswith("valid") else "train"
    return Hit([(k, v if isinstance(v, str) else float(v)) for k, v in values], step, role)


def _text(v: object) -> str | None:
    return None if v is None else str(v)


def _fairseq_inner(m: re.Match[str], state: State) -> Hit | None:
    values = _pairs(m.group(2), COMMA_EQ)
    step = _float(dict(values).get("num_updates"))
    return Hit([(k, v) for k, v in values if k != "num_updates"], step)


def _fairseq_pipes(m: re.Match[str], state: State) -> Hit | None:
    tag = m.group(1)
    values = [(k, v) for k, v in _pairs(m.group(2), PIPE_SPACE) if k != "epoch"]
    step = _float(dict(values).get("num_updates"))
    prefix = "valid_" if tag.startswith("valid") else "train_"
    return Hit([(prefix + k, v) for k, v in values if k != "num_updates"], step,
               "eval" if tag.startswith("valid") else "train")


# --- torchtune DiskLogger / StdoutLogger ---------------------------------------------
def _torchtune(m: re.Match[str], state: State) -> Hit:
    return Hit(_pairs(m.group(2), SPACE_COLON), float(m.group(1)))


# --- Keras model.fit progress bar (Keras 3 and tf.keras 2.x) --------------------------
# `Epoch N/M` opens an epoch; the bar line that closes it (current == target, no ETA)
# holds what History keeps for that epoch. A verbose=1 bar is redrawn in place: each
# redraw is followed by the backspaces that erase it, so a line that ends in \x08 was
# overwritten (a running average mid-epoch) and is not a point; the epoch's final
# line ends with a newline. Both versions print ` - name: value` pairs.
_KERAS_PAIR = re.compile(r" - ([^\s:]+): (\S+)")
_KERAS_NOTE = ("Keras model.fit: {n} epoch(s) read, each from the bar line that closes it (what History holds); "
               "step = the epoch N of `Epoch N/M`; mid-epoch redraws (running averages) are not points")


def _keras_epoch(m: re.Match[str], state: State) -> Hit | None:
    epoch, planned = int(m.group(1)), int(m.group(2))
    if epoch <= state.get("keras_epoch", 0):  # a second fit() in the same output
        state["keras_base"] = state.get("keras_step", 0)
        say(state, "Keras' epoch count went back {n} time(s): this output holds more than one fit(), "
                   "numbered on as one")
    state["keras_epoch"], state["keras_open"] = epoch, True
    meta = state.setdefault("meta", {})
    before = meta.get("planned_epochs")
    if before is None:  # one note per distinct text: a number in it would grow without bound
        say(state, f"Keras fit() planned {planned} epochs (`Epoch N/{planned}`): kept as meta planned_epochs")
    elif before != planned:
        say(state, "Keras' planned epoch count changed {n} time(s): meta planned_epochs holds the last")
    meta["planned_epochs"] = planned
    return None  # a header: the values come on the bar line that closes the epoch


def _keras_bar(m: re.Match[str], state: State) -> Hit | None:
    rest = m.group(3)
    if m.group(1) != m.group(2) or rest.endswith("\x08") or "ETA:" in rest:
        return None  # mid-epoch: a redraw, or a run cut before the epoch ended
    return _keras_close(_KERAS_PAIR.findall(rest), state)


# Keras 2.0-2.3 close an epoch with its seconds and no per-step time (no `/step` needle):
# `67s - loss: ...` (2.0 verbose=2), ` - 67s - loss: ...` (2.1-2.3 verbose=2),
# `8000/8000 [=====] - 67s - loss: ...` (2.0 verbose=1); tf.keras without `/epoch`: `128/128
# - 5s - loss: ...`. One with no batch counter is too plain to claim alone: it is read only
# inside an epoch an `Epoch N/M` opened (Keras 2.x prints that header for every epoch).
_KERAS_SECONDS = re.compile(r"^(?:\s*(\d+)/(\d+)(?: \[[=>.]*\])? - | - )?\d+s( - [^\s:]+: .*)$")


def _keras_seconds(m: re.Match[str], state: State) -> Hit | None:
    current, target, rest = m.group(1), m.group(2), m.group(3)
    if rest.endswith("\x08") or current != target:
        return None  # a redraw, or mid-epoch
    if current is None and not state.get("keras_open"):
        return None
    return _keras_close(_KERAS_PAIR.findall(rest), state)


def _keras_close(values: list[tuple[str, Value]], state: State) -> Hit | None:
    """The values of a line that closes an epoch, at that epoch's step."""
    if "keras_epoch" not in state:  # epochs=1 prints no header: the closing lines in order
        say(state, _KERAS_NOTE)
        return Hit(values)
    if not state.get("keras_open"):
        # a second closed bar in one epoch. With the backspaces stripped from a log, the
        # last batch's redraw (train averages, equal to the epoch's in Keras 3) reads as
        # closing the epoch: the real closing line then adds only what it lacked (val_*,
        # the LR). One with nothing new is model.evaluate's (its names are the train ones).
        fresh = [(k, v) for k, v in values if k not in state["keras_keys"]]
        if not fresh:
            say(state, "{n} Keras bar line(s) after an epoch had closed (model.evaluate's) not read")
            return None
        state["keras_keys"].update(k for k, _ in fresh)
        return Hit(fresh, float(state["keras_step"]))
    state["keras_open"], state["keras_keys"] = False, {k for k, _ in values}
    step = state["keras_step"] = state.get("keras_base", 0) + state["keras_epoch"]
    say(state, _KERAS_NOTE)
    # The printed epoch is kept as the epoch column (epochs completed, as HF logs it): a second
    # fit() in the same output starts it at 1 again, which is how a file of several fits shows
    # its runs (rules/appended.py judges the last) while the step counts on.
    return Hit([*values, ("epoch", float(state["keras_epoch"]))], float(step))


# --- mlx-lm fine-tuning (mlx_lm.lora / mlx_lm.tuner.trainer) ------------------------------
# <= 0.31: `Iter N: Train loss X, Learning Rate Y, It/sec Z, Tokens/sec T, Trained Tokens K,
# Peak mem M GB` (the oldest without LR and memory) and `Iter N: Val loss X, Val took Ts`;
# >= 0.32 prints a table under an `iter train_loss tok/s tokens` heading instead. Names stay
# as printed; It/sec becomes step_time (seconds per iteration, the reciprocal), units go.
_MLX_ITEM = re.compile(r"([A-Za-z][A-Za-z/ ]*?) ([^\s,]+?)(?:s| GB)?")
_MLX_ROW = re.compile(r"^\s*(\d+)\s+(\S+) [\u25b2\u25bc]\s+([\d,]+)\s+([\d.]+)k\s*$")
_MLX_VAL_ROW = re.compile(r"^\s*(\d+)\s+val (\S+)\s+([\d.]+)s\s*$")


def _mlx_iter(m: re.Match[str], state: State) -> Hit | None:
    values: list[tuple[str, Value]] = []
    for piece in m.group(2).split(", "):
        item = _MLX_ITEM.fullmatch(piece.strip().rstrip("."))
        if item is None:
            continue  # a field some version added that is not `Name value`
        key, value = item.group(1), item.group(2)
        if key == "It/sec":
            rate = _float(value)
            if rate is not None and rate > 0:  # the time of an iteration; 0 it/sec has none
                values.append(("step_time", 1.0 / rate))
        else:
            values.append((key, value))
    keys = {k for k, _ in values}
    if "Val loss" in keys:
        return Hit(values, float(m.group(1)), "eval")
    return Hit(values, float(m.group(1))) if "Train loss" in keys else None


def _mlx_heading(m: re.Match[str], state: State) -> Hit | None:
    state["mlx_table"] = True  # rows alone are too plain to be claimed without it
    return None


def _mlx_row(m: re.Match[str], state: State) -> Hit | None:
    if not state.get("mlx_table"):
        return None
    ktokens = _float(m.group(4))
    values: list[tuple[str, Value]] = [("train_loss", m.group(2)), ("tok/s", m.group(3).replace(",", ""))]
    if ktokens is not None:  # printed in thousands, to 0.1k
        values.append(("tokens", ktokens * 1000.0))
    return Hit(values, float(m.group(1)))


def _mlx_val_row(m: re.Match[str], state: State) -> Hit | None:
    if not state.get("mlx_table"):
        return None
    return Hit([("val_loss", m.group(2)), ("val_time", m.group(3))], float(m.group(1)), "eval")


PATTERNS: tuple[Pattern, ...] = (
    Pattern("hf_trainer", b"{'", re.compile(r"^\s*(\{'[^{}]*\})\s*$"), _hf,
            "none printed: train dicts are numbered in order (1, 2, ...); an eval dict sits at the "
            "train dict before it", "transformers ProgressCallback.on_log / PrinterCallback.on_log"),
    Pattern("nanogpt_iter", b"iter ", re.compile(r"\biter (\d+): loss ([^,\s]+), time ([^,\s]+)ms(?:, mfu (\S+?)%)?"),
            _nanogpt_iter, "iter N", "nanoGPT train.py"),
    Pattern("nanogpt_eval", b": train loss ", re.compile(r"\bstep (\d+): train loss ([^,\s]+), val loss (\S+)"),
            _nanogpt_eval, "step N", "nanoGPT train.py"),
    Pattern("nemo_printer", b"Training epoch ",
            re.compile(r"\bTraining epoch (\d+), iteration (\d+)/(\d+) \| (.*)$"), _nemo_printer,
            "global_step (else iteration N)",
            "NeMo nemo/lightning/pytorch/callbacks/progress_printer.py ProgressPrinter"),
    Pattern("megatron", b" iteration ", re.compile(r"\biteration\s+(\d+)/\s*(\d+)\s*\|(.*)$"), _megatron_train,
            "iteration N/M", "Megatron-LM megatron/training/training.py training_log"),
    Pattern("megatron_valid", b" loss at ",
            re.compile(r"\bvalidation(\S*) loss at iteration (\d+)( on test set)?[^|]*\|(.*)$"), _megatron_valid,
            "at iteration N", "Megatron-LM megatron/training/training.py evaluate_and_print_results"),
    Pattern("nemo_bar", b"global_step=", re.compile(r"\[[^\]]*?(?:it/s|s/it), ([^\]]*global_step=[^\]]*)\]"), _nemo_bar,
            "global_step=", "PyTorch Lightning progress bar with NeMo's logged metrics"),
    Pattern("deepspeed_progress", b"] step=", re.compile(r"\bstep=(\d+), skipped=(\d+), lr=\[([^\]]*)\]"),
            _deepspeed_progress, "step=N", "DeepSpeed deepspeed/runtime/engine.py _report_progress"),
    Pattern("deepspeed_pipe", b"iter time (s):",
            re.compile(r"\bsteps: (\d+) loss: (\S+) (.*?)iter time \(s\): (\S+) samples/sec: (\S+)"), _deepspeed_pipe,
            "steps: N", "DeepSpeed deepspeed/runtime/pipe/engine.py PipelineEngine.train_batch"),
    Pattern("fairseq_json", b'{"', re.compile(r"(?:\| (\w+) \| )?(\{\".*\})\s*$"), _fairseq_json,
            "num_updates", "fairseq fairseq/logging/progress_bar.py JsonProgressBar"),
    Pattern("fairseq_simple", b"num_updates=", re.compile(r"\| (\w+) \| epoch \d+:\s+\d+ / \d+ (.*)$"),
            _fairseq_inner, "num_updates=", "fairseq fairseq/logging/progress_bar.py SimpleProgressBar.log"),
    Pattern("fairseq_simple_epoch", b"| num_updates ",
            re.compile(r"\| (\w+) \| epoch \d+ \| (?:valid on '[^']*' subset \| )?(.*)$"), _fairseq_pipes,
            "num_updates", "fairseq fairseq/logging/progress_bar.py SimpleProgressBar.print"),
    Pattern("torchtune", b"Step ", re.compile(r"^Step (\d+) \| (.*)$"), _torchtune, "Step N",
            "torchtune torchtune/training/metric_logging.py DiskLogger / StdoutLogger"),
    Pattern("keras_epoch", b"Epoch ", re.compile(r"^Epoch (\d+)/(\d+)\s*$"), _keras_epoch,
            "Epoch N/M", "keras keras/src/callbacks/progbar_logger.py ProgbarLogger.on_epoch_begin"),
    Pattern("keras_fit", b"/step", re.compile(r"^\s*(\d+)/(\d+) (.*)$"), _keras_bar,
            "the N of the `Epoch N/M` before it",
            "keras keras/src/utils/progbar.py Progbar.update (tf.keras: tf_keras/src/utils/generic_utils.py)"),
    Pattern("keras_fit_seconds", b"s - ", _KERAS_SECONDS, _keras_seconds,
            "the N of the `Epoch N/M` before it",
            "keras 2.0-2.3 keras/utils/generic_utils.py Progbar.update"),
    Pattern("mlx_lm", b"Iter ", re.compile(r"^\s*Iter (\d+): (.*)$"), _mlx_iter, "Iter N",
            "mlx-lm mlx_lm/tuner/trainer.py train (<= 0.31)"),
    Pattern("mlx_lm_heading", b"train_loss", re.compile(r"^\s*iter\s+train_loss\s+tok/s\s+tokens\s*$"),
            _mlx_heading, "", "mlx-lm mlx_lm/cli_ui.py TrainUI (>= 0.32)"),
    Pattern("mlx_lm_table", b"\xe2\x96", _MLX_ROW, _mlx_row, "the iter column",
            "mlx-lm mlx_lm/cli_ui.py TrainUI.report_train (>= 0.32)"),
    Pattern("mlx_lm_table_val", b"val", _MLX_VAL_ROW, _mlx_val_row, "the iter column",
            "mlx-lm mlx_lm/cli_ui.py TrainUI.report_val (>= 0.32)"),
)
