"""`--junit PATH` on every command tells what the exit code tells: failures exactly
when the exit code is 1, an error whenever it is 2, WARN as a passing case with its
finding in system-out, a skipped check as a skipped case. Every file is validated
against tests/fixtures/junit/junit.xsd (the Jenkins/Ant subset trainproof writes)
with xmlschema where it is installed (ci/requirements/core.txt), and its counts are
checked against its elements everywhere."""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from .conftest import FIXTURES, ROOT

XSD = ROOT / "tests" / "fixtures" / "junit" / "junit.xsd"
HEALTHY = FIXTURES / "hf_regression/trainer_state.json"
NONFINITE = FIXTURES / "hf_nonfinite/trainer_state.json"
WARN_LOG = ROOT / "tests/fixtures/textlog/deepspeed/train.log"
PREFERENCE = ROOT / "tests/fixtures/preflight/preference.jsonl"

try:
    import xmlschema
except ImportError:  # the counts and the exit-code promise are still checked below
    xmlschema = None


def _validate(path: Path) -> None:
    if xmlschema is not None:
        xmlschema.XMLSchema(str(XSD)).validate(str(path))


def test_the_xsd_is_used():
    if xmlschema is None:
        pytest.skip("xmlschema is not installed (ci/requirements/core.txt installs it)")
    schema = xmlschema.XMLSchema(str(XSD))
    assert schema.is_valid('<testsuites tests="0" failures="0" errors="0" skipped="0" time="0"/>')
    assert not schema.is_valid("<testsuites/>")  # counts are required
    assert not schema.is_valid('<testsuites tests="1" failures="0" errors="0" skipped="0" time="0">'
                               '<testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="0">'
                               '<testcase name="c" classname="s" time="0"><failure/></testcase>'
                               '</testsuite></testsuites>')  # a failure without a message


def _count(el: ET.Element, tag: str) -> int:
    return sum(1 for case in el.iter("testcase") if case.find(tag) is not None)


def junit(run_cli, tmp_path: Path, *argv) -> tuple[int, ET.Element]:
    """Run a command with --junit; check the file and the exit-code promise."""
    out = tmp_path / "junit.xml"
    code, _, _ = run_cli(*argv, "--junit", out)
    _validate(out)
    root = ET.parse(out).getroot()
    for el in [root, *root.iter("testsuite")]:
        assert int(el.get("tests")) == len(list(el.iter("testcase")))
        assert int(el.get("failures")) == _count(el, "failure")
        assert int(el.get("errors")) == _count(el, "error")
        assert int(el.get("skipped")) == _count(el, "skipped")
    failures, errors = int(root.get("failures")), int(root.get("errors"))
    assert (failures > 0) == (code == 1), (code, failures)
    assert code != 2 or errors > 0
    assert code != 0 or errors == 0
    return code, root


def cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    return {(s.get("name"), c.get("name")): c for s in root.iter("testsuite") for c in s.iter("testcase")}


def test_a_fail_is_a_failure_of_the_check_that_found_it(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "epoch", NONFINITE)
    assert code == 1
    nan = cases(root)[str(NONFINITE), "nan"]
    types = {f.get("type") for f in nan.iter("failure")}
    assert types == {"TP-NAN"} and "TP-NAN-GRAD" in nan.find("failure").get("message")
    assert any(c.find("skipped") is not None for c in root.iter("testcase"))


def test_a_pass_has_passing_and_skipped_cases(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "epoch", HEALTHY)
    assert code == 0 and int(root.get("tests")) > int(root.get("skipped")) > 0
    skipped = [c.find("skipped") for c in root.iter("testcase") if c.find("skipped") is not None]
    assert all(s.get("message") for s in skipped)


def test_a_warn_passes_and_says_so_in_system_out(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "epoch", WARN_LOG)
    assert code == 0
    said = [c.find("system-out").text for c in root.iter("testcase") if c.find("system-out") is not None]
    assert any(t.startswith("[WARN] TP-ZERO-LR-PARTIAL") for t in said)


def test_a_log_that_could_not_be_judged_is_an_error_not_an_empty_green_suite(run_cli, tmp_path):
    log = tmp_path / "short.jsonl"
    log.write_text('{"step": 1, "loss": 1.0}\n')
    code, root = junit(run_cli, tmp_path, "epoch", log)
    assert code == 2
    err = next(c.find("error") for c in root.iter("testcase") if c.find("error") is not None)
    assert "TP-NOT-CHECKED" in err.get("message")


def test_a_missing_input_is_an_error_case(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "epoch", tmp_path / "nope.jsonl")
    assert code == 2
    (case,) = root.iter("testcase")
    assert "no such file" in case.find("error").get("message")


def _short(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"step": 1, "loss": 1.0}\n')
    return path


def test_doctor_skips_what_it_found_but_could_not_judge_beside_a_judged_log(run_cli, tmp_path):
    root_dir = tmp_path / "runs"
    _short(root_dir / "a" / "train.jsonl")
    good = root_dir / "b" / "trainer_state.json"
    good.parent.mkdir(parents=True)
    good.write_bytes(HEALTHY.read_bytes())
    code, root = junit(run_cli, tmp_path, "doctor", root_dir)
    assert code == 0 and int(root.get("errors")) == 0
    short = [c.find("skipped") for (suite, _), c in cases(root).items() if suite.endswith("train.jsonl")]
    assert any(s is not None and "TP-NOT-CHECKED" in s.get("message") for s in short)


def test_doctor_with_nothing_judged_is_an_error(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "doctor", _short(tmp_path / "runs" / "train.jsonl").parent)
    assert code == 2 and int(root.get("errors")) >= 1


def test_doctor_on_every_fixture(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "doctor", ROOT / "tests" / "fixtures")
    assert code == 1
    assert any(s.get("name") == "not judged" for s in root.iter("testsuite"))


def test_compare(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "compare", HEALTHY, FIXTURES / "lightning/metrics.csv",
                       FIXTURES / "jsonl/train_log.jsonl")
    assert code in (0, 1) and len(list(root.iter("testsuite"))) >= 2


def test_preflight_fail_is_a_failure(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "preflight", PREFERENCE)
    assert code == 1
    assert "TP-PRE-EMPTY-TEXT" in {f.get("type") for f in root.iter("failure")}


def test_data_fail_is_a_failure(run_cli, tmp_path):
    pytest.importorskip("soundfile", reason="`data` needs the [speech] extra")
    manifest = tmp_path / "train.jsonl"
    manifest.write_text("".join(json.dumps({"audio_filepath": f"wavs/{i}.wav", "text": "hello there",
                                            "duration": 1.0}) + "\n" for i in range(3)))
    code, root = junit(run_cli, tmp_path, "data", manifest)
    assert code == 1
    assert "TP-DATA-MISSING-AUDIO" in {f.get("type") for f in root.iter("failure")}


def _overlapping_safetensors(path: Path) -> Path:
    header = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 12)
    return path


def test_env_fail_is_a_failure(run_cli, tmp_path):
    code, root = junit(run_cli, tmp_path, "env", "--checkpoint", _overlapping_safetensors(tmp_path / "m.safetensors"))
    assert code == 1
    assert "TP-ENV-CKPT-CORRUPT" in {f.get("type") for f in root.iter("failure")}


def test_env_unreadable_checkpoint_is_an_error(run_cli, tmp_path):
    notes = tmp_path / "notes.pt"
    notes.write_text("hello\n")
    code, root = junit(run_cli, tmp_path, "env", "--checkpoint", notes)
    assert code == 2
    assert any("TP-ENV-CKPT-UNREADABLE" in e.get("message") for e in root.iter("error"))


def test_tokenizer_fail_and_could_not_judge(run_cli, tmp_path):
    pytest.importorskip("tokenizers")
    from .test_tokenizer import corpus, train_bpe, transcripts

    tok = train_bpe(tmp_path / "tokenizer.json")
    rows = [(s, 2.0) for s in corpus(30)] + [("The cat sat on 2023-05-12 at 10:30 \u2603 \u2603.", 2.0)]
    code, root = junit(run_cli, tmp_path, "tokenizer", tok, transcripts(tmp_path / "t.jsonl", rows))
    assert code == 1 and "TP-TOK-HIGH-OOV" in {f.get("type") for f in root.iter("failure")}
    code, root = junit(run_cli, tmp_path, "tokenizer", tmp_path / "nope.json", tmp_path / "t.jsonl")
    assert code == 2


def test_watch_fail_is_a_failure(run_cli, tmp_path):
    log = tmp_path / "train.jsonl"
    rows = [{"step": i, "loss": 2.0 - i / 100} for i in range(1, 40)] + [{"step": 40, "loss": float("nan")}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, root = junit(run_cli, tmp_path, "watch", log, "--interval", "0.1", "--max-duration", "0.3")
    assert code == 1 and "TP-NAN" in {f.get("type") for f in root.iter("failure")}


@pytest.mark.skipif(sys.platform != "linux", reason="file names with control characters and raw bytes")
def test_names_with_characters_xml_forbids_still_parse(run_cli, tmp_path):
    rows = [{"step": i, "loss": 2.0 - i / 100} for i in range(1, 40)] + [{"step": 40, "loss": float("nan")}]
    name = os.fsdecode(b"bell\x07 and \xff byte.jsonl")
    log = tmp_path / name
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, root = junit(run_cli, tmp_path, "epoch", log)
    assert code == 1 and any("\\x07" in s.get("name") for s in root.iter("testsuite"))
