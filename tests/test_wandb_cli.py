"""W&B runs through the user's path: `epoch` on a run directory or its `.wandb` file,
`doctor` over a project's wandb/ folder, exit 2 for files that are not W&B logs, and
the framing decoder's promise on arbitrary bytes (hypothesis)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainproof.cli import main
from trainproof.model import InputError
from trainproof.parsers import wandb as wb
from trainproof.parsers.wandb_frame import Damage, read_payloads
from trainproof.parsers.wandb_records import Tally, decode

FIX = Path(__file__).parent / "fixtures" / "wandb"
PLAIN_DIR = next((FIX / "plain").glob("offline-run-*"))
HF_DIR = next((FIX / "hf").glob("offline-run-*"))
HF = next(HF_DIR.glob("*.wandb"))


def judged(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def ids(report: dict) -> list[str]:
    return sorted(f["id"] for f in report["findings"])


def test_epoch_on_the_plain_loop_run_fails_on_its_nan_loss_and_inf_grad_norm(capsys):
    code, out = judged(capsys, "epoch", str(PLAIN_DIR))
    (report,) = out["reports"]
    assert code == 1 and report["format"] == "wandb" and report["verdict"] == "FAIL"
    # one isolated inf norm while the loss falls: the scaler's skip (INFO, #17)
    assert ids(report) == ["TP-NAN", "TP-NAN-GRAD-SKIPPED"]
    nan = next(f for f in report["findings"] if f["id"] == "TP-NAN")
    assert nan["location"]["step"] == 12


def test_epoch_on_the_hf_run_is_judged_as_its_trainer_state(capsys):
    code_wb, from_wandb = judged(capsys, "epoch", str(HF_DIR))
    code_hf, from_hf = judged(capsys, "epoch", str(FIX / "hf" / "trainer_state.json"))
    a, b = from_wandb["reports"][0], from_hf["reports"][0]
    assert (a["format"], b["format"]) == ("wandb", "hf")
    assert code_wb == code_hf == 0 and a["verdict"] == b["verdict"] == "PASS"
    assert ids(a) == ids(b)
    assert a["checks"] == b["checks"]
    assert a["steps"] == b["steps"]


def test_epoch_on_the_wandb_file_itself(capsys):
    code, out = judged(capsys, "epoch", str(HF))
    assert code == 0 and out["reports"][0]["format"] == "wandb"


def _project(tmp_path: Path) -> Path:
    """A project folder as a user has it after two offline runs (the second synced: its
    files/ holds wandb-summary.json), with wandb's symlinks and debug logs."""
    root = tmp_path / "proj"
    wdir = root / "wandb"
    for src in (PLAIN_DIR, HF_DIR):
        dst = wdir / src.name
        shutil.copytree(src, dst)
        (dst / "files").mkdir()
        (dst / "files" / "requirements.txt").write_text("numpy==2.3.0\ntorch==2.13.0\n")
        (dst / "logs").mkdir()
        (dst / "logs" / "debug-internal.log").write_text(
            '{"time":"2026-12-03T07:54:19.764611207Z","level":"INFO","msg":"wandb-core"}\n'
            '{"time":"2026-12-03T07:54:19.764663505Z","level":"INFO","msg":"stream: starting",'
            '"core version":"0.31.0"}\n')
        (dst / "logs" / "debug.log").write_text(
            "2026-12-03 07:54:19,552 INFO    MainThread:9139 [wandb_setup.py:_flush():81] "
            "Current SDK version is 0.31.0\n")
    summary = {"train/loss": 1.79, "train/global_step": 20, "_step": 14, "_runtime": 1.3,
               "_wandb": {"runtime": 1}}
    (wdir / HF_DIR.name / "files" / "wandb-summary.json").write_text(json.dumps(summary))
    os.symlink(HF_DIR.name, wdir / "latest-run")
    os.symlink(f"{HF_DIR.name}/logs/debug.log", wdir / "debug.log")
    return root


def test_doctor_finds_each_run_directory_once(capsys, tmp_path):
    root = _project(tmp_path)
    code, out = judged(capsys, "doctor", str(root))
    found = {Path(r["file"]).name: (r["format"], r["verdict"]) for r in out["reports"]}
    assert found == {PLAIN_DIR.name: ("wandb", "FAIL"), HF_DIR.name: ("wandb", "PASS")}
    assert code == 1


def test_epoch_names_no_second_log_inside_a_run_directory(capsys, tmp_path):
    root = _project(tmp_path)
    code, out = judged(capsys, "epoch", str(root / "wandb" / "latest-run"))
    assert code == 0 and out["reports"][0]["format"] == "wandb"


@pytest.mark.parametrize("content", [b"", bytes(range(256)) * 40, b"\x00" * 7])
def test_not_a_wandb_log_is_exit_2_with_one_line(tmp_path, run_cli, content):
    f = tmp_path / "run-x.wandb"
    f.write_bytes(content)
    code, out, err = run_cli("epoch", f)
    assert code == 2
    lines = [ln for ln in (out + err).splitlines() if ln.strip()]
    assert len(lines) == 1 and "run-x.wandb" in lines[0] and "Traceback" not in out + err


def test_a_run_directory_whose_log_is_garbage_is_exit_2(tmp_path, run_cli):
    d = tmp_path / "offline-run-20261203_075707-abcd1234"
    d.mkdir()
    (d / "run-abcd1234.wandb").write_bytes(b"not a log at all")
    code, out, err = run_cli("epoch", d)
    assert code == 2 and "not a W&B run log" in out + err


# --- arbitrary bytes ----------------------------------------------------------------

def _frame_only(blob: bytes) -> None:
    with contextlib.suppress(InputError):
        list(read_payloads(io.BytesIO(blob), Damage(), "x"))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_framing_never_raises_but_input_error_on_arbitrary_bytes(blob):
    _frame_only(blob)
    _frame_only(b":W&B\xe1\xbe\x00" + blob)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(0, 70_000)), max_size=6))
def test_framing_never_raises_on_headers_that_claim_any_length(parts):
    blob = bytearray(b":W&B\xe1\xbe\x00")
    for kind, length in parts:
        blob += (length % 2**32).to_bytes(4, "little") + (length % 65536).to_bytes(2, "little") + bytes([kind])
        blob += bytes(length % 5000)
    _frame_only(bytes(blob))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=500))
def test_record_decoding_never_raises_on_arbitrary_payloads(payload):
    tally = Tally()
    row = decode(payload, tally)
    assert row is None or all(isinstance(v, float) for v in row.values())
    decode(b"\x12" + bytes([len(payload) % 128]) + payload, tally)  # as a history record


def _points(raw) -> set[tuple[str, float, float]]:
    return {(k, float(s), repr(float(v))) for k, (steps, vals) in raw.columns.items()
            for s, v in zip(steps.tolist(), vals.tolist(), strict=True)}


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.integers(0, HF.stat().st_size - 1), st.integers(1, 255), min_size=1, max_size=6))
def test_random_damage_never_invents_a_point(flips):
    data = bytearray(HF.read_bytes())
    for pos, bits in flips.items():
        data[pos] ^= bits
    clean = _points(wb.read(HF))
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / HF.name
        p.write_bytes(bytes(data))
        try:
            raw = wb.read(p)
        except InputError:
            assert min(flips) < 7  # only a damaged file header refuses the file
            return
    assert not (_points(raw) - clean), "a damaged record became a data point"
    assert [n for n in raw.notes if not n.startswith("step:")]  # the damage is reported
