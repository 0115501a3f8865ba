"""EVIDENCE_MATRIX.md is generated from the committed logs by trainproof itself; it must
not go stale, and every committed log must be one a real library wrote, with its meta."""

import json
from pathlib import Path

import pytest

from .conftest import evidence_matrix_module

ROOT = Path(__file__).resolve().parents[1]




em = evidence_matrix_module()


def test_committed_matrix_is_current():
    committed = (ROOT / "EVIDENCE_MATRIX.md").read_text()
    # the public-runs table at the end is scripts/public_runs.py's (tests/test_public_runs.py)
    committed = committed.split("<!-- public-runs:begin -->", 1)[0].rstrip("\n") + "\n"
    assert committed == em.render(), "EVIDENCE_MATRIX.md is stale: python scripts/evidence_matrix.py --write"


def test_every_evidence_run_has_meta_and_small_logs():
    runs = em.evidence_runs()
    assert {(f, r) for f, r, _ in runs} >= {(f, r) for f in em.RECIPE_FRAMEWORKS
                                                 for r in ("healthy", "diverging")}
    for framework, run, records in runs:
        meta = json.loads((em.EVIDENCE / framework / run / "run_meta.json").read_text())
        assert meta["framework"] == framework and meta["versions"] and meta["command"]
        for _, path, _ in records:
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            assert files, f"{path}: missing"
            for f in files:
                assert f.stat().st_size < 64 * 1024, f"{f} is not small"


def test_each_framework_has_a_diverging_run_that_fails():
    for framework in em.RECIPE_FRAMEWORKS:
        first_record = em.RECORDS[framework][0][1]
        judged = em.judge_single(em.EVIDENCE / framework / "diverging" / first_record)
        assert judged.verdict == "FAIL", (framework, judged)


def test_an_unreadable_record_is_marked_not_crashed(tmp_path):
    junk = tmp_path / "events"
    junk.mkdir()
    (junk / "notes.txt").write_text("no log here\n")
    judged = em.judge_single(junk)
    assert judged.verdict == em.UNREADABLE and judged.error and judged.run is None
    assert em.UNREADABLE in judged.cell()


# Runs whose two records are expected to disagree until a reported parser bug is fixed.
_CSV_EMPTY_CELLS = ("the CSV reader turns Lightning's empty cells into NaN loss points at "
                    "validation steps; the TensorBoard record has none")
RECORD_DISAGREEMENTS: dict[tuple[str, str], str] = {}


def _two_record_runs():
    for framework, records in em.RECORDS.items():
        if len(records) < 2:
            continue
        for run in sorted(p.name for p in (em.EVIDENCE / framework).iterdir() if p.is_dir()):
            reason = RECORD_DISAGREEMENTS.get((framework, run))
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            yield pytest.param(framework, run, marks=marks, id=f"{framework}-{run}")


@pytest.mark.parametrize(("framework", "run"), list(_two_record_runs()))
def test_two_records_of_one_run_agree(framework, run):
    records = next(r for f, n, r in em.evidence_runs() if (f, n) == (framework, run))
    unreadable = [name for name, _, j in records if j.run is None]
    if unreadable:
        pytest.skip(f"{', '.join(unreadable)}: {em.UNREADABLE} (its reader is not in this build)")
    assert em.agreement(records).startswith("agree"), em.agreement(records)


def test_disagreement_is_reported(tmp_path):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text("".join(f'{{"step": {i}, "loss": {2.0 - i / 100}}}\n' for i in range(30)))
    b.write_text("".join(f'{{"step": {i}, "loss": {2.0 - i / 50}}}\n' for i in range(30)))
    records = [("A", a, em.judge_single(a)), ("B", b, em.judge_single(b))]
    assert "different numbers" in em.agreement(records)


# Verdicts that contradict the run, reported to the lead (a parser finding, not a rule one).
EVIDENCE_CONTRADICTIONS: dict[tuple[str, str, str], str] = {}


def _evidence_cases():
    for framework, run, records in em.evidence_runs():
        for name, path, _ in records:
            key = (framework, run, name)
            reason = EVIDENCE_CONTRADICTIONS.get(key)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            yield pytest.param(path, em.EVIDENCE_EXPECTED[run], marks=marks, id="-".join(key))


@pytest.mark.parametrize(("path", "allowed"), list(_evidence_cases()))
def test_evidence_verdict_matches_the_run(path, allowed):
    judged = em.judge_single(path)
    if judged.verdict == em.UNREADABLE:
        pytest.skip(f"{path.name}: {em.UNREADABLE} ({judged.error})")
    assert judged.verdict in allowed
