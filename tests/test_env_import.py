"""The import probe, against real modules the tests write: each failure mode is
produced for real in a child interpreter and read back from the child's JSON report."""

from __future__ import annotations

import sys
import textwrap

import pytest

from .test_env_support import finding, report, run_env


def _write(tmp_path, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))


def _probe(capsys, tmp_path, module: str, *extra: str) -> tuple[int, dict]:
    code, doc = run_env(capsys, "--module", module, "--cwd", str(tmp_path), *extra)
    return code, report(doc, "import")


def test_clean_module_imports(capsys, tmp_path):
    _write(tmp_path, "train", "import json\nVALUE = 1\n")
    code, rep = _probe(capsys, tmp_path, "train")
    assert rep["verdict"] == "PASS" and code == 0
    f = finding(rep, "TP-ENV-IMPORT-OK")
    assert f["values"]["module"] == "train" and f["values"]["python"] == sys.executable


def test_missing_dependency_names_the_users_line(capsys, tmp_path):
    _write(tmp_path, "train", "import os\nfrom helpers import model\n")
    _write(tmp_path, "helpers", "X = 1\nimport not_installed_dependency_tp\n")
    code, rep = _probe(capsys, tmp_path, "train")
    assert code == 1
    f = finding(rep, "TP-ENV-IMPORT-FAIL")
    assert f["values"]["exc_type"] == "ModuleNotFoundError"
    assert "not_installed_dependency_tp" in f["values"]["message"]
    assert f["values"]["user_frame"] == f"{tmp_path / 'helpers.py'}:2"


def test_multi_line_message_is_kept_whole(capsys, tmp_path):
    _write(tmp_path, "train", """\
        def check():
            raise RuntimeError("CUDA mismatch:\\n  built for 12.1\\n  driver supports 11.8")
        check()
        """)
    code, rep = _probe(capsys, tmp_path, "train")
    f = finding(rep, "TP-ENV-IMPORT-FAIL")
    assert f["values"]["message"] == "CUDA mismatch:\n  built for 12.1\n  driver supports 11.8"
    assert f["values"]["raised_at"] == f"{tmp_path / 'train.py'}:2"
    assert code == 1


def test_error_raised_inside_a_library_points_at_the_users_import(capsys, tmp_path):
    # json.loads raises inside the standard library; the user's own line is the call site
    _write(tmp_path, "train", "import json\nCONFIG = json.loads('{broken')\n")
    _, rep = _probe(capsys, tmp_path, "train")
    f = finding(rep, "TP-ENV-IMPORT-FAIL")
    assert f["values"]["exc_type"] == "json.decoder.JSONDecodeError"
    assert "json" in f["values"]["raised_at"] and f["values"]["raised_at"] != f["values"]["user_frame"]
    assert f["values"]["user_frame"] == f"{tmp_path / 'train.py'}:2"


def test_segfault_is_a_native_crash(capsys, tmp_path):
    _write(tmp_path, "train", "import ctypes\nctypes.string_at(0)\n")
    code, rep = _probe(capsys, tmp_path, "train")
    f = finding(rep, "TP-ENV-IMPORT-CRASH")
    assert f["values"]["signal"] == "SIGSEGV" and f["values"]["returncode"] == -11
    assert "no Python exception" in f["evidence"]
    assert f"{tmp_path / 'train.py'}:2" in f["evidence"]  # faulthandler's last Python line
    assert code == 1


def test_os_exit_is_a_crash_not_an_import_error(capsys, tmp_path):
    _write(tmp_path, "train", "import os\nos._exit(3)\n")
    code, rep = _probe(capsys, tmp_path, "train")
    f = finding(rep, "TP-ENV-IMPORT-CRASH")
    assert f["values"]["returncode"] == 3 and "os._exit" in f["evidence"]
    assert code == 1


def test_abort_is_named_sigabrt(capsys, tmp_path):
    _write(tmp_path, "train", "import os\nos.abort()\n")
    _, rep = _probe(capsys, tmp_path, "train")
    assert finding(rep, "TP-ENV-IMPORT-CRASH")["values"]["signal"] == "SIGABRT"


def test_hang_times_out_and_names_the_line(capsys, tmp_path):
    _write(tmp_path, "train", "import time\nwhile True:\n    time.sleep(0.05)\n")
    code, rep = _probe(capsys, tmp_path, "train", "--import-timeout", "1.5")
    f = finding(rep, "TP-ENV-IMPORT-TIMEOUT")
    assert f["values"]["timeout"] == 1.5
    assert f"{tmp_path / 'train.py'}:" in f["evidence"]
    assert code == 1


def test_sys_exit_during_import_is_reported_as_systemexit(capsys, tmp_path):
    _write(tmp_path, "train", "import sys\nsys.exit('no GPU found')\n")
    _, rep = _probe(capsys, tmp_path, "train")
    f = finding(rep, "TP-ENV-IMPORT-FAIL")
    assert f["values"]["exc_type"] == "SystemExit" and f["values"]["message"] == "no GPU found"


def test_cwd_decides_what_imports(capsys, tmp_path):
    (tmp_path / "proj").mkdir()
    _write(tmp_path / "proj", "train", "X = 1\n")
    code, rep = _probe(capsys, tmp_path, "train")  # probed from the parent: not importable
    assert code == 1 and finding(rep, "TP-ENV-IMPORT-FAIL")["values"]["exc_type"] == "ModuleNotFoundError"
    code, doc = run_env(capsys, "--module", "train", "--cwd", str(tmp_path / "proj"))
    assert report(doc, "import")["verdict"] == "PASS"


def test_missing_cwd_cannot_judge(capsys, tmp_path):
    code, rep = _probe(capsys, tmp_path / "nope", "train")
    assert code == 2 and rep["verdict"] == "NOT-CHECKED"
    finding(rep, "TP-ENV-CWD-MISSING")


def test_unusable_python_cannot_judge(capsys, tmp_path):
    _write(tmp_path, "train", "X = 1\n")
    code, rep = _probe(capsys, tmp_path, "train", "--python", str(tmp_path / "no-python"))
    assert code == 2
    assert "no-python" in finding(rep, "TP-ENV-PYTHON-UNUSABLE")["evidence"]


def test_an_interpreter_that_cannot_run_the_probe(capsys, tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    _write(tmp_path, "train", "X = 1\n")
    code, rep = _probe(capsys, tmp_path, "train", "--python", str(fake))
    assert code == 2 and "did not start the probe" in finding(rep, "TP-ENV-PYTHON-UNUSABLE")["evidence"]


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_bad_timeout_is_a_usage_error(capsys, value):
    from trainproof.cli import main

    assert main(["env", "--module", "x", "--import-timeout", value]) == 2
    assert "import-timeout" in capsys.readouterr().err


def test_the_given_interpreter_is_the_one_probed(capsys, tmp_path):
    """A bare venv lacks this environment's numpy: the same module passes here, fails there."""
    import subprocess

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    _write(tmp_path, "train", "import numpy\n")
    code, rep = _probe(capsys, tmp_path, "train")
    assert code == 0 and rep["verdict"] == "PASS"
    code, rep = _probe(capsys, tmp_path, "train", "--python", str(venv / "bin" / "python"))
    f = finding(rep, "TP-ENV-IMPORT-FAIL")
    assert f["values"]["exc_type"] == "ModuleNotFoundError" and f["values"]["python"].startswith(str(venv))
    assert code == 1
