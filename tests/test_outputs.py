"""Where output goes, when the world is hostile to it: one machine format on standard
output (or a refusal before any work), `-` as standard output for every report
option, report files written whole (a full disk, a file-size limit, a directory that
refuses them, two writers at once), and a reader that closes the pipe early."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from trainproof.render.sink import write_report

from .conftest import FIXTURES, ROOT

NONFINITE = FIXTURES / "hf_nonfinite/trainer_state.json"
SRC = str(ROOT / "src")
ENV = {**os.environ, "PYTHONPATH": SRC}


def tp(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=ENV, **kw)


# --- one thing on standard output -------------------------------------------------------

@pytest.mark.parametrize("argv", [["--json", "--github"], ["--sarif", "-", "--github"],
                                  ["--json", "--html", "-"], ["--junit", "-", "--json-out", "-"]])
def test_machine_formats_never_share_stdout(run_cli, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("epoch", NONFINITE, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "standard output" in err
    assert not (tmp_path / "-").exists()


def test_json_out_gives_json_beside_annotations(run_cli, tmp_path):
    code, out, _ = run_cli("epoch", NONFINITE, "--json-out", tmp_path / "r.json", "--github")
    assert code == 1 and "VERDICT: FAIL" in out and "::error file=" in out
    assert json.loads((tmp_path / "r.json").read_text())["worst_verdict"] == "FAIL"


@pytest.mark.parametrize("option,check", [
    ("--html", lambda s: s.startswith("<!DOCTYPE html>") and s.rstrip().endswith("</html>")),
    ("--sarif", lambda s: json.loads(s)["version"] == "2.1.0"),
    ("--junit", lambda s: s.startswith("<testsuites")),
    ("--json-out", lambda s: json.loads(s)["exit_code"] == 1),
])
def test_dash_is_standard_output_for_every_report_option(run_cli, tmp_path, monkeypatch, option, check):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("epoch", NONFINITE, option, "-")
    assert code == 1 and check(out) and "VERDICT" not in out
    assert not (tmp_path / "-").exists()


def test_watch_keeps_its_progress_lines_off_a_machine_format(run_cli, tmp_path):
    code, out, _ = run_cli("watch", NONFINITE, "--interval", "0.1", "--max-duration", "0.3", "--sarif", "-")
    assert code == 1 and json.loads(out)["runs"][0]["results"]  # nothing but the SARIF document


# --- report files, written whole ----------------------------------------------------------

def _quiet_dir(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_dev_full_is_one_line_and_exit_2(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    proc = tp("epoch", NONFINITE, "--sarif", "/dev/full", "--junit", tmp_path / "j.xml")
    assert proc.returncode == 2 and "VERDICT: FAIL" in proc.stdout
    assert proc.stderr.strip().splitlines() == ["trainproof: error: cannot write /dev/full: No space left on device"]
    assert (tmp_path / "j.xml").read_text().startswith("<testsuites")  # the other report is still written


def _limit_file_size() -> None:
    """The full-disk case on a regular path: writes past 64 KiB fail with EFBIG (the
    signal that would kill the process instead is ignored, as a full disk gives ENOSPC)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE and SIGXFSZ")
def test_a_write_that_fails_midway_leaves_no_torn_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    kept = out / "old.sarif"
    kept.write_text('{"earlier": "report"}\n')
    proc = tp("doctor", ROOT / "tests" / "fixtures", "--sarif", out / "new.sarif", "--html", kept,
              preexec_fn=_limit_file_size)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "cannot write" in proc.stderr
    assert _quiet_dir(out) == ["old.sarif"]  # no new file, no temporary file left beside it
    assert kept.read_text() == '{"earlier": "report"}\n'  # the old report is whole, not half-replaced


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_directory_that_refuses_the_file_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        proc = tp("epoch", NONFINITE, "--junit", ro / "j.xml")
    finally:
        ro.chmod(0o755)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "cannot write" in proc.stderr and _quiet_dir(ro) == []


def test_a_directory_as_the_report_path_is_one_line(run_cli, tmp_path):
    code, out, err = run_cli("epoch", NONFINITE, "--html", tmp_path)
    assert code == 2 and "VERDICT: FAIL" in out
    assert err.strip() == f"trainproof: error: cannot write {tmp_path}: is a directory"


def test_modes_and_links_are_kept(tmp_path):
    old = os.umask(0o022)
    try:
        write_report(tmp_path / "new.json", "{}\n")
        assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o644
        (tmp_path / "mine.json").write_text("x")
        os.chmod(tmp_path / "mine.json", 0o600)
        write_report(tmp_path / "mine.json", "{}\n")
        assert stat.S_IMODE(os.stat(tmp_path / "mine.json").st_mode) == 0o600
    finally:
        os.umask(old)
    (tmp_path / "link.json").symlink_to(tmp_path / "mine.json")
    write_report(tmp_path / "link.json", "[1]\n")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "mine.json").read_text() == "[1]\n"


_HAMMER = """
import sys
from trainproof.render.sink import write_report
me, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    write_report(path, '{"writer": "%s", "i": %d, "pad": "%s"}\\n' % (me, i, me * 200_000))
"""


def test_concurrent_writers_never_interleave(tmp_path):
    target = tmp_path / "same.json"
    procs = [subprocess.Popen([sys.executable, "-c", _HAMMER, me, str(target), "40"], env=ENV)
             for me in "ab"]
    seen, torn = set(), []
    while any(p.poll() is None for p in procs):
        try:
            text = target.read_text()
        except FileNotFoundError:
            continue
        try:
            seen.add(json.loads(text)["writer"])
        except ValueError:
            torn.append(len(text))
    assert all(p.wait(timeout=60) == 0 for p in procs)
    assert not torn and json.loads(target.read_text())["writer"] in "ab"
    assert _quiet_dir(tmp_path) == ["same.json"]


def _diverging(path: Path) -> Path:
    rows = [{"step": i, "loss": 2.0 - i / 100} for i in range(1, 40)] + [{"step": 40, "loss": float("nan")}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_two_watches_writing_the_same_reports(tmp_path):
    log = _diverging(tmp_path / "train.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    argv = [sys.executable, "-m", "trainproof", "watch", str(log), "--interval", "0.05", "--max-duration", "1",
            "--json-out", str(out / "same.json"), "--sarif", str(out / "same.sarif")]
    procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [1, 1]
    assert json.loads((out / "same.json").read_text())["worst_verdict"] == "FAIL"
    assert json.loads((out / "same.sarif").read_text())["runs"][0]["results"]
    assert _quiet_dir(out) == ["same.json", "same.sarif"]


# --- a reader that goes away ----------------------------------------------------------------

def _closed_reader(*args: str) -> tuple[int, str]:
    """Run with standard output a pipe whose reader has already gone."""
    read, write = os.pipe()
    os.close(read)
    p = subprocess.Popen([sys.executable, "-m", "trainproof", *args], stdout=write, stderr=subprocess.PIPE,
                         text=True, env=ENV)
    os.close(write)
    _, err = p.communicate(timeout=120)
    return p.returncode, err


@pytest.mark.parametrize("args,code", [
    (["epoch", str(NONFINITE)], 1),
    (["epoch", str(NONFINITE), "--json"], 1),
    (["doctor", str(ROOT / "tests" / "fixtures")], 1),
    (["rules"], 0),
    (["--help"], 0),
])
def test_a_closed_pipe_is_quiet_and_keeps_the_exit_code(args, code):
    got, err = _closed_reader(*args)
    assert got == code and err == "", err


def test_a_closed_pipe_still_writes_the_report_files(tmp_path):
    got, err = _closed_reader("epoch", str(NONFINITE), "--junit", str(tmp_path / "j.xml"))
    assert got == 1 and err == "" and (tmp_path / "j.xml").read_text().startswith("<testsuites")


def test_watch_stops_when_its_reader_goes_away(tmp_path):
    log = _diverging(tmp_path / "train.jsonl")
    t0 = time.monotonic()
    got, err = _closed_reader("watch", str(log), "--interval", "0.1", "--stall-timeout", "0")
    assert got == 1 and err == "" and time.monotonic() - t0 < 60


def test_head_1_through_a_real_shell(tmp_path):
    proc = subprocess.run(["bash", "-o", "pipefail", "-c",
                           f"{sys.executable} -m trainproof doctor {ROOT / 'tests' / 'fixtures'} | head -1"],
                          capture_output=True, text=True, timeout=120, env=ENV)
    assert proc.stdout.count("\n") == 1 and proc.stderr == "" and proc.returncode == 1


# --- signals ----------------------------------------------------------------------------------

def _watch(log: Path, *extra: str) -> subprocess.Popen:
    # A runner started in the background gives its children SIGINT ignored; restore it,
    # as test_watch does, so that both signals are delivered the way a terminal would.
    return subprocess.Popen([sys.executable, "-m", "trainproof", "watch", str(log), "--interval", "0.1", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_sigterm_gives_the_final_verdict_and_its_exit_code(tmp_path):
    p = _watch(_diverging(tmp_path / "train.jsonl"), "--junit", str(tmp_path / "j.xml"))
    first = p.stdout.readline()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert "FAIL - TP-NAN" in first
    assert "terminated (SIGTERM)" in out and "VERDICT: FAIL" in out and err == ""
    assert p.returncode == 1
    assert 'type="TP-NAN"' in (tmp_path / "j.xml").read_text()


def test_sigterm_with_json_ends_with_the_final_document(tmp_path):
    p = _watch(_diverging(tmp_path / "train.jsonl"), "--json")
    first = json.loads(p.stdout.readline())
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=60)
    last = json.loads(out.strip().splitlines()[-1])
    assert first["event"] == "verdict" and last["exit_code"] == 1 == p.returncode


def test_sigterm_before_anything_was_read_is_exit_2(tmp_path):
    p = _watch(tmp_path / "not-yet.jsonl")
    p.stdout.readline()  # "waiting for ..."
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and err.strip().splitlines() == [
        f"trainproof: error: {tmp_path / 'not-yet.jsonl'}: terminated (SIGTERM) before anything could be read"]


def test_sigterm_while_judging_is_one_line_and_exit_2(tmp_path):
    # `env --module` imports a module that sleeps: trainproof is busy judging when the
    # signal comes (the module says when its import began).
    started = tmp_path / "started"
    (tmp_path / "slow.py").write_text(f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(30)\n")
    p = subprocess.Popen([sys.executable, "-m", "trainproof", "env", "--module", "slow", "--cwd", str(tmp_path),
                          "--import-timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=ENV)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and err.strip() == "trainproof: terminated (SIGTERM)" and "Traceback" not in out


def test_the_handler_is_only_installed_while_the_cli_runs(run_cli):
    before = signal.getsignal(signal.SIGTERM)
    run_cli("epoch", NONFINITE)
    assert signal.getsignal(signal.SIGTERM) is before


def test_concurrent_threads_write_whole_files(tmp_path):
    target = tmp_path / "t.json"
    errors: list[BaseException] = []

    def hammer(me: str) -> None:
        try:
            for i in range(30):
                write_report(target, json.dumps({"w": me, "i": i, "pad": me * 50_000}) + "\n")
        except BaseException as exc:  # any failure, reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(c,)) for c in "xyz"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and json.loads(target.read_text())["w"] in "xyz" and _quiet_dir(tmp_path) == ["t.json"]


@pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8")
@pytest.mark.parametrize("argv", [["--json"], ["--github"], ["--sarif", "-"], ["--html", "-"], ["--junit", "-"],
                                  ["--json-out", "-"]])
@pytest.mark.parametrize("encoding", ["utf-8:strict", "ascii"])
def test_an_undecodable_file_name_never_breaks_standard_output(tmp_path, argv, encoding):
    log = _diverging(tmp_path / os.fsdecode(b"run\xff.jsonl"))
    proc = subprocess.run([sys.executable, "-m", "trainproof", "epoch", str(log), *argv], capture_output=True,
                          timeout=120, env={**ENV, "PYTHONIOENCODING": encoding})
    assert proc.returncode == 1 and proc.stderr == b""
    if argv[0] in ("--json", "--sarif", "--json-out"):
        json.loads(proc.stdout)


def test_a_report_never_replaces_the_users_log(run_cli, tmp_path):
    base, run = tmp_path / "base.json", tmp_path / "run.json"
    for p in (base, run):
        p.write_bytes(FIXTURES.joinpath("hf_regression/trainer_state.json").read_bytes())
    before = base.read_bytes()
    code, _, err = run_cli("compare", "--html", base, run)  # --html took the baseline as its PATH
    assert code == 2 and base.read_bytes() == before
    assert len(err.strip().splitlines()) == 1 and "is not an HTML report: not overwritten" in err
    for option in ("--sarif", "--junit", "--json-out"):
        code, _, err = run_cli("epoch", run, option, base)
        assert code == 2 and base.read_bytes() == before and "not overwritten" in err


def test_a_report_replaces_a_report_or_an_empty_file(run_cli, tmp_path):
    for option, name in (("--sarif", "r.sarif"), ("--junit", "r.xml"), ("--json-out", "r.json"), ("--html", "r.html")):
        target = tmp_path / name
        target.touch()
        for _ in range(2):  # an empty file, then the report written the first time
            code, _, err = run_cli("epoch", NONFINITE, option, target)
            assert code == 1 and err == "" and target.stat().st_size > 0


def test_an_empty_report_path_is_refused(run_cli):
    code, out, err = run_cli("epoch", NONFINITE, "--sarif", "")
    assert code == 2 and out == "" and err.strip() == "trainproof: error: --sarif was given an empty PATH"


def test_ctrl_c_while_the_command_is_being_imported_is_one_line(monkeypatch, capsys):
    """An interrupt that lands before the command runs (its modules still importing) is
    answered like one during the run: one line, exit 2, no traceback."""
    from trainproof import cli

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "registry", interrupted)
    assert cli.main(["epoch", "x.jsonl"]) == 2
    assert capsys.readouterr().err.strip() == "trainproof: interrupted"
