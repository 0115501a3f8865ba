"""The Python API (trainproof.judge_log, compare, doctor, ...): the same reports the
CLI prints, because the CLI calls these functions itself; bad input raises
trainproof.InputError; `import trainproof` stays light until a function is used."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import trainproof
from trainproof import InputError, Level, Report, ReportSet, Verdict, api

from .conftest import ROOT

GALLERY = ROOT / "examples" / "gallery"
HEALTHY = GALLERY / "healthy" / "trainer_state.json"
HOT = GALLERY / "lr_hot" / "trainer_state.json"


def _ids(rep: Report) -> list[str]:
    return sorted(f.rule_id for f in rep.findings)


def _cli_json(run_cli, *argv: str) -> dict:
    code, out, _ = run_cli(*argv, "--json")
    doc = json.loads(out)
    assert doc["exit_code"] == code
    return doc


def test_import_is_light_and_the_types_are_the_models():
    probe = ("import json, sys, trainproof; before = sorted(m for m in sys.modules if m.split('.')[0] in "
             "('numpy', 'trainproof')); trainproof.Verdict; print(json.dumps([before, "
             "'numpy' in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    before, numpy_after_types = json.loads(proc.stdout)
    assert before == ["trainproof"]
    assert numpy_after_types is False  # the report types need no numpy either
    from trainproof import model

    assert (trainproof.Report, trainproof.Finding, trainproof.Verdict, trainproof.Level) == (
        model.Report, model.Finding, model.Verdict, model.Level)
    assert trainproof.InputError is model.InputError and trainproof.judge_log is api.judge_log
    assert set(trainproof.__all__) <= set(dir(trainproof))
    with pytest.raises(AttributeError):
        trainproof.no_such_name  # noqa: B018


def test_judge_log_is_what_epoch_prints(run_cli):
    for path, verdict in ((HEALTHY, Verdict.PASS), (HOT, Verdict.FAIL)):
        rep = trainproof.judge_log(path)
        assert isinstance(rep, Report) and rep.verdict is verdict
        doc = _cli_json(run_cli, "epoch", path)
        assert doc["reports"][0]["verdict"] == verdict.value
        assert sorted(f["id"] for f in doc["reports"][0]["findings"]) == _ids(rep)
    assert trainproof.judge_log(str(HOT)).findings[0].level is Level.FAIL


def test_the_cli_goes_through_the_api(run_cli, monkeypatch):
    calls = []
    real = api.judge_log

    def spy(path, **kw):
        calls.append((path, kw))
        return real(path, **kw)

    monkeypatch.setattr(api, "judge_log", spy)
    code, _, _ = run_cli("epoch", HEALTHY, "--vocab-size", "50257")
    assert code == 0 and calls == [(str(HEALTHY), {"format": "auto", "mapping": {}, "vocab_size": 50257})]


def test_compare_one_run_and_many(run_cli):
    bad = GALLERY / "bad_labels" / "trainer_state.json"
    rep = trainproof.compare(bad, HEALTHY)
    assert rep.verdict is Verdict.FAIL and rep.kind == "compare"
    rs = trainproof.compare_runs([bad, HOT], [HEALTHY, GALLERY / "healthy" / "seed43" / "trainer_state.json"])
    assert isinstance(rs, ReportSet) and len(rs.reports) == 2 and int(rs.exit_code) == 1
    assert len(rs.tables["ranking"]) == 2 and len(rs.tables["baselines"]) == 2
    doc = _cli_json(run_cli, "compare", HEALTHY, bad)
    assert doc["reports"][0]["verdict"] == rep.verdict.value
    assert sorted(f["id"] for f in doc["reports"][0]["findings"]) == _ids(rep)


def test_doctor_is_what_doctor_prints(run_cli):
    rs = trainproof.doctor(GALLERY / "lr_zero")
    doc = _cli_json(run_cli, "doctor", GALLERY / "lr_zero")
    assert [r.verdict.value for r in rs.triaged()] == [r["verdict"] for r in doc["reports"]]
    assert int(rs.exit_code) == doc["exit_code"] == 1


@pytest.mark.parametrize("call", [
    lambda: trainproof.judge_log(ROOT / "no" / "such.json"),
    lambda: trainproof.judge_log(HEALTHY, vocab_size=1),
    lambda: trainproof.judge_log(HEALTHY, format="nosuchformat"),
    lambda: trainproof.judge_log(HEALTHY, mapping={"loss": "no_such_column"}),
    lambda: trainproof.compare_runs([], HEALTHY),
    lambda: trainproof.doctor(ROOT / "no" / "such"),
    lambda: trainproof.doctor(GALLERY, max_logs=0),
    lambda: trainproof.env(keep=0),
    lambda: trainproof.env(gpu_gb=-1),
    lambda: trainproof.preflight(HEALTHY, max_len=8),
    lambda: trainproof.data(ROOT / "x", workers=-1),
    lambda: trainproof.judge_metrics({"loss": ([1, 2], [1.0])}),
], ids=["missing", "vocab", "format", "map", "no-runs", "doctor-missing", "max-logs", "keep", "gpu-gb",
        "max-len", "workers", "ragged"])
def test_bad_input_raises_input_error(call):
    with pytest.raises(InputError) as exc:
        call()
    assert str(exc.value) and "\n" not in str(exc.value)


def test_judge_metrics_judges_series_in_memory():
    steps = list(range(1, 201))
    good = trainproof.judge_metrics({"loss": (steps, [3.0 * 0.99 ** s + 1.0 for s in steps])})
    assert good.verdict is Verdict.PASS
    values = [3.0 * 0.99 ** s + 1.0 for s in steps]
    values[150:] = [math.nan] * 50
    bad = trainproof.judge_metrics({"loss": (steps, values)}, subject="mine")
    assert bad.verdict is Verdict.FAIL and "TP-NAN" in _ids(bad) and bad.subject == "mine"


def test_preflight_tokenizer_and_env_return_reports(tmp_path):
    ds = tmp_path / "d.jsonl"
    ds.write_text('{"text": "one"}\n{"text": ""}\n{"text": "one"}\n', encoding="utf-8")
    rep = trainproof.preflight(ds)
    assert isinstance(rep, Report) and rep.verdict is Verdict.FAIL and "TP-PRE-EMPTY-TEXT" in _ids(rep)
    tok = trainproof.tokenizer(tmp_path / "missing.json", ds)
    assert tok.verdict is Verdict.NOT_CHECKED  # a tokenizer that cannot load is a report, not an exception
    rs = trainproof.env(cwd=tmp_path)
    assert [r.kind for r in rs.reports] == ["machine", "gpu"]


def test_a_config_given_to_the_api_changes_the_verdict_and_says_so():
    """The gallery's overfit run WARNs at TP-OVERFIT's declared 1.2x; under a config that
    raises the ratio to 1.3 (and TP-EVAL-NEVER-BETTER's train fall to 80 %: its eval loss never
    beat its first evaluation either, while the train loss fell 77 %) it passes, through the API as through the CLI."""
    import trainproof

    log = Path(__file__).resolve().parents[1] / "examples/gallery/overfit/trainer_state.json"
    assert trainproof.judge_log(log).verdict.value == "WARN"
    relaxed = trainproof.judge_log(log, config={"thresholds": {"TP-OVERFIT": {"ratio": 1.3},
                                                                "TP-EVAL-NEVER-BETTER": {"min_train_fall": 0.8}}})
    assert relaxed.verdict.value == "PASS"
    assert trainproof.judge_log(log).verdict.value == "WARN"  # nothing leaks out of the call


def test_a_bad_config_given_to_the_api_is_an_input_error():
    import pytest

    import trainproof

    with pytest.raises(trainproof.InputError):
        trainproof.judge_log(Path(__file__).resolve().parents[1] / "examples/gallery/overfit/trainer_state.json",
                             config={"thresholds": {"TP-NOPE": {}}})
