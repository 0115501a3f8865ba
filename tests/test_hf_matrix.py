"""trainer_state.json slices of numbers only, read as one float matrix
(typed.Template.numbers + rows.add_matrix), against the reader as it was before
(the typed rows converted column by column: numbers() switched off) and against the
general path (no msgspec): columns, records, notes and meta identical, NaN and the sign
of zero included, and whole reports (findings, evidence, curves) identical on the
shared generator's file. No timing: speed is measured by bench/, never by tests.

fixtures/hf_state/generated_2000.json.gz was written by the shared generator:
    python ../shared/bench/gen_hf_state.py --entries 2000 --eval-every 50 --seed 7 --out trainer_state.json
    gzip -9 -n -c trainer_state.json > generated_2000.json.gz"""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from trainproof.engine import judge_run
from trainproof.model import ReportSet
from trainproof.parsers import hf, read_run, rows, typed
from trainproof.parsers.base import RawLog
from trainproof.render import jsonout

pytest.importorskip("msgspec")

FIXTURE = Path(__file__).parent / "fixtures" / "hf_state" / "generated_2000.json.gz"


def _same(a: RawLog, b: RawLog) -> None:
    assert (a.records, a.notes, a.meta, a.step_column) == (b.records, b.notes, b.meta, b.step_column)
    # The same columns; not in the same order: the general path adds a slice's columns in
    # the order of a set of its keys (which varies with the hash seed), the matrix in the
    # learnt keys' sorted order. Reports do not depend on it (the report test below).
    assert sorted(a.columns) == sorted(b.columns)
    for k in a.columns:
        for x, y in zip(a.columns[k], b.columns[k], strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape, k
            np.testing.assert_array_equal(x, y, err_msg=k)  # NaN equals NaN here
            assert np.array_equal(np.signbit(x), np.signbit(y)), k


def _three(path: Path, monkeypatch: pytest.MonkeyPatch, whole_too: bool = True) -> tuple[RawLog, RawLog, RawLog, int]:
    """(this reader, the reader before the matrix, the general path, matrices taken); the
    general path is checked against the whole document decoded at once (the slices cut
    from the stream against no slices) when `whole_too`."""
    taken = []
    add = hf.add_matrix
    with monkeypatch.context() as m:
        m.setattr(hf, "add_matrix", lambda mat, *a: taken.append(len(mat)) or add(mat, *a))
        fast = hf.read(path)
    with monkeypatch.context() as m:
        m.setattr(typed.Template, "numbers", lambda self, raw: None)
        before = hf.read(path)
    with monkeypatch.context() as m:
        m.setattr(typed, "msgspec", None)
        m.setattr(rows, "_numbers", lambda *a: False)
        general = hf.read(path)
    if whole_too:
        with monkeypatch.context() as m:  # no slices at all: the document decoded in one piece
            m.setattr(hf._Stream, "start", lambda self: False)
            whole = hf.read(path)
        _same(general, whole)
    return fast, before, general, len(taken)


def _report(path: Path) -> str:
    """The whole JSON report of `epoch` on this file: findings, evidence, curves."""
    return jsonout.render(ReportSet("epoch", (judge_run(read_run(path)),)))


def _number(rng: random.Random) -> object:
    pick = rng.random()
    if pick < 0.55:
        return rng.uniform(-10, 10) * 10 ** rng.randint(-300, 300) if rng.random() < 0.1 else rng.uniform(0, 5)
    if pick < 0.75:
        return rng.randint(-10**6, 10**6)
    if pick < 0.85:
        return rng.choice([0, 0.0, -0.0, 1e308, -1e308, 5e-324, 2.2250738585072014e-308, 2**53 + 1,
                           2**63, -2**63 - 1, 2**64, 10**25, -10**30, 123456789012345678901234567890])
    return round(rng.random(), rng.randint(0, 6))


def _entry(rng: random.Random, step: int, n: int) -> object:
    """Mostly what a Trainer writes; now and then what makes a slice leave the matrix
    (or not): nulls, a missing step or loss, strings, booleans, an integer past float64's
    range, new keys, duplicate keys, eval and summary entries."""
    e: dict[str, object] = {"epoch": step / n, "grad_norm": _number(rng), "learning_rate": _number(rng),
                            "loss": _number(rng), "step": step}
    kind = rng.randrange(60)
    if kind == 0:
        e = {"epoch": step / n, "eval_loss": _number(rng), "eval_runtime": _number(rng), "step": step}
    elif kind == 1:
        e[rng.choice(["loss", "grad_norm", "learning_rate", "step"])] = None
    elif kind == 2:
        del e[rng.choice(["loss", "grad_norm", "step"])]
    elif kind == 3:
        e["loss"] = rng.choice(["2.5", "nan", "x", ""])
    elif kind == 4:
        e["grad_norm"] = rng.choice([True, False])
    elif kind == 5:
        e["learning_rate"] = rng.choice([math.nan, math.inf, -math.inf])  # bare NaN / Infinity
    elif kind == 6:
        return f'{{"epoch": 1.0, "loss": {10**400}, "step": {step}}}'  # an int past float64's range
    elif kind == 7:
        return f'{{"epoch": 1.0, "loss": 1e999, "step": {step}}}'
    elif kind == 8:
        e["num_input_tokens_seen"] = rng.randint(0, 10**12)  # a new key, then a known one
    elif kind == 9:
        return json.dumps(e)[:-1] + ', "loss": 7.5}'  # duplicate key: the last one counts
    elif kind == 10:
        e = rng.choice([{"step": step}, {"epoch": 1.0, "step": step, "train_runtime": 3.0, "total_flos": 1e12}])
    elif kind == 11:
        e["eval_loss"] = _number(rng)  # a train entry with an eval loss too
    elif kind == 12:
        e["step"] = float(step) + 0.5
    return json.dumps(e)


def _doc(seed: int) -> tuple[str, float]:
    """A trainer_state.json laid out as the Trainer writes it (indent=2, sorted keys) or
    compact; odd entries at a seeded rate (none at all for some seeds), which it returns."""
    rng = random.Random(seed)
    n = rng.randint(400, 3000)
    odd = rng.choice([0.0, 0.002, 0.02, 0.2])
    plain = lambda s: json.dumps({"epoch": s / n, "grad_norm": _number(rng),  # noqa: E731
                                  "learning_rate": _number(rng), "loss": _number(rng), "step": s})
    entries = [_entry(rng, s, n) if rng.random() < odd else plain(s) for s in range(1, n)]
    if seed % 2:
        entries.append(json.dumps({"epoch": 1.0, "step": n, "total_flos": 1e12, "train_loss": 2.5,
                                   "train_runtime": 10.0, "train_samples_per_second": 5.0}))
    if seed % 3 == 0:
        history = "[\n    " + ",\n    ".join(json.dumps(json.loads(e), indent=2).replace("\n", "\n    ")
                                             for e in entries) + "\n  ]"
        head = f'{{\n  "best_metric": null,\n  "epoch": 1.0,\n  "global_step": {n},\n  "log_history": '
        return f'{head}{history},\n  "max_steps": {n}\n}}\n', odd
    return f'{{"global_step": {n}, "log_history": [{", ".join(entries)}], "max_steps": {n}}}', odd


@pytest.mark.parametrize("seed", range(16))
def test_matrix_slices_read_as_before_and_as_the_general_path(seed: int, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf, "SLICE", random.Random(seed).choice([256, 1024, 4096, 16384]))
    path = tmp_path / "trainer_state.json"
    text, odd = _doc(seed)
    path.write_text(text, encoding="utf-8")
    # with odd entries the general decode of a slice and of the whole document differ
    # (as before the stream: a summary-like entry, a 1e999 or a huge integer is read by
    # the decoder each text picks); the slices themselves are checked below
    fast, before, general, taken = _three(path, monkeypatch, whole_too=odd == 0.0)
    _same(fast, before)
    _same(fast, general)
    assert taken or odd > 0.1  # below 1 odd entry in 50, runs of plain slices take the matrix


def test_the_shared_generators_file_reads_and_judges_as_before(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "trainer_state.json"
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    monkeypatch.setattr(hf, "SLICE", 8192)  # ~40 slices, eval entries in most of them
    fast, before, general, taken = _three(path, monkeypatch)
    _same(fast, before)
    _same(fast, general)
    assert taken > 30 and fast.records == 2000 - 1 and "summary" in fast.meta
    fast_report = _report(path)
    monkeypatch.setattr(typed.Template, "numbers", lambda self, raw: None)
    assert fast_report == _report(path)
    assert json.loads(fast_report)["reports"][0]["findings"]  # a real report: it has findings


def test_slices_with_a_string_go_the_typed_way_and_the_others_the_matrix_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A string cell makes numbers() refuse its slice and decode() take it; the slices
    after it are numbers again and take the matrix; all read as before."""
    monkeypatch.setattr(hf, "SLICE", 2048)
    history: list[dict[str, object]] = [{"loss": 1.0 + i / 1000, "step": i} for i in range(1, 600)]
    history[300]["loss"] = "2.5"
    history[301]["loss"] = "nan"
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history}, indent=2))
    calls: list[bool] = []
    numbers = typed.Template.numbers

    def spy(self: typed.Template, raw: bytes) -> object:
        got = numbers(self, raw)
        calls.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(typed.Template, "numbers", spy)
        hf.read(path)
    fast, before, general, taken = _three(path, monkeypatch)
    _same(fast, before)
    _same(fast, general)
    refused = calls.index(False)
    assert 0 < refused < len(calls) - 3 and all(calls[refused + 1:]) and calls.count(False) == 1
    assert np.isnan(fast.columns["loss"][1]).sum() == 1  # "nan", read as before


@pytest.mark.parametrize("last", [True, False])
def test_a_summary_of_known_keys_leaves_the_matrix(last: bool, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-step entries that carry every key of the summary (running totals logged with
    each loss), so the summary's slice decodes as numbers - but the summary, the entry
    without a loss, is metadata, not points, as before."""
    monkeypatch.setattr(hf, "SLICE", 1024)
    totals = {"total_flos": 1e12, "train_loss": 2.5, "train_runtime": 10.0, "train_samples_per_second": 5.0,
              "train_steps_per_second": 1.0}
    history: list[dict[str, object]] = [{"epoch": i / 100, "loss": 3 - i / 100, "step": i, **totals}
                                        for i in range(1, 400)]
    history.append({"epoch": 4.0, "step": 399, **totals, "train_loss": 1.9})
    if not last:  # an eval entry after the summary: the summary is not the very last entry
        history.append({"epoch": 4.0, "eval_loss": 1.7, "step": 399})
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 399, "log_history": history}, indent=2))
    fast, before, general, taken = _three(path, monkeypatch)
    _same(fast, before)
    _same(fast, general)
    assert taken and fast.meta["summary"]["train_loss"] == 1.9 and fast.records == 399 + (not last)


@pytest.mark.parametrize("text", ["a},{b", "a}]b", "a} , {b", "a}\n]"])
def test_a_string_that_cuts_a_later_slice_leaves_the_document_to_the_whole_decode(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Braces in a string past the first slice can cut a slice (or end the history) inside
    the string; that slice does not decode, and the document is read whole, as it is when
    the first slice does not decode (the reader refused such a valid file before)."""
    monkeypatch.setattr(hf, "SLICE", 1024)
    history: list[dict[str, object]] = [{"loss": 2 - i / 1000, "step": i} for i in range(1, 600)]
    for i in range(300, 600, 7):
        history[i]["note"] = text
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 599, "log_history": history}, indent=2))
    fast, before, general, taken = _three(path, monkeypatch)
    _same(fast, general)
    assert fast.records == 599 and fast.meta["global_step"] == 599
    np.testing.assert_array_equal(fast.columns["loss"][1], [h["loss"] for h in history])


def test_the_file_is_read_a_slice_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream's buffer stays near two slices, however long the file (what keeps a 176 MB
    file from being held whole), and grows for an entry longer than that."""
    monkeypatch.setattr(hf, "SLICE", 1024)
    history: list[dict[str, object]] = [{"loss": 1.0 + i, "step": i} for i in range(1, 3000)]
    history[2000]["long"] = "x" * 5000  # one entry past the buffer
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history, "max_steps": 3000}, indent=2))
    sizes: list[int] = []
    more = hf._Stream._more
    monkeypatch.setattr(hf._Stream, "_more", lambda self: sizes.append(len(self._buf)) or more(self))
    got = hf.read(path)
    assert got.records == 2999 and got.meta["max_steps"] == 3000 and path.stat().st_size > 100 * 1024
    assert min(sizes) == 2 * 1024 + 2 and max(sizes) < 16 * 1024


def _slices_before(data: bytes, size: int) -> tuple[bytes, list[bytes]] | None:
    """The reader's slicing before the stream, kept as the reference: the whole file in
    memory, (the document with an empty log_history, each slice as a JSON array), or
    None where it found no history to slice."""
    m = hf._HISTORY.search(data)
    if m is None or hf._EMPTY.match(data, m.end()):
        return None
    close = hf._end(data, m.end())
    if close < 0:
        return None
    stop = close + 1
    out, pos = [], m.end()
    while pos < stop:
        cut = hf._BOUNDARY.search(data, pos + size, stop) if pos + size < stop else None
        if cut is None:
            out.append(b"[" + data[pos:stop] + b"]")
            break
        out.append(b"[" + data[pos:cut.start() + 1] + b"]")
        pos = cut.end() - 1
    return data[: m.end()] + data[data.index(b"]", close):], out


def _odd_layout(rng: random.Random) -> bytes:
    """A trainer_state.json-like text with blanks of every kind around the separators,
    braces and brackets in strings, long entries, keys before and after the history."""
    blank = lambda: "".join(rng.choice(" \t\n\r") for _ in range(rng.choice([0, 0, 1, 3, 40])))  # noqa: E731
    entries = []
    for step in range(1, rng.randint(2, 400)):
        e: dict[str, object] = {"loss": rng.random(), "step": step}
        if rng.random() < 0.05:
            e["note"] = rng.choice(["},{", "}]", "} ]", "x" * rng.randint(100, 3000), "[{", '"'])
        entries.append(json.dumps(e, indent=rng.choice([None, 2])))
    history = blank() + (blank() + "," + blank()).join(entries) + blank()
    before = rng.choice(['"a": 1, ', '"log_history_x": [1], ', "", '"pad": "' + "y" * rng.randint(0, 5000) + '", '])
    after = rng.choice(["", ', "z": [{"q": 1}]', ', "max_steps": 9'])
    return ("{" + blank() + before + '"log_history"' + blank() + ":" + blank() + "[" + history + "]" + after
            + "}" + blank()).encode()


@pytest.mark.parametrize("seed", range(40))
def test_the_stream_cuts_the_slices_the_whole_text_did(seed: int, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """_Stream against the slicing of the whole text it replaced: the same slices, byte for
    byte, and the same document around log_history; where that found none, neither does
    the stream (both leave the document to the whole decode)."""
    rng = random.Random(seed)
    size = rng.choice([16, 256, 1024, 4096])
    monkeypatch.setattr(hf, "SLICE", size)
    data = _odd_layout(rng)
    if seed % 5 == 4:  # cut short (a Trainer killed mid-write): often no end to the history
        data = data[:rng.randint(0, len(data))]
    if seed % 7 == 3:
        data = rng.choice([b'{"log_history": [ \n ], "a": 1}', b'{"a": 1}', b'{"log_history" : [{"step": 1}'])
    path = tmp_path / "trainer_state.json"
    path.write_bytes(data)
    expected = _slices_before(data, size)
    # the size the stream is told the file has: its own, or none (a decompressed stream), or
    # a wrong one (a file written while it is read: longer or shorter than when opened)
    told = [len(data), None, len(data) // 3, 0, 2 * len(data) + 7][seed % 5]
    monkeypatch.setattr(hf, "_bytes_left", lambda fh: told)
    with path.open("rb") as fh:
        stream = hf._Stream(fh)
        if not stream.start():
            assert expected is None
            return
        try:
            got = [bytes(piece) for piece in stream.slices()]
        except hf._Irregular:
            assert expected is None
            return
    assert expected is not None
    assert got == expected[1] and stream.head + stream.tail == expected[0]


def test_the_stream_sizes_its_buffer_by_a_plain_file(tmp_path: Path) -> None:
    """A plain file smaller than two slices gets a buffer of its size plus two bytes (not
    2 * SLICE + 2 zeroed); a compressed one, whose size is not known, the usual buffer."""
    data = b'{"log_history": [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}]}'
    path = tmp_path / "trainer_state.json"
    path.write_bytes(data)
    with path.open("rb") as fh:
        assert hf._bytes_left(fh) == len(data)
        fh.read(5)
        assert hf._bytes_left(fh) == len(data) - 5
        fh.seek(0)
        stream = hf._Stream(fh)
        assert len(stream.buf) == len(data) + 2
        assert stream.start()
        assert [bytes(p) for p in stream.slices()] == [b'[{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}]']
    packed = tmp_path / "trainer_state.json.gz"
    packed.write_bytes(gzip.compress(data))
    with hf.open_log(packed) as fh:
        assert hf._bytes_left(fh) is None
        assert len(hf._Stream(fh).buf) == 2 * hf.SLICE + 2
    assert hf.read(packed).columns.keys() == hf.read(path).columns.keys()


def _ending(seed: int) -> str:
    """Plain entries, then odd ones among the last few: summary-like entries (run totals
    and no loss), entries without a step or with a text one, eval entries, the summary."""
    rng = random.Random(1000 + seed)
    n = rng.randint(50, 1500)
    # steps 10, 20, ...: a row that inherits the previous step is told from one numbered
    history: list[dict[str, object]] = [{"epoch": s / n, "grad_norm": rng.random(), "learning_rate": 1e-4,
                                         "loss": rng.random(), "step": 10 * s} for s in range(1, n)]
    history[0]["train_runtime"] = 0.5  # per-step throughput (transformers 5.x): a known key
    odd = [{"epoch": 1.0, "step": n, "total_flos": 1e12, "train_loss": 2.5, "train_runtime": 10.0},
           {"epoch": 1.0, "step": 10 * n, "train_runtime": 3.0},  # summary-like, of known keys only
           {"epoch": 1.0, "loss": 0.5}, {"epoch": 1.0, "eval_loss": 0.7, "step": n}, {"step": "7", "loss": 0.1},
           {"epoch": 1.0, "step": None, "loss": 0.2, "train_runtime": 3.0},
           {"epoch": 1.0, "train_runtime": 3.0, "total_flos": 5.0}]
    if seed < 4:  # where a split would read differently (seeds 0, 1): its checks must decline it
        summary_like, stepless = odd[1], odd[2]
        at = {0: -6, 1: -1, 2: -6, 3: -1}[seed]  # with the summary appended: 7th last, 3rd last
        history.insert(len(history) + at, summary_like if seed in (0, 3) else stepless)
    for _ in range(rng.randint(0, 6) if seed >= 4 else 0):
        history.insert(len(history) - rng.randint(0, min(8, len(history))), rng.choice(odd))
    if seed % 2 or seed < 4:
        history.append({"epoch": 1.0, "step": n, "total_flos": 1e12, "train_loss": 2.5, "train_runtime": 10.0,
                        "train_samples_per_second": 1.0})
    return json.dumps({"global_step": n, "log_history": history}, indent=rng.choice([2, None]))


def test_the_last_slice_split_before_its_last_three_entries_reads_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """_split_last: the last slice (where the summary is) as a matrix of all but its last
    three entries and those three the general way, only where that reads as the slice
    read whole; odd entries near the end make it decline. Against the reader before the
    matrix (which never splits) and the general path."""
    split = hf._split_last
    taken: list[bool] = []
    monkeypatch.setattr(hf, "_split_last", lambda *a: taken.append((r := split(*a)) is not None) or r)
    for seed in range(24):
        monkeypatch.setattr(hf, "SLICE", random.Random(seed).choice([4096, 16384]))  # 4+ entries in the last
        path = tmp_path / f"s{seed}" / "trainer_state.json"
        path.parent.mkdir()
        path.write_text(_ending(seed))
        fast, before, general, _ = _three(path, monkeypatch, whole_too=False)
        _same(fast, before)
        _same(fast, general)
    assert taken.count(True) >= 3 and taken.count(False) >= 3


def test_a_split_whose_first_point_has_no_step_is_declined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last three entries: a summary-like entry with a step (run totals, no loss: a
    summary, dropped), an entry without a step, the summary. Read whole, the stepless loss
    takes the step of the point before it; split, it would be the first row of its chunk
    and take its index. The split's step check looks at the first point of the three, not
    the first entry (found against main's reader: one generated ending in 240 reads)."""
    monkeypatch.setattr(hf, "SLICE", 4096)
    history: list[dict[str, object]] = [{"epoch": s / 500, "loss": 1 / s, "step": 10 * s} for s in range(1, 500)]
    history += [{"epoch": 1.0, "step": 4995, "train_runtime": 3.0}, {"epoch": 1.0, "loss": 0.5},
                {"epoch": 1.0, "step": 4999, "total_flos": 1e12, "train_loss": 2.5, "train_runtime": 10.0}]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 4999, "log_history": history}, indent=2))
    split = hf._split_last
    taken: list[bool] = []
    monkeypatch.setattr(hf, "_split_last", lambda *a: taken.append((r := split(*a)) is not None) or r)
    fast, before, general, matrices = _three(path, monkeypatch, whole_too=False)
    _same(fast, before)
    _same(fast, general)
    assert taken[0] is False and matrices  # declined, and the other slices took the matrix
    assert fast.columns["loss"][0][-2:].tolist() == [4990.0, 4990.0] and fast.columns["loss"][1][-1] == 0.5


def test_integers_become_the_floats_python_gives() -> None:
    """Template.numbers has msgspec turn integers into floats (fields typed float): the
    same float as Python's float(int), sign of zero included; one past float64's range
    refuses the block (the other paths say it is not a number)."""
    rng = random.Random(3)
    ints = [0, -0, 1, -1, 2**53 + 1, 2**63, -2**63 - 1, 2**64, 2**64 + 1] + [
        rng.randint(-10**k, 10**k) for k in range(1, 300) for _ in range(20)]
    template = typed.Template()
    template.learn([{"loss": 1.0, "step": 1}])
    text = json.dumps([{"loss": v, "step": 1} for v in ints]).replace("[{\"loss\": 0,", "[{\"loss\": -0,", 1)
    matrix = template.numbers(text.encode())
    assert matrix is not None
    got, expected = matrix[:, template.keys.index("loss")], np.array([float(v) for v in ints])
    assert np.array_equal(got, expected) and np.array_equal(np.signbit(got), np.signbit(expected))
    assert template.numbers(f'[{{"loss": {10**400}, "step": 1}}]'.encode()) is None


@pytest.mark.parametrize("way", ["matrix", "typed"])
def test_a_summary_anywhere_in_any_slice_is_meta_on_every_path(way: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Main's per-entry summary (readers branch) on the fast paths: a summary of known keys
    (per-step entries carry the run totals too) followed by evaluate()'s entries on named
    sets (`eval_dev_loss`, ...: no `loss`, no `eval_loss`; evaluated during training too,
    so their keys are known) and more steps, moved through every position of the first
    two slices and a few later. 'typed': every entry holds a string, so numbers() refuses
    each slice and decode() takes it. Checked against the list itself: the summary is no
    point and is the run's summary, every other entry is a record."""
    monkeypatch.setattr(hf, "SLICE", 2048)
    totals = {"total_flos": 1e12, "train_loss": 2.5, "train_runtime": 10.0}
    note = {"note": "x"} if way == "typed" else {}
    sets = ("dev", "test", "ood")
    plain: list[dict[str, object]] = []
    for i in range(1, 200):
        plain.append({"epoch": i / 100, "loss": 3 - i / 1000, "step": i, **totals, **note})
        if i % 50 == 25:
            plain += [{"epoch": i / 100, f"eval_{name}_loss": 1.0, "step": i, **note} for name in sets]
    size = len(json.dumps(plain[0], indent=2)) + 4
    matrices: list[int] = []
    decodes: list[bool] = []
    add, decode = hf.add_matrix, typed.Template.decode
    monkeypatch.setattr(hf, "add_matrix", lambda mat, *a: matrices.append(len(mat)) or add(mat, *a))
    monkeypatch.setattr(typed.Template, "decode",
                        lambda self, raw: decodes.append((r := decode(self, raw)) is not None) or r)
    for at in [*range(3, 3 + 2 * 2048 // size), 120, 180, 205]:
        step = plain[at - 1]["step"]
        summary = {"epoch": 2.0, "step": step, **totals, "train_loss": 1.9, **note}
        after = [{"epoch": 2.0, f"eval_{name}_loss": 1.5, "step": step, **note} for name in sets]
        history = [*plain[:at], summary, *after, *plain[at:]]
        path = tmp_path / f"{at}" / "trainer_state.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"global_step": 199, "log_history": history}, indent=2))
        got = hf.read(path)
        assert got.meta["summary"] == summary and got.records == len(history) - 1
        np.testing.assert_array_equal(got.columns["loss"][0], [e["step"] for e in history if "loss" in e])
        np.testing.assert_array_equal(got.columns["loss"][1], [e["loss"] for e in history if "loss" in e])
        assert got.columns["eval_ood_loss"][1].tolist().count(1.5) == 1
    # the fast path was taken for most slices; not for one holding an entry without a loss
    # value where run totals are known keys (null or missing, it cannot tell: _fits)
    assert (len(matrices) > 50) if way == "matrix" else (decodes.count(True) > 50 and not matrices)


def _numbers_both_ways(template: typed.Template, text: bytes,
                       monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray | None, np.ndarray | None, bool]:
    """numbers() with the MessagePack conversion (typed._Packed) and with it switched off
    (the rows converted cell by cell), and whether the packed conversion answered."""
    answered: list[bool] = []
    columns = typed._Packed.columns
    with monkeypatch.context() as m:
        m.setattr(typed._Packed, "columns",
                  lambda self, rows: answered.append((r := columns(self, rows)) is not None) or r)
        packed = template.numbers(text)
    with monkeypatch.context() as m:
        m.setattr(typed._Packed, "of", classmethod(lambda cls, *a: None))
        template._numeric = None  # rebuilt without the packed conversion
        cells = template.numbers(text)
        template._numeric = None
    return packed, cells, bool(answered) and answered[0]


@pytest.mark.parametrize("seed", range(8))
def test_packed_conversion_gives_the_cell_by_cell_matrix(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """typed._Packed against the cell-by-cell conversion it replaces: the same matrix, bit
    for bit (NaN where a key is missing, -0.0, integers as floats), over key sets of 1-40
    keys (a map header of 1 or 3 bytes), keys of 1-300 characters (string headers of 1, 2
    and 3 bytes), and 0-70,000 rows (array headers of 1, 3 and 5 bytes); a null anywhere
    makes the packed conversion decline (the length differs), and the cells decide."""
    rng = random.Random(seed)
    width = rng.choice([1, 2, 5, 15, 16, 17, 40])
    keys = [f"k{i}_" + "x" * rng.choice([0, 3, 30, 31, 32, 260]) for i in range(width)]
    keys[0] = "step"
    template = typed.Template()
    template.learn([dict.fromkeys(keys, 1.0)])
    big = rng.choice([65535, 65536, 70000]) if width <= 5 else 2000  # array 16 / array 32 headers
    for n in (0, 1, 15, 16, 17, big, 300):
        entries = []
        for _ in range(n):
            row: dict[str, object] = {}
            for k in keys:
                pick = rng.random()
                if pick < 0.2:
                    continue  # missing: NaN in the matrix
                row[k] = (rng.choice([0.0, -0.0, 0, 1e-300, -1e300, 2**53 + 1, -7, 10**20, 5e-324])
                          if pick < 0.4 else rng.uniform(-10, 10))
            entries.append(row)
        with_null = n > 0 and n == 300
        too_big = n == 17 and seed % 2 == 0  # an encoding past PACKED_MAX: declined, the cells decide
        ms = typed._msgspec()
        row_size = typed._Packed.of(ms, template._row(ms, float | None, math.nan), width)._size
        if with_null:
            entries[rng.randrange(n)][keys[rng.randrange(width)]] = None
        text = json.dumps(entries).encode()
        with monkeypatch.context() as m:
            m.setattr(typed, "PACKED_MAX", 16 * row_size if too_big else typed.PACKED_MAX)
            packed, cells, answered = _numbers_both_ways(template, text, monkeypatch)
        assert packed is not None and cells is not None
        assert packed.shape == cells.shape == (n, width)
        assert np.array_equal(packed, cells, equal_nan=True)
        assert np.array_equal(np.signbit(packed), np.signbit(cells))
        assert answered is not (with_null or too_big)  # declined exactly where a cell is None or too many



@pytest.mark.parametrize("odd", ['a"b', "a\\b", "a\tb", "\x00"])
def test_a_key_msgspec_cannot_name_is_read_the_general_way(odd: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A key holding a quote, a backslash or a control character cannot name a msgspec
    struct field: learning it raised ValueError and the valid file was refused (exit 2). It
    is not learnt now; its rows go the general way, every other row the fast ways, and the
    file reads as with msgspec off (and as its own whole decode)."""
    monkeypatch.setattr(hf, "SLICE", 4096)
    entries: list[dict[str, object]] = []
    for i in range(1, 400):
        entry: dict[str, object] = {"epoch": i / 100, "loss": 3 - i / 1000, "step": i}
        if i % 3 == 0 or 150 < i < 250:
            entry[odd] = float(i)
        entries.append(entry)
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 399, "log_history": entries}, indent=2))
    fast, before, general, _ = _three(path, monkeypatch)
    _same(fast, general)
    _same(before, general)
    assert fast.columns[odd][1].tolist() == [float(e[odd]) for e in entries if odd in e]


def test_matrix_columns_with_the_same_gaps_share_one_steps_buffer() -> None:
    """rows.add_matrix hands columns whose gaps fall in the same rows (train keys, absent
    from eval rows) one steps array, so Columns keeps one steps buffer for them; columns
    with other gaps get their own steps, and every column's points are its non-NaN cells."""
    from trainproof.parsers.base import Columns

    nan = math.nan
    keys = ("eval_loss", "grad_norm", "loss", "step")
    cols = Columns()
    for base in (0.0, 10.0):
        matrix = np.array([[nan, 1.0, 2.0, base + 1], [nan, 3.0, 4.0, base + 2], [5.0, nan, nan, base + 3],
                           [nan, nan, 6.0, base + 4]])
        rows.add_matrix(matrix, keys, cols, "step")
    out = cols.arrays()
    assert out["grad_norm"][0].tolist() == [1, 2, 11, 12] and out["grad_norm"][1].tolist() == [1, 3, 1, 3]
    assert out["loss"][0].tolist() == [1, 2, 4, 11, 12, 14] and out["loss"][1].tolist() == [2, 4, 6, 2, 4, 6]
    assert out["eval_loss"][0].tolist() == [3, 13] and out["eval_loss"][1].tolist() == [5, 5]
    assert not np.shares_memory(out["loss"][0], out["grad_norm"][0])  # other gaps
    same = np.array([[1.0, 2.0, 1.0], [nan, nan, 2.0], [3.0, 4.0, 3.0]] * 1000)
    cols = Columns()
    rows.add_matrix(same, ("grad_norm", "loss", "step"), cols, "step")
    rows.add_matrix(same, ("grad_norm", "loss", "step"), cols, "step")
    out = cols.arrays()
    assert np.shares_memory(out["loss"][0], out["grad_norm"][0]) and out["loss"][0].size == 4000
