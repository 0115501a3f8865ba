"""What a run declares beside its log. A HuggingFace Trainer output directory, beside
the trainer_state.json being read: the run's TrainingArguments from `training_args.bin` (read by replaying its
pickle symbolically, probes/pickle_scan.py: nothing is imported, called or unpickled)
and the `checkpoint-N/` directories on disk. Both go into the Run's meta for the
declared-versus-actual rules (rules/declared.py) and the best-checkpoint rule
(rules/checkpoints.py). A Lightning log (CSVLogger's metrics.csv, TensorBoardLogger's
event files) has the `hparams.yaml` that save_hyperparameters() wrote in its version
directory: its top-level `lr` / `learning_rate` is the declared learning rate. This
module measures and never judges.

`training_args.bin` is looked for in the state's own directory (a checkpoint-N/ folder,
or an output directory written by save_model) and then its parent (the output directory
of a checkpoint). A file that is there but cannot be read puts its reason under
meta["declared_unread"]: the rules then say the declared settings were not checked,
never guess them."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

ARGS_FILE = "training_args.bin"
# A TrainingArguments pickle is ~5 KB (200 fields); a cap far above any real one keeps a
# hostile file from costing more than a moment.
MAX_ARGS_BYTES = 1 << 20
MAX_OPCODES = 200_000
MAX_ENTRIES = 64  # torch.save of TrainingArguments writes six
MAX_LISTED = 40_000  # entries of an output directory looked at for checkpoint-N/ folders
CHECKPOINT = re.compile(r"checkpoint-(\d+)$")
# The TrainingArguments fields the rules read, as plain numbers, strings or booleans.
FIELDS = ("learning_rate", "warmup_steps", "warmup_ratio", "lr_scheduler_type", "max_steps",
          "num_train_epochs", "eval_strategy", "evaluation_strategy", "eval_steps", "eval_delay", "save_strategy",
          "save_steps", "logging_steps", "save_total_limit", "load_best_model_at_end",
          "metric_for_best_model", "greater_is_better", "prediction_loss_only")


def beside_state(path: Path) -> dict[str, object]:
    """Meta entries for a trainer_state.json at `path`: "declared" (TrainingArguments
    fields) or "declared_unread" (why not), and "checkpoints" (what is on disk)."""
    meta: dict[str, object] = {}
    here = path.parent
    # the state's own folder, then - for a checkpoint-N/ folder only - its output directory;
    # the folder above an output directory belongs to no run in particular
    places = (here, here.parent) if CHECKPOINT.match(here.name) else (here,)
    args = next((d / ARGS_FILE for d in places if (d / ARGS_FILE).is_file()), None)
    if args is not None:
        try:
            meta["declared"] = {**read_training_args(args), "source": str(args)}
        except ValueError as exc:
            meta["declared_unread"] = f"{args}: {exc}"
    on_disk = checkpoints(here)
    if on_disk is not None:
        meta["checkpoints"] = on_disk
    return meta


def checkpoints(here: Path) -> dict[str, object] | None:
    """The output directory's checkpoint-N/ steps (sorted), which of them holds the state
    being read (None for a state outside any), and whether the output directory has a
    trainer_state.json of its own (save_state after training). None when the state lies
    in no output directory that has checkpoints."""
    m = CHECKPOINT.match(here.name)
    out_dir = here.parent if m else here
    try:
        # a bounded listing: an output directory holds a handful of entries, a hostile or
        # mistaken one (a home directory) is not walked to its end
        listed = itertools.islice(out_dir.iterdir(), MAX_LISTED)
        steps = sorted(int(c.group(1)) for p in listed if (c := CHECKPOINT.match(p.name)) and p.is_dir())
    except OSError:
        return None
    if not steps:
        return None
    return {"dir": str(out_dir), "steps": steps, "judged": int(m.group(1)) if m else None,
            "own_state": (out_dir / "trainer_state.json").is_file()}


def read_training_args(path: Path) -> dict[str, Any]:
    """The FIELDS of a torch.save'd TrainingArguments as plain values (enums by their
    value). Raises ValueError with one line when the file is not that."""
    import lzma
    import zipfile
    import zlib

    from trainproof.probes.pickle_scan import PickleError, scan_pickle  # only where the file is
    from trainproof.zipsafe import declared_entries

    try:
        with path.open("rb") as fh:
            entries = declared_entries(fh)
        if entries is not None and entries > MAX_ENTRIES:
            raise ValueError(f"the ZIP lists {entries} entries; torch.save writes a handful")
        with zipfile.ZipFile(path) as zf:
            pkl = next((i for i in zf.infolist() if i.filename.endswith("/data.pkl")), None)
            if pkl is None:
                raise ValueError("not a torch.save archive (no data.pkl)")
            if pkl.file_size > MAX_ARGS_BYTES:
                raise ValueError(f"data.pkl declares {pkl.file_size} bytes, over {MAX_ARGS_BYTES}")
            with zf.open(pkl) as fh:
                data = fh.read(MAX_ARGS_BYTES + 1)[:MAX_ARGS_BYTES]
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, OverflowError,
            zlib.error, lzma.LZMAError) as exc:
        raise ValueError(f"not a readable torch.save archive ({type(exc).__name__})") from None
    try:
        root = scan_pickle(data, MAX_OPCODES).root
    except PickleError as exc:
        raise ValueError(f"the pickle cannot be replayed ({exc})") from None
    state = _state(root)
    if state is None:
        raise ValueError("the pickle holds no TrainingArguments")
    out = {k: v for k in FIELDS if k in state and (v := _plain(state[k])) is not _NOT_PLAIN}
    kwargs = state.get("lr_scheduler_kwargs")
    # Set or not is all the rules need of these two: a schedule with extra arguments, or
    # one DeepSpeed's configuration may replace, is not the one the plain fields describe.
    out["lr_scheduler_kwargs_set"] = kwargs is not None and kwargs != {}
    out["deepspeed_set"] = state.get("deepspeed") is not None
    return out


def _state(root: Any) -> dict[str, Any] | None:
    """The attribute dict BUILD gave the pickled object, when it has TrainingArguments'
    learning_rate (TRL's configs subclass it under other names: GRPOConfig, SFTConfig)."""
    from trainproof.probes.pickle_scan import Opaque

    if not isinstance(root, Opaque) or not isinstance(root.args, tuple) or not root.args:
        return None
    state = root.args[-1]
    if not isinstance(state, dict) or "learning_rate" not in state:
        return None
    return state


_NOT_PLAIN = object()


def _plain(v: Any) -> Any:
    """A scalar as it is; an enum member (an Opaque call of the enum class with its value)
    as its value; anything else is not a plain value."""
    from trainproof.probes.pickle_scan import Opaque

    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Opaque) and isinstance(v.args, tuple) and len(v.args) == 1 \
            and isinstance(v.args[0], (str, int, float)):
        return v.args[0]
    return _NOT_PLAIN


HPARAMS_FILE = "hparams.yaml"
MAX_HPARAMS_BYTES = 1 << 16  # module hyperparameters: a few lines; the rest is not read
_TOP_SCALAR = re.compile(r"^(lr|learning_rate):[ \t]*([-+0-9.eE]+)[ \t]*$")


def beside_hparams(path: Path) -> dict[str, object]:
    """Meta entries for a Lightning log at `path` (a file, or a run directory): "declared"
    with the learning rate of the hparams.yaml in the same version directory, when it
    names one number under `lr` or `learning_rate` at its top level."""
    here = path if path.is_dir() else path.parent
    f = here / HPARAMS_FILE
    if not f.is_file():
        return {}
    try:
        with f.open("rb") as fh:
            text = fh.read(MAX_HPARAMS_BYTES).decode("utf-8", "replace")
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        m = _TOP_SCALAR.match(line)
        if m:
            try:
                found[m.group(1)] = float(m.group(2))
            except ValueError:
                continue
    values = set(found.values())
    if len(values) != 1:  # none, or lr and learning_rate that disagree: nothing declared
        return {}
    return {"declared": {"learning_rate": values.pop(), "source": str(f), "kind": "hparams"}}


# Coqui's Trainer (trainer/io.py) names its weights by step: checkpoint_N.pth is saved after
# the optimizer step logged as GLOBAL_STEP N, best_model_N.pth at an epoch's end once the
# step counter has moved on to N, so it holds the weights of step N - 1; best_model.pth is a
# copy of the latest best_model_N.pth, the file the last "BEST MODEL" line names.
_COQUI_WEIGHTS = re.compile(r"(checkpoint|best_model)_(\d+)\.pth$")


def beside_coqui(path: Path, meta: dict[str, object]) -> dict[str, object]:
    """Meta entries for a Coqui text log at `path`: "checkpoints" with the evaluations
    (their logged steps) whose weights a .pth file in the log's directory holds. An
    evaluation's weights are those of its epoch's last training step: known exactly when
    the log's `STEP: i/n` says where the epoch ends, else somewhere from the eval's own
    logged step up to (not including) the first step logged after it. Nothing when the
    directory holds no .pth file (a log copied on its own)."""
    evals = meta.get("coqui_evals")
    if not isinstance(evals, list) or not evals:
        return {}
    here = path.parent
    try:
        names = [p.name for p in itertools.islice(here.iterdir(), MAX_LISTED) if p.suffix == ".pth"]
    except OSError:
        return {}
    if not names:
        return {}
    best = meta.get("best_model")
    steps: dict[int, str] = {}
    for name in names:
        m = _COQUI_WEIGHTS.match(best if name == "best_model.pth" and isinstance(best, str) else name)
        if not m:
            continue
        trained = int(m.group(2)) - (m.group(1) == "best_model")
        held = _coqui_eval(evals, trained)
        if held is not None:
            steps.setdefault(held, name)
    return {"checkpoints": {"dir": str(here), "steps": sorted(steps), "judged": None, "own_state": False,
                            "kind": "coqui", "files": {str(k): v for k, v in steps.items()}}}


def _coqui_eval(evals: list[list[float | None]], trained: int) -> int | None:
    """The logged step of the evaluation whose weights are those after step `trained`, if any."""
    held = None
    for step, end, after in evals:  # in log order: one per epoch
        if step is None or not math.isfinite(step):  # a hostile log's step: matches no file
            continue
        if end is not None:
            if trained == end:
                held = int(step)
        elif step <= trained and (after is None or trained < after):
            held = int(step)
    return held
