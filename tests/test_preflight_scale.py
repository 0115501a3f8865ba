"""preflight on a sharded dataset gives the same report in one process, in local
worker processes, on a Dask LocalCluster and on a local Ray: whole JSON reports are
compared, so every finding, evidence number and cited example must agree. The engines
are real (no mocks); the Dask and Ray tests skip where their extra is not installed
(CI installs both: ci/requirements/scale.txt), Ray's also with TRAINPROOF_TEST_RAY=0."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from trainproof.cli import main
from trainproof.model import InputError
from trainproof.probes.dataset import measure_dataset
from trainproof.probes.dataset_engines import Processes, merge_blobs
from trainproof.probes.dataset_summary import (
    HASH_NAMES,
    DatasetSummary,
    Duplicates,
    duplicates_of,
    stable_digests,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

WORDS = [f"w{i}" for i in range(400)] + ["straße", "café", "東京", "naïve"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(20, 60)))


def _near(rng: random.Random, text: str) -> str:
    words = text.split()
    for i in rng.sample(range(len(words)), max(1, len(words) // 30)):
        words[i] = "edited"
    return " ".join(words)


def make_sharded(root: Path, seed: int = 15) -> dict:
    """6 JSONL shards + 1 Parquet shard under root/train, an eval set beside it.
    Planted: empty texts, exact copies within a shard and across shards (and across
    formats), near copies, eval records leaked into training, a malformed line, a
    blank line. Returns what was planted."""
    rng = random.Random(seed)
    evals = [_text(rng) for _ in range(30)]
    train = root / "train"
    train.mkdir(parents=True)
    earlier: list[str] = []
    planted: dict = {"empty": 0, "leaked": 0, "near": 0, "texts": []}
    for s in range(7):
        rows = []
        for _ in range(120):
            r = rng.random()
            if r < 0.04:
                t = rng.choice(["", " ", "\t\n"])
                planted["empty"] += 1
            elif r < 0.12 and earlier:
                t = rng.choice(earlier)  # exact copy, within or across shards
            elif r < 0.16 and earlier:
                t = _near(rng, rng.choice(earlier))
                planted["near"] += 1
            elif r < 0.18:
                t = rng.choice(evals)
                planted["leaked"] += 1
            else:
                t = _text(rng)
            if t.strip():
                earlier.append(t)
            rows.append(t)
        planted["texts"] += rows
        if s == 6:
            pq.write_table(pa.table({"text": rows}), train / f"shard-{s:02d}.parquet", row_group_size=50)
            continue
        lines = [json.dumps({"text": t}, ensure_ascii=False) for t in rows]
        if s == 2:
            lines.insert(40, '{"text": "cut off')  # malformed
            lines.insert(80, "")  # a blank line
        (train / f"shard-{s:02d}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "eval.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in evals), encoding="utf-8")
    return planted


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("sharded")
    return root / "train", make_sharded(root)


@pytest.fixture(scope="module")
def sharded(planted) -> Path:
    return planted[0]


def report(capsys, *argv: str) -> tuple[int, str]:
    code = main(["preflight", *argv, "--json"])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def single(sharded) -> tuple[int, dict]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["preflight", str(sharded), "--json"])
    return code, json.loads(out.getvalue())


def test_single_process_report_has_the_planted_faults(single, planted):
    code, doc = single
    texts = planted[1]["texts"]
    assert code == 1
    found = {f["id"]: f["values"] for r in doc["reports"] for f in r["findings"]}
    assert found["TP-PRE-MALFORMED-JSONL"]["first"].startswith("shard-02.jsonl:41 ")  # the cut-off line
    assert found["TP-PRE-EMPTY-TEXT"]["count"] == planted[1]["empty"]
    seen: dict[str, int] = {}
    for t in texts:
        seen[t] = seen.get(t, 0) + 1
    dup = found["TP-PRE-DUPLICATE-TEXT"]
    assert dup["dup_records_with_blank"] == len(texts) - len(seen)
    assert dup["distinct_with_blank"] == sum(c > 1 for c in seen.values())
    first_shard = {t: i // 120 for i, t in reversed(list(enumerate(texts)))}
    across = sum(1 for i, t in enumerate(texts) if t.strip() and first_shard[t] != i // 120)
    assert across > 10  # copies across shards (the Parquet one included) are counted too


def test_local_workers_give_the_identical_report(sharded, single, capsys):
    code, out = report(capsys, str(sharded), "--workers", "2")
    assert (code, json.loads(out)) == single


@pytest.mark.parametrize("range_bytes", [64, 1000, 7919])
def test_byte_ranges_of_one_file_keep_line_numbers(tmp_path, range_bytes):
    """One JSONL file cut into many ranges (some mid-way through a long line's
    neighbours): every count, tally and cited line equals the one-process pass."""
    rng = random.Random(range_bytes)
    texts = [rng.choice(["", "  ", _text(rng), "same text", _text(rng)]) for _ in range(300)]
    lines = [json.dumps({"text": t}, ensure_ascii=False) for t in texts]
    lines[10], lines[200] = "not json", ""
    p = tmp_path / "one.jsonl"
    p.write_text("\ufeff" + "\n".join(lines), encoding="utf-8")  # a BOM, no final newline
    one = measure_dataset(p, None, 1 << 20)
    with Processes(2, range_bytes=range_bytes) as eng:
        many = measure_dataset(p, None, 1 << 20, engine=eng)
    assert many.timing["pieces"] > 2
    for f in ("records", "judged", "read", "tallies", "duplicates", "shape"):
        assert getattr(many, f) == getattr(one, f), f


def test_parquet_row_groups_split_keep_row_numbers(tmp_path):
    rng = random.Random(7)
    texts = [rng.choice(["", " ", "same", _text(rng)]) for _ in range(500)]
    pq.write_table(pa.table({"text": texts}), tmp_path / "big.parquet", row_group_size=60)
    (tmp_path / "small.jsonl").write_text('{"text": "same"}\n{"text": ""}\n')
    one = measure_dataset(tmp_path, None, 1 << 20)
    with Processes(2, range_bytes=2000) as eng:
        many = measure_dataset(tmp_path, None, 1 << 20, engine=eng)
    assert many.timing["pieces"] > 4
    for f in ("records", "judged", "tallies", "duplicates"):
        assert getattr(many, f) == getattr(one, f), f
    assert many.read == one.read


def test_byte_ranges_around_over_long_lines(tmp_path):
    """Lines over the record cap end most ranges (a cut inside one runs on to its end):
    each is counted once, and nothing after its newline is taken for a blank line."""
    cap = 300_000  # above the reader's block, like the real 16 MiB cap
    lines = []
    for i in range(40):
        lines.append(json.dumps({"text": "x" * (cap + 1000 * i)}) if i % 4 == 1 else json.dumps({"text": f"r{i % 7}"}))
    p = tmp_path / "long.jsonl"
    p.write_text("\n".join(lines) + "\n")
    one = measure_dataset(p, None, cap)
    assert one.read.oversized_count == 10 and one.read.blank_lines == 0
    with Processes(2, range_bytes=cap // 2) as eng:
        many = measure_dataset(p, None, cap, engine=eng)
    assert many.timing["pieces"] > 5
    for f in ("records", "judged", "read", "tallies", "duplicates"):
        assert getattr(many, f) == getattr(one, f), f


def _shaped(rng: random.Random, shape: str) -> dict:
    def t() -> str:
        return rng.choice(["", " ", "hi", "same", f"u{rng.randrange(40)}"])

    if shape == "chat":
        if rng.random() < 0.1:
            return {"messages": "not a list"}
        roles = rng.choice([["user", "assistant"], ["user", "user"], ["system", "user", "assistant"], ["user"], []])
        return {"messages": [{"role": r, "content": t()} for r in roles]}
    if shape == "alpaca":
        return {"instruction": t(), "input": rng.choice([None, "", t()]), "output": t()}
    return {"prompt": t(), "chosen": t(), "rejected": t()}


@pytest.mark.parametrize("shape", ["chat", "alpaca", "preference"])
def test_shape_tallies_merge_like_one_pass(tmp_path, shape):
    """Records decoded as objects (the inspector's path, not the text fast path), JSONL
    shards cut into ranges plus a JSON array: every shape tally equals one pass."""
    rng = random.Random(shape)
    for s in range(3):
        lines = [json.dumps(_shaped(rng, shape)) for _ in range(80)]
        lines.insert(rng.randrange(80), "{bad")
        (tmp_path / f"s{s}.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "z.json").write_text(json.dumps([_shaped(rng, shape) for _ in range(30)]))
    one = measure_dataset(tmp_path, None, 1 << 20)
    with Processes(2, range_bytes=700) as eng:
        many = measure_dataset(tmp_path, None, 1 << 20, engine=eng)
    assert many.timing["pieces"] > 6
    assert sum(t.count for t in one.tallies.values()) > 10
    for f in ("records", "judged", "read", "tallies", "duplicates", "shape"):
        assert getattr(many, f) == getattr(one, f), f


def test_an_unreadable_shard_fails_the_same_way(tmp_path, capsys):
    d = tmp_path / "d"
    d.mkdir()
    for i in range(3):
        (d / f"s{i}.jsonl").write_text('{"text": "a"}\n{"text": "b"}\n')
    for name in ("s8.parquet", "s9.parquet"):  # magic, then garbage: two bad shards
        (d / name).write_bytes(b"PAR1" + b"\x00" * 64)
    one = report(capsys, str(d))
    two = report(capsys, str(d), "--workers", "2")
    assert one == two and one[0] == 2
    assert "s8.parquet" in one[1] and "s9.parquet" not in one[1]  # the first bad shard, as one process


def test_summaries_merge_in_any_order_and_survive_bytes():
    rng = np.random.default_rng(0)
    keys = [str(k) for k in rng.integers(0, 50, 600)]
    parts = []
    for s in range(4):  # four pieces covering disjoint (file, line) ranges
        sl = keys[s * 150:(s + 1) * 150]
        part = DatasetSummary(HASH_NAMES[0], records=len(sl), judged=len(sl))
        part.chunks.append((stable_digests(sl, HASH_NAMES[0]), (s << 40) + np.arange(1, len(sl) + 1)))
        parts.append(part.to_bytes())
    forward = merge_blobs(parts, HASH_NAMES[0]).duplicates()
    backward = merge_blobs(parts[::-1], HASH_NAMES[0]).duplicates()
    assert forward == backward and forward.records == 600 - 50
    whole = merge_blobs(parts, HASH_NAMES[0])
    by_part = Duplicates()
    for chunks, blank in whole.partitions(8):
        by_part = by_part.combine(duplicates_of(chunks, blank))
    assert by_part == forward


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_duplicates_from_chunks_in_any_order_equal_a_plain_count(seed):
    """Chunks from interleaved files, gathered in a random order (as a reduce task gets
    them): counts and examples equal a dictionary walk in (file, line) order."""
    rng = random.Random(seed)
    recs = sorted({((rng.randrange(6) << 40) | rng.randrange(1, 400)) for _ in range(900)})
    keys = {w: str(rng.randrange(120)) for w in recs}
    seen: dict[str, int] = {}
    pairs = []
    for w in recs:
        if keys[w] in seen:
            pairs.append((w, seen[keys[w]]))
        seen.setdefault(keys[w], w)
    cuts = sorted(rng.sample(range(1, len(recs)), 12))
    chunks = [(stable_digests([keys[w] for w in part], "blake2b-64"), np.array(part, np.int64))
              for part in np.split(np.array(recs), cuts)]
    rng.shuffle(chunks)
    d = duplicates_of(chunks, {})
    assert d.records == len(pairs) and d.examples == tuple(pairs[:5])
    assert d.distinct == sum(1 for k in set(keys.values()) if list(keys.values()).count(k) > 1)


def test_a_corrupt_summary_is_one_line_error():
    good = DatasetSummary("blake2b-64", records=3)
    good.chunks.append((stable_digests(["a", "b"], "blake2b-64"), np.array([1, 2], np.int64)))
    raw = good.to_bytes()
    head_end = raw.index(b"}", 16) + 1
    bad = [b"TPDSUM1\n" + b"\xff" * 20, raw[:-3], raw.replace(b'"chunks":[2]', b'"chunks":[-1]'),
           raw[:head_end - 8] + raw[head_end:], b"\x80\x04pickle"]
    for b in bad:
        with pytest.raises(InputError, match="corrupt dataset summary"):
            DatasetSummary.from_bytes(b)
    assert DatasetSummary.from_bytes(raw).records == 3


def test_stable_digests_agree_across_processes(tmp_path):
    import subprocess
    import sys

    keys = ["", "a", "straße", "\ud800 lone surrogate", "x" * 1000]
    names = [n for n in HASH_NAMES if n != "xxh3-64" or _has("xxhash")]
    code = ("import sys, json; from trainproof.probes.dataset_summary import stable_digests;"
            "keys = json.loads(sys.stdin.read());"
            f"print(json.dumps({{n: stable_digests(keys, n).tolist() for n in {names!r}}}))")
    env = dict(os.environ, PYTHONHASHSEED="random")
    outs = [subprocess.run([sys.executable, "-c", code], input=json.dumps(keys), capture_output=True,
                           text=True, env=env, check=True).stdout for _ in range(2)]
    assert outs[0] == outs[1]


def _has(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # the parent package is missing
        return False


def test_engine_options_are_checked(capsys, sharded):
    assert report(capsys, str(sharded), "--address", "tcp://x:1")[0] == 2
    assert report(capsys, str(sharded), "--workers", "0")[0] == 2


class LengthSketch:
    """A test sketch: per text-length bucket, how many records and the smallest
    RecordId. Primed with a bucket width (data every worker must get from the driver)."""

    name = "test-lengths"

    def __init__(self, width: int, buckets: dict | None = None) -> None:
        self.width, self.buckets = width, buckets or {}

    def add(self, file_index, rows, texts) -> None:
        for row, t in zip(rows, texts, strict=True):
            n, first = self.buckets.get(len(t) // self.width, (0, (file_index, row)))
            self.buckets[len(t) // self.width] = (n + 1, min(first, (file_index, row)))

    def merge(self, other: LengthSketch) -> LengthSketch:
        out = dict(self.buckets)
        for k, (n, first) in other.buckets.items():
            m, f = out.get(k, (0, first))
            out[k] = (m + n, min(f, first))
        return LengthSketch(self.width, out)

    def to_bytes(self) -> bytes:
        return json.dumps([self.width, sorted([k, n, list(f)] for k, (n, f) in self.buckets.items())]).encode()

    @classmethod
    def from_bytes(cls, b: bytes) -> LengthSketch:
        width, items = json.loads(b)
        return cls(width, {k: (n, tuple(f)) for k, n, f in items})


def test_sketches_are_primed_shipped_and_merged_the_same_everywhere(sharded):
    one = measure_dataset(sharded, None, 1 << 20, sketches=[LengthSketch(40)])
    engines = [lambda: Processes(2, range_bytes=500)]
    if _has("dask.distributed"):
        from trainproof.probes.dataset_engines import Dask

        engines.append(lambda: Dask(2, None, range_bytes=500))
    for make in engines:
        with make() as eng:
            other = measure_dataset(sharded, None, 1 << 20, engine=eng, sketches=[LengthSketch(40)])
        assert [s.to_bytes() for s in other.sketches] == [s.to_bytes() for s in one.sketches]
        assert other.duplicates == one.duplicates and other.tallies == one.tallies
        if eng.partitioned:  # Dask: duplicates counted per hash partition on the workers
            assert other.timing["partitions"] >= 4
    (sk,) = one.sketches
    assert sum(n for n, _ in sk.buckets.values()) == one.judged and sk.width == 40


# ---------------------------------------------------------------- real clusters


def test_dask_local_cluster_gives_the_identical_report(sharded, single, capsys):
    pytest.importorskip("dask.distributed")
    code, out = report(capsys, str(sharded), "--engine", "dask", "--workers", "2")
    assert (code, json.loads(out)) == single


def test_dask_reports_an_unreadable_shard_as_one_process_does(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.jsonl").write_text('{"text": "a"}\n')
    for name in ("b.parquet", "c.parquet"):
        (d / name).write_bytes(b"PAR1" + b"\x00" * 64)
    one = report(capsys, str(d))
    assert report(capsys, str(d), "--engine", "dask", "--workers", "2") == one and one[0] == 2


@pytest.mark.skipif(os.environ.get("TRAINPROOF_TEST_RAY") == "0", reason="TRAINPROOF_TEST_RAY=0")
def test_ray_gives_the_identical_report(sharded, single, capsys):
    pytest.importorskip("ray")
    code, out = report(capsys, str(sharded), "--engine", "ray", "--workers", "2")
    assert (code, json.loads(out)) == single
