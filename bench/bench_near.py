#!/usr/bin/env python3
"""Near-duplicate detection measured: trainproof's numpy sketch against datasketch and
rensa on `gen_near_truth.py`'s dataset (the generator's bytes, plus which records are
planted near-copies), and the cost `--near-dup` / `--eval` add to `preflight`.

Each contender runs in its own process (peak RSS is that process's) and prints one
JSON line; the driver scores the near-copy pairs each one verified against the truth:

- recall: planted near-copies whose record and source record end in one cluster
  (clusters = connected components of the verified pairs);
- precision: verified pairs of records with different texts whose two records belong
  to one planted family (near and exact copies chained), over all such pairs.

All contenders see the same normalisation and 3-word shingles (trainproof's, hashed
once) except datasketch, which is given the shingles as strings, as its users do.
Banding is 16 x 8 and verification is an estimated Jaccard >= 0.7 for all.

    python bench/gen_near_truth.py --records 100000 --out /tmp/ds-near/d100k.jsonl
    /tmp/venv-ds-near/bin/python bench/bench_near.py /tmp/ds-near/d100k.jsonl --contenders all
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))
THRESHOLD, BANDS, ROWS, PERM = 0.7, 16, 8, 128


def _blocks(path: Path):
    from trainproof.probes.dataset import _keep_freed_blocks
    from trainproof.probes.dataset_read import ReadTally, read_jsonl

    _keep_freed_blocks()
    for b in read_jsonl(path, 0, "text", ReadTally(), 16 << 20):
        yield range(b.wheres.start, b.wheres.stop), b.texts


def _exact_digests(texts: list[str]) -> np.ndarray:
    from trainproof.probes.dataset_words import block_words

    return block_words(texts, exact=True).raw


def _band_pairs(sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Star pairs from 16 x 8 bands of full-width signatures (what trainproof does on bytes)."""
    from trainproof.probes.dataset_words import U64, mix64

    n = len(sig)
    found = []
    with np.errstate(over="ignore"):
        for b in range(BANDS):
            key = np.zeros(n, dtype=U64)
            for t in range(ROWS):
                key = mix64(key ^ sig[:, b * ROWS + t].astype(U64))
            o = np.argsort(key, kind="stable")
            k = key[o]
            same = k[1:] == k[:-1]
            pos = np.flatnonzero(same) + 1
            starts = np.flatnonzero(np.concatenate(([True], ~same)))
            first = starts[np.searchsorted(starts, pos, side="right") - 1]
            found.append(o[first] * np.int64(n) + o[pos])
    pairs = np.unique(np.concatenate(found))
    return pairs // n, pairs % n


def run_trainproof(path: Path) -> dict:
    from trainproof.probes import dataset_near as dn

    t0 = time.perf_counter()
    sk = dn.NearDupSketch(dn.NearParams())
    for rows, texts in _blocks(path):
        sk.add(0, rows, texts)
    t1 = time.perf_counter()
    ids, raw, a, b, sim = sk.pairs()
    ok = sim >= THRESHOLD
    count, _ = dn._count(raw, a[ok], b[ok])
    t2 = time.perf_counter()
    keep = ok & (raw[a] != raw[b])
    lines = ids & ((1 << 40) - 1)
    return {"sketch_s": t1 - t0, "analyse_s": t2 - t1, "count": count, "candidates": len(a),
            "pairs": np.stack([lines[a[keep]], lines[b[keep]]], axis=1).tolist(),
            "all_pairs": np.stack([lines[a[ok]], lines[b[ok]]], axis=1).tolist()}


def run_rensa(path: Path) -> dict:
    import rensa

    from trainproof.probes.dataset_words import block_words, shingles

    t0 = time.perf_counter()
    sigs, raws, lines = [], [], []
    for rows, texts in _blocks(path):
        w = block_words(texts, exact=True)
        sh, rec = shingles(w, 3, True)
        counts = np.bincount(rec, minlength=len(texts))
        has = counts > 0
        offsets = np.concatenate(([0], np.cumsum(counts[has]))).astype(np.uint64)
        m = rensa.RMinHash.digest_matrix_from_flat_token_hashes(sh, offsets, PERM, 42)
        sigs.append(np.array(m.to_rows(), dtype=np.uint32))
        raws.append(w.raw[has])
        lines.append(np.asarray(rows)[has])
    t1 = time.perf_counter()
    return _score_full(np.concatenate(sigs), np.concatenate(raws), np.concatenate(lines), t0, t1)


def _score_full(sig: np.ndarray, raw: np.ndarray, lines: np.ndarray, t0: float, t1: float) -> dict:
    a, b = _band_pairs(sig)
    sim = np.array([(sig[x] == sig[y]).mean() for x, y in zip(a, b, strict=True)]) if len(a) else np.zeros(0)
    ok = sim >= THRESHOLD
    keep = ok & (raw[a] != raw[b])
    t2 = time.perf_counter()
    return {"sketch_s": t1 - t0, "analyse_s": t2 - t1, "candidates": len(a),
            "pairs": np.stack([lines[a[keep]], lines[b[keep]]], axis=1).tolist(),
            "all_pairs": np.stack([lines[a[ok]], lines[b[ok]]], axis=1).tolist()}


_WORD = re.compile(r"[a-z0-9\x80-\U0010ffff]+")


def run_datasketch(path: Path) -> dict:
    """datasketch as its users run it: shingle strings per record, MinHash.bulk, then
    MinHashLSH (16 x 8) insert and query, candidates verified by MinHash.jaccard."""
    from datasketch import MinHash, MinHashLSH

    t0 = time.perf_counter()
    lsh = MinHashLSH(num_perm=PERM, params=(BANDS, ROWS))
    hashes, raws, lines = [], [], []
    for rows, texts in _blocks(path):
        sets, kept = [], []
        for r, t in zip(rows, texts, strict=True):
            words = _WORD.findall(t.lower())
            sh = [" ".join(words[i:i + 3]).encode() for i in range(max(1, len(words) - 2))] if words else []
            if sh:
                sets.append(sh)
                kept.append(r)
        for r, m in zip(kept, MinHash.bulk(sets, num_perm=PERM), strict=True):
            lsh.insert(r, m)
            hashes.append(m)
            lines.append(r)
        kept_set = set(kept)
        raws.append(_exact_digests([t for t, r in zip(texts, rows, strict=True) if r in kept_set]))
    t1 = time.perf_counter()
    pairs, all_pairs, cands = [], [], 0
    raw = np.concatenate(raws)
    index = {r: i for i, r in enumerate(lines)}
    for i, (r, m) in enumerate(zip(lines, hashes, strict=True)):
        for other in lsh.query(m):
            if other <= r:
                continue
            cands += 1
            j = index[other]
            if m.jaccard(hashes[j]) >= THRESHOLD:
                all_pairs.append([r, other])
                if raw[i] != raw[j]:
                    pairs.append([r, other])
    t2 = time.perf_counter()
    return {"sketch_s": t1 - t0, "analyse_s": t2 - t1, "candidates": cands, "pairs": pairs, "all_pairs": all_pairs}


def score(result: dict, truth: dict) -> dict:
    parent: dict[int, int] = {}

    def root(x: int, p: dict[int, int]) -> int:
        while p.get(x, x) != x:
            p[x] = p.get(p[x], p[x])
            x = p[x]
        return x

    for a, b in truth["pairs"] + truth["exact"]:
        parent[root(a, parent)] = root(b, parent)
    found: dict[int, int] = {}
    for a, b in result["all_pairs"]:
        found[root(a, found)] = root(b, found)
    hit = sum(1 for a, b in truth["pairs"] if a != b and root(a, found) == root(b, found))
    good = sum(1 for a, b in result["pairs"] if root(a, parent) == root(b, parent))
    flagged = {x for p in result["pairs"] for x in p}
    return {"recall": hit / len(truth["pairs"]), "precision": good / max(1, len(result["pairs"])),
            "near_pairs": len(result["pairs"]), "records_in_pairs": len(flagged), "flagged": sorted(flagged)}


def child(name: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, str(path), "--child", name], capture_output=True, text=True,
                         check=False)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout)


def cli(path: Path, *extra: str) -> dict:
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", "import resource,sys,runpy;sys.argv=['trainproof',*sys.argv[1:]];"
                          "exec('try:\\n runpy.run_module(\"trainproof\",run_name=\"__main__\")\\n"
                          "except SystemExit: pass');print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
                          "file=sys.stderr)", "preflight", str(path), "--json", *extra],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not out.stdout.strip():
        raise SystemExit(f"preflight {' '.join(extra)} failed: {out.stderr.strip()[-500:]}")
    doc = json.loads(out.stdout)
    return {"wall_s": round(wall, 2), "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime
                                                     - before.ru_stime, 2),
            "peak_mb": round(int(out.stderr.strip().splitlines()[-1]) / 1024),
            "findings": {f["id"]: f["values"] for r in doc["reports"] for f in r["findings"]}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--contenders", default="trainproof,rensa",
                    help="comma-separated: trainproof, rensa, datasketch; all; or none (with --cli)")
    ap.add_argument("--cli", action="store_true", help="also time `preflight` plain, --near-dup and --eval")
    ap.add_argument("--eval", type=Path, help="the eval set for the --eval timing")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        fn = {"trainproof": run_trainproof, "rensa": run_rensa, "datasketch": run_datasketch}[a.child]
        r = fn(a.data)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        r["peak_mb"] = round(ru.ru_maxrss / 1024)
        r["cpu_s"] = round(ru.ru_utime + ru.ru_stime, 1)
        print(json.dumps(r))
        return 0
    truth = json.loads(Path(str(a.data) + ".near.json").read_text())
    names = (["trainproof", "rensa", "datasketch"] if a.contenders == "all"
             else [n for n in a.contenders.split(",") if n and n != "none"])
    ours = None
    for name in names:
        r = child(name, a.data)
        if "error" in r:
            print(f"{name}: {r['error']}")
            continue
        s = score(r, truth)
        ours = s["flagged"] if name == "trainproof" else ours
        agree = ""
        if ours is not None and name != "trainproof":
            both = len(set(ours) & set(s["flagged"]))
            either = len(set(ours) | set(s["flagged"]))
            agree = f" agreement (records flagged by both / either): {both / max(1, either):.4f}"
        print(f"{name}: sketch {r['sketch_s']:.1f}s analyse {r['analyse_s']:.1f}s (wall) cpu {r['cpu_s']}s "
              f"peak {r['peak_mb']} MB "
              f"candidates {r['candidates']} near pairs {s['near_pairs']} recall {s['recall']:.4f} "
              f"precision {s['precision']:.4f}{agree}", flush=True)
    if a.cli:
        for extra in ([], ["--near-dup"], ["--eval", str(a.eval)] if a.eval else None):
            if extra is None:
                continue
            r = cli(a.data, *extra)
            keys = ("TP-PRE-NEAR-DUPLICATE", "TP-PRE-EVAL-CONTAMINATION", "TP-PRE-EVAL-OVERLAP")
            shown = {k: {x: r["findings"][k][x] for x in ("count", "leaked", "eval_records") if x in r["findings"][k]}
                     for k in keys if k in r["findings"]}
            print(f"preflight {' '.join(extra) or '(plain)'}: wall {r['wall_s']}s cpu {r['cpu_s']}s "
                  f"peak {r['peak_mb']} MB {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
