"""The Trainer's end-of-training summary in a trainer_state.json is found the same way
wherever the reader's 4 MB slices are cut.

tests/fixtures/core/hf_summary_not_last (scripts/fixtures/make_hf_summary_fixture.py) is a
real transformers 5.24 state whose summary is followed by three entries: `evaluate()` on
three eval sets after `train()`, then `save_state()`. Only a slice's last three entries
were looked at, so that summary was read as a point, and in a file over 4 MB it was or was
not depending on where a cut fell. The large files here are that state's own entries
repeated (steps moved on) past 4 MB, written as TrainerState.save_to_json writes (indent 2,
sorted keys), with blanks after the first entry's comma so that the first cut falls right
after each entry from five before the summary to the last - the JSON values are unchanged."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from trainproof.parsers import hf, read_run

from .conftest import FIXTURES

CASE = FIXTURES / "hf_summary_not_last"


def expected() -> dict[str, Any]:
    return json.loads((CASE / "expected.json").read_text())


def truth(history: list[dict[str, Any]]) -> tuple[list[float], list[float], dict[str, Any], int]:
    """What a reader must give, from the whole list: loss steps and values, the summary,
    the number of entries that are not the summary."""
    losses = [e for e in history if "loss" in e]
    summaries = [e for e in history if hf.is_summary(e)]
    assert len(summaries) == 1
    return [e["step"] for e in losses], [e["loss"] for e in losses], summaries[0], len(history) - 1


def test_the_real_state_has_three_entries_after_its_summary():
    exp = expected()
    history = json.loads((CASE / "trainer_state.json").read_text())["log_history"]
    assert exp["summary_index"] == [len(history) - 4] and exp["entries"] == len(history)
    assert all(k.startswith("eval_") or k in ("epoch", "step") for e in history[-3:] for k in e)


def test_a_summary_followed_by_entries_is_meta_not_a_point():
    exp = expected()
    run = read_run(CASE / "trainer_state.json")
    assert run.series["loss"].values.tolist() == exp["loss"]
    assert run.series["loss"].steps.tolist() == exp["loss_steps"]
    assert run.meta["summary"] == exp["summary"]
    assert run.records == exp["entries"] - 1


@functools.cache
def _large(upto: int) -> tuple[str, tuple[int, ...], int]:
    """The real state with its entries before the summary repeated (steps moved on) so that
    the history, up to its `upto`-th entry (the real history's), ends a few KB short of one
    slice; then the real summary and whatever follows it up to `upto`. Its text as
    save_to_json writes it, the offsets of the closing brace of each entry but the last, and
    the summary's index."""
    state = json.loads((CASE / "trainer_state.json").read_text())
    history, at = state["log_history"][:upto], expected()["summary_index"][0]
    body, tail = history[:at], history[at:]
    last = body[-1]["step"]
    repeats = hf.SLICE // len(json.dumps(body, indent=2))
    big = [dict(e, step=e["step"] + r * last) for r in range(repeats) for e in body]
    big += [dict(e, step=e["step"] + (repeats - 1) * last) for e in tail]
    while True:  # drop leading entries (not the first: steps stay increasing) until it fits
        state["log_history"] = big
        text = json.dumps(state, indent=2, sort_keys=True) + "\n"
        start = hf._HISTORY.search(text.encode()).end()
        closes = [m.start() for m in hf._BOUNDARY.finditer(text.encode(), start)]
        over = closes[-1] - (start + hf.SLICE - 3000)
        if over <= 0:
            return text, tuple(closes), len(big) - len(tail)
        del big[1: 2 + over // 150]


def _cut_after(text: str, closes: tuple[int, ...], entry: int) -> str:
    """The state's text with blanks after the first entry's comma so that the first
    boundary at or past one SLICE from the history's start is the one after `entry`."""
    start = hf._HISTORY.search(text.encode()).end()
    pad = start + hf.SLICE - closes[entry]
    assert pad > 0 and closes[entry - 1] + pad < start + hf.SLICE
    comma = text.index(",", closes[0]) + 1  # just after the first entry
    return text[:comma] + " " * pad + text[comma:]


@pytest.mark.parametrize("before", [5, 4, 3, 2, 1, 0, -1, -2])
def test_the_summary_is_found_wherever_the_first_cut_falls(tmp_path, before):
    """`before` entries before the summary (0: the summary itself, negative: entries after
    it) is the last entry of the first slice."""
    text, closes, where = _large(expected()["entries"])
    path = tmp_path / "trainer_state.json"
    path.write_text(_cut_after(text, closes, where - before))
    with path.open("rb") as fh:  # the slices as the reader's stream cuts them
        stream = hf._Stream(fh)
        assert stream.start()
        pieces = [bytes(piece) for piece in stream.slices()]
    # the cut is where the test says: the first slice ends with entry where - before
    assert len(pieces) == 2 and len(json.loads(pieces[0])) == where - before + 1
    assert path.stat().st_size > hf.SLICE
    steps, values, summary, records = truth(json.loads(text)["log_history"])
    run = read_run(path)
    assert run.series["loss"].steps.tolist() == steps
    assert run.series["loss"].values.tolist() == values
    assert run.meta["summary"] == summary
    assert run.records == records


@pytest.mark.parametrize("before", [4, 3, 2, 1])
def test_a_summary_last_in_a_large_state_is_found_at_every_cut(tmp_path, before):
    """The common layout (nothing after the summary): the same with the cut anywhere in the
    last five entries."""
    text, closes, where = _large(expected()["summary_index"][0] + 1)
    path = tmp_path / "trainer_state.json"
    path.write_text(_cut_after(text, closes, where - before))
    steps, values, summary, records = truth(json.loads(text)["log_history"])
    run = read_run(path)
    assert run.series["loss"].steps.tolist() == steps and run.series["loss"].values.tolist() == values
    assert run.meta["summary"] == summary and run.records == records
