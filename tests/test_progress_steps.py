"""JSONL logs whose step travels in a progress field: LLaMA-Factory's trainer_log.jsonl
(current_steps / total_steps) and ms-swift's logging.jsonl ("global_step/max_steps":
"5/100"). SYNTHETIC fixtures built from each framework's write format
(scripts/fixtures/make_progress_fixtures.py names the source functions)."""

from __future__ import annotations

import json
import math

import pytest

from trainproof.parsers import read_run
from trainproof.parsers.incremental import JsonlDecoder

from .conftest import FIXTURES

PROGRESS = FIXTURES / "progress"
LOGS = {"llamafactory": "SYNTHETIC_trainer_log.jsonl", "swift": "SYNTHETIC_logging.jsonl"}


def _case(name: str):
    folder = PROGRESS / name
    log = folder / LOGS[name.removesuffix("_nan")]
    return log, json.loads((folder / "expected.json").read_text())


@pytest.mark.parametrize("name", ["llamafactory", "swift", "llamafactory_nan", "swift_nan"])
def test_steps_are_the_trainers_steps_not_line_numbers(name):
    log, exp = _case(name)
    run = read_run(log)
    loss = run.series["loss"]
    assert loss.steps.tolist() == exp["loss_steps"]
    got = [None if math.isnan(v) else v for v in loss.values.tolist()]
    assert got == exp["loss"]
    assert run.series["eval_loss"].steps.tolist() == exp["eval_steps"]
    assert run.series["eval_loss"].values.tolist() == exp["eval_loss"]
    assert run.meta["max_steps"] == exp["max_steps"] == 100
    assert "total_steps" not in run.columns and "global_step/max_steps" not in run.columns


@pytest.mark.parametrize("name", ["llamafactory_nan", "swift_nan"])
def test_a_finding_cites_the_real_step(name, run_cli):
    log, _ = _case(name)
    code, out, _ = run_cli("epoch", log, "--json")
    nan = next(f for f in json.loads(out)["reports"][0]["findings"] if f["id"] == "TP-NAN")
    assert code == 1 and nan["values"]["step"] == 40  # line 10 or 11 of the file, step 40


@pytest.mark.parametrize("name", ["llamafactory", "swift"])
def test_a_healthy_run_passes(name, run_cli):
    log, _ = _case(name)
    code, out, _ = run_cli("epoch", log)
    assert code == 0 and "TP-PASS" in out


@pytest.mark.parametrize("name", ["llamafactory", "swift"])
def test_watch_reads_the_same_steps_line_by_line(name):
    """`watch` decodes appended lines incrementally; the steps and planned total agree."""
    log, exp = _case(name)
    dec = JsonlDecoder()
    for line in log.read_bytes().splitlines(keepends=True):
        dec.feed(line)
    raw = dec.raw()
    steps, values = raw.columns["loss"]
    assert steps.tolist() == exp["loss_steps"] and values.tolist() == exp["loss"]
    assert raw.meta == {"max_steps": 100}


def test_an_unreadable_progress_string_leaves_the_row_to_inherit_its_step(tmp_path):
    p = tmp_path / "logging.jsonl"
    p.write_text('{"loss": 2.0, "global_step/max_steps": "5/100"}\n'
                 '{"loss": 1.9, "global_step/max_steps": "n/a"}\n'
                 '{"loss": 1.8, "global_step/max_steps": "15/100"}\n')
    run = read_run(p)
    assert run.series["loss"].steps.tolist() == [5.0, 15.0]  # the n/a row shares step 5 ...
    assert run.series["loss"].values.tolist() == [1.9, 1.8]  # ... and, being later, replaces it
    assert run.meta["max_steps"] == 100
