"""Reach, as a new user meets it: `trainproof doctor RUN_DIR`, with no flags, gives a
verdict on a run written by each writer trainproof reads. Every file here was written by
the real library in a tiny CPU run (the script beside each fixture set says how), except
the SYNTHETIC_* logs of frameworks that cannot run on this CPU machine, built from their
exact print format. Each run is laid out in a directory of its own, as its writer leaves
it, without the expected-values files the reader tests use."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

FIX = ROOT / "tests" / "fixtures"

# writer -> the files or directories of one of its runs (relative to tests/fixtures)
WRITERS: dict[str, tuple[str, ...]] = {
    "HF Trainer (transformers 5, tokens seen)": ("core/hf_logging/v5_tokens_seen/trainer_state.json",),
    "HF Trainer stdout": ("textlog/hf_trainer/train.log",),
    "TRL SFTTrainer": ("core/short/trl_healthy/trainer_state.json",),
    "TRL stdout": ("textlog/trl_sft/train.log",),
    "LLaMA-Factory": ("core/progress/llamafactory/SYNTHETIC_trainer_log.jsonl",),
    "ms-swift": ("core/progress/swift",),
    "Lightning CSVLogger": ("core/lightning/metrics.csv",),
    "Lightning TensorBoardLogger": ("tfevents/lightning",),
    "Keras CSVLogger": ("core/short/keras_healthy",),
    "Keras TensorBoard": ("tfevents/keras",),
    "fastai CSVLogger": ("core/short/fastai_healthy",),
    "torch SummaryWriter": ("tfevents/torch_default",),
    "tensorboardX": ("tfevents/tbx",),
    "W&B": ("wandb/plain/offline-run-20261203_075707-m7cwoytj",),
    "MLflow file store": ("mlflow/mlruns",),
    "ClearML offline session": ("clearml/healthy",),
    "nanoGPT": ("textlog/nanogpt/train.log",),
    "Megatron-LM": ("textlog/synthetic/SYNTHETIC_megatron.log",),
    "NeMo": ("textlog/synthetic/SYNTHETIC_nemo2.log",),
    "DeepSpeed": ("textlog/deepspeed/train.log",),
    "fairseq": ("textlog/synthetic/SYNTHETIC_fairseq_json.log",),
    "torchtune": ("textlog/torchtune/log_1796284613.txt",),
    "Keras model.fit stdout": ("textlog/keras_fit/healthy_v1.log",),
    "mlx-lm": ("textlog/mlx_lm/v0_32_healthy.log",),
}


def _lay_out(parts: tuple[str, ...], run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    for rel in parts:
        src = FIX / rel
        if src.is_dir():
            shutil.copytree(src, run_dir / src.name,
                            ignore=shutil.ignore_patterns("expected.json", "*.expected.json"))
        else:
            shutil.copy(src, run_dir / src.name)


def _judged(run_cli, path: Path) -> tuple[int, list[dict]]:
    code, out, err = run_cli("doctor", path, "--json")
    assert out, err
    return code, json.loads(out)["reports"]


@pytest.mark.parametrize("writer", WRITERS)
def test_doctor_gives_a_verdict_on_each_writers_run(run_cli, tmp_path, writer):
    run_dir = tmp_path / "run"
    _lay_out(WRITERS[writer], run_dir)
    code, reports = _judged(run_cli, run_dir)
    assert code in (0, 1) and reports, writer
    for r in reports:
        assert r["verdict"] in ("PASS", "WARN", "FAIL"), (writer, r["file"], r["verdict"], r["notes"])


def test_the_mlflow_sqlite_store_too(run_cli, tmp_path):
    with gzip.open(FIX / "mlflow" / "mlflow.db.gz") as src, open(tmp_path / "mlflow.db", "wb") as dst:
        shutil.copyfileobj(src, dst)
    code, reports = _judged(run_cli, tmp_path)
    assert code in (0, 1) and len(reports) >= 2
    assert all(r["verdict"] in ("PASS", "WARN", "FAIL") for r in reports)


def test_a_writers_run_without_a_loss_names_the_columns_it_found(run_cli, tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("epoch,accuracy,val_accuracy\n0,0.5,0.4\n1,0.6,0.5\n2,0.7,0.55\n")
    code, _out, err = run_cli("epoch", log)
    code_json, out, _ = run_cli("epoch", log, "--json")
    assert code == code_json == 2
    assert "accuracy" in out and "val_accuracy" in out
