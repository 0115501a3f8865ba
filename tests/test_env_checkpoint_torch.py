"""torch.save checkpoints written by the tests, judged statically and checked against
torch itself as the oracle: torch.load(weights_only=True) on the same file says what
torch makes of it, and the tensor table read without unpickling must agree with it."""

from __future__ import annotations

import os
import shutil
import struct
import zipfile

import pytest

from trainproof.probes.checkpoint import inspect_checkpoint
from trainproof.rules.env_checkpoint import read_caps

from .test_env_support import finding, ids, report, run_env

torch = pytest.importorskip("torch")


def _training_checkpoint(path, poison=None, with_optimizer=True, dtype=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    if dtype is not None:
        model[2].to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(2, 6).to(torch.float32)).float().sum().backward() if dtype is None else None
    if dtype is None:
        opt.step()
    if poison:
        with torch.no_grad():
            poison(model)
    ckpt = {"model": model.state_dict(), "epoch": 3, "global_step": 120}
    if with_optimizer:
        ckpt["optimizer"] = opt.state_dict()
    torch.save(ckpt, path)
    return path


def _oracle_table(path):
    """What torch itself loads: {dotted name: (shape, dtype, nan, inf, all_zero)}."""
    loaded = torch.load(path, weights_only=True)
    out = {}

    def walk(obj, prefix):
        if isinstance(obj, torch.Tensor):
            f = obj.float() if obj.is_floating_point() else obj
            out[prefix] = (tuple(obj.shape), str(obj.dtype).removeprefix("torch."),
                           int(torch.isnan(f).sum()) if obj.is_floating_point() else 0,
                           int(torch.isinf(f).sum()) if obj.is_floating_point() else 0,
                           bool(obj.numel() and not obj.any()))
        elif isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                walk(v, f"{prefix}.{i}" if prefix else str(i))

    walk(loaded, "")
    return out


def _our_table(path):
    scan = inspect_checkpoint(str(path), read_caps())
    return {t.name: (t.shape, t.dtype, t.nan, t.inf, t.all_zero) for t in scan.tensors}


@pytest.mark.parametrize("case", ["clean", "nan", "inf", "dead", "mixed"])
def test_tensor_table_agrees_with_torch(tmp_path, case):
    poison = {"nan": lambda m: m[0].weight.__setitem__((1, 2), float("nan")),
              "inf": lambda m: m[2].weight.__setitem__((0, 0), float("-inf")),
              "dead": lambda m: m[2].weight.zero_()}.get(case)
    dtype = torch.bfloat16 if case == "mixed" else None
    path = _training_checkpoint(tmp_path / "c.pt", poison=poison, dtype=dtype)
    assert _our_table(path) == _oracle_table(path)


def test_clean_checkpoint_passes(capsys, tmp_path):
    path = _training_checkpoint(tmp_path / "c.pt")
    code, doc = run_env(capsys, "--checkpoint", str(path))
    rep = report(doc, "checkpoint", path)
    assert rep["verdict"] == "PASS" and ids(rep) == {"TP-ENV-CKPT-OK"}
    assert code == 0
    assert set(rep["checks"]["ran"]) >= {"ckpt-integrity", "ckpt-pickle-safety", "ckpt-tensor-health",
                                         "ckpt-optimizer-state"}


@pytest.mark.parametrize("value,kind", [(float("nan"), "NaN"), (float("inf"), "Inf")])
def test_nonfinite_weights_fail(capsys, tmp_path, value, kind):
    path = _training_checkpoint(tmp_path / "c.pt", poison=lambda m: m[0].weight.fill_(value))
    code, doc = run_env(capsys, "--checkpoint", str(path))
    f = finding(report(doc, "checkpoint", path), "TP-ENV-CKPT-NONFINITE")
    assert code == 1 and f["values"][kind.lower()] == 30 and "model.0.weight (" in f["evidence"]


def test_dead_weight_warns_but_zero_bias_does_not(capsys, tmp_path):
    def poison(m):
        m[2].weight.zero_()
        m[0].bias.zero_()

    path = _training_checkpoint(tmp_path / "c.pt", poison=poison)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    f = finding(report(doc, "checkpoint", path), "TP-ENV-CKPT-DEAD-TENSOR")
    assert f["values"]["names"] == "model.2.weight" and f["values"]["zero_biases"] == 1
    assert code == 0  # WARN only

    path = _training_checkpoint(tmp_path / "b.pt", poison=lambda m: m[0].bias.zero_())
    _, doc = run_env(capsys, "--checkpoint", str(path))
    assert "TP-ENV-CKPT-DEAD-TENSOR" not in ids(report(doc, "checkpoint", path))


def test_resume_checkpoint_without_optimizer_warns(capsys, tmp_path):
    path = _training_checkpoint(tmp_path / "c.pt", with_optimizer=False)
    _, doc = run_env(capsys, "--checkpoint", str(path))
    assert "Adam" in finding(report(doc, "checkpoint", path), "TP-ENV-CKPT-NO-OPTIMIZER")["evidence"]


def test_plain_state_dict_is_not_asked_for_an_optimizer(capsys, tmp_path):
    path = tmp_path / "weights.pt"
    torch.save(torch.nn.Linear(3, 2).state_dict(), path)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    rep = report(doc, "checkpoint", path)
    assert code == 0 and rep["verdict"] == "PASS"
    assert "weights only" in rep["checks"]["skipped"]["ckpt-optimizer-state"]


def test_shape_and_key_drift_against_a_reference(capsys, tmp_path):
    torch.save({"model": torch.nn.Linear(4, 3).state_dict()}, tmp_path / "ref.pt")
    torch.save({"model": {"weight": torch.zeros(5, 4) + 1, "extra": torch.ones(2)}}, tmp_path / "new.pt")
    code, doc = run_env(capsys, "--checkpoint", str(tmp_path / "new.pt"), "--against", str(tmp_path / "ref.pt"))
    f = finding(report(doc, "checkpoint", tmp_path / "new.pt"), "TP-ENV-CKPT-DRIFT")
    v = f["values"]
    assert (v["missing"], v["extra"], v["shapes"]) == (1, 1, 1)
    assert "weight [5, 4] vs [3, 4]" in f["evidence"] and code == 1
    # torch agrees the two do not fit
    m = torch.nn.Linear(4, 3)
    with pytest.raises(RuntimeError):
        m.load_state_dict(torch.load(tmp_path / "new.pt", weights_only=True)["model"])


def test_dtype_drift_warns(capsys, tmp_path):
    m = torch.nn.Linear(4, 3)
    torch.save(m.state_dict(), tmp_path / "ref.pt")
    torch.save(m.to(torch.bfloat16).state_dict(), tmp_path / "bf16.pt")
    code, doc = run_env(capsys, "--checkpoint", str(tmp_path / "bf16.pt"), "--against", str(tmp_path / "ref.pt"))
    rep = report(doc, "checkpoint", tmp_path / "bf16.pt")
    assert ids(rep) == {"TP-ENV-CKPT-DTYPE-DRIFT"} and code == 0


def test_against_a_broken_reference_cannot_judge(capsys, tmp_path):
    path = _training_checkpoint(tmp_path / "c.pt")
    code = __import__("trainproof.cli").cli.main(["env", "--checkpoint", str(path), "--against",
                                                  str(tmp_path / "missing.pt")])
    assert code == 2 and "--against" in capsys.readouterr().err


def test_missing_and_empty_fail(capsys, tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    code, doc = run_env(capsys, "--checkpoint", str(tmp_path / "gone.pt"), "--checkpoint", str(tmp_path / "empty.pt"))
    assert "TP-ENV-CKPT-MISSING" in ids(report(doc, "checkpoint", tmp_path / "gone.pt"))
    assert "TP-ENV-CKPT-EMPTY" in ids(report(doc, "checkpoint", tmp_path / "empty.pt"))
    assert code == 1


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.95])
def test_truncated_fails_where_torch_fails(capsys, tmp_path, fraction):
    path = _training_checkpoint(tmp_path / "c.pt")
    data = path.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(Exception):  # noqa: B017 - torch's own error type varies with where the cut falls
        torch.load(cut, weights_only=True)
    code, doc = run_env(capsys, "--checkpoint", str(cut))
    assert "TP-ENV-CKPT-TRUNCATED" in ids(report(doc, "checkpoint", cut)) and code == 1


def test_bit_flip_is_corrupt_even_though_torch_loads_it(capsys, tmp_path):
    path = _training_checkpoint(tmp_path / "c.pt")
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("data/0"))
    data = bytearray(path.read_bytes())
    # the local header's extra field (torch pads it for alignment) differs from the central one
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    data[info.header_offset + 30 + name_len + extra_len + 5] ^= 0x10
    flipped = tmp_path / "flipped.pt"
    flipped.write_bytes(bytes(data))
    torch.load(flipped, weights_only=True)  # torch does not verify CRCs: it loads silently
    code, doc = run_env(capsys, "--checkpoint", str(flipped))
    f = finding(report(doc, "checkpoint", flipped), "TP-ENV-CKPT-CORRUPT")
    assert "CRC" in f["evidence"] and code == 1


def test_legacy_format_is_refused_with_reason(capsys, tmp_path):
    path = tmp_path / "old.pt"
    torch.save(torch.nn.Linear(3, 2).state_dict(), path, _use_new_zipfile_serialization=False)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    f = finding(report(doc, "checkpoint", path), "TP-ENV-CKPT-LEGACY")
    assert "pre-1.6" in f["evidence"] and code == 2


def test_not_a_checkpoint_is_unreadable(capsys, tmp_path):
    path = tmp_path / "notes.pt"
    path.write_text("hello\n")
    code, doc = run_env(capsys, "--checkpoint", str(path))
    assert "TP-ENV-CKPT-UNREADABLE" in ids(report(doc, "checkpoint", path)) and code == 2


class _Payload:
    """Pickles as a call to os.system: unpickling it would create the marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_code_in_the_pickle_is_reported_and_never_run(capsys, tmp_path):
    marker = tmp_path / "PWNED"
    path = tmp_path / "evil.pt"
    torch.save({"model": torch.nn.Linear(2, 2).state_dict(), "payload": _Payload(marker)}, path)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    rep = report(doc, "checkpoint", path)
    f = finding(rep, "TP-ENV-CKPT-UNSAFE-PICKLE")
    assert f"{os.system.__module__}.system" in f["values"]["globals"] and code == 1
    assert not marker.exists()
    assert any("system (NOT ALLOWED)" in n and "collections.OrderedDict," in n for n in rep["notes"])
    with pytest.raises(Exception):  # noqa: B017 - torch's weights_only unpickler refuses it too
        torch.load(path, weights_only=True)
    assert not marker.exists()


def test_huge_declared_entry_is_not_inflated(capsys, tmp_path):
    """A deflated entry that declares 1 GB from a few KB: refused in bounded time and memory."""
    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("bomb/data.pkl", b"\x80\x02}q\x00.")
        z.writestr(zipfile.ZipInfo("bomb/data/0"), b"\0" * (64 << 20), compress_type=zipfile.ZIP_DEFLATED)
    code, doc = run_env(capsys, "--checkpoint", str(path))
    f = finding(report(doc, "checkpoint", path), "TP-ENV-CKPT-UNREADABLE")
    assert "not inflated" in f["evidence"] and code == 2


def test_lightning_checkpoint_fixture(capsys, tmp_path):
    from .test_env_support import FIXTURES

    path = FIXTURES / "lightning" / "last.ckpt"
    code, doc = run_env(capsys, "--checkpoint", str(path))
    rep = report(doc, "checkpoint", path)
    assert rep["format"] == "lightning" and rep["verdict"] == "PASS" and code == 0
    assert _our_table(path).keys() == _oracle_table(path).keys()


def test_lightning_checkpoint_truncated_copy(capsys, tmp_path):
    from .test_env_support import FIXTURES

    cut = tmp_path / "last.ckpt"
    shutil.copy(FIXTURES / "lightning" / "last.ckpt", cut)
    cut.write_bytes(cut.read_bytes()[:-200])
    _, doc = run_env(capsys, "--checkpoint", str(cut))
    assert "TP-ENV-CKPT-TRUNCATED" in ids(report(doc, "checkpoint", cut))


def test_storage_shorter_than_its_tensor_is_corrupt(capsys, tmp_path):
    """A re-zipped checkpoint whose storage lost bytes: every CRC is valid, the table is not."""
    src = tmp_path / "c.pt"
    torch.save({"w": torch.ones(8, 8)}, src)
    dst = tmp_path / "short.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info.filename, data[:100] if info.filename.endswith("data/0") else data)
    with pytest.raises(Exception):  # noqa: B017 - torch refuses it as well
        torch.load(dst, weights_only=True)
    code, doc = run_env(capsys, "--checkpoint", str(dst))
    f = finding(report(doc, "checkpoint", dst), "TP-ENV-CKPT-CORRUPT")
    assert "holds 100 bytes, the pickle says 256" in f["evidence"] and code == 1


def test_a_fifo_is_refused_without_blocking(capsys, tmp_path):
    fifo = tmp_path / "ckpt.pt"
    os.mkfifo(fifo)
    code, doc = run_env(capsys, "--checkpoint", str(fifo))
    assert "not a regular file" in finding(report(doc, "checkpoint", fifo), "TP-ENV-CKPT-UNREADABLE")["evidence"]
    assert code == 2
