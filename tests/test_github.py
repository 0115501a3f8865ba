"""GitHub Actions output, run as a workflow step runs it: annotations with paths relative
to $GITHUB_WORKSPACE, the step in the title, at most 10 errors and 10 warnings (worst
first) and a notice for the rest; the Markdown job summary appended to
$GITHUB_STEP_SUMMARY; `--output-format github` holding standard output alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from trainproof.render.github import SHOWN_PER_KIND

from .conftest import ROOT

GALLERY = ROOT / "examples/gallery"
NAN = GALLERY / "nan/trainer_state.json"
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}


def tp(*args, cwd=ROOT, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *map(str, args)], capture_output=True, text=True,
                          timeout=180, cwd=cwd, env={**BASE_ENV, "PYTHONPATH": str(ROOT / "src"), **env})


def _annotations(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("::")]


def test_paths_are_relative_to_the_workspace_and_titles_name_the_step(tmp_path):
    r = tp("epoch", NAN, "--output-format", "github", cwd=tmp_path, GITHUB_WORKSPACE=str(ROOT))
    assert r.returncode == 1
    lines = _annotations(r.stdout)
    assert lines == r.stdout.splitlines()  # nothing but annotations on standard output
    assert lines[0].startswith("::error file=examples/gallery/nan/trainer_state.json,title=TP-NAN (step 20)::")
    assert len(lines) == 3 and all(",line=" not in a for a in lines)  # trainer_state.json has no lines


def test_without_a_workspace_paths_are_relative_to_the_working_directory():
    r = tp("epoch", NAN, "--github")
    assert "VERDICT: FAIL" in r.stdout
    assert "::error file=examples/gallery/nan/trainer_state.json," in r.stdout


def test_capped_the_way_github_shows_them_worst_first_with_a_count_of_the_rest():
    r = tp("doctor", "examples", "--output-format", "github", GITHUB_WORKSPACE=str(ROOT))
    full = json.loads(tp("doctor", "examples", "--json").stdout)
    levels = [f["level"] for rep in full["reports"] for f in rep["findings"]]
    fails, warns = levels.count("FAIL"), levels.count("WARN")
    assert fails > SHOWN_PER_KIND  # the shipped examples overflow the cap
    lines = _annotations(r.stdout)
    kinds = [a.split(" ", 1)[0] for a in lines]
    assert kinds.count("::error") == SHOWN_PER_KIND and kinds.count("::warning") == min(warns, SHOWN_PER_KIND)
    assert kinds.index("::warning") > max(i for i, k in enumerate(kinds) if k == "::error")  # errors first
    m = re.fullmatch(r"::notice title=trainproof::(\d+) error and (\d+) warning annotations left out.*", lines[-1])
    assert m and int(m[1]) == fails - SHOWN_PER_KIND and int(m[2]) == max(0, warns - SHOWN_PER_KIND)


def test_job_summary_is_appended_markdown(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# an earlier step\n")
    r = tp("doctor", "examples/gallery", "--github", GITHUB_STEP_SUMMARY=str(summary), GITHUB_WORKSPACE=str(ROOT))
    assert r.returncode == 1
    md = summary.read_text()
    assert md.startswith("# an earlier step\n## trainproof doctor: FAIL\n")
    rows = [line for line in md.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == 18  # six gallery runs, each with two more seeds
    assert "| FAIL | `examples/gallery/nan/trainer_state.json` | 3 | 0 | TP-NAN |" in rows
    assert "- **WARN** `TP-OVERFIT` `examples/gallery/overfit/trainer_state.json` (step 10):" in md


def test_no_summary_file_without_the_variable_or_without_github_output(tmp_path):
    summary = tmp_path / "summary.md"
    tp("epoch", NAN, GITHUB_STEP_SUMMARY=str(summary))  # text only: not a GitHub output
    assert not summary.exists()


def test_github_beside_another_stdout_format_is_refused():
    r = tp("epoch", NAN, "--output-format", "github", "--sarif", "-")
    assert r.returncode == 2 and r.stdout == "" and "standard output" in r.stderr
