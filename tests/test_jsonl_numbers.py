"""The JSONL reader's numbers-only blocks (typed.Template.numbers_lines, rows.add_by_key)
and its reused block buffer (base.LineViews) read every record exactly as before:
differential tests on seeded generated logs against the typed path with the numbers
path switched off and against the general path (msgspec off), the MessagePack layout
against the decoded structs, and the buffer's blocks against LineBlocks'."""

from __future__ import annotations

import gzip
import io
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import jsonl, rows, typed
from trainproof.parsers.base import LineBlocks, LineViews, RawLog

msgspec = pytest.importorskip("msgspec")

SEEDS = range(16)


def _number(rng: random.Random) -> str:
    """A JSON number as loggers and hands write them (text, so the spelling varies too)."""
    pick = rng.randrange(12)
    if pick < 5:
        return repr(rng.uniform(-10, 10) * 10 ** rng.randint(-30, 30))
    if pick == 5:
        return str(rng.randint(-10**6, 10**6))
    if pick == 6:
        return str(rng.choice([0, -0, 2**53 + 1, 2**63 - 1, -(2**63), 10**18, 2**64 - 1]))
    if pick == 7:
        return rng.choice(["0.0", "-0.0", "-0", "1e308", "-1.7976931348623157e308", "5e-324", "2.2250738585072014e-308",
                           "1E5", "1e+05", "1.0e-7", "1.5E-10", "0.1", "123456789012345678901234567890.5",
                           "1.00000000000000011102230246251565404236316680908203125"])
    if pick == 8:
        return f"{rng.random():.{rng.randint(1, 25)}f}"
    if pick == 9:
        return f"{rng.uniform(-1, 1):.{rng.randint(0, 20)}e}"
    if pick == 10:
        return str(round(rng.random(), rng.randint(0, 6)))
    return repr(float(rng.randint(0, 10**6)))


def _line(rng: random.Random, step: int, keys: tuple[str, ...], step_key: str | None, odd: float) -> str:
    cells: dict[str, str] = {} if step_key is None else {step_key: str(step)}
    cells.update({k: _number(rng) for k in keys})
    if rng.random() < odd:
        kind = rng.randrange(12)
        if kind == 0 and step_key is not None:
            del cells[step_key]  # inherits the previous line's step, or its index
        elif kind == 1 and step_key is not None:
            cells[step_key] = "null"
        elif kind == 2:
            cells.pop(rng.choice(keys), None)  # a gap
        elif kind == 3:
            cells[rng.choice(keys)] = "null"
        elif kind == 4:
            cells = ({step_key: str(step)} if step_key else {}) | {"eval_loss": _number(rng)}  # a sparse column
        elif kind == 5:
            cells[rng.choice(keys)] = rng.choice(['"1.5"', '"nan"', "true", "NaN", "Infinity", "1e999", "[1]",
                                                  str(2**64), str(10**25), str(-(2**63) - 1)])
        elif kind == 6:
            cells["new_metric"] = _number(rng)  # a key the template has not seen
        elif kind == 7:
            return rng.choice(["", " ", "Epoch 1 done", "{broken", "[1, 2]"])
        elif kind == 8:
            cells = dict(reversed(list(cells.items())))
        elif kind == 9:
            cells[rng.choice(keys)] = f"{_number(rng)}, \"{rng.choice(keys)}\": {_number(rng)}"  # a duplicate key
        elif kind == 10:
            text = "{" + ", ".join(f'"{k}": {v}' for k, v in cells.items()) + "}"
            return text + " " + text  # two objects on one line
        else:
            return "  {" + ", ".join(f'"{k}":{v}' for k, v in cells.items()) + "}\t"
    sep = rng.choice([", ", ","]) if rng.random() < 0.01 else ", "
    return "{" + sep.join(f'"{k}": {v}' for k, v in cells.items()) + "}"


def _log(seed: int) -> tuple[bytes, float]:
    rng = random.Random(seed)
    keys = rng.choice([("loss", "lr", "grad_norm"), ("loss",), ("train/loss", "train/lr", "é", "x" * 40)])
    step_key = rng.choice(["step", "global_step", "iter", None])
    odd = rng.choice([0.0, 0.001, 0.02, 0.2])
    lines = [_line(rng, step, keys, step_key, odd) for step in range(1, rng.randint(400, 4000))]
    text = "\n".join(lines) + "\n"
    if seed % 3 == 1:
        text = text.replace("\n", "\r\n")
    if seed % 4 == 2:
        text += '{"step": 99999, "loss": 0.'  # half-written last line
    return text.encode(), odd


def _same(a: RawLog, b: RawLog) -> None:
    assert (a.records, a.notes, a.meta, a.step_column) == (b.records, b.notes, b.meta, b.step_column)
    assert list(a.columns) == list(b.columns)
    for k in a.columns:
        for x, y in zip(a.columns[k], b.columns[k], strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape, k
            np.testing.assert_array_equal(x, y, err_msg=k)
            assert np.array_equal(np.signbit(x), np.signbit(y)), k


def _three(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RawLog, RawLog, RawLog, list[bool]]:
    """(this reader, the typed path without the numbers path, the general path), and for
    each numbers_lines call whether it read its block."""
    taken: list[bool] = []
    numbers = typed.Template.numbers_lines
    with monkeypatch.context() as m:
        m.setattr(typed.Template, "numbers_lines", lambda self, raw, n: taken.append((r := numbers(self, raw, n))
                                                                                     is not None) or r)
        fast = jsonl.read(path)
    with monkeypatch.context() as m:
        m.setattr(typed.Template, "numbers_lines", lambda self, raw, n: None)
        typed_only = jsonl.read(path)
    with monkeypatch.context() as m:
        m.setattr(typed, "msgspec", None)
        m.setattr(rows, "_numbers", lambda *a: False)
        general = jsonl.read(path)
    return fast, typed_only, general, taken


@pytest.mark.parametrize("seed", SEEDS)
def test_numbers_blocks_read_as_the_typed_and_general_paths(seed: int, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "BLOCK", random.Random(seed).choice([300, 2048, 16384]))
    data, odd = _log(seed)
    path = tmp_path / ("log.jsonl.gz" if seed % 5 == 4 else "log.jsonl")
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    fast, typed_only, general, taken = _three(path, monkeypatch)
    _same(fast, typed_only)
    _same(fast, general)
    if jsonl.BLOCK >= 2048 and len(data) > 8 * jsonl.BLOCK and odd <= 0.001:
        assert any(taken)  # the comparison above covers the numbers path


def test_the_numbers_path_reads_most_blocks_of_a_regular_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the differential tests: regular lines go the numbers way, and after blocks
    it refused (strings) it is tried again (_Backoff) and reads the rest."""
    monkeypatch.setattr(jsonl, "BLOCK", 4096)
    rng = random.Random(3)
    lines = [json.dumps({"step": i, "loss": rng.random(), "lr": 1e-4 * rng.random()}) for i in range(20000)]
    for i in range(2000, 3000, 7):
        lines[i] = json.dumps({"step": i, "loss": "nan", "lr": 1e-4})
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fast, typed_only, general, taken = _three(path, monkeypatch)
    _same(fast, typed_only)
    _same(fast, general)
    assert not all(taken) and sum(taken) > 0.9 * len(taken) and taken[-50:] == [True] * 50


def _rows_text(rng: random.Random, keys: tuple[str, ...], n: int) -> tuple[bytes, list[list[float]]]:
    lines, want = [], []
    for _ in range(n):
        row = {k: rng.choice([rng.uniform(-1e6, 1e6), rng.randint(-10**9, 10**9), -0.0, 5e-324])
               for k in keys if rng.random() < 0.9}
        lines.append(json.dumps(row))
        want.append([float(row[k]) if k in row else math.nan for k in keys])
    return ("\n".join(lines) + "\n").encode(), want


@pytest.mark.parametrize("n", [1, 15, 16, 300, 65535, 65536])
@pytest.mark.parametrize("keys", [("loss",), ("step", "loss", "lr", "grad_norm"),
                                  ("a" * 31, "b" * 32, "c" * 255, "d" * 256, "é/ü", "x\u007fy")])
def test_numbers_lines_reads_each_rows_values(n: int, keys: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every MessagePack header size (array of <16, <65536 and more rows; keys as fixstr,
    str8 and str16): each value lands in its key's row, missing ones as NaN, -0.0 and the
    smallest subnormal bit for bit, integers as Python's float() reads them. 65,535 rows of
    the long keys encode past typed.PACKED_MAX (the reader's own blocks never come near it):
    declined there, and read with the cap raised."""
    rng = random.Random(n + len(keys))
    text, want = _rows_text(rng, keys, n)
    t = typed.Template()
    t.learn([dict.fromkeys(keys, 0)])
    got = t.numbers_lines(text, n)
    if got is None and n >= 65535 and len(keys) > 4:
        monkeypatch.setattr(typed, "PACKED_MAX", 1 << 30)
        got = t.numbers_lines(text, n)
    assert got is not None and got.shape == (len(t.keys), n)
    expected = np.array(want).T[[keys.index(k) for k in t.keys]]
    np.testing.assert_array_equal(got, expected)
    assert np.array_equal(np.signbit(got), np.signbit(expected))
    assert t.numbers_lines(text, n + 1) is None  # a row count other than the line count


@pytest.mark.parametrize("text", [b'{"loss": null}\n', b'{"loss": "1.5"}\n', b'{"loss": true}\n', b'{"loss": NaN}\n',
                                  b'{"loss": 1e999}\n', b'{"loss": 1' + b'0' * 400 + b'}\n', b'{"other": 1}\n',
                                  b'{"loss": [1]}\n', b'{"loss": {"a": 1}}\n', b'[1]\n', b'{"loss": 1\n'])
def test_numbers_lines_refuses_anything_but_numbers_of_known_keys(text: bytes) -> None:
    t = typed.Template()
    t.learn([{"loss": 1.0}])
    assert t.numbers_lines(text, 1) is None


@pytest.mark.parametrize("key", ['a"b', "a\\b", "x\u0000y", "\n", "tab\there"])
def test_a_key_msgspec_cannot_name_stays_on_the_general_path(key: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """msgspec refuses such a name for a field; learning it made the reader fail (an
    internal error). Its rows are read the general way, the others' keys still learnt."""
    monkeypatch.setattr(jsonl, "BLOCK", 2048)
    lines = [json.dumps({"step": i, "loss": 1.0 / i, **({key: 2.0} if i % 3 else {})}) for i in range(1, 3000)]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fast, typed_only, general, _ = _three(path, monkeypatch)
    _same(fast, typed_only)
    _same(fast, general)
    assert fast.columns[key][1].size == 2000  # lines 1..2999 but every third


def _blocks_of(cls: type, data: bytes, size: int, max_line: int) -> tuple[list[bytes], int, bytes]:
    blocks = cls(io.BytesIO(data), size, max_line)
    out = [bytes(b) for b in blocks]
    return out, blocks.oversized, blocks.tail


@pytest.mark.parametrize("seed", range(60))
def test_line_views_are_line_blocks(seed: int) -> None:
    """The same blocks, oversized lines and tail as LineBlocks, on lines of every length
    around the block size and the line limit (runaway lines, blank lines, no final newline)."""
    rng = random.Random(seed)
    size, max_line = rng.choice([1, 2, 7, 64, 1000]), rng.choice([3, 50, 500, 5000])
    parts = []
    for _ in range(rng.randint(0, 80)):
        parts.append(b"x" * rng.choice([0, 1, 5, size - 1, size, size + 1, 2 * size, max_line, max_line + 1,
                                         3 * max_line, rng.randint(0, 3000)]))
    data = b"\n".join(parts) + rng.choice([b"", b"\n", b"tail"])
    assert _blocks_of(LineViews, data, size, max_line) == _blocks_of(LineBlocks, data, size, max_line)


def _reference_lines(block: bytes) -> int | None:
    """_typed_lines' rule line by line: every line starts the block with `{` or follows a
    newline, and every newline closes an object (`}` or `}\\r` before it)."""
    if not block.startswith(b"{"):
        return None
    lines = block.split(b"\n")
    closed = lines[:-1]
    if not all(ln.endswith(b"}") or ln.endswith(b"}\r") for ln in closed):
        return None
    return len(closed) + (lines[-1] != b"")


@pytest.mark.parametrize("seed", range(200))
def test_typed_lines_counts_what_a_line_reader_sees(seed: int) -> None:
    rng = random.Random(seed)
    pieces = ['{"a": 1}', '{"a": 1}', '{"a": 1}', '{"a": 1}\r', "", " ", "\r", '{"a": 1} ', '{"a": 1}{"a": 2}',
              ' {"a": 1}', '{"a": "}"}', "}", '{"a":', "1}"]
    block = "\n".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
    block += rng.choice(["\n", "", "\r\n"])
    raw = block.encode()
    assert jsonl._typed_lines(raw) == _reference_lines(raw)
    assert jsonl._typed_lines(memoryview(raw)) == _reference_lines(raw)
