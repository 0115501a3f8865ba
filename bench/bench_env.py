"""Benchmark: inspecting a large checkpoint (CRC + static tensor table + NaN/Inf/zero
counts) against references measured in the same run on the same file:
  read      - reading the file once (the I/O floor)
  torch     - torch.load(weights_only=True) then isnan/isinf/all-zero per tensor
  inspect   - trainproof's inspect_checkpoint (never unpickles)
Each measurement runs in its own process so its peak RSS is its own.

  python bench/bench_env.py [--gb 1.0] [--dir /tmp]
Writes the inputs under --dir (never into the repo) and removes them afterwards."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def _one(kind: str, path: str) -> None:
    t0 = time.perf_counter()
    if kind == "read":
        with open(path, "rb") as fh:
            while fh.read(8 << 20):
                pass
    elif kind == "torch":
        import torch

        if path.endswith(".safetensors"):
            from safetensors.torch import load_file
            sd = load_file(path)
        else:
            sd = torch.load(path, weights_only=True)["model"]
        for t in sd.values():
            f = t.float()
            int(torch.isnan(f).sum()), int(torch.isinf(f).sum()), bool(t.any())
    else:
        from trainproof.probes.checkpoint import inspect_checkpoint
        from trainproof.rules.env_checkpoint import read_caps
        scan = inspect_checkpoint(path, read_caps())
        assert scan.intact, scan.files[0].detail
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": dt, "maxrss_mb": rss}))


def _write(dirname: str, gb: float) -> tuple[str, str]:
    import torch
    from safetensors.torch import save_file

    n = int(gb * 1e9 / 4 / 64 / 4096)  # 64 tensors of [n, 4096] float32
    sd = {f"layer{i}.weight": torch.randn(n, 4096) for i in range(64)}
    pt, sf = os.path.join(dirname, "big.pt"), os.path.join(dirname, "big.safetensors")
    torch.save({"model": sd, "epoch": 1}, pt)
    save_file(sd, sf)
    return pt, sf


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--one", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        return _one(*a.one)
    if a.write:
        return print(json.dumps(_write(a.write, a.gb)))
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="tp-bench-env-") as tmp:
        # written by a child: peak RSS survives exec on Linux, so this process stays small
        out = subprocess.run([sys.executable, __file__, "--write", tmp, "--gb", str(a.gb)], check=True,
                             capture_output=True, text=True).stdout
        paths = json.loads(out.strip().splitlines()[-1])
        for path in paths:
            size = os.path.getsize(path) / 1e9
            row = {}
            for kind in ("read", "torch", "inspect"):
                out = subprocess.run([sys.executable, __file__, "--one", kind, path], check=True,
                                     capture_output=True, text=True).stdout
                row[kind] = json.loads(out.strip().splitlines()[-1])
            print(f"{os.path.basename(path)} ({size:.2f} GB)")
            for kind, r in row.items():
                ratio = r["seconds"] / row["read"]["seconds"]
                print(f"  {kind:<8} {r['seconds']:7.2f} s  {size / r['seconds']:6.2f} GB/s  x{ratio:5.2f} of read"
                      f"  peak RSS {r['maxrss_mb']:7.0f} MB")


if __name__ == "__main__":
    main()
