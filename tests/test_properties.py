"""Property tests: any numbers at all — NaN, Inf, huge, negative, constant — give a
report in which every check is accounted for, without an exception."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.model import Level, ReportSet, Verdict
from trainproof.render import jsonout, sarif, text
from trainproof.rules import checks

ALL_CHECKS = {c.name for c in checks("single_run")}
values = st.floats(allow_nan=True, allow_infinity=True, width=64)
series = st.lists(values, min_size=0, max_size=300)


@settings(max_examples=150, deadline=None)
@given(loss=series, grad=series, lr=series, eval_loss=st.lists(values, max_size=20))
def test_every_check_is_accounted_for(loss, grad, lr, eval_loss):
    data = {k: v for k, v in {"loss": loss, "grad_norm": grad, "lr": lr, "eval_loss": eval_loss}.items() if v}
    report = judge_run(run_from(data))
    assert report.verdict in Verdict
    if report.ran or report.skipped:
        assert set(report.ran) | set(report.skipped) == ALL_CHECKS
        assert not set(report.ran) & set(report.skipped)
        assert not any("checker failed" in why for why in report.skipped.values())
    statements = [f for f in report.findings if f.level in (Level.PASS, Level.NOT_CHECKED)]
    if report.verdict in (Verdict.PASS, Verdict.NOT_CHECKED):
        assert len(statements) == 1
    rs = ReportSet("epoch", (report,))
    json.loads(jsonout.render(rs))  # never a bare NaN in JSON
    json.loads(sarif.render(rs))
    text.render(rs).encode("ascii")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=1e-6, max_value=1e6), min_size=20, max_size=200))
def test_scaling_the_loss_does_not_change_the_verdict(loss):
    """Rules are ratios: the same curve in other units is judged the same."""
    a = judge_run(run_from({"loss": loss}))
    b = judge_run(run_from({"loss": list(np.asarray(loss) * 1000.0)}))
    ids = lambda r: {f.rule_id for f in r.findings if f.level in (Level.FAIL, Level.WARN)}  # noqa: E731
    assert a.verdict == b.verdict and ids(a) == ids(b)
