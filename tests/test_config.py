"""Configuration (#13): real pyproject.toml / trainproof.toml files in temporary project
trees, found upward from the working directory; --config, --isolated and the command-line
selection options; threshold overrides that move a real gallery run's verdict; severity,
ignore and per-path ignores; `trainproof config`; and every bad configuration is exit 2
with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainproof.config import Config, active, as_config
from trainproof.engine import judge_run
from trainproof.model import Verdict
from trainproof.parsers import read_run
from trainproof.rules import catalogue
from trainproof.selection import enabled_rules

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "examples" / "gallery"
OVERFIT = GALLERY / "overfit" / "trainer_state.json"  # WARN: TP-OVERFIT, eval climbs 1.24x > 1.2
NAN = GALLERY / "nan" / "trainer_state.json"  # FAIL: TP-NAN, TP-NAN-GRAD, TP-ZERO-LOSS-ONSET


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository (its .git marks the search's end) holding two gallery runs; the
    working directory is its root."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "runs" / "legacy" / "fp16").mkdir(parents=True)
    shutil.copy(OVERFIT, root / "runs" / "overfit.json")
    shutil.copy(NAN, root / "runs" / "legacy" / "fp16" / "trainer_state.json")
    shutil.copy(NAN, root / "runs" / "nan.json")
    monkeypatch.chdir(root)
    return root


def _pyproject(root: Path, body: str) -> Path:
    p = root / "pyproject.toml"
    p.write_text('[project]\nname = "demo"\n\n[tool.trainproof]\n' + body, encoding="utf-8")
    return p


def _json(run_cli, *argv):
    code, out, err = run_cli(*argv, "--json")
    return code, json.loads(out), err


# -- finding the file -------------------------------------------------------------


def test_pyproject_found_upward_from_a_nested_directory(project, run_cli, monkeypatch):
    _pyproject(project, 'ignore = ["TP-GRAD"]\n')
    deep = project / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    code, doc, _ = _json(run_cli, "config")
    assert code == 0 and doc["source"] == str(project / "pyproject.toml")
    assert {"key": "ignore", "value": ["TP-GRAD"], "from": doc["source"]} in doc["entries"]
    assert "TP-GRAD-SPIKE" not in doc["selected_rules"] and "TP-GRADNORM-RATIO" in doc["selected_rules"]


def test_trainproof_toml_wins_and_a_pyproject_without_the_table_is_passed_over(project, run_cli, monkeypatch):
    (project / "trainproof.toml").write_text('ignore = ["TP-NAN"]\n', encoding="utf-8")
    sub = project / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "pkg"\n', encoding="utf-8")  # no [tool.trainproof]
    monkeypatch.chdir(sub)
    code, doc, _ = _json(run_cli, "config")
    assert code == 0 and doc["source"] == str(project / "trainproof.toml")
    _pyproject(project, 'ignore = ["TP-GRAD"]\n')  # same directory: trainproof.toml still first
    assert _json(run_cli, "config")[1]["source"] == str(project / "trainproof.toml")


def test_a_pyproject_is_parsed_only_when_it_can_name_trainproof(project, monkeypatch):
    """discover() passes over a pyproject.toml that cannot spell the key "trainproof"
    without parsing it (#14 start-up), and still finds a table whose key is escaped."""
    import tomllib

    from trainproof.config import discover

    calls: list[str] = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: calls.append(text) or real(text))
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\n', encoding="utf-8")
    assert discover(project) is None and calls == []
    (project / "pyproject.toml").write_text('[tool."trainpro\\u006ff"]\nignore = []\n', encoding="utf-8")
    assert discover(project) == project / "pyproject.toml" and len(calls) == 1


def test_search_stops_at_the_repository_root(tmp_path, run_cli, monkeypatch):
    (tmp_path / "trainproof.toml").write_text('ignore = ["TP-NAN"]\n', encoding="utf-8")  # above the repo
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    code, doc, _ = _json(run_cli, "config")
    assert code == 0 and doc["source"] is None and doc["entries"][2] == {"key": "ignore", "value": [],
                                                                         "from": "default"}
    code, out, _ = run_cli("config")
    assert out.startswith("configuration: no file found (defaults)")


# The gallery's overfit run passes only with both rules that read its eval climb relaxed:
# TP-OVERFIT (over the eval minimum) and TP-EVAL-NEVER-BETTER (its minimum is its first evaluation).
RELAXED = 'thresholds = { "TP-OVERFIT" = { ratio = 1.3 }, "TP-EVAL-NEVER-BETTER" = { min_train_fall = 0.8 } }\n'


def test_isolated_and_config_path(project, run_cli, tmp_path):
    _pyproject(project, RELAXED)
    assert _json(run_cli, "epoch", "runs/overfit.json")[1]["reports"][0]["verdict"] == "PASS"
    code, doc, _ = _json(run_cli, "epoch", "runs/overfit.json", "--isolated")
    assert code == 0 and doc["reports"][0]["verdict"] == "WARN"
    assert doc["config"]["isolated"] is True and doc["config"]["thresholds"] == {}
    other = tmp_path / "elsewhere.toml"
    other.write_text('severity = { "TP-OVERFIT" = "fail" }\n', encoding="utf-8")
    code, doc, _ = _json(run_cli, "epoch", "runs/overfit.json", "--config", other)
    assert code == 1 and doc["reports"][0]["verdict"] == "FAIL" and doc["config"]["source"] == str(other)
    code, out, err = run_cli("epoch", "runs/overfit.json", "--config", other, "--isolated")
    assert code == 2 and out == "" and err.count("\n") == 1 and "contradict" in err


# -- what a configuration does to a verdict ------------------------------------------


def test_threshold_override_flips_a_gallery_verdict_and_the_report_says_so(project, run_cli):
    code, out, _ = run_cli("epoch", "runs/overfit.json")
    assert code == 0 and "VERDICT: WARN" in out and "judged with" not in out
    _pyproject(project, RELAXED)
    code, out, _ = run_cli("epoch", "runs/overfit.json")
    assert code == 0 and "VERDICT: PASS" in out
    assert out.splitlines()[0] == ("judged with: TP-OVERFIT.ratio=1.3, TP-EVAL-NEVER-BETTER.min_train_fall=0.8 "
                                   "(pyproject.toml)")
    code, doc, _ = _json(run_cli, "epoch", "runs/overfit.json")
    assert doc["config"]["source"] == "pyproject.toml"
    assert doc["config"]["thresholds"] == {"TP-OVERFIT": {"ratio": 1.3},
                                           "TP-EVAL-NEVER-BETTER": {"min_train_fall": 0.8}}
    # the other way: a tighter limit turns the healthy gallery run's margin into a WARN
    _pyproject(project, 'thresholds = { "TP-OVERFIT" = { ratio = 1.2 } }\n')
    assert _json(run_cli, "epoch", "runs/overfit.json")[1]["reports"][0]["verdict"] == "WARN"


def test_the_override_is_the_limit_the_finding_reports(project, run_cli):
    _pyproject(project, 'thresholds = { "TP-OVERFIT" = { ratio = 1.1 } }\n')
    code, doc, _ = _json(run_cli, "epoch", "runs/overfit.json")
    f = next(f for f in doc["reports"][0]["findings"] if f["id"] == "TP-OVERFIT")
    assert f["values"]["limit_ratio"] == 1.1 and "> 1.1)" in f["evidence"]


def test_severity_override_changes_level_verdict_and_exit_code(project, run_cli, tmp_path):
    _pyproject(project, '[tool.trainproof.severity]\n"TP-OVERFIT" = "fail"\n')
    code, out, _ = run_cli("epoch", "runs/overfit.json", "--sarif", tmp_path / "r.sarif")
    assert code == 1 and "[FAIL] TP-OVERFIT" in out and "judged with: TP-OVERFIT=fail (pyproject.toml)" in out
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    run = sarif["runs"][0]
    assert run["results"][0]["level"] == "error"
    assert run["properties"]["trainproofConfig"]["severity"] == {"TP-OVERFIT": "FAIL"}


def test_ignored_findings_are_listed_not_silent(project, run_cli):
    _pyproject(project, 'ignore = ["TP-NAN", "TP-ZERO-LOSS"]\n')
    code, doc, _ = _json(run_cli, "epoch", "runs/nan.json")
    rep = doc["reports"][0]
    assert code == 0 and rep["verdict"] == "PASS"  # every FAIL dropped: the statement is made again
    assert sorted(i["id"] for i in rep["ignored"]) == ["TP-NAN", "TP-NAN-GRAD", "TP-ZERO-LOSS-ONSET"]
    assert all(i["why"] == "not selected (pyproject.toml)" for i in rep["ignored"])
    code, out, _ = run_cli("epoch", "runs/nan.json")
    assert "ignored by config: TP-NAN-GRAD: not selected (pyproject.toml)" in out


def test_per_path_ignore_applies_under_its_glob_only(project, run_cli):
    _pyproject(project, '[tool.trainproof.per-path-ignores]\n"runs/legacy/**" = '
               '{ rules = ["TP-NAN-GRAD"], reason = "fp16 runs from 2023; scaler skips expected" }\n')
    code, doc, _ = _json(run_cli, "doctor", "runs")
    by_file = {Path(r["file"]).as_posix(): r for r in doc["reports"]}
    legacy = by_file["runs/legacy/fp16/trainer_state.json"]
    assert [i["id"] for i in legacy["ignored"]] == ["TP-NAN-GRAD"]
    assert legacy["ignored"][0]["why"].endswith("fp16 runs from 2023; scaler skips expected")
    assert "TP-NAN-GRAD" not in {f["id"] for f in legacy["findings"]}
    assert legacy["verdict"] == "FAIL"  # TP-NAN still stands there
    assert "TP-NAN-GRAD" in {f["id"] for f in by_file["runs/nan.json"]["findings"]}  # outside the glob


def test_per_path_ignore_without_a_reason_is_refused(project, run_cli):
    _pyproject(project, '[tool.trainproof.per-path-ignores]\n"runs/legacy/**" = { rules = ["TP-NAN-GRAD"] }\n')
    code, out, err = run_cli("epoch", "runs/nan.json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "per-path-ignores 'runs/legacy/**' needs a reason" in err


# -- selection semantics ---------------------------------------------------------------


def _on(**kw) -> frozenset[str]:
    return enabled_rules(Config(**kw))


def test_prefixes_cover_whole_dash_parts_and_the_more_specific_selector_wins():
    grad = _on(select=("TP-GRAD",))
    assert {"TP-GRAD-SPIKE", "TP-GRAD-SPIKE-ISOLATED"} <= grad and "TP-GRADNORM-RATIO" not in grad
    assert len(_on()) == len(catalogue())  # default select: TP, every rule
    on = _on(ignore=("TP-GRAD",), extend_select=("TP-GRAD-SPIKE",))
    assert "TP-GRAD-SPIKE" in on and "TP-GRAD-SPIKE-ISOLATED" in on  # more specific: selected
    on = _on(select=("TP-GRAD-SPIKE",), ignore=("TP-GRAD-SPIKE",))
    assert "TP-GRAD-SPIKE" not in on  # equal specificity: ignore wins
    on = _on(select=("TP-NAN",), ignore=("TP-NAN-GRAD",), extend_select=("TP-OVERFIT",))
    assert {"TP-NAN", "TP-NAN-ITERS", "TP-OVERFIT"} <= on and "TP-NAN-GRAD" not in on


def test_command_line_select_replaces_and_ignore_adds(project, run_cli):
    _pyproject(project, 'ignore = ["TP-NAN-GRAD"]\n')
    code, doc, _ = _json(run_cli, "config", "--select", "TP-NAN", "--ignore", "TP-NAN-ITERS")
    # --select starts afresh, as ruff's does: the file's ignore of TP-NAN-GRAD goes with its select
    assert doc["selected_rules"] == ["TP-NAN", "TP-NAN-GRAD", "TP-NAN-GRAD-SKIPPED"]
    assert {"key": "--select", "value": ["TP-NAN"], "from": "command line"} in doc["entries"]
    code, doc, _ = _json(run_cli, "epoch", "runs/nan.json", "--extend-select", "TP-NAN-GRAD-SKIPPED")
    assert [i["id"] for i in doc["reports"][0]["ignored"]] == ["TP-NAN-GRAD"]
    assert doc["reports"][0]["ignored"][0]["why"] == "not selected (command line)"
    assert doc["config"]["command_line"] == {"select": None, "extend_select": ["TP-NAN-GRAD-SKIPPED"],
                                             "ignore": []}
    code, out, _ = run_cli("epoch", "runs/nan.json", "--ignore", "TP-ZERO-LOSS")
    assert out.splitlines()[0] == ("judged with: ignore=TP-NAN-GRAD (pyproject.toml); "
                                   "ignore=TP-ZERO-LOSS (command line)")


# -- errors: exit 2, one line, naming what is valid --------------------------------------


BAD = [
    ("thresholds = [", "not valid TOML"),
    ('selekt = ["TP-NAN"]', "unknown key 'selekt' (did you mean select?); valid keys: select, extend-select"),
    ('select = "TP-NAN"', "select must be a list of rule IDs or prefixes"),
    ('select = ["TP-NOPE"]', "'TP-NOPE' is no configurable rule ID or prefix"),
    ('ignore = ["TP-PASS"]', "PASS and NOT-CHECKED rules cannot be configured"),
    ('thresholds = { "TP-DIVERG" = { ratio = 2.0 } }', "(did you mean TP-DIVERGE"),
    ('thresholds = { "TP-NAN-GRAD" = { ratio = 2.0 } }', "TP-NAN-GRAD has no threshold 'ratio'; its thresholds: "),
    ('thresholds = { "TP-DIVERGE" = { ratio = "2" } }', "TP-DIVERGE.ratio = '2'; expected a finite number"),
    ('thresholds = { "TP-DIVERGE" = { ratio = -2.0 } }', "TP-DIVERGE.ratio = -2.0; expected a number > 0"),
    ('thresholds = { "TP-DIVERGE" = { ratio = true } }', "expected a finite number"),
    ('thresholds = { "TP-DIVERGE" = { ratio = nan } }', "expected a finite number"),
    ('thresholds = { "TP-DIVERGE" = { min_points = 2.5 } }', "expected a whole number like the default 5"),
    ('severity = { "TP-OVERFIT" = "error" }', "expected one of info, warn, fail"),
    ('severity = { "TP-PASS" = "fail" }', "'TP-PASS' is no configurable rule ID"),
    ('[per-path-ignores]\n"x/**" = { rules = ["TP-NAN"], reason = "  " }', "needs a reason"),
    ('[per-path-ignores]\n"x/**" = { rules = ["TP-NAN"], reason = "r", why = "w" }', "unknown key 'why'"),
    ('[per-path-ignores]\n"x/**" = { reason = "r" }', "rules must be a list"),
]


@pytest.mark.parametrize("body,said", BAD)
def test_every_bad_configuration_is_exit_2_with_one_line(project, run_cli, body, said):
    (project / "trainproof.toml").write_text(body + "\n", encoding="utf-8")
    code, out, err = run_cli("epoch", "runs/overfit.json")
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err and said in err, err


def test_unknown_threshold_rule_names_the_valid_ones(project, run_cli):
    (project / "trainproof.toml").write_text('thresholds = { "TP-NOPE" = { x = 1 } }\n', encoding="utf-8")
    code, _, err = run_cli("config")
    assert code == 2 and "rules with thresholds: " in err and "TP-DIVERGE" in err and "TP-OVERFIT" in err


@pytest.mark.parametrize("args,said", [
    (["--config", "missing.toml"], "config file missing.toml does not exist"),
    (["--config", "runs"], "is a directory"),
    (["--config", "pyproject.toml"], "has no [tool.trainproof] table"),
    (["--select", "TP-NOPE"], "--select: 'TP-NOPE' is no configurable rule ID or prefix"),
])
def test_bad_config_options_are_exit_2_with_one_line(project, run_cli, args, said):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    code, out, err = run_cli("epoch", "runs/overfit.json", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and said in err, err


# -- the Python side: overrides live only while judging ------------------------------------


def test_overrides_apply_inside_the_block_only_and_are_restored_on_error():
    run = read_run(OVERFIT, "auto", {})
    cfg = as_config({"thresholds": {"TP-OVERFIT": {"ratio": 1.3}, "TP-EVAL-NEVER-BETTER": {"min_train_fall": 0.8}}})
    rule = catalogue()["TP-OVERFIT"]
    assert judge_run(run).verdict is Verdict.WARN
    with active(cfg):
        assert rule.t("ratio") == 1.3 and judge_run(run).verdict is Verdict.PASS
    assert rule.t("ratio") == 1.2 and judge_run(run).verdict is Verdict.WARN
    with pytest.raises(RuntimeError), active(cfg):
        raise RuntimeError("boom")
    assert rule.t("ratio") == 1.2


def _guardian(config):
    from trainproof.integrations._guardian import Guardian

    run = read_run(OVERFIT, "auto", {})
    g = Guardian("warn", "hf-trainer", "hf-callback", config=config)
    points: dict[float, dict[str, float]] = {}
    for name, ser in run.series.items():
        for step, value in zip(ser.steps.tolist(), ser.values.tolist(), strict=True):
            points.setdefault(step, {})[name] = value
    for step in sorted(points):
        g.metrics.add(step, points[step])
    return g


def test_the_training_callbacks_judge_under_a_config():
    assert _guardian(None).judge().verdict is Verdict.WARN
    rep = _guardian(as_config({"severity": {"TP-OVERFIT": "fail"}})).judge()
    assert rep.verdict is Verdict.FAIL and "TP-OVERFIT" in {f.rule_id for f in rep.findings}


@pytest.mark.parametrize("module", ["trainproof.integrations.hf", "trainproof.integrations.lightning"])
def test_callbacks_take_a_config_and_refuse_a_bad_one_before_training(module, tmp_path):
    pytest.importorskip("transformers" if module.endswith("hf") else "lightning")
    import importlib

    from trainproof.model import InputError

    cls = importlib.import_module(module).TrainproofCallback
    cb = cls(config={"thresholds": {"TP-DIVERGE": {"ratio": 2.0}}})
    assert cb.config.thresholds == {"TP-DIVERGE": {"ratio": 2.0}}
    assert cb._guardian.config is cb.config
    path = tmp_path / "trainproof.toml"
    path.write_text('severity = { "TP-OVERFIT" = "fail" }\n', encoding="utf-8")
    assert cls(config=path).config.severity == {"TP-OVERFIT": "FAIL"}
    with pytest.raises(InputError, match="needs a reason"):
        cls(config={"per-path-ignores": {"runs/**": {"rules": ["TP-NAN"]}}})


@pytest.mark.parametrize("pattern,file,hit", [
    ("runs/legacy/**", "runs/legacy/a/b/trainer_state.json", True),
    ("runs/legacy/", "runs/legacy/a/trainer_state.json", True),
    ("runs/*/trainer_state.json", "runs/a/trainer_state.json", True),
    ("runs/*/trainer_state.json", "runs/a/b/trainer_state.json", False),
    ("runs/**/metrics.csv", "runs/metrics.csv", True),
    ("metrics.csv", "deep/down/metrics.csv", True),
    ("runs/legacy/**", "runs/legacy2/trainer_state.json", False),
    ("runs/legacy/**", "other/runs/legacy/x.json", False),
])
def test_per_path_globs(tmp_path, monkeypatch, pattern, file, hit):
    from trainproof.config import PathIgnore
    from trainproof.selection import path_matches

    monkeypatch.chdir(tmp_path)
    assert path_matches(PathIgnore(pattern, ("TP-NAN",), "why", str(tmp_path)), file) is hit
    assert path_matches(PathIgnore(pattern, ("TP-NAN",), "why", str(tmp_path)), str(tmp_path / file)) is hit


# Spellings of tool.trainproof, each of which must be parsed (#14 pre-check), and documents
# that mention trainproof without it, which need not be.
NAMES_THE_TABLE = [
    '[tool.trainproof]\nignore = []\n', '[ tool . trainproof ]\n', '[tool."trainproof"]\n',
    "[tool.'trainproof'.thresholds]\n", '[[tool.trainproof]]\nx = 1\n', '[tool]\ntrainproof = { select = [] }\n',
    '[tool]\ntrainproof.select = ["TP"]\n', '  [ "tool" ]\n  "trainproof" = {}\n', 'tool.trainproof.select = []\n',
    'tool = { trainproof = {} }\n', 'tool = { x = 1, "trainproof" = {} }\n', '"tool"."trainproof" = {}\n',
    '[tool]\nx = [\n  [1]\n]\ntrainproof = {}\n', '[tool."trainpro\\u006ff"]\n', '[tool.trainproof]\r\nignore = []\r\n',
    '[project]\nname = "x"\n\n[tool]\ntrainproof = {}\n', 'tool . trainproof = {}\n', '[tool]\n\ttrainproof = {}\n',
]
MENTIONS_ONLY = [
    '[project]\nname = "trainproof"\ndependencies = ["trainproof>=0.19", "numpy"]\n',
    '[project.scripts]\ntrainproof = "trainproof.cli:main"\n',
    '[tool.setuptools.package-data]\ntrainproof = ["py.typed"]\n[tool.setuptools.dynamic]\n'
    'version = { attr = "trainproof.__version__" }\n',
    '# trainproof reads [tool.x]\n[project]\nauthors = [{ name = "the trainproof authors" }]\n',
    '[tool.ruff]\nsrc = ["trainproof"]\nper-file-ignores = { "trainproof/x.py" = ["E501"] }\n',
    '[trainproof]\nx = 1\n[tool.x.trainproof]\ny = 2\n', 'nottrainproof = 1\n[tool]\ntrainproofs = 2\n',
    '[project.optional-dependencies]\ndev = ["trainproof[test]"]\n',
]


@pytest.mark.parametrize("text", NAMES_THE_TABLE + MENTIONS_ONLY)
def test_the_pyproject_pre_check_never_passes_over_the_table(text: str) -> None:
    """config._may_name_the_table answers False only for a document without the table
    (tomllib decides which has it); a document it cannot rule out is parsed."""
    import tomllib

    from trainproof.config import _may_name_the_table

    has = "trainproof" in tomllib.loads(text).get("tool", {})
    assert has == (text in NAMES_THE_TABLE), text
    may = _may_name_the_table(text.encode())
    assert may or not has, text
    assert may == (text in NAMES_THE_TABLE), text  # and these mentions are ruled out without parsing


def test_the_projects_own_pyproject_is_passed_over_unparsed(monkeypatch) -> None:
    import tomllib

    from trainproof.config import _may_name_the_table, discover

    data = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_bytes()
    assert b"trainproof" in data and "trainproof" not in tomllib.loads(data.decode()).get("tool", {})
    assert not _may_name_the_table(data)
    monkeypatch.setattr(tomllib, "loads", lambda text: pytest.fail("parsed"))
    assert discover(Path(__file__).resolve().parents[1]) is None
