"""The typed decoder (parsers/typed.py) reads every record exactly as the general path:
differential tests on seeded generated logs, JSONL and trainer_state.json, plain and
gzip, with small blocks so that one file mixes typed and general blocks. The reference
is the same reader with msgspec and rows._numbers switched off (the reading before
either existed)."""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import hf, jsonl, rows, typed
from trainproof.parsers.base import RawLog

pytest.importorskip("msgspec")

SEEDS = range(12)


def _float(rng: random.Random) -> object:
    pick = rng.random()
    if pick < 0.6:
        return rng.uniform(-10, 10) * 10 ** rng.randint(-12, 12)
    if pick < 0.75:
        return rng.randint(-10**6, 10**6)
    if pick < 0.8:
        return rng.choice([0.0, -0.0, 1e308, 5e-324, 2**53 + 1, 10**25])
    return round(rng.random(), rng.randint(0, 6))


# Odd lines: (text of the line, or a row to json.dumps). Some break the typed decoder,
# some fit it; all must read alike.
def _odd(rng: random.Random, step: int) -> str:
    row: dict[str, object] = {"step": step, "loss": _float(rng)}
    kind = rng.randrange(24)
    if kind == 0:
        row["loss"] = rng.choice([math.nan, math.inf, -math.inf])  # json.dumps writes bare tokens
    elif kind == 1:
        row["loss"] = rng.choice(["1.5", "NaN", "Infinity", "-inf", " 2 ", "abc", ""])
    elif kind == 2:
        row["loss"] = rng.choice([True, False])
    elif kind == 3:
        row["loss"] = None
    elif kind == 4:
        del row["loss"]
    elif kind == 5:
        row[rng.choice(["eval_loss", "new_metric", "acc/top1", "é"])] = _float(rng)
    elif kind == 6:
        row["metrics"] = {"loss": _float(rng), "inner": {"x": 1}}
    elif kind == 7:
        return rng.choice(["Starting training...", "[1, 2]", "3", "null", '"text"', "{broken", ""])
    elif kind == 8:
        row = {"current_steps": step, "total_steps": 1000, "loss": _float(rng)}
    elif kind == 9:
        row = {"global_step/max_steps": f"{step}/1000", "loss": _float(rng)}
    elif kind == 10:
        row["mode"] = "train"
    elif kind == 11:
        return json.dumps(row)[:-1] + ', "loss": 7.5}'  # duplicate key: the last one counts
    elif kind == 12:
        return json.dumps(row).replace('"loss"', '"loss\\u00e9"')
    elif kind == 13:
        return f'{{"step": {step}, "loss": 1e999}}'
    elif kind == 14:
        return f'{{"step": {step}, "loss": "\\ud800"}}'
    elif kind == 15:
        return f'{{"step": {step}, "loss": 0.5, "lr": [1, 2]}}'
    elif kind == 16:
        row["step"] = float(step) + 0.5
    elif kind == 17:
        del row["step"]
    elif kind == 18:
        row["step"] = str(step)
    elif kind == 19:
        return "  " + json.dumps(row) + "  "
    elif kind == 20:
        row = dict(reversed(list(row.items())))
    elif kind == 21:  # two objects on one line: one malformed line to a line reader (jsonl._typed_block)
        return json.dumps(row) + rng.choice(["", " ", "\t", "\r"]) + json.dumps({"step": step, "loss": 1.5})
    elif kind == 22:  # a line of whitespace only
        return rng.choice([" ", "\t", "  \r", "\r"])
    return json.dumps(row)


def _jsonl_text(seed: int) -> bytes:
    rng = random.Random(seed)
    keys = rng.choice([("loss", "lr", "grad_norm"), ("loss",), ("train/loss", "train/lr")])
    odd_rate = rng.choice([0.0005, 0.01, 0.1])
    lines = []
    for step in range(1, rng.randint(500, 3000)):
        if rng.random() < odd_rate:
            lines.append(_odd(rng, step))
        else:
            lines.append(json.dumps({"step": step, **{k: _float(rng) for k in keys}}))
    text = "\n".join(lines) + "\n"
    if seed % 3 == 1:
        text = text.replace("\n", "\r\n")
    if seed % 4 == 2:
        text += '{"step": 99999, "loss": 0.'  # half-written last line
    data = text.encode()
    if seed % 5 == 3:
        data += b'{"step": 1, "loss": "\xff\xfe"}\n'  # invalid UTF-8
    return data


def _same(a: RawLog, b: RawLog) -> None:
    assert (a.records, a.notes, a.meta, a.step_column) == (b.records, b.notes, b.meta, b.step_column)
    assert set(a.columns) == set(b.columns)
    for k in a.columns:
        for x, y in zip(a.columns[k], b.columns[k], strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape, k
            np.testing.assert_array_equal(x, y, err_msg=k)  # NaN equals NaN here
            assert np.array_equal(np.signbit(x), np.signbit(y)), k


def _both(read, path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RawLog, RawLog]:
    fast = read(path)
    with monkeypatch.context() as m:
        m.setattr(typed, "msgspec", None)
        m.setattr(rows, "_numbers", lambda *a: False)  # and the column conversion as it was
        general = read(path)
    return fast, general


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("gz", [False, True])
def test_jsonl_typed_blocks_read_as_the_general_path(seed: int, gz: bool, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "BLOCK", random.Random(seed).choice([512, 4096, 65536]))
    data = _jsonl_text(seed)
    path = tmp_path / ("log.jsonl.gz" if gz else "log.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    fast, general = _both(jsonl.read, path, monkeypatch)
    _same(fast, general)


def test_the_typed_path_is_taken_on_regular_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the differential tests above against comparing the general path with itself."""
    monkeypatch.setattr(jsonl, "BLOCK", 4096)
    path = tmp_path / "log.jsonl"
    rng = random.Random(1)
    path.write_text("".join(json.dumps({"step": i, "loss": _float(rng)}) + "\n" for i in range(3000)))
    calls = []
    decode, numbers = typed.Template.decode_lines, typed.Template.numbers_lines
    monkeypatch.setattr(typed.Template, "decode_lines",
                        lambda self, raw, n: calls.append(r := decode(self, raw, n)) or r)
    monkeypatch.setattr(typed.Template, "numbers_lines",
                        lambda self, raw, n: calls.append(r := numbers(self, raw, n)) or r)
    jsonl.read(path)
    assert sum(r is not None for r in calls) > 10  # typed rows or (numbers only) the float rows


@pytest.mark.parametrize("blank", ["", "  ", "\t", "\r"])
def test_a_blank_line_and_a_line_of_two_objects_in_one_block(blank: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The typed decoder reads a block where it lies and counts its rows against its lines:
    a blank line (one row fewer) and a line holding two objects (one more) would cancel
    out. A line reader skips the first and counts the second malformed; so must this."""
    monkeypatch.setattr(jsonl, "BLOCK", 4096)  # ~100 lines a block: the first teaches the keys
    lines = [json.dumps({"step": i, "loss": 1.0 / i}) for i in range(1, 400)]
    lines[250] = blank
    lines[260] = '{"step": 261, "loss": 9.0} {"step": 262, "loss": 8.0}'
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fast, general = _both(jsonl.read, path, monkeypatch)
    _same(fast, general)
    assert fast.notes == ["1 malformed JSON line(s) skipped"] and fast.records == 397


def test_columns_streamed_from_typed_rows_keep_gaps_and_nan_strings(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """rows._streamed (a dense typed column converted without its list) is taken, with a
    few gaps (rows without the key) and "nan"/"NaN" strings among the values, and reads as
    the general path does; more than a few NaN hand the column back to the list way."""
    monkeypatch.setattr(jsonl, "BLOCK", 65536)
    rng = random.Random(5)
    lines = []
    for i in range(6000):
        row: dict[str, object] = {"step": i, "loss": rng.uniform(0, 3), "lr": 1e-4}
        if i % 97 == 5:
            del row["loss"]  # a gap
        if i % 131 == 7:
            row["loss"] = rng.choice(["nan", "NaN", "2.5", 7])
        if i > 3000 and i % 3 == 0:
            row["lr"] = "nan"  # many NaN values: the list way
        lines.append(json.dumps(row))
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    taken = []
    streamed = rows._streamed
    monkeypatch.setattr(rows, "_streamed", lambda *a: taken.append((a[0], r := streamed(*a))) or r)
    fast, general = _both(jsonl.read, path, monkeypatch)
    _same(fast, general)
    assert ("loss", True) in taken and ("lr", True) in taken and ("lr", False) in taken


def test_the_typed_path_is_taken_on_trainer_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf, "SLICE", 2048)
    path = tmp_path / "trainer_state.json"
    path.write_text(_hf_doc(3), encoding="utf-8")
    calls = []
    decode, numbers = typed.Template.decode, typed.Template.numbers
    monkeypatch.setattr(typed.Template, "decode", lambda self, raw: calls.append(r := decode(self, raw)) or r)
    monkeypatch.setattr(typed.Template, "numbers", lambda self, raw: calls.append(r := numbers(self, raw)) or r)
    hf.read(path)
    assert sum(r is not None for r in calls) > 10  # typed rows or (numbers only) the matrix


def _hf_doc(seed: int) -> str:
    rng = random.Random(seed)
    history: list[object] = []
    n = rng.randint(300, 2000)
    for step in range(1, n):
        e: dict[str, object] = {"epoch": step / n, "grad_norm": _float(rng), "learning_rate": _float(rng),
                                "loss": _float(rng), "step": step}
        if rng.random() < 0.02:
            e = {"epoch": step / n, "eval_loss": _float(rng), "eval_runtime": 1.5, "step": step}
        if rng.random() < 0.01:
            k = rng.choice(["loss", "grad_norm", "learning_rate"])
            e[k] = rng.choice([math.nan, math.inf, None, True, "x", "2.5", {"a": 1}, [1]])
        if rng.random() < 0.005:
            e["num_input_tokens_seen"] = rng.randint(0, 10**12)
        if rng.random() < 0.003:
            e = rng.choice([{"step": step}, {"epoch": 1.0, "train_runtime": 3.0, "step": step}])
        if rng.random() < 0.002:
            history.append(rng.choice([3, "text", None]))
        history.append(e)
    if seed % 2:
        history.append({"epoch": 1.0, "step": n, "total_flos": 1e12, "train_loss": 2.5, "train_runtime": 10.0,
                        "train_samples_per_second": 5.0})
    doc = {"best_metric": None, "epoch": 1.0, "global_step": n, "log_history": history, "max_steps": n,
           "is_world_process_zero": True}
    return json.dumps(doc, indent=rng.choice([2, None]), sort_keys=True) + "\n"


@pytest.mark.parametrize("seed", SEEDS)
def test_trainer_state_typed_slices_read_as_the_general_path(seed: int, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf, "SLICE", random.Random(seed).choice([256, 2048, 16384]))
    path = tmp_path / "trainer_state.json"
    path.write_text(_hf_doc(seed), encoding="utf-8")
    fast, general = _both(hf.read, path, monkeypatch)
    _same(fast, general)


def test_columns_share_steps_fork_when_apart_and_join_across_calls() -> None:
    from trainproof.parsers.base import Columns

    cols = Columns()
    s1, s2, s3 = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0])
    for name in ("loss", "lr"):
        cols.extend(name, s1, np.array([0.1, 0.2]))
    cols.extend("loss", s2, np.array([0.3, 0.4]))  # lr misses this block
    cols.extend("lr", s3, np.array([0.5]))  # and gets other steps: its own buffer from here
    cols.add("eval_loss", 7.0, 1.5)
    cols.extend("empty", np.empty(0), np.empty(0))
    out = cols.arrays()
    assert out["loss"][0].tolist() == [1, 2, 3, 4] and out["loss"][1].tolist() == [0.1, 0.2, 0.3, 0.4]
    assert out["lr"][0].tolist() == [1, 2, 5] and out["lr"][1].tolist() == [0.1, 0.2, 0.5]
    assert out["eval_loss"][0].tolist() == [7.0] and out["empty"][0].size == 0
    cols.extend("loss", np.array([9.0]), np.array([0.9]))  # after arrays(): new buffers, joined next time
    again = cols.arrays()
    assert again["loss"][0].tolist() == [1, 2, 3, 4, 9] and out["loss"][0].tolist() == [1, 2, 3, 4]
    assert again["lr"][1].tolist() == [0.1, 0.2, 0.5]


def test_columns_of_the_same_rows_share_one_steps_array(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps({"step": i, "loss": 1.0, "lr": 2.0}) + "\n" for i in range(5000)))
    cols = jsonl.read(path).columns
    assert np.shares_memory(cols["loss"][0], cols["lr"][0])


@pytest.mark.parametrize("odd", ['a"b', "a\\b", "a\nb"])
def test_jsonl_key_msgspec_cannot_name_reads_as_the_general_path(odd: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """typed.Template.learn leaves out a key msgspec refuses as a field name (a quote, a
    backslash, a control character): building the struct raised ValueError, an internal
    error on a valid log. Its rows go the general way; the others stay typed."""
    monkeypatch.setattr(jsonl, "BLOCK", 4096)
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps({"step": i, "loss": 1.0 + i % 7, **({odd: 2.0} if i % 5 else {})}) + "\n"
                            for i in range(3000)))
    fast, general = _both(jsonl.read, path, monkeypatch)
    _same(fast, general)
    assert fast.columns[odd][1].size == 2400
