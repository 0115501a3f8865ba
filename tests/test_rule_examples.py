"""Every rule's documented fire/pass examples are executed: the docs cannot drift
from what the code does."""

import pytest

from trainproof.examples import run_example
from trainproof.rules import catalogue

RULES = [r for r in catalogue().values() if r.fires is not None or r.passes is not None]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_example_fires(rule):
    if rule.fires is None:
        pytest.skip(f"{rule.id} documents no firing example")
    assert rule.id in run_example(rule, rule.fires)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_example_passes(rule):
    if rule.passes is None:
        pytest.skip(f"{rule.id} documents no passing example")
    assert rule.id not in run_example(rule, rule.passes)


def test_every_rule_is_documented():
    for r in catalogue().values():
        assert r.id.startswith("TP-") and r.id.upper() == r.id
        assert r.title and r.summary and r.why and r.fix, r.id
        for name, t in r.thresholds.items():
            assert t.unit and t.why, f"{r.id}.{name} needs a unit and a reason"
