#!/usr/bin/env python3
"""Which records of `../shared/bench/gen_dataset.py`'s output are planted near-copies,
and of which earlier record: its truth file only counts them.

Replays the generator with the same seed and the same sequence of random calls
(it imports the generator's vocabulary builder, so the stream cannot drift) and
writes the dataset plus `<out>.near.json`: `pairs` = [[line, source line], ...]
(1-based lines; the source is the record whose text was copied and edited) and
`exact` = [[line, source line], ...] for the planted exact copies. Run it with the
generator's arguments; the dataset bytes equal the generator's own (checked by
comparing file digests in BENCHMARKS.md's recipe):

    python bench/gen_near_truth.py --records 100000 --out /tmp/ds-near/d100k.jsonl
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import random
import sys
from pathlib import Path

GEN = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "gen_dataset.py"


def _generator() -> object:
    path = GEN if GEN.exists() else Path("/work/shared/bench/gen_dataset.py")
    spec = importlib.util.spec_from_file_location("gen_dataset", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--empty-rate", type=float, default=0.01)
    ap.add_argument("--dup-rate", type=float, default=0.03)
    ap.add_argument("--near-dup-rate", type=float, default=0.02)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    gen = _generator()
    rng = random.Random(a.seed)
    vocab = gen.make_vocab(rng, 30_000)  # type: ignore[attr-defined]
    cum = list(itertools.accumulate(1.0 / (r + 1) ** 1.05 for r in range(len(vocab))))
    punct = [".", ".", ".", ",", ",", "?", "!", ";", ":"]

    def fresh() -> str:  # the generator's fresh_text, call for call
        target = rng.randint(300, 700)
        words = rng.choices(vocab, cum_weights=cum, k=target // 5)
        out, length, i = [], 0, 0
        while length < target:
            if i >= len(words):
                words += rng.choices(vocab, cum_weights=cum, k=20)
            w = words[i]
            if not out or out[-1].endswith((".", "?", "!")):
                w = w.capitalize()
            if rng.random() < 0.08:
                w += rng.choice(punct)
            out.append(w)
            length += len(w) + 1
            i += 1
        return " ".join(out)[:target].rstrip() + "."

    texts: list[str] = []
    lines: list[int] = []  # the line of each entry of `texts`
    near: list[list[int]] = []
    exact: list[list[int]] = []
    a.out.parent.mkdir(parents=True, exist_ok=True)
    e, d, nd = a.empty_rate, a.dup_rate, a.near_dup_rate
    with open(a.out, "w", encoding="utf-8", buffering=1 << 22) as f:
        for line in range(1, a.records + 1):
            r = rng.random()
            if r < e:
                text = rng.choice(["", " ", "\n", "  \t "])
            elif r < e + d and texts:
                k = rng.randrange(len(texts))
                text = texts[k]
                exact.append([line, lines[k]])
            elif r < e + d + nd and texts:
                k = rng.randrange(len(texts))
                words = texts[k].split(" ")
                for _ in range(max(1, len(words) // 33)):
                    words[rng.randrange(len(words))] = rng.choice(vocab)
                text = " ".join(words)
                near.append([line, lines[k]])
            else:
                text = fresh()
            if text.strip():
                texts.append(text)
                lines.append(line)
            f.write(json.dumps({"text": text}, ensure_ascii=False))
            f.write("\n")
    a.out.with_name(a.out.name + ".near.json").write_text(json.dumps({"pairs": near, "exact": exact}) + "\n")
    print(f"{a.out}: {len(near)} planted near-copies, {len(exact)} exact copies", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
