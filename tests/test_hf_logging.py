"""trainer_state.json files the real transformers Trainer (5.24 and 4.57) wrote with each
logging option that adds keys to its entries (tests/fixtures/core/hf_logging/v5_*, v4_*,
made by scripts/fixtures/make_hf_logging_fixtures.py). With include_num_input_tokens_seen
every per-step entry carries train_runtime; the summary is still told apart by its structure."""

from __future__ import annotations

import json

import pytest

from trainproof.parsers import read_run
from trainproof.parsers.hf import is_summary

from .conftest import FIXTURES

CASES = sorted(p.name for p in (FIXTURES / "hf_logging").iterdir())


def test_every_case_is_there():
    common = ["memory_metrics", "tokens_seen", "tokens_seen_eval", "tokens_seen_non_padding"]
    assert sorted([f"v4_{c}" for c in [*common, "tokens_per_second"]] + [f"v5_{c}" for c in common]) == CASES
    for case in CASES:
        version = json.loads((FIXTURES / "hf_logging" / case / "expected.json").read_text())["transformers"]
        assert version.startswith(case[1])


@pytest.mark.parametrize("case", CASES)
def test_every_logged_loss_is_read_and_the_summary_is_meta(case):
    folder = FIXTURES / "hf_logging" / case
    expected = json.loads((folder / "expected.json").read_text())
    run = read_run(folder / "trainer_state.json")
    assert run.series["loss"].values.tolist() == expected["loss"]
    assert run.series["loss"].steps.tolist() == expected["loss_steps"]
    if expected["eval_loss"]:
        assert run.series["eval_loss"].values.tolist() == expected["eval_loss"]
    assert run.meta["summary"]["train_loss"] == expected["summary"]["train_loss"]
    assert run.records == len(json.loads((folder / "trainer_state.json").read_text())["log_history"]) - 1


@pytest.mark.parametrize("case", ["v4_tokens_seen", "v5_tokens_seen"])
def test_per_step_entries_carry_train_runtime(case):
    """The reason the old one-key test failed: the real per-step keys, as logged."""
    expected = json.loads((FIXTURES / "hf_logging" / case / "expected.json").read_text())
    assert {"loss", "train_runtime", "train_tokens_per_second"} <= set(expected["per_step_keys"])


@pytest.mark.parametrize("case", CASES)
def test_the_cli_judges_every_case(case, run_cli):
    code, out, _ = run_cli("epoch", FIXTURES / "hf_logging" / case / "trainer_state.json")
    assert code == 0 and "TP-PASS" in out


def test_summary_is_decided_by_structure():
    step = {"loss": 3.9, "grad_norm": 1.1, "learning_rate": 1e-4, "epoch": 0.5,
            "num_input_tokens_seen": 512, "train_runtime": 0.2, "train_tokens_per_second": 3700.0}
    summary = {"train_runtime": 0.2, "train_samples_per_second": 226.0, "train_steps_per_second": 56.0,
               "total_flos": 1.0, "train_loss": 3.9, "epoch": 0.75}
    evaluation = {"eval_loss": 3.9, "eval_runtime": 0.01, "num_input_tokens_seen": 768}
    assert is_summary(summary) and not is_summary(step) and not is_summary(evaluation)


def test_is_summary_is_the_point_and_total_keys_test() -> None:
    """is_summary spells the key tuples out (speed, #14): the same answer as the test on
    hf._POINT_KEYS and hf._RUN_TOTALS for every combination of those keys, with and
    without another key beside them."""
    from itertools import combinations

    from trainproof.parsers import hf

    keys = (*hf._POINT_KEYS, *hf._RUN_TOTALS)
    assert sorted(keys) == ["eval_loss", "loss", "total_flos", "train_loss", "train_runtime"]
    for n in range(len(keys) + 1):
        for chosen in combinations(keys, n):
            for extra in ({}, {"epoch": 1.0}):
                entry = {**dict.fromkeys(chosen, 1.0), **extra}
                expected = (not any(k in entry for k in hf._POINT_KEYS)
                            and any(k in entry for k in hf._RUN_TOTALS))
                assert is_summary(entry) is expected, entry
