"""The composite GitHub Action (action.yml), exercised: its `run:` steps execute as bash
scripts with the variables a runner sets (GITHUB_ACTION_PATH, GITHUB_WORKSPACE,
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP) and its `${{ }}` expressions and `if:`
conditions evaluated by the test, on a healthy and a failing real log. `uses:` steps
(setup-python, the SARIF upload) cannot run here: they are checked for a pinned
version and for when they would run, and skipped, saying so.

The install step builds trainproof from this tree into a fresh virtual environment
(pip fetches numpy and setuptools from the index it is configured with)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT

yaml = pytest.importorskip("yaml", reason="PyYAML reads action.yml (ci/requirements/plug.txt installs it)")

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
GALLERY = ROOT / "examples" / "gallery"
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@(v\d+(\.\d+)*|[0-9a-f]{40})$")
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class Job:
    """One run of the action's steps, as a runner would run them."""

    def __init__(self, tmp: Path, inputs: dict[str, str], runner_temp: Path) -> None:
        self.inputs = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()} | inputs
        self.outputs: dict[str, dict[str, str]] = {}
        self.tmp, self.runner_temp, self.failed, self.skipped = tmp, runner_temp, False, []
        self.workspace = tmp / "workspace"
        self.summary = tmp / "summary.md"

    def value(self, expr: str) -> Any:
        """A `${{ }}` expression: the subset action.yml uses."""
        expr = expr.strip()
        if expr in ("always()", "success()", "failure()"):
            return {"always()": True, "success()": not self.failed, "failure()": self.failed}[expr]
        for op in ("&&", "||"):
            if op in expr:
                parts = [self.value(p) for p in expr.split(op)]
                return all(parts) if op == "&&" else any(parts)
        for op in ("!=", "=="):
            if op in expr:
                left, right = (self.value(p) for p in expr.split(op, 1))
                return (left == right) if op == "==" else (left != right)
        if expr.startswith("'") and expr.endswith("'"):
            return expr[1:-1]
        if expr.startswith("inputs."):
            return self.inputs[expr.removeprefix("inputs.")]
        if expr == "github.action_path":
            return str(ROOT)
        m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if m:
            return self.outputs.get(m[1], {}).get(m[2], "")
        raise AssertionError(f"action.yml uses an expression this test does not know: {expr}")

    def text(self, s: str) -> str:
        return EXPR.sub(lambda m: str(self.value(m[1])), s)

    def runs(self, step: dict) -> bool:
        cond = step.get("if")
        return self.value(EXPR.sub(lambda m: m[1], str(cond))) if cond is not None else not self.failed

    def run(self) -> int:
        """Every step in order; the job's exit status (the last failing step's code)."""
        code = 0
        for step in ACTION["runs"]["steps"]:
            if not self.runs(step):
                continue
            if "uses" in step:
                assert PINNED.match(step["uses"]), f"{step['uses']}: pin a version"
                self.skipped.append(f"{step['name']}: `uses: {step['uses']}` does not run outside GitHub")
                continue
            rc = self.bash(step)
            if rc:
                self.failed, code = True, rc
        return code

    def bash(self, step: dict) -> int:
        assert step["shell"] == "bash"
        out = self.tmp / f"output-{len(self.outputs)}"
        out.write_text("")
        # the test's Python stands for the one setup-python puts first on PATH
        path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        env = {"PATH": path, "HOME": str(self.tmp), "GITHUB_ACTIONS": "true",
               "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_OUTPUT": str(out),
               "GITHUB_STEP_SUMMARY": str(self.summary), "RUNNER_TEMP": str(self.runner_temp)}
        env |= {k: self.text(str(v)) for k, v in step.get("env", {}).items()}
        env |= {f"INPUT_{k.upper()}": v for k, v in self.inputs.items()}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              env=env, capture_output=True, text=True, timeout=900, cwd=self.workspace)
        self.log = getattr(self, "log", "") + proc.stdout + proc.stderr
        pairs = [line.split("=", 1) for line in out.read_text().splitlines() if "=" in line]
        self.outputs[step.get("id", f"step{len(self.outputs)}")] = dict(pairs)
        return proc.returncode


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory) -> Path:
    """One RUNNER_TEMP for the module: the install step fills its virtual environment once."""
    return tmp_path_factory.mktemp("runner-temp")


def _job(tmp_path: Path, runner_temp: Path, run: str, **inputs: str) -> Job:
    job = Job(tmp_path, {"python-version": "", **inputs}, runner_temp)
    (job.workspace / "runs" / run).mkdir(parents=True)
    shutil.copy2(GALLERY / run / "trainer_state.json", job.workspace / "runs" / run / "trainer_state.json")
    return job


def test_the_uses_steps_are_pinned_and_the_upload_always_runs():
    steps = ACTION["runs"]["steps"]
    uses = [s for s in steps if "uses" in s]
    assert uses and all(PINNED.match(s["uses"]) for s in uses)
    upload = next(s for s in uses if "upload-sarif" in s["uses"])
    assert upload["if"].startswith("always()")  # the SARIF goes up even when the gate fails
    assert steps[-1]["name"] == "Gate" and "uses" not in steps[-1]  # the job fails last, after the upload


@pytest.mark.slow
@pytest.mark.parametrize(("run", "inputs", "job_code", "verdict"), [
    ("healthy", {}, 0, "PASS"),
    ("lr_hot", {}, 1, "FAIL"),
    ("lr_hot", {"fail-on": "never"}, 0, "FAIL"),
    ("overfit", {"fail-on": "warn", "command": "epoch", "paths": "runs/overfit/trainer_state.json"}, 1, "WARN"),
])
def test_the_action_gates_on_real_logs(tmp_path, runner_temp, run, inputs, job_code, verdict):
    job = _job(tmp_path, runner_temp, run, **inputs)
    code = job.run()
    assert code == job_code, job.log[-3000:]
    gate = job.outputs["gate"]
    assert gate["verdict"] == verdict and gate["exit-code"] == ("0" if verdict in ("PASS", "WARN") else "1")
    sarif = json.loads((job.workspace / gate["sarif-file"]).read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    assert (verdict == "PASS") == (sarif["runs"][0]["results"] == [] or all(
        r["level"] == "none" for r in sarif["runs"][0]["results"]))
    assert job.skipped == ["Upload SARIF: `uses: github/codeql-action/upload-sarif@v4` does not run outside GitHub"]
    assert f"{verdict} (exit {gate['exit-code']})" in job.summary.read_text(encoding="utf-8")
    if verdict == "FAIL":
        assert "::error" in job.log  # --github annotations


def test_nothing_to_judge_fails_even_with_fail_on_never(tmp_path, runner_temp):
    job = Job(tmp_path, {"python-version": "", "fail-on": "never", "command": "epoch",
                         "paths": "no/such/trainer_state.json"}, runner_temp)
    job.workspace.mkdir()
    assert job.run() == 2
    gate = job.outputs["gate"]
    assert gate["exit-code"] == "2" and gate["verdict"] == ""
    sarif = json.loads((job.workspace / gate["sarif-file"]).read_text(encoding="utf-8"))
    invocation = sarif["runs"][0]["invocations"][0]  # the SARIF says why, and goes up too
    assert invocation["executionSuccessful"] is False
    assert "no/such/trainer_state.json" in json.dumps(invocation)
    assert [s.split(":")[0] for s in job.skipped] == ["Upload SARIF"]


def test_the_documented_workflow_uploads_even_when_the_gate_fails():
    doc = yaml.safe_load((ROOT / "docs" / "github-workflow.yml").read_text(encoding="utf-8"))
    assert doc["permissions"]["security-events"] == "write"
    steps = doc["jobs"]["plain"]["steps"]
    judge = next(s for s in steps if s.get("id") == "judge")
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert judge["continue-on-error"] is True and "--sarif trainproof.sarif" in judge["run"]
    assert upload["if"].startswith("always()") and steps.index(upload) > steps.index(judge)
    assert steps[-1]["if"] == "steps.judge.outcome == 'failure'" and steps[-1]["run"] == "exit 1"
    for s in steps:
        assert "uses" not in s or PINNED.match(s["uses"]), s["uses"]
    action_job = doc["jobs"]["with-action"]["steps"]
    assert any(s.get("uses", "").endswith("/trainproof@<ref>") for s in action_job)  # a placeholder, said so
