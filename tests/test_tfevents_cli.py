"""TensorBoard runs through the user's path: `epoch` on a file or run directory,
`doctor` over several runs, and the same verdict as the text log of the same run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from trainproof.cli import main
from trainproof.parsers import tfevents, tfevents_crc

FIX = Path(__file__).parent / "fixtures" / "tfevents"
SRC = Path(__file__).parents[1] / "src"


def judged(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def verdict_and_ids(report: dict) -> tuple[str, list[str]]:
    return report["verdict"], sorted(f["id"] for f in report["findings"])


@pytest.mark.parametrize("run", ["torch_default", "torch_diverging"])
def test_tensorboard_run_is_judged_as_its_text_log(capsys, run):
    """One tiny training run wrote a SummaryWriter log and a JSONL log side by side."""
    code_tb, tb = judged(capsys, "epoch", str(FIX / run))
    code_txt, txt = judged(capsys, "epoch", str(FIX / f"{run}.jsonl"))
    assert tb["reports"][0]["format"] == "tfevents"
    assert code_tb == code_txt
    assert verdict_and_ids(tb["reports"][0]) == verdict_and_ids(txt["reports"][0])
    assert tb["reports"][0]["checks"]["ran"] == txt["reports"][0]["checks"]["ran"]


def test_hf_trainer_tensorboard_run_is_judged_as_its_trainer_state(capsys):
    """A tiny HF Trainer fine-tune with report_to="tensorboard", and its trainer_state.json."""
    (run,) = (FIX / "hf" / "runs").iterdir()
    code_tb, tb = judged(capsys, "epoch", str(run))
    code_hf, hf = judged(capsys, "epoch", str(FIX / "hf" / "trainer_state.json"))
    assert (tb["reports"][0]["format"], hf["reports"][0]["format"]) == ("tfevents", "hf")
    assert code_tb == code_hf
    assert verdict_and_ids(tb["reports"][0]) == verdict_and_ids(hf["reports"][0])
    assert tb["reports"][0]["checks"] == hf["reports"][0]["checks"]


def test_diverging_run_fails_with_the_same_rules(capsys):
    code, out = judged(capsys, "epoch", str(FIX / "torch_diverging"))
    assert code == 1
    assert "TP-DIVERGE" in verdict_and_ids(out["reports"][0])[1]


def test_epoch_on_a_single_event_file(capsys):
    (f,) = tfevents.event_files(FIX / "tbx")
    code, out = judged(capsys, "epoch", str(f))
    assert code == 0
    assert out["reports"][0]["verdict"] == "PASS" and out["reports"][0]["format"] == "tfevents"


@pytest.mark.parametrize("run", ["keras/fit", "lightning/lightning_logs/version_0"])
def test_keras_and_lightning_judge_without_map(capsys, run):
    code, out = judged(capsys, "epoch", str(FIX / run))
    assert code in (0, 1)
    report = out["reports"][0]
    assert "overfit" in report["checks"]["ran"], "the eval series was found without --map"


def test_doctor_finds_each_run_once(tmp_path, capsys):
    for part in ("lightning", "keras/fit", "torch_default", "torch_resumed"):
        shutil.copytree(FIX / part, tmp_path / part)
    code, out = judged(capsys, "doctor", str(tmp_path))
    assert code in (0, 1)
    files = sorted(Path(r["file"]).relative_to(tmp_path).as_posix() for r in out["reports"])
    assert files == ["keras/fit", "lightning/lightning_logs/version_0", "lightning/lightning_logs/version_1",
                     "torch_default", "torch_resumed"]
    assert all(r["format"] == "tfevents" for r in out["reports"])
    nested = sorted(Path(n["file"]).relative_to(tmp_path).as_posix() for n in out["not_judged"])
    assert nested == ["keras/fit/train", "keras/fit/validation"]


def test_pure_crc_fallback_matches_the_c_implementation(monkeypatch):
    rng = np.random.default_rng(1)
    for n in (0, 1, 7, 8, 63, 300):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert tfevents_crc.crc32c_pure(data) == tfevents_crc.crc32c(data)
    assert tfevents_crc.crc32c_pure(b"123456789") == 0xE3069283  # the CRC-32C check value
    with_c = tfevents.read(FIX / "torch_new_style")
    monkeypatch.setattr(tfevents_crc, "_gcrc", None)
    without = tfevents.read(FIX / "torch_new_style")
    assert with_c.notes == without.notes == []
    for k, (s, v) in with_c.columns.items():
        np.testing.assert_array_equal(without.columns[k][0], s)
        np.testing.assert_array_equal(without.columns[k][1], v)


def test_reader_imports_no_heavy_library():
    code = ("import sys; from pathlib import Path; from trainproof.parsers import read_run; "
            f"read_run(Path({str(FIX / 'keras' / 'fit')!r})); read_run(Path({str(FIX / 'dtypes')!r})); "
            "heavy = [m for m in ('tensorflow', 'tensorboard', 'google.protobuf', 'torch', 'tensorboardX') "
            "if m in sys.modules]; print(heavy)")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"
