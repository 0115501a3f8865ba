"""RAM, disk and GPU. The memory probe reads /proc and the cgroup file system; the
cgroup tests give it trees in the kernel's own file formats (v1 and v2) to show a
container limit wins over the host's MemAvailable. The no-GPU path runs for real."""

from __future__ import annotations

import pytest

from trainproof.probes.machine import GB, measure_disk, measure_gpus, measure_memory

from .test_env_support import finding, ids, report, run_env

MEMINFO = "MemTotal:       65536000 kB\nMemFree:         1000000 kB\nMemAvailable:   50000000 kB\n"


def _tree(tmp_path, self_cgroup: str, files: dict[str, str]):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(MEMINFO)
    (proc / "self" / "cgroup").write_text(self_cgroup)
    cg = tmp_path / "cgroup"
    for rel, text in files.items():
        (cg / rel).parent.mkdir(parents=True, exist_ok=True)
        (cg / rel).write_text(text)
    return str(proc), str(cg)


def test_host_memory_without_a_limit(tmp_path):
    proc, cg = _tree(tmp_path, "0::/\n", {"memory.max": "max\n"})
    mem = measure_memory(proc, cg)
    assert mem.available == 50000000 * 1024 and mem.total == 65536000 * 1024 and mem.cgroup_limit is None


def test_cgroup_v2_limit_is_honoured(tmp_path):
    proc, cg = _tree(tmp_path, "0::/job/step\n", {
        "job/memory.max": str(16 * 2**30), "job/memory.current": str(4 * 2**30),
        "job/memory.stat": f"anon 1\ninactive_file {2**30}\n",
        "job/step/memory.max": "max\n"})
    mem = measure_memory(proc, cg)
    assert mem.cgroup_limit == 16 * 2**30 and mem.total == 16 * 2**30
    assert mem.available == (16 - (4 - 1)) * 2**30  # reclaimable page cache is not counted as used
    assert mem.source == "cgroup limit"


def test_cgroup_v1_limit_is_honoured(tmp_path):
    proc, cg = _tree(tmp_path, "4:memory:/docker/abc\n1:cpu:/\n", {
        "memory/memory.limit_in_bytes": "9223372036854771712\n",
        "memory/docker/abc/memory.limit_in_bytes": str(8 * 2**30),
        "memory/docker/abc/memory.usage_in_bytes": str(6 * 2**30),
        "memory/docker/abc/memory.stat": "total_inactive_file 0\n"})
    mem = measure_memory(proc, cg)
    assert mem.cgroup_limit == 8 * 2**30 and mem.available == 2 * 2**30


def test_unreadable_proc_is_unknown_not_zero(tmp_path):
    mem = measure_memory(str(tmp_path / "none"), str(tmp_path / "none"))
    assert mem.available is None and "meminfo" in mem.why_unknown


def test_disk_is_measured_at_the_nearest_existing_parent(tmp_path):
    d = measure_disk(str(tmp_path / "out" / "run1"))
    assert d.path == str(tmp_path) and d.free and d.free > 0


def test_no_gpu_here_is_said_plainly():
    gpus = measure_gpus()
    if gpus.devices:
        pytest.skip("this machine has GPUs; the no-GPU path is exercised elsewhere")
    assert gpus.why_unknown


def test_plain_env_checks_what_it_can(capsys, tmp_path):
    code, doc = run_env(capsys, "--cwd", str(tmp_path))
    machine = report(doc, "machine")
    assert {"TP-ENV-MEM-INFO", "TP-ENV-DISK-INFO"} <= ids(machine)
    assert machine["checks"]["ran"] == ["memory", "disk"]
    gpu = report(doc, "gpu")
    if not measure_gpus().devices:
        assert gpu["verdict"] == "NOT-CHECKED" and not gpu["required"]
        finding(gpu, "TP-ENV-GPU-NOT-CHECKED")
    assert code == 0


def test_ram_requirement_judged(capsys, tmp_path):
    avail = measure_memory().available / GB
    code, doc = run_env(capsys, "--cwd", str(tmp_path), "--required-gb", str(round(avail * 4 + 100)))
    f = finding(report(doc, "machine"), "TP-ENV-MEM-INSUFFICIENT")
    assert f["values"]["required_gb"] > f["values"]["available_gb"] and code == 1
    code, doc = run_env(capsys, "--cwd", str(tmp_path), "--required-gb", "0.5")
    assert "TP-ENV-MEM-OK" in ids(report(doc, "machine")) or "TP-ENV-MEM-TIGHT" in ids(report(doc, "machine"))


def test_disk_requirement_from_size_and_kept_copies(capsys, tmp_path):
    free = measure_disk(str(tmp_path)).free / GB
    each = round(free / 2 + 1)
    code, doc = run_env(capsys, "--output-dir", str(tmp_path), "--checkpoint-gb", str(each), "--keep", "3")
    f = finding(report(doc, "machine"), "TP-ENV-DISK-INSUFFICIENT")
    assert f["values"]["need_gb"] == each * 3 and f["values"]["keep"] == 3 and code == 1
    code, doc = run_env(capsys, "--output-dir", str(tmp_path), "--checkpoint-gb", "0.001", "--keep", "2")
    assert "TP-ENV-DISK-OK" in ids(report(doc, "machine")) and code == 0


def test_checkpoint_size_defaults_to_the_inspected_checkpoint(capsys, tmp_path):
    ckpt = tmp_path / "w.safetensors"
    torch = pytest.importorskip("torch")
    pytest.importorskip("safetensors.torch").save_file({"w": torch.ones(10, 10)}, ckpt)
    code, doc = run_env(capsys, "--checkpoint", str(ckpt), "--output-dir", str(tmp_path))
    assert code == 0
    f = finding(report(doc, "machine"), "TP-ENV-DISK-OK")
    assert f["values"]["checkpoint_gb"] == ckpt.stat().st_size / GB
    assert str(ckpt) in f["values"]["size_from"]


def test_bf16_requested_without_a_gpu_cannot_judge(capsys, tmp_path):
    if measure_gpus().devices:
        pytest.skip("a GPU is present: the requirement is judged, not left unchecked")
    code, doc = run_env(capsys, "--cwd", str(tmp_path), "--bf16")
    gpu = report(doc, "gpu")
    assert gpu["required"] and gpu["verdict"] == "NOT-CHECKED" and code == 2


@pytest.mark.parametrize("flag", ["--keep=0", "--required-gb=-1", "--checkpoint-gb=abc"])
def test_bad_numbers_are_usage_errors(capsys, flag):
    from trainproof.cli import main

    assert main(["env", flag]) == 2
    assert "error" in capsys.readouterr().err
