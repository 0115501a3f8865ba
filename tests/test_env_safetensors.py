"""safetensors files, shard indexes and HF output directories. Clean files come from
the safetensors library; malformed ones are built byte by byte, and the library's own
loader is the oracle for which of them are broken."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from .test_env_support import FIXTURES, finding, ids, report, run_env

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")


def _raw(path, header: dict, data: bytes) -> None:
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def _two_f32(a: list[int], b: list[int]) -> dict:
    return {"a": {"dtype": "F32", "shape": [2], "data_offsets": a},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": b}}


def test_clean_file_passes_and_counts_match_the_library(capsys, tmp_path):
    path = tmp_path / "model.safetensors"
    w = torch.randn(4, 3)
    w[0, 0] = float("nan")
    st.save_file({"fc.weight": w, "fc.bias": torch.zeros(4), "emb.weight": torch.ones(5, 2, dtype=torch.bfloat16)},
                 path)
    loaded = st.load_file(path)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    rep = report(doc, "checkpoint", path)
    f = finding(rep, "TP-ENV-CKPT-NONFINITE")
    assert f["values"]["nan"] == int(torch.isnan(loaded["fc.weight"]).sum()) == 1
    assert "TP-ENV-CKPT-DEAD-TENSOR" not in ids(rep)  # the zero tensor is a bias
    assert code == 1


def test_safetensors_has_no_pickle_to_check(capsys, tmp_path):
    path = tmp_path / "model.safetensors"
    st.save_file({"w": torch.ones(2, 2)}, path)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    rep = report(doc, "checkpoint", path)
    assert code == 0 and rep["verdict"] == "PASS"
    assert "holds no code" in rep["checks"]["skipped"]["ckpt-pickle-safety"]


@pytest.mark.parametrize("name,header,data,rule,words", [
    ("overlap", _two_f32([0, 8], [4, 12]), b"\0" * 12, "TP-ENV-CKPT-CORRUPT", "overlaps"),
    ("gap", _two_f32([0, 8], [12, 20]), b"\0" * 20, "TP-ENV-CKPT-CORRUPT", "belong to no tensor"),
    ("trailing", _two_f32([0, 8], [8, 16]), b"\0" * 24, "TP-ENV-CKPT-CORRUPT", "trailing"),
    ("short", _two_f32([0, 8], [8, 16]), b"\0" * 10, "TP-ENV-CKPT-TRUNCATED", "only 10"),
    ("size", _two_f32([0, 8], [8, 20]), b"\0" * 20, "TP-ENV-CKPT-CORRUPT", "needs 8"),
    ("dtype", {**_two_f32([0, 8], [8, 16]), "b": {"dtype": "F13", "shape": [2], "data_offsets": [8, 16]}},
     b"\0" * 16, "TP-ENV-CKPT-CORRUPT", "unknown dtype"),
])
def test_malformed_layouts(capsys, tmp_path, name, header, data, rule, words):
    path = tmp_path / f"{name}.safetensors"
    _raw(path, header, data)
    if name != "trailing":  # the library tolerates trailing bytes; the format does not describe them
        with pytest.raises(Exception):  # noqa: B017 - the library's error types vary
            st.load_file(path)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    f = finding(report(doc, "checkpoint", path), rule)
    assert words in f["evidence"] and code == 1


def test_header_length_past_the_end_is_truncated(capsys, tmp_path):
    path = tmp_path / "cut.safetensors"
    st.save_file({"w": torch.ones(64, 64)}, path)
    path.write_bytes(path.read_bytes()[:40])
    code, doc = run_env(capsys, "--checkpoint", str(path))
    assert "TP-ENV-CKPT-TRUNCATED" in ids(report(doc, "checkpoint", path)) and code == 1


def test_huge_declared_header_is_refused_without_reading_it(capsys, tmp_path):
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    code, doc = run_env(capsys, "--checkpoint", str(path))
    assert code == 1
    assert "exceeds" in finding(report(doc, "checkpoint", path), "TP-ENV-CKPT-CORRUPT")["evidence"]


def _sharded(tmp_path):
    st.save_file({"a.weight": torch.ones(3, 3)}, tmp_path / "model-00001-of-00002.safetensors")
    st.save_file({"b.weight": torch.ones(2, 3)}, tmp_path / "model-00002-of-00002.safetensors")
    index = {"metadata": {"total_size": 60}, "weight_map": {
        "a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    return tmp_path / "model.safetensors.index.json"


def test_sharded_checkpoint_passes(capsys, tmp_path):
    index = _sharded(tmp_path)
    code, doc = run_env(capsys, "--checkpoint", str(index))
    rep = report(doc, "checkpoint", index)
    assert rep["format"] == "sharded" and rep["records"] == 2 and code == 0


def test_sharded_checkpoint_with_a_missing_shard(capsys, tmp_path):
    index = _sharded(tmp_path)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    code, doc = run_env(capsys, "--checkpoint", str(index))
    f = finding(report(doc, "checkpoint", index), "TP-ENV-CKPT-MISSING")
    assert "model-00002-of-00002" in f["evidence"] and code == 1


def test_shard_index_from_another_save(capsys, tmp_path):
    index = _sharded(tmp_path)
    st.save_file({"c.weight": torch.ones(2, 3)}, tmp_path / "model-00002-of-00002.safetensors")
    code, doc = run_env(capsys, "--checkpoint", str(index))
    f = finding(report(doc, "checkpoint", index), "TP-ENV-CKPT-INDEX-MISMATCH")
    assert "b.weight" in f["evidence"] and code == 1


def test_hf_trainer_checkpoint_directory(capsys):
    path = FIXTURES / "hf" / "checkpoint-2"
    code, doc = run_env(capsys, "--checkpoint", str(path))
    rep = report(doc, "checkpoint", path)
    assert rep["format"] == "hf-dir" and rep["verdict"] == "PASS" and code == 0
    # model.safetensors + optimizer.pt + scheduler.pt were all read
    assert "3 file(s)" in finding(rep, "TP-ENV-CKPT-OK")["evidence"]


def test_hf_output_dir_is_judged_by_its_latest_checkpoint(capsys, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(FIXTURES / "hf" / "checkpoint-2", out / "checkpoint-2")
    (out / "checkpoint-10").mkdir()
    (out / "checkpoint-10" / "trainer_state.json").write_text("{}")
    (out / "checkpoint-10" / "model.safetensors").write_bytes(b"")  # the save that died
    code, doc = run_env(capsys, "--checkpoint", str(out))
    rep = report(doc, "checkpoint", out)
    assert "checkpoint-10" in rep["notes"][0] and "TP-ENV-CKPT-EMPTY" in ids(rep) and code == 1


def test_hf_checkpoint_without_optimizer_warns(capsys, tmp_path):
    path = tmp_path / "checkpoint-2"
    shutil.copytree(FIXTURES / "hf" / "checkpoint-2", path)
    (path / "optimizer.pt").unlink()
    code, doc = run_env(capsys, "--checkpoint", str(path))
    assert "TP-ENV-CKPT-NO-OPTIMIZER" in ids(report(doc, "checkpoint", path)) and code == 0


def test_hf_checkpoint_with_a_truncated_optimizer(capsys, tmp_path):
    path = tmp_path / "checkpoint-2"
    shutil.copytree(FIXTURES / "hf" / "checkpoint-2", path)
    opt = path / "optimizer.pt"
    opt.write_bytes(opt.read_bytes()[:5000])
    code, doc = run_env(capsys, "--checkpoint", str(path))
    f = finding(report(doc, "checkpoint", path), "TP-ENV-CKPT-TRUNCATED")
    assert "optimizer.pt" in f["evidence"] and code == 1


def test_directory_without_weights_is_unreadable(capsys, tmp_path):
    code, doc = run_env(capsys, "--checkpoint", str(tmp_path))
    assert "TP-ENV-CKPT-UNREADABLE" in ids(report(doc, "checkpoint", tmp_path)) and code == 2
