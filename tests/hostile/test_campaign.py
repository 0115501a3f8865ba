"""The hostile-input campaign (issue 12): every command on every generated input, each
run in its own process, judged by tests/hostile/oracle.py. One test per input names
it and the command that misbehaved. With TP_HOSTILE_REPORT=PATH the figures are
written to PATH as JSON (scripts/hostile_campaign.py prints them for SECURITY.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

import trainproof
from tests.hostile.generate import GROUP, Built, Case, build, catalogue, plan
from tests.hostile.oracle import document, figures, problems

ROOT = Path(__file__).resolve().parents[2]
# TP_HOSTILE_ONLY=a,b runs only the inputs whose names contain a or b (for debugging;
# the size test then fails, as it should: the figures are not the campaign's).
_ONLY = [w for w in os.environ.get("TP_HOSTILE_ONLY", "").split(",") if w]
SPECS = [s for s in catalogue() if not _ONLY or any(w in s.name for w in _ONLY)]
# Inputs whose hole is known and still open: strict, so the day the hole closes the mark
# has to go. {input name: reason naming the issue}. Empty: every class found is closed.
KNOWN: dict[str, str] = {}


def runner_env() -> dict[str, str]:
    """The trainproof these tests import, and the tests package, for the runner process."""
    src = str(Path(trainproof.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


@dataclass
class Campaign:
    built: Built
    cases: list[Case]
    results: dict[str, dict]
    found: dict[str, list[str]]  # case id -> problems
    figures: dict


@pytest.fixture(scope="session")
def campaign(tmp_path_factory) -> Iterator[Campaign]:
    root = tmp_path_factory.mktemp("hostile")
    built = build(root / "w")
    cases = plan(built, SPECS)
    (root / "cases.json").write_text(json.dumps([{**asdict(c), "id": c.id} for c in cases]))
    proc = subprocess.run([sys.executable, "-m", "tests.hostile.runner", str(root / "cases.json"),
                           str(root / "results.json"), str(root / "out")],
                          cwd=root, env=runner_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {r["id"]: r for r in json.loads((root / "results.json").read_text())}
    found = {c.id: problems(c, results[c.id], built.markers / c.input.replace("/", "__")) for c in cases}
    for cid, lost in lost_by_group_doctor(cases, results).items():
        found[cid].append(lost)
    _keep_crashes(cases, found, built)
    figs = figures(cases, results, found, inputs=len(built.paths))
    figs["skipped_inputs"] = built.skipped
    figs["markers_left"] = sorted(p.name for p in built.markers.iterdir())
    if os.environ.get("TP_HOSTILE_REPORT"):
        Path(os.environ["TP_HOSTILE_REPORT"]).write_text(json.dumps(figs, indent=2))
    yield Campaign(built, cases, results, found, figs)
    # pytest's own clean-up recurses, and the 2,000-deep trees are deeper than its limit
    subprocess.run(["rm", "-rf", str(root)], check=False)


def _keep_crashes(cases: list[Case], found: dict[str, list[str]], built: Built) -> None:
    """TP_HOSTILE_KEEP=DIR copies every input that crashed or hung there, to become a
    regression fixture (tests/hostile/regressions/)."""
    keep = os.environ.get("TP_HOSTILE_KEEP")
    if not keep:
        return
    import shutil

    for c in cases:
        bad = [p for p in found[c.id] if p.startswith(("traceback", "crash", "hang", "exit code"))]
        if bad and c.input in built.paths and built.paths[c.input].is_file():
            dst = Path(keep) / c.input.replace("/", "__")
            dst.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built.paths[c.input], dst / built.paths[c.input].name)


def lost_by_group_doctor(cases: list[Case], results: dict[str, dict]) -> dict[str, str]:
    """Every log that doctor judged on its own must be judged (or listed as not judged)
    again when doctor walks the folder of every hostile log at once: a neighbour must
    not make it disappear. Returns {the input's doctor case id: the problem}."""
    group = document(Path(results[f"{GROUP} [doctor]"]["stdout"]).read_text())
    if group is None:
        return {}
    seen = {Path(r["file"]).resolve() for r in group.get("reports", [])}
    seen |= {Path(r["file"]).resolve() for r in group.get("not_judged", [])}
    lost = {}
    for c in cases:
        if c.command != "doctor" or c.input == GROUP or c.input.startswith("tree/"):
            continue
        alone = document(Path(results[c.id]["stdout"]).read_text())
        for r in (alone or {}).get("reports", []):
            judged = Path(r["file"]).resolve()
            # a run directory (TensorBoard, MLflow) is reported as the folder when walked
            if r["verdict"] != "NOT-CHECKED" and "::" not in r["file"] and not any(
                    judged == s or judged.is_relative_to(s) for s in seen):
                lost[c.id] = (f"judged alone ({r['verdict']}, {r['records']} records) but neither judged nor "
                              "listed as not judged by doctor on the folder of every hostile log")
    return lost


def _param(spec):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[spec.name])] if spec.name in KNOWN else []
    return pytest.param(spec, id=spec.name, marks=marks)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [_param(s) for s in SPECS])
def test_hostile_input(spec, campaign: Campaign):
    if spec.name in campaign.built.skipped:
        pytest.skip(campaign.built.skipped[spec.name])
    bad = {c.id: campaign.found[c.id] for c in campaign.cases if c.input == spec.name and campaign.found[c.id]}
    assert not bad, "\n".join(f"{cid}: {'; '.join(ps)}" for cid, ps in bad.items())


@pytest.mark.slow
def test_doctor_over_every_hostile_log_at_once(campaign: Campaign):
    cid = f"{GROUP} [doctor]"
    assert not campaign.found[cid], "\n".join(campaign.found[cid])


@pytest.mark.slow
def test_no_payload_ran_and_the_campaign_is_as_large_as_promised(campaign: Campaign):
    figs = campaign.figures
    assert figs["markers_left"] == []
    assert figs["inputs"] >= 300, figs["inputs"]
    classes = {s.cls for s in SPECS if s.name in campaign.built.paths}
    promised = {"truncated", "corrupt", "bad-crc", "random-bytes", "nonfinite", "wrong-type", "huge-number",
                "steps", "bom", "crlf", "invalid-utf8", "huge-line", "zero-byte", "fifo", "dev-zero",
                "symlink-loop", "deep-tree", "bomb-ratio", "bomb-duplication", "pickle-dag", "payload",
                "lying-header", "deep-nesting"}
    assert promised <= classes, promised - classes
    commands = set(figs["by_command"])
    assert {"epoch", "compare", "watch", "doctor", "env", "data", "preflight", "tokenizer"} <= commands


SAMPLE = ("jsonl/nan-loss [epoch]", "tfevents/bad-data-crc [compare]", "wandb/truncated-half [watch]",
          "tree/deep-2000-fail-on-top [doctor]", "torch-pt/payload-posix-system-p2 [env]",
          "speech-dir/one-bad [data]", "preflight-jsonl/bom [preflight]", "transcripts/crlf [tokenizer]")


@pytest.mark.slow
@pytest.mark.parametrize("cid", SAMPLE)
def test_forked_runs_match_a_real_python_m_trainproof(cid, campaign: Campaign):
    """The runner forks instead of starting an interpreter per run; a sample of runs made
    the ordinary way must give the same exit code and verdicts."""
    case = next((c for c in campaign.cases if c.id == cid), None)
    if case is None:
        pytest.skip(f"{cid} was not run here: {campaign.built.skipped.get(cid.split(' [')[0], '')}")
    proc = subprocess.run([sys.executable, "-m", "trainproof", *case.argv], cwd=campaign.built.root,
                          env=runner_env(), capture_output=True, text=True, timeout=60)
    forked = campaign.results[cid]
    assert proc.returncode == forked["rc"], proc.stderr
    real, fork = document(proc.stdout), document(Path(forked["stdout"]).read_text())
    assert [r["verdict"] for r in real["reports"]] == [r["verdict"] for r in fork["reports"]]
