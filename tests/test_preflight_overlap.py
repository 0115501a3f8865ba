"""preflight --near-dup and --eval: planted near-copies and leaks are found (and nothing
else), exact copies are not counted twice, normalisation keeps a recased or
re-spaced leak visible, chat records are compared by what they say, the findings do
not depend on shard order, merge order, bytes round trips or worker processes, and
bad input is one clear line. Datasets are generated here with seeded generators."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from trainproof.cli import main
from trainproof.model import InputError
from trainproof.probes.dataset_contamination import ContaminationSketch, EvalIndex
from trainproof.probes.dataset_near import NearDupSketch, NearParams, candidate_probability
from trainproof.probes.dataset_words import block_words, normalised_digests

VOCAB = [f"{c}{i}" for i in range(3000) for c in "aeiou"][:6000]


def text(rng: random.Random, n: int | None = None) -> str:
    return " ".join(rng.choices(VOCAB, k=n or rng.randint(40, 120)))


def edit(rng: random.Random, t: str, share: float = 0.03) -> str:
    words = t.split(" ")
    for i in rng.sample(range(len(words)), max(1, int(len(words) * share))):
        words[i] = rng.choice(VOCAB)
    return " ".join(words)


def make_near(n: int = 3000, seed: int = 7) -> tuple[list[str], dict[int, int], dict[int, int]]:
    """Texts with planted near-copies (line -> source line) and exact copies."""
    rng = random.Random(seed)
    texts: list[str] = []
    near: dict[int, int] = {}
    exact: dict[int, int] = {}
    for line in range(1, n + 1):
        r = rng.random()
        if r < 0.03 and texts:
            src = rng.randrange(len(texts))
            texts.append(texts[src])
            exact[line] = src + 1
        elif r < 0.06 and texts:
            src = rng.randrange(len(texts))
            texts.append(edit(rng, texts[src]))
            near[line] = src + 1
        else:
            texts.append(text(rng))
    return texts, near, exact


def write(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["preflight", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def found(doc: dict) -> dict[str, dict]:
    return {f["id"]: f for r in doc["reports"] for f in r["findings"]}


def families(near: dict[int, int], exact: dict[int, int]) -> dict[int, int]:
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for a, b in itertools.chain(near.items(), exact.items()):
        parent[root(a)] = root(b)
    return {x: root(x) for x in parent}


# ---------------------------------------------------------------- near-duplicates


def test_planted_near_copies_are_found_and_nothing_else(tmp_path, capsys):
    texts, near, exact = make_near()
    p = write(tmp_path / "d.jsonl", [{"text": t} for t in texts])
    code, doc = run(capsys, str(p), "--near-dup")
    f = found(doc)["TP-PRE-NEAR-DUPLICATE"]
    v = f["values"]
    # a near-copy of an exact copy's source is still one near-copy; a near-copy whose
    # own source was a near-copy joins the same cluster: count distinct texts
    assert len(near) - 2 <= v["count"] <= len(near)
    fam = families(near, exact)
    for pair in v["first"].split(", "):
        if pair == "...":
            continue
        a, b = (int(x.split()[1]) for x in pair.split(" (")[0].split(" ~ "))
        assert fam.get(a, a) == fam.get(b, b), pair  # every cited pair was planted
    assert code == 0  # a WARN exits 0
    assert "near-duplicates" in doc["reports"][0]["checks"]["ran"]


def test_sketch_recall_and_precision_on_planted_pairs():
    texts, near, exact = make_near(4000, seed=3)
    sk = NearDupSketch()
    for s in range(0, len(texts), 500):
        sk.add(0, range(s + 1, s + 501), texts[s:s + 500])
    res = sk.result(keep=10_000)
    fam = families(near, exact)
    cited = [(b & 0xFFFFFFFFFF, a & 0xFFFFFFFFFF) for a, b, _ in res.examples]
    assert all(fam.get(a, a) == fam.get(b, b) for a, b in cited)  # precision 1 on this data
    assert res.count >= 0.97 * len(near)


def test_exact_copies_are_not_near_copies(tmp_path, capsys):
    rng = random.Random(1)
    base = [text(rng) for _ in range(200)]
    p = write(tmp_path / "d.jsonl", [{"text": t} for t in base + base[:50]])
    code, doc = run(capsys, str(p), "--near-dup")
    f = found(doc)
    assert f["TP-PRE-DUPLICATE-TEXT"]["values"]["count"] == 50
    assert "TP-PRE-NEAR-DUPLICATE" not in f


def test_near_dup_is_opt_in(tmp_path, capsys):
    texts, _, _ = make_near(300)
    p = write(tmp_path / "d.jsonl", [{"text": t} for t in texts])
    _, doc = run(capsys, str(p))
    assert "TP-PRE-NEAR-DUPLICATE" not in found(doc)
    assert doc["reports"][0]["checks"]["skipped"]["near-duplicates"].endswith("no --near-dup")


def test_s_curve_matches_the_declared_rates():
    assert candidate_probability(0.8, 16, 8) == pytest.approx(0.947, abs=1e-3)
    assert candidate_probability(0.3, 16, 8) < 0.002


def test_case_and_spacing_do_not_change_a_signature():
    a = "The Quick brown fox, jumps over the lazy dog; again and AGAIN in der STRASSE."
    b = "the quick   brown fox jumps over\tthe lazy dog again and again in der straße"
    w = block_words([a, b], exact=True)
    d = normalised_digests(w)
    assert d[0] == d[1]
    assert w.raw[0] != w.raw[1]  # exact-text digests still tell them apart


def _sketches(texts: list[str], pieces: int) -> list[NearDupSketch]:
    out = []
    step = len(texts) // pieces
    for i in range(pieces):
        sk = NearDupSketch()
        lo = i * step
        hi = len(texts) if i == pieces - 1 else lo + step
        sk.add(i, range(1, hi - lo + 1), texts[lo:hi])
        out.append(sk)
    return out


def test_near_sketches_merge_in_any_order_and_survive_bytes():
    texts, _, _ = make_near(1200, seed=11)
    parts = _sketches(texts, 4)
    results = set()
    for order in itertools.permutations(range(4)):
        acc = NearDupSketch.from_bytes(parts[order[0]].to_bytes())
        for i in order[1:]:
            acc = acc.merge(NearDupSketch.from_bytes(parts[i].to_bytes()))
        results.add(acc.result())
    assert len(results) == 1 and next(iter(results)).count > 0


def test_corrupt_sketch_bytes_are_one_line_errors():
    good = _sketches(["a b c d e f"] * 4, 1)[0].to_bytes()
    for bad in (b"", good[:-3], b"TPNEAR1\n" + b"\xff" * 8, good.replace(b'"bins": 128', b'"bins": 127')):
        with pytest.raises(InputError):
            NearDupSketch.from_bytes(bad)
    with pytest.raises(InputError):
        NearDupSketch(NearParams(bands=20, rows=8))  # 160 rows do not fit 128 bins


# ---------------------------------------------------------------- contamination


def _leak_sets(tmp_path: Path, n_eval: int = 200, seed: int = 5) -> tuple[Path, Path, dict]:
    rng = random.Random(seed)
    evals = [text(rng, rng.randint(20, 60)) for _ in range(n_eval)]
    evals.append("what is two plus two")  # shorter than 13 words: matched only whole
    train = [text(rng) for _ in range(1500)]
    # 1 exact copy, 2 recased/respaced/punctuated, 3 embedded in a longer record, 4 the short one
    train[100] = evals[3]
    train[400] = evals[7].upper().replace(" ", "  ,") + "!"
    train[900] = text(rng, 30) + " " + " ".join(evals[11].split()[5:20]) + " " + text(rng, 30)
    train[1200] = "What is two plus TWO?"
    plants = {101: 4, 401: 8, 901: 12, 1201: n_eval + 1}
    t = write(tmp_path / "train.jsonl", [{"text": x} for x in train])
    e = write(tmp_path / "eval.jsonl", [{"text": x} for x in evals])
    return t, e, plants


def test_leak_share_decides_fail_or_warn(tmp_path, capsys):
    t, e, plants = _leak_sets(tmp_path)
    code, doc = run(capsys, str(t), "--eval", str(e))
    f = found(doc)["TP-PRE-EVAL-CONTAMINATION"]
    v = f["values"]
    assert code == 1 and f["level"] == "FAIL"
    assert (v["leaked"], v["eval_records"], v["train_records"]) == (4, 201, 4)
    assert v["leaked_exact"] == 3  # the copy, the recased one, the short one
    cited = v["first"].split(", ")
    assert cited == [f"line {tl} = eval.jsonl:{el} ({how})" for (tl, el), how in
                     zip(plants.items(), ("exact", "exact", "n-gram", "exact"), strict=True)]
    # the same leaks against a ten times larger eval set: 0.4 % -> WARN
    rng = random.Random(9)
    more = [json.loads(x) for x in e.read_text().splitlines()] + [{"text": text(rng, 30)} for _ in range(800)]
    write(e, more)
    code, doc = run(capsys, str(t), "--eval", str(e))
    f = found(doc)
    assert "TP-PRE-EVAL-CONTAMINATION" not in f and code == 0
    assert f["TP-PRE-EVAL-OVERLAP"]["values"]["leaked"] == 4


def test_clean_training_data_has_no_leak_and_says_it_ran(tmp_path, capsys):
    rng = random.Random(2)
    t = write(tmp_path / "t.jsonl", [{"text": text(rng)} for _ in range(300)])
    e = write(tmp_path / "e.jsonl", [{"text": text(rng)} for _ in range(50)])
    code, doc = run(capsys, str(t), "--eval", str(e))
    assert code == 0 and doc["reports"][0]["verdict"] == "PASS"
    assert "contamination" in doc["reports"][0]["checks"]["ran"]


def test_eval_records_that_could_not_be_read_are_said(tmp_path, capsys):
    """A leak in an eval record that was not read cannot be seen: the report says how many
    eval records were left out, and the leaked share is of the records read."""
    rng = random.Random(3)
    t = write(tmp_path / "t.jsonl", [{"text": text(rng)} for _ in range(200)])
    e = write(tmp_path / "e.jsonl", [{"text": text(rng)} for _ in range(40)] + [{"prompt": "no text field"}])
    with e.open("a", encoding="utf-8") as fh:
        fh.write('{"text": "a line cut short by the wri\n')
    code, doc = run(capsys, str(t), "--eval", str(e))
    notes = [n for n in doc["reports"][0]["notes"] if n.startswith("--eval")]
    assert code == 0 and notes == [f"--eval {e}: 1 unreadable line(s), 1 record(s) without the text field "
                                   "left out of the eval set"]


def test_chat_training_data_leaks_a_prompt_completion_eval(tmp_path, capsys):
    rng = random.Random(4)
    q, a = text(rng, 20), text(rng, 25)
    chats = [{"messages": [{"role": "user", "content": text(rng, 20)},
                           {"role": "assistant", "content": text(rng, 30)}]} for _ in range(100)]
    chats[42] = {"messages": [{"role": "user", "content": q.upper()}, {"role": "assistant", "content": a}]}
    t = write(tmp_path / "chat.jsonl", chats)
    e = write(tmp_path / "eval.jsonl", [{"prompt": q, "completion": a}] +
              [{"prompt": text(rng, 10), "completion": text(rng, 10)} for _ in range(9)])
    code, doc = run(capsys, str(t), "--eval", str(e))
    v = found(doc)["TP-PRE-EVAL-CONTAMINATION"]["values"]
    assert v["leaked"] == 1 and v["leaked_exact"] == 1  # role names are not part of the text
    assert v["first"] == "line 43 = eval.jsonl:1 (exact)"


def test_contamination_merges_in_any_order_and_survives_bytes(tmp_path):
    t, e, _ = _leak_sets(tmp_path)
    index = EvalIndex(13, 1_000_000)
    evals = [json.loads(x)["text"] for x in e.read_text().splitlines()]
    index.add(0, range(1, len(evals) + 1), evals)
    index = EvalIndex.from_bytes(index.freeze().to_bytes())
    train = [json.loads(x)["text"] for x in t.read_text().splitlines()]
    parts = []
    for lo in range(0, 1500, 500):
        proto = ContaminationSketch.from_bytes(ContaminationSketch(index).to_bytes())  # as a worker gets it
        proto.add(0, range(lo + 1, lo + 501), train[lo:lo + 500])
        parts.append(ContaminationSketch.from_bytes(proto.to_bytes()))
        assert b"TPEVAL1" not in proto.to_bytes()  # a worker does not send the index back
    results = set()
    for order in itertools.permutations(range(3)):
        acc = parts[order[0]]
        for j in order[1:]:
            acc = acc.merge(parts[j])
        results.add(acc.result(index))
    (r,) = results
    assert (r.leaked, r.train_records) == (4, 4)


def test_eval_index_is_the_same_whatever_order_its_parts_arrive():
    rng = random.Random(8)
    texts = [text(rng, 30) for _ in range(60)]
    a, b = EvalIndex(13, 10**6), EvalIndex(13, 10**6)
    a.add(0, range(1, 31), texts[:30])
    b.add(0, range(31, 61), texts[30:])
    x, y = a.merge(b).freeze(), b.merge(a).freeze()
    assert x.to_bytes() == y.to_bytes()


def test_eval_set_over_the_cap_and_unknown_eval_shape_are_one_line_errors(tmp_path, capsys):
    rng = random.Random(3)
    with pytest.raises(InputError, match="max_eval_ngrams"):
        EvalIndex(13, 100).add(0, range(1, 11), [text(rng, 40) for _ in range(10)])
    t = write(tmp_path / "t.jsonl", [{"text": "a b c"}])
    e = write(tmp_path / "e.jsonl", [{"question": "a b c"}])
    assert main(["preflight", str(t), "--eval", str(e)]) == 2
    assert "no known text field" in capsys.readouterr().err
    with pytest.raises(InputError):
        ContaminationSketch.from_bytes(b"TPCONT1\n\x05\x00\x00\x00{}")


def test_api_takes_eval_sets_and_near_dup(tmp_path):
    import trainproof

    t, e, _ = _leak_sets(tmp_path)
    rep = trainproof.preflight(t, eval_sets=e, near_dup=True)
    ids = {f.rule_id for f in rep.findings}
    assert "TP-PRE-EVAL-CONTAMINATION" in ids


@pytest.mark.parametrize("mode", [("--workers", "2"), ("--engine", "dask", "--workers", "2")],
                         ids=["processes", "dask"])
def test_workers_give_the_identical_report(tmp_path, capsys, mode):
    from .test_preflight_scale import make_sharded

    if "dask" in mode:
        pytest.importorskip("dask.distributed")
    make_sharded(tmp_path)
    argv = (str(tmp_path / "train"), "--near-dup", "--eval", str(tmp_path / "eval.jsonl"))
    one = main(["preflight", *argv, "--json"]), capsys.readouterr().out
    two = main(["preflight", *argv, *mode, "--json"]), capsys.readouterr().out
    assert one == two
    f = found(json.loads(one[1]))
    assert {"TP-PRE-NEAR-DUPLICATE", "TP-PRE-EVAL-CONTAMINATION"} <= set(f)


def test_signature_chunks_do_not_change_the_result(monkeypatch):
    from trainproof.probes import dataset_near

    texts, _, _ = make_near(900, seed=21)
    whole = _sketches(texts, 3)
    one = whole[0].merge(whole[1]).merge(whole[2]).result(keep=50)
    monkeypatch.setattr(dataset_near, "CHUNK", 7)  # blocks of 300 rows now straddle many chunks
    parts = _sketches(texts, 3)
    assert len(parts[0]._rows.chunks) > 40
    assert parts[2].merge(parts[0]).merge(parts[1]).result(keep=50) == one


def test_an_eval_item_listed_twice_counts_twice(tmp_path, capsys):
    rng = random.Random(12)
    item, long_item = "what is two plus two", text(rng, 40)
    t = write(tmp_path / "t.jsonl", [{"text": text(rng)} for _ in range(20)] +
              [{"text": item}, {"text": "intro " + long_item}])
    e = write(tmp_path / "e.jsonl", [{"text": x} for x in (item, long_item, item, long_item, text(rng, 30))])
    _, doc = run(capsys, str(t), "--eval", str(e))
    v = found(doc)["TP-PRE-EVAL-CONTAMINATION"]["values"]
    assert (v["leaked"], v["leaked_exact"], v["eval_records"], v["train_records"]) == (4, 2, 5, 2)
