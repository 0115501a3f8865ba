"""SARIF that GitHub code scanning accepts. Every file is validated against the
official OASIS schema kept in tests/fixtures/sarif/ (so any clone checks it), with
its `uri` and `uri-reference` formats enforced by an RFC 3986 check written here;
the offline checker in ../shared/tools (GitHub's ingestion rules) runs as well
where that directory exists."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote_to_bytes, urljoin, urlsplit

import pytest

from .conftest import FIXTURES, ROOT, SHARED

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the [test] extra")

SCHEMA = ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"

# RFC 3986, section 3 and appendix A, as one pattern per component.
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|{_PCT})"
_URI_REF = re.compile(
    rf"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):)?"
    rf"(?://(?P<authority>(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|{_PCT}|\[[0-9A-Fa-f:.]+\])*))?"
    rf"(?P<path>(?:{_PCHAR}|/)*)"
    rf"(?:\?(?:{_PCHAR}|[/?])*)?"
    rf"(?:#(?:{_PCHAR}|[/?])*)?$")


def is_uri_reference(value: object) -> bool:
    return not isinstance(value, str) or _URI_REF.match(value) is not None


def is_uri(value: object) -> bool:
    m = _URI_REF.match(value) if isinstance(value, str) else None
    return not isinstance(value, str) or (m is not None and m.group("scheme") is not None)


def validate(path: Path) -> dict:
    """The document, after the schema (formats included) and, where present, the shared
    GitHub-rules checker have accepted it."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    checker = jsonschema.FormatChecker()
    checker.checks("uri")(is_uri)
    checker.checks("uri-reference")(is_uri_reference)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft4Validator(schema, format_checker=checker).iter_errors(doc), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    tool = SHARED / "tools" / "check_sarif.py"
    if tool.exists():
        proc = subprocess.run([sys.executable, str(tool), str(path), str(SCHEMA)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return doc


def test_the_kept_schema_is_the_official_one():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    assert "uri-reference" in SCHEMA.read_text(encoding="utf-8")


@pytest.mark.parametrize("bad", ["a b.jsonl", "a#b#c", "100%.log", "caf\u00e9.csv", "a\\b", "<x>"])
def test_the_uri_check_rejects_what_rfc_3986_does(bad):
    assert not is_uri_reference(bad)
    assert is_uri_reference("runs/a%20b/x%23y.jsonl") and is_uri("file:///tmp/a%20b/")


def test_doctor_sarif_on_the_fixtures_is_valid(run_cli, tmp_path):
    out = tmp_path / "doctor.sarif"
    run_cli("doctor", FIXTURES, "--sarif", out)
    run = validate(out)["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "TP-DIVERGE" in ids and len(ids) == len(set(ids))
    assert run["results"]
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        assert res["partialFingerprints"]["primaryLocationLineHash"]
        uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert not uri.startswith("/") and ".." not in uri.split("/")


def test_doctor_sarif_on_the_corpus(run_cli, tmp_path, corpus):
    out = tmp_path / "doctor.sarif"
    run_cli("doctor", corpus, "--sarif", out)
    run = validate(out)["runs"][0]
    levels = {res["ruleId"]: res["level"] for res in run["results"]}
    assert levels["TP-DIVERGE"] == "error" and levels["TP-GRAD-SPIKE-ISOLATED"] == "note"


def test_relative_paths_inside_cwd_map_to_the_repo(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES.parents[2])
    out = tmp_path / "x.sarif"
    run_cli("epoch", "tests/fixtures/core/hf_nonfinite/trainer_state.json", "--sarif", out)
    run = validate(out)["runs"][0]
    loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "tests/fixtures/core/hf_nonfinite/trainer_state.json"}
    assert "originalUriBaseIds" not in run


def test_could_not_judge_is_a_notification_not_a_result(run_cli, tmp_path):
    log = tmp_path / "short.jsonl"
    log.write_text('{"step": 1, "loss": 1.0}\n')
    out = tmp_path / "nc.sarif"
    code, _, _ = run_cli("epoch", log, "--sarif", out)
    run = validate(out)["runs"][0]
    assert code == 2 and run["results"] == []
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes and "TP-NOT-CHECKED" in notes[0]["message"]["text"]


NASTY = ["with space", "hash#mark", "100%", "caf\u00e9 \u65e5\u672c", "colon:first", "q?mark", "[brackets]"]
if sys.platform == "linux":
    NASTY.append(os.fsdecode(b"bytes\xff\xfe"))  # not UTF-8: kept exact through os.fsencode


def _nan_log(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"step": i, "loss": 2.0 - i / 100} for i in range(1, 40)] + [{"step": 40, "loss": "NaN"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("name", NASTY)
def test_a_fail_on_any_path_is_a_valid_uri_inside_the_working_directory(run_cli, tmp_path, monkeypatch, name):
    log = _nan_log(tmp_path / name / f"{name}.jsonl")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.sarif"
    code, _, _ = run_cli("epoch", log.relative_to(tmp_path), "--sarif", out)
    assert code == 1
    run = validate(out)["runs"][0]
    uri = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert unquote_to_bytes(uri) == os.fsencode(f"{name}/{name}.jsonl")  # the same file, byte for byte


@pytest.mark.parametrize("name", NASTY)
def test_a_fail_outside_the_working_directory_resolves_through_its_base(run_cli, tmp_path, monkeypatch, name):
    log = _nan_log(tmp_path / "logs" / name / "train.jsonl")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    out = tmp_path / "r.sarif"
    assert run_cli("epoch", log, "--sarif", out)[0] == 1
    run = validate(out)["runs"][0]
    loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    base = run["originalUriBaseIds"][loc["uriBaseId"]]["uri"]
    full = urlsplit(urljoin(base, loc["uri"]))
    assert full.scheme == "file" and unquote_to_bytes(full.path) == os.fsencode(log)


def _growing(path: Path, n: int) -> Path:
    """A loss that falls, then climbs for good (TP-DIVERGE's evidence and TP-NAN's step
    move as the log grows), ending in NaN (n > 0) or with only a NaN eval loss (n < 0)."""
    rows = []
    for i in range(1, abs(n) + 1):
        rows.append({"step": i, "loss": 3.0 - i * 0.05 if i <= 20 else 2.0 + (i - 20) * 0.2})
        if i % 10 == 0:
            # the last evaluation NaN: an eval loss that ends non-finite is TP-NAN's (one finite
            # again afterwards would be TP-EVAL-NAN-TRANSIENT's); it moves, as a real one does
            # (one identical at every evaluation is TP-EVAL-LOSS-FROZEN's), and climbs a little
            # with the training loss, as a diverging model's does (one that improved after the
            # training floor would make the climb TP-TRAIN-RISE-EVAL-FELL's, and one that never beat
            # its first evaluation TP-EVAL-NEVER-BETTER's: it falls with the loss, then climbs)
            ev = 2.5 - 0.01 * i if i <= 20 else 2.3 + (i - 20) * 0.002
            rows.append({"step": i, "eval_loss": float("nan") if i == -n else ev})
    if n > 0:
        rows.append({"step": n + 1, "loss": float("nan")})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _prints(run_cli, log: Path, out: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(rule, metric) -> (fingerprint, message) for every result."""
    run_cli("epoch", log, "--sarif", out)
    results = validate(out)["runs"][0]["results"]
    prints = {(r["ruleId"], r["properties"]["values"].get("metric", "")):
              (r["partialFingerprints"]["primaryLocationLineHash"], r["message"]["text"]) for r in results}
    assert len(prints) == len(results)
    return prints


def test_fingerprints_hold_while_the_log_grows(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "train.jsonl"
    early = _prints(run_cli, _growing(log, 60), tmp_path / "a.sarif")
    late = _prints(run_cli, _growing(log, 120), tmp_path / "b.sarif")
    assert early.keys() == late.keys() == {("TP-NAN", "loss"), ("TP-DIVERGE", "")}
    assert "(step 61)" in early["TP-NAN", "loss"][1] and "(step 121)" in late["TP-NAN", "loss"][1]
    assert early["TP-DIVERGE", ""][1] != late["TP-DIVERGE", ""][1]
    for key in early:
        assert early[key][0] == late[key][0], key
    other = _prints(run_cli, _growing(log, -60), tmp_path / "c.sarif")
    assert other["TP-NAN", "eval_loss"][0] != early["TP-NAN", "loss"][0]  # another metric, another alert
    assert other["TP-DIVERGE", ""][0] == early["TP-DIVERGE", ""][0]


def test_a_finding_on_a_symlink_loop_still_gets_a_location(tmp_path, monkeypatch):
    from trainproof.model import Finding, Level, Location, Report, ReportSet
    from trainproof.render import sarif

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    monkeypatch.chdir(tmp_path)
    f = Finding("TP-NAN", Level.FAIL, "m", "e", {}, Location(str(tmp_path / "loop" / "x.jsonl"), 3.0))
    doc = sarif.document(ReportSet("epoch", (Report(str(tmp_path / "loop"), "jsonl", (f,), ran=("nan",)),)))
    out = tmp_path / "r.sarif"
    out.write_text(json.dumps(doc))
    uri = validate(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "loop/x.jsonl"
