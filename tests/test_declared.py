"""Declared versus actual and the best checkpoint is gone, on the real HF Trainer runs of
evidence/declared/ (scripts/make_evidence_declared.py: transformers 5.24.0, torch 2.13.0
CPU): each rule fires on its broken run and stays silent on the healthy ones; the
TrainingArguments are read from training_args.bin without unpickling."""

from __future__ import annotations

import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest

from trainproof.engine import judge_run
from trainproof.model import Level
from trainproof.parsers import read_run
from trainproof.parsers.beside import read_training_args

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "evidence" / "declared"
OURS = {"TP-LR-NOT-AS-DECLARED", "TP-STOPPED-SHORT", "TP-EVAL-NOT-LOGGED", "TP-BEST-CKPT-GONE"}
# run -> its last checkpoint (the state doctor judges) and what of OURS fires there
EXPECTED = {
    "healthy": (150, set()),
    "healthy_cosine": (150, set()),
    "lr_wrong_steps": (150, {"TP-LR-NOT-AS-DECLARED"}),
    "killed": (60, {"TP-STOPPED-SHORT"}),
    "eval_no_labels": (150, {"TP-EVAL-NOT-LOGGED"}),
    "best_gone": (300, {"TP-BEST-CKPT-GONE"}),
    "best_kept": (300, set()),
    "early_stopped": (120, set()),
}


def state(run: str, step: int) -> Path:
    return EVIDENCE / run / f"checkpoint-{step}" / "trainer_state.json"


def ours(path: Path) -> set[str]:
    rep = judge_run(read_run(path))
    return {f.rule_id for f in rep.findings if f.rule_id in OURS}


@pytest.mark.parametrize("run", sorted(EXPECTED))
def test_each_rule_fires_on_its_real_run_and_only_there(run):
    last, expected = EXPECTED[run]
    assert ours(state(run, last)) == expected
    rep = judge_run(read_run(state(run, last)))
    assert all(f.level is Level.WARN for f in rep.findings if f.rule_id in OURS)


def test_training_args_are_read_as_the_run_declared_them():
    meta = json.loads((EVIDENCE / "best_gone" / "run_meta.json").read_text())
    got = read_training_args(EVIDENCE / "best_gone" / "checkpoint-300" / "training_args.bin")
    assert meta["settings"] == {"overfit": True}
    assert got["learning_rate"] == 3e-3 and got["warmup_steps"] == 10 and got["max_steps"] == 300
    assert got["lr_scheduler_type"] == "linear"  # an enum member, read as its value
    assert got["eval_strategy"] == "steps" and got["eval_steps"] == 20 and got["save_steps"] == 20
    assert got["save_total_limit"] == 2 and got["load_best_model_at_end"] is False
    assert got["lr_scheduler_kwargs_set"] is False and got["deepspeed_set"] is False


def test_the_findings_say_what_was_measured():
    rep = judge_run(read_run(state("lr_wrong_steps", 150)))
    f = next(f for f in rep.findings if f.rule_id == "TP-LR-NOT-AS-DECLARED")
    assert f.values["scheduler"] == "linear" and f.values["total"] == 150 and f.values["warmup"] == 10
    assert f.values["ratio"] > 5  # a schedule for 1,500 steps has barely decayed at step 135
    rep = judge_run(read_run(state("best_gone", 300)))
    f = next(f for f in rep.findings if f.rule_id == "TP-BEST-CKPT-GONE")
    assert f.values["best"] == "checkpoint-60" and f.values["kept"] == "checkpoint-280"
    rep = judge_run(read_run(state("killed", 60)))
    f = next(f for f in rep.findings if f.rule_id == "TP-STOPPED-SHORT")
    assert f.values["step"] == 60 and f.values["planned"] == 150
    rep = judge_run(read_run(state("eval_no_labels", 150)))
    f = next(f for f in rep.findings if f.rule_id == "TP-EVAL-NOT-LOGGED")
    assert f.values["expected"] == 7 and f.values["logged"] == 0 and "eval_runtime" in f.evidence


def test_an_earlier_snapshot_of_a_run_that_went_on_is_not_stopped_short():
    assert "TP-STOPPED-SHORT" not in ours(state("killed", 40))
    assert "TP-STOPPED-SHORT" not in ours(state("healthy", 60))


def test_a_state_copied_out_of_its_output_directory_is_judged_without_them(tmp_path):
    """Alone, the killed run's state has no training_args.bin and no checkpoints beside it:
    the declared rules skip and say why; nothing is guessed."""
    alone = tmp_path / "trainer_state.json"
    shutil.copy(state("killed", 60), alone)
    rep = judge_run(read_run(alone))
    assert not {f.rule_id for f in rep.findings} & OURS
    assert "no training_args.bin beside the log" in rep.skipped["lr-declared"]
    assert "not the last state" in rep.skipped["stopped-short"]


def test_doctor_finds_the_runs_and_judges_their_last_checkpoint(run_cli):
    code, out, _ = run_cli("doctor", EVIDENCE, "--json")
    reports = {Path(r["file"]).parts[-3]: r for r in json.loads(out)["reports"]}
    assert code == 0 and set(reports) == set(EXPECTED)
    for run, (last, expected) in EXPECTED.items():
        assert Path(reports[run]["file"]).parent.name == f"checkpoint-{last}"
        assert {f["id"] for f in reports[run]["findings"]} & OURS == expected, run


def _with_args(tmp_path: Path, data: bytes) -> Path:
    d = tmp_path / "out" / "checkpoint-60"
    d.mkdir(parents=True)
    shutil.copy(state("killed", 60), d / "trainer_state.json")
    (d / "training_args.bin").write_bytes(data)
    return d / "trainer_state.json"


def _torch_zip(pkl: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("training_args/data.pkl", pkl)
    return buf.getvalue()


class _Runs:
    """Unpickling this would run a command: the reader must only name it."""

    def __reduce__(self):
        return (print, ("executed!",))


@pytest.mark.parametrize("data, why", [
    (b"not a zip at all", "not a readable torch.save archive"),
    (b"PK\x03\x04" + b"\0" * 40, "not a readable torch.save archive"),
    (_torch_zip(b"\x80\x04garbage"), "the pickle cannot be replayed"),
    (_torch_zip(pickle.dumps({"a": 1})), "holds no TrainingArguments"),
    (_torch_zip(pickle.dumps(_Runs())), "holds no TrainingArguments"),
])
def test_an_unreadable_training_args_bin_is_said_not_checked(tmp_path, capsys, data, why):
    rep = judge_run(read_run(_with_args(tmp_path, data)))
    assert why in rep.skipped["lr-declared"] and "not checked" in rep.skipped["lr-declared"]
    assert "executed!" not in capsys.readouterr().out
    # the state's own fields still judge: the killed run stopped short
    assert "TP-STOPPED-SHORT" in {f.rule_id for f in rep.findings}


LIGHTNING = ROOT / "evidence" / "declared_lightning"


def test_a_lightning_module_that_ignores_its_declared_lr_is_caught():
    """scripts/make_evidence_declared_lightning.py (lightning 2.6.6): hparams.yaml says lr
    3e-4; configure_optimizers used 3e-3 written in the code. The healthy twin uses it."""
    bad = read_run(LIGHTNING / "lr_hardcoded" / "csv" / "metrics.csv")
    assert bad.meta["declared"]["learning_rate"] == 3e-4
    rep = judge_run(bad)
    f = next(f for f in rep.findings if f.rule_id == "TP-LR-NOT-AS-DECLARED")
    assert f.values["ratio"] == pytest.approx(10.0) and "hparams.yaml" in f.evidence
    assert not {g.rule_id for g in judge_run(read_run(LIGHTNING / "healthy" / "csv" / "metrics.csv")).findings} & OURS


@pytest.mark.parametrize("text", ["lr: 0.001\nlearning_rate: 0.002\n", "lr: [1, 2]\n", "model:\n  lr: 0.1\n",
                                  "lr: !!python/object/apply:os.system ['echo hi']\n", "\0\xff" * 100])
def test_an_hparams_yaml_without_one_plain_learning_rate_declares_nothing(tmp_path, text):
    shutil.copy(LIGHTNING / "lr_hardcoded" / "csv" / "metrics.csv", tmp_path / "metrics.csv")
    (tmp_path / "hparams.yaml").write_text(text, encoding="latin-1")
    run = read_run(tmp_path / "metrics.csv")
    assert "declared" not in run.meta
    assert "TP-LR-NOT-AS-DECLARED" not in {f.rule_id for f in judge_run(run).findings}


def test_watch_does_not_call_a_run_it_is_watching_stopped_short(run_cli, tmp_path):
    """The latest checkpoint of a run being watched is short of max_steps by nature."""
    code, out, _ = run_cli("watch", state("killed", 60), "--max-duration", "0.3", "--interval", "0.1", "--json")
    assert code == 0 and "the run is being watched while it trains" in out
    assert "TP-STOPPED-SHORT" not in out
    assert "TP-STOPPED-SHORT" in ours(state("killed", 60))


def test_the_output_directorys_own_state_is_judged_and_only_its_own_args_are_read(tmp_path):
    """save_state() writes trainer_state.json into the output directory beside its
    checkpoint-N/ folders; a training_args.bin in the folder above belongs to no run."""
    out = tmp_path / "out"
    shutil.copytree(EVIDENCE / "killed", out)
    shutil.copy(state("killed", 60), out / "trainer_state.json")
    shutil.copy(out / "checkpoint-60" / "training_args.bin", tmp_path / "training_args.bin")
    run = read_run(out / "trainer_state.json")
    assert "declared" not in run.meta and run.meta["checkpoints"]["own_state"] is True
    f = next(f for f in judge_run(run).findings if f.rule_id == "TP-STOPPED-SHORT")
    assert "the output directory's own state" in f.evidence
