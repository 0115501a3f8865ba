"""The Python API: one typed function per command, returning the same Report and
ReportSet values the CLI renders. The CLI's commands and the training callbacks call
these functions themselves, so a script and the command line judge alike.

Every function raises `trainproof.InputError` (one line, no traceback worth showing)
when its input cannot be judged at all: a missing file, an unknown format, a bad
option. A subject that was read but could not be judged is a NOT-CHECKED report,
not an exception. Nothing here prints; nothing exits.

The command modules are imported inside each function, so that `import trainproof`
stays as light as `trainproof --version`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import numpy.typing as npt

    from trainproof.commands.common import LogOptions
    from trainproof.config import Config
    from trainproof.model import Report, ReportSet

PathLike = Union[str, "os.PathLike[str]"]
# What `config=` accepts: a Config, a path to a trainproof.toml / pyproject.toml, or a
# table of the same keys. None judges with the configuration already active (the CLI's,
# or the rules' declared defaults).
ConfigLike = Union["Config", Mapping[str, Any], PathLike, None]
__all__ = ["compare", "compare_runs", "data", "doctor", "env", "judge_log", "judge_metrics", "preflight",
           "tokenizer"]


def _paths(value: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


@contextlib.contextmanager
def _configured(config: ConfigLike) -> Iterator[None]:
    if config is None:
        yield
        return
    from trainproof.config import active, as_config

    with active(as_config(config)):
        yield


def _options(format: str, mapping: Mapping[str, str] | None, vocab_size: int | None = None) -> LogOptions:
    from trainproof.commands.common import LogOptions

    return LogOptions.checked(format, mapping, vocab_size)


def judge_log(path: PathLike, *, format: str = "auto", mapping: Mapping[str, str] | None = None,
              vocab_size: int | None = None, config: ConfigLike = None) -> Report:
    """Judge one training log with the single-run rules (`trainproof epoch`).

    `path` is a log file, a run directory, or `PATH::RUN_ID` for one run of a multi-run
    store. `format` is a registered format name or "auto" (sniffed); `mapping` names a
    metric's column (`{"loss": "train/loss_step"}`, the CLI's `--map`); `vocab_size` is
    the number of classes the loss is a cross-entropy over (default: read from a
    config.json or tokenizer.json beside the log). `config` judges under a configuration
    (selection, severities, thresholds: see README "Configuration"). Raises InputError
    when the log cannot be read or the configuration is invalid."""
    from trainproof.commands.epoch import judge

    with _configured(config):
        return judge(os.fspath(path), _options(format, mapping, vocab_size))


def judge_metrics(columns: Mapping[str, tuple[npt.ArrayLike, npt.ArrayLike]], *, subject: str = "metrics",
                  format: str = "python", records: int | None = None,
                  meta: Mapping[str, object] | None = None, config: ConfigLike = None) -> Report:
    """Judge metrics already in memory: `columns` maps a column name (`loss`, `eval_loss`,
    `learning_rate`, `grad_norm`, or anything `mapping` would name) to (steps, values).
    `records` is the number of log events (default: the longest column). This is what
    the training callbacks judge with."""
    import numpy as np

    from trainproof.engine import judge_run
    from trainproof.model import InputError
    from trainproof.parsers import build_run
    from trainproof.parsers.base import RawLog

    cols = {}
    for name, (steps, values) in columns.items():
        s, v = np.asarray(steps, dtype=np.float64), np.asarray(values, dtype=np.float64)
        if s.shape != v.shape or s.ndim != 1:
            raise InputError(f"{subject}: column {name!r} needs 1-D steps and values of one length, "
                             f"got {s.shape} and {v.shape}")
        cols[name] = (s, v)
    n = records if records is not None else max((len(s) for s, _ in cols.values()), default=0)
    raw = RawLog(cols, n, meta=dict(meta or {}), step_column="step")
    with _configured(config):
        return judge_run(build_run(subject, format, raw, {}))


def compare_runs(runs: PathLike | Sequence[PathLike], baselines: PathLike | Sequence[PathLike], *,
                 format: str = "auto", mapping: Mapping[str, str] | None = None,
                 config: ConfigLike = None) -> ReportSet:
    """Judge each run against the known-good baseline(s) (`trainproof compare`). Several
    baselines (seeds of one recipe) form the envelope a run is measured against. The
    ReportSet's `tables["ranking"]` ranks the runs. A baseline that cannot be read raises
    InputError; a run that cannot be read is a NOT-CHECKED report of its own."""
    from trainproof.commands.compare import judge

    with _configured(config):
        return judge(_paths(baselines), _paths(runs), _options(format, mapping))


def compare(run: PathLike, baseline: PathLike | Sequence[PathLike], *, format: str = "auto",
            mapping: Mapping[str, str] | None = None, config: ConfigLike = None) -> Report:
    """One run judged against the baseline(s): the report of `compare_runs` for one run."""
    return compare_runs([run], baseline, format=format, mapping=mapping, config=config).reports[0]


def doctor(path: PathLike = ".", *, baseline: PathLike | Sequence[PathLike] = (), max_logs: int = 500,
           format: str = "auto", mapping: Mapping[str, str] | None = None,
           vocab_size: int | None = None, config: ConfigLike = None) -> ReportSet:
    """Find every training log under `path` and judge each (`trainproof doctor`); with
    `baseline`, compare each against it too. Reports come in triage order through
    `ReportSet.triaged()`; `tables["not_judged"]` lists what was found but not judged.
    Raises InputError when `path` does not exist or holds no training log."""
    from trainproof.commands.doctor import diagnose

    with _configured(config):
        return diagnose(os.fspath(path), _paths(baseline), max_logs, _options(format, mapping, vocab_size))


def preflight(dataset: PathLike, *, tokenizer: str | None = None, max_len: int | None = None,
              text_field: str | None = None, progress: bool = False, workers: int | None = None,
              engine: str | None = None, address: str | None = None, near_dup: bool = False,
              eval_sets: PathLike | Sequence[PathLike] = ()) -> Report:
    """Is this fine-tuning dataset (JSONL, JSON array, Parquet, a directory of shards)
    safe to start on (`trainproof preflight`). `tokenizer` (a tokenizer.json, a saved
    tokenizer directory, a SentencePiece model, or a name already in the local
    HuggingFace cache) adds token counts; `max_len` the context window they are held
    against. `progress` writes a progress line to stderr. `workers` > 1 measures in
    that many local processes (spawned: call it under `if __name__ == "__main__":`);
    `engine` "dask" or "ray" on the cluster at `address` (or a local one of `workers`
    processes); the findings are the same in every mode. `near_dup` adds near-duplicate
    detection (TP-PRE-NEAR-DUPLICATE); `eval_sets` names evaluation sets whose records are
    looked for in the dataset (TP-PRE-EVAL-CONTAMINATION / TP-PRE-EVAL-OVERLAP)."""
    from trainproof.commands.preflight import check_dataset

    return check_dataset(os.fspath(dataset), tokenizer=tokenizer, max_len=max_len, text_field=text_field,
                         progress=progress, workers=workers, engine=engine, address=address,
                         near_dup=near_dup, evals=_paths(eval_sets) if eval_sets else [])


def tokenizer(model: PathLike, transcripts: PathLike) -> Report:
    """How well the tokenizer `model` represents the transcripts (`trainproof tokenizer`).
    A tokenizer that cannot be loaded, or transcripts that cannot be read, give a
    NOT-CHECKED report whose finding says why."""
    from trainproof.commands.tokenizer import check_tokenizer

    return check_tokenizer(os.fspath(model), os.fspath(transcripts))


def data(path: PathLike, *, workers: int = 0, progress: bool = False) -> Report:
    """Is this speech dataset (a directory of audio, a JSONL manifest, an LJSpeech
    metadata.csv) safe to train on (`trainproof data`). Needs the `speech` extra
    (soundfile); without it, InputError. `workers` = 0 decodes on up to 8 CPUs."""
    from trainproof.commands.data import check_speech

    return check_speech(os.fspath(path), workers=workers, progress=progress)


def env(*, module: str | None = None, cwd: PathLike = ".", python: str | None = None,
        import_timeout: float | None = None, checkpoints: Sequence[PathLike] = (),
        against: PathLike | None = None, required_gb: float | None = None, output_dir: PathLike | None = None,
        checkpoint_gb: float | None = None, keep: int = 1, bf16: bool = False,
        gpu_gb: float | None = None) -> ReportSet:
    """Can this machine start the run (`trainproof env`): one report per subject - the
    import of `module` (in a subprocess, from `cwd`, with `python`), each checkpoint
    (against a reference), the machine's RAM and disk, the GPUs. No user code runs in
    this process and no checkpoint is unpickled."""
    from trainproof.commands.env import EnvRequest, check_env

    req = EnvRequest(module=module, cwd=os.fspath(cwd), python=python, import_timeout=import_timeout,
                     checkpoint=[os.fspath(c) for c in checkpoints],
                     against=os.fspath(against) if against is not None else None, required_gb=required_gb,
                     output_dir=os.fspath(output_dir) if output_dir is not None else None,
                     checkpoint_gb=checkpoint_gb, keep=keep, bf16=bf16, gpu_gb=gpu_gb)
    return check_env(req)
