"""What start-up skips must not change a value: the standard-library JSON path taken
before orjson is imported reads every document as orjson does, stats.median and
trailing_median (kept off numpy.ma) equal np.median and np.nanmedian, NaN and the sign
of zero included, and the trainer_state.json shortcuts find what the code they replace
found. Seeded generated inputs; no timers."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from trainproof.parsers import jsonutil
from trainproof.stats import median

orjson = pytest.importorskip("orjson")

_TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e999", "18446744073709551616", "-9223372036854775809",
           "12345678901234567890123", "-0", "-0.0", "0", "1.5", "true", "false", "null", '"NaN"', '"x NaN y"',
           '"\\ud800"', '"\\u00e9"', '"Infinity"', "3", "2.5e-324",
           # long digit runs that are no integer: the standard library reads them (#14)
           "0.12345678901234567890123", "-2.5517752256393433777", "12345678901234567890.5",
           "1234567890123456789012e3", "-1.2345678901234567890123E-5", "0.0000000000000000000001"]


def _doc(rng: random.Random, depth: int = 0) -> str:
    pick = rng.random()
    if depth < 3 and pick < 0.25:
        return "[" + ",".join(_doc(rng, depth + 1) for _ in range(rng.randint(0, 4))) + "]"
    if depth < 3 and pick < 0.5:
        keys = [rng.choice(["loss", "lr", "step", "a", "loss"]) for _ in range(rng.randint(0, 4))]
        return "{" + ",".join(f'"{k}": {_doc(rng, depth + 1)}' for k in keys) + "}"
    if pick < 0.8:
        return rng.choice(_TOKENS)
    return repr(rng.uniform(-1e6, 1e6))


def _read(data: bytes, fast: object) -> str:
    jsonutil._orjson, jsonutil._decoded = fast, 0  # None: not imported yet, stdlib first
    try:
        return repr(jsonutil.loads(data))
    except ValueError as exc:
        return f"error {type(exc).__name__}"


@pytest.mark.parametrize("seed", range(6))
def test_standard_library_first_reads_as_orjson(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonutil, "_orjson", None)
    monkeypatch.setattr(jsonutil, "_decoded", 0)
    rng = random.Random(seed)
    for _ in range(400):
        data = _doc(rng).encode()
        assert _read(data, None) == _read(data, orjson), data
    deep = b"[" * 600 + b"1" + b"]" * 600  # deeper than the stdlib path takes
    first = _read(deep, None)
    assert jsonutil._orjson is orjson  # the deep one made it import orjson
    assert first == _read(deep, orjson)


def test_long_fractions_keep_orjson_out_long_integers_bring_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trainer_state.json's floats print 16-19 digits after the point: that is no
    integer past 64 bits, and a short log stays on the standard library (#14)."""
    for text, brings in [(b'{"loss": 2.5517752256393433777, "lr": 0.00012345678901234567891}', False),
                         (b'{"loss": 1.2345678901234567890e-05, "x": 1234567890123456789.5}', False),
                         (b'{"flos": 12345678901234567890}', True), (b'[-12345678901234567890]', True),
                         (b'{"flos": 1234567890123456789}', True)]:
        monkeypatch.setattr(jsonutil, "_orjson", None)
        monkeypatch.setattr(jsonutil, "_decoded", 0)
        value = jsonutil.loads(text)
        assert (jsonutil._orjson is orjson) is brings, text
        if not brings:  # read by the standard library (the others as orjson reads them: above)
            assert value == json.loads(text)


def test_the_scans_that_keep_orjson_out_find_what_their_regexes_did() -> None:
    """jsonutil's _long_int and _deep_chain against the regular expressions they replaced,
    and the three together against the three expressions, on seeded texts made of the
    bytes that matter (digits, ".", "e", "E", brackets, "NaN", "Infinity", word bytes and
    quotes): runs of 18 to 21 digits at the ends and inside, chains of 255 to 257
    openings with and without closings and other bytes between them (#14)."""
    import re

    long_int = re.compile(rb"(?<![\d.])\d{19,}(?![\d.eE])")
    deep = re.compile(rb"(?:[\[{][^\]}\[{]*){256}")
    rng = random.Random(17)
    pieces = [b"1", b"9", b"0", b".", b"e", b"E", b"-", b"+", b" ", b",", b'"', b"x", b"_", b"NaN", b"Infinity",
              b"1234567890123456789", b"123456789012345678", b"12345678901234567890", b"[", b"]", b"{", b"}"]
    seen: set[tuple[str, bool]] = set()
    for i in range(6000):
        parts = [rng.choice(pieces) for _ in range(rng.randint(0, 12))]
        if i % 3 == 0:  # a chain of openings near the limit, other bytes (a closing, seldom) between
            closing = 0.004 if i % 6 == 0 else 0.0
            chain = b"".join(rng.choice([b"[", b"{"]) + (b"}" if rng.random() < closing else
                                                         rng.choice([b"", b"", b"a", b"1, "]))
                             for _ in range(rng.choice([1, 255, 256, 257, 300])))
            parts.insert(rng.randint(0, len(parts)), chain)
        data = b"".join(parts)
        for text in (data, bytearray(data)):
            assert jsonutil._long_int(text) == (long_int.search(text) is not None), data
            assert jsonutil._deep_chain(text) == (deep.search(text) is not None), data
            either = bool(jsonutil._BARE.search(text) or long_int.search(text) or deep.search(text))
            assert jsonutil._orjson_reads_differently(text) == either, data
        seen |= {("long", jsonutil._long_int(data)), ("deep", jsonutil._deep_chain(data)),
                 ("either", jsonutil._orjson_reads_differently(data))}
    assert len(seen) == 6  # each test answered both ways
    assert jsonutil._orjson_reads_differently(memoryview(b"[12345678901234567890]"))


def test_orjson_comes_in_once_the_input_adds_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonutil, "_orjson", None)
    monkeypatch.setattr(jsonutil, "_decoded", 0)
    row = json.dumps({"loss": 1.0, "step": 1}).encode()
    jsonutil.loads(row)
    assert jsonutil._orjson is None
    jsonutil.loads(b"[" + b",".join([row] * (jsonutil.ORJSON_AFTER // len(row))) + b"]")
    assert jsonutil._orjson is orjson


_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, -5e-324]


def _same(a: object, b: object) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return bool(np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a) & ~np.isnan(a),
                                                                         np.signbit(b) & ~np.isnan(b)))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_median_equals_numpy() -> None:
    rng = np.random.default_rng(7)
    for _ in range(3000):
        n = int(rng.integers(0, 12))
        a = rng.normal(size=n) * 10.0 ** int(rng.integers(-5, 300))
        for _ in range(int(rng.integers(0, 4))):
            if n:
                a[rng.integers(0, n)] = rng.choice(_SPECIAL)
        got, want = median(a), np.median(a)
        assert type(got) is type(want) and _same(got, want), a
        if n:
            m = rng.choice([*_SPECIAL, 1.0, 2.0, -3.0], size=(4, n))
            assert _same(median(m, axis=1), np.median(m, axis=1)), m


def test_identical_rewrites_shortcut_equals_the_replay() -> None:
    """A series whose only step repeats are identical rewrites (HF's `epoch` in the train
    and eval entry of one step) skips the segment replay; it must give what the replay does."""
    from trainproof.parsers import _ordered, _replay

    rng = np.random.default_rng(3)
    taken = 0
    for _ in range(400):
        n = int(rng.integers(2, 60))
        steps = np.cumsum(rng.integers(0, 3, size=n)).astype(float)  # 0: the step written again
        values = rng.choice([1.0, 2.0, 2.0 + 1e-9, np.nan, -0.0, 0.0], size=n)
        starts = np.flatnonzero(steps[1:] <= steps[:-1]) + 1
        for i in starts:  # mostly the same value written again (or one isclose to it)
            if rng.random() < 0.9:
                values[i] = values[i - 1] + rng.choice([0.0, 0.0, 1e-9])
        if starts.size == 0:
            continue
        s1, *rest1 = _ordered("x", steps, values)
        s2, *rest2 = _replay("x", steps, values, starts, 0)
        assert np.array_equal(s1.steps, s2.steps) and _same(s1.values, s2.values) and rest1 == rest2
        taken += not rest1[2]
    assert taken > 50  # the shortcut was exercised (no boundary recorded)


def test_end_of_history_found_as_the_regex_did() -> None:
    import re

    from trainproof.parsers.hf import _end

    pattern, rng = re.compile(rb"\}\s*\]"), random.Random(5)
    for _ in range(20000):
        data = bytes(rng.choice(b"}] \t\n\r\x0b\x0cx{,") for _ in range(rng.randint(0, 14)))
        pos = rng.randint(0, len(data))
        m = pattern.search(data, pos)
        assert _end(data, pos) == (m.start() if m else -1), (data, pos)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_trailing_median_equals_nanmedian(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainproof import stats
    from trainproof.stats import trailing_median

    monkeypatch.setattr(stats, "_ROWS", 7)  # windows sorted a few rows at a time: chunk edges
    rng = np.random.default_rng(11)
    for _ in range(1500):
        n, window = int(rng.integers(0, 40)), int(rng.integers(1, 15))
        v = np.round(rng.normal(size=n) * 10.0 ** int(rng.integers(-3, 300)), int(rng.integers(0, 3)))
        for _ in range(int(rng.integers(0, 6))):
            if n:
                v[rng.integers(0, n)] = rng.choice(_SPECIAL)
        med, _ = trailing_median(v, window)
        padded = np.concatenate((np.full(window, np.nan), v))
        want = np.nanmedian(np.lib.stride_tricks.sliding_window_view(padded, window)[:n], axis=1)
        assert _same(med, want), (v, window)
