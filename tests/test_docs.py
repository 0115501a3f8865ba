"""Generated documents are regenerated, never hand-edited: a stale one fails."""

from __future__ import annotations

from trainproof.docs import rules_markdown
from trainproof.rules import catalogue

from .conftest import ROOT


def test_rules_md_is_current():
    committed = (ROOT / "RULES.md").read_text(encoding="utf-8")
    assert committed == rules_markdown(), "RULES.md is stale: run `trainproof rules --markdown > RULES.md`"


def test_contract_ids_are_all_declared():
    contract = ROOT / "CONTRACTS.md"
    ids = set(catalogue())
    text = contract.read_text(encoding="utf-8")
    for rid in ("TP-NAN", "TP-NAN-GRAD", "TP-ZERO-LOSS", "TP-ZERO-LOSS-ONSET", "TP-FLAT", "TP-DIVERGE",
                "TP-DEAD-RUN", "TP-ZERO-GRAD", "TP-GRAD-SPIKE", "TP-ZERO-LR", "TP-ZERO-LR-PARTIAL",
                "TP-OVERFIT", "TP-STEP-CLIFF", "TP-LOADER-BOUND", "TP-THROUGHPUT", "TP-GPU-UTIL",
                "TP-NO-RECORDS", "TP-NO-LOSS", "TP-NOT-CHECKED", "TP-PASS", "TP-FLOOR-RATIO",
                "TP-END-RATIO", "TP-NEG-IMPROVE", "TP-IMPROVE-DEFICIT", "TP-GRADNORM-RATIO",
                "TP-BAD-BASELINE", "TP-CMP-UNCOMPARABLE", "TP-CMP-ERROR", "TP-CMP-PASS"):
        assert rid in ids, rid
        assert rid in text, f"{rid} missing from CONTRACTS.md"
