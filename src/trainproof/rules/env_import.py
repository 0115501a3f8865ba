"""The import probe's rules (`trainproof env --module`): did the training module import
in a child process of the given interpreter, from the given directory - and if not,
whether it raised, crashed the interpreter, hung, or could not be probed at all.
probes/imports.py measures; the verdicts are declared here."""

from __future__ import annotations

from trainproof.model import Finding, Level, Location
from trainproof.probes.imports import ImportResult
from trainproof.rules.base import Example, Threshold, check, rule
from trainproof.rules.env import G

IMPORT_OK = rule(
    id="TP-ENV-IMPORT-OK", level=Level.PASS, group=G,
    title="The training module imports.",
    evidence="{module} imported in {seconds:.1f} s with {python} (Python {version}) from {cwd}",
    summary="The module was imported in a child process of the given interpreter, from the given directory.",
    why="Says which interpreter and directory were probed, so the PASS is not read as covering another.",
    fix="Nothing to fix.",
    fires=Example({"kind": "import", "outcome": "imported"}),
    passes=Example({"kind": "import", "outcome": "raised", "exc_type": "ImportError"}),
)

IMPORT_FAIL = rule(
    id="TP-ENV-IMPORT-FAIL", level=Level.FAIL, group=G,
    title="The training module cannot be imported - this run cannot start.",
    evidence="{exc_type}: {message} (raised at {raised_at}; your code: {user_frame})",
    summary="Importing the module raised a Python exception; the message is reported whole, "
    "multi-line included, with the innermost frame and the innermost frame in your own tree.",
    why="A run that cannot import fails at minute zero, usually after the job waited in a queue.",
    fix="Fix the import at the named line: pin the dependency version the code expects, "
    "install what is missing, or run from the directory training launches from (--cwd).",
    limits="Only the import is probed; code under `if __name__ == '__main__'` is not run.",
    fires=Example({"kind": "import", "outcome": "raised", "exc_type": "ModuleNotFoundError"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

IMPORT_CRASH = rule(
    id="TP-ENV-IMPORT-CRASH", level=Level.FAIL, group=G,
    title="Importing the training module crashed the interpreter (native crash, no Python exception).",
    evidence="{detail}; last Python line: {raised_at} (your code: {user_frame})",
    summary="The child died without raising: a signal (SIGSEGV, SIGABRT, ...) or an exit that "
    "bypassed Python's exception handling (os._exit, a native library calling exit()).",
    why="A native crash in an extension (a CUDA, BLAS or tokenizer build for another ABI) takes "
    "the whole training process down with no traceback to read.",
    fix="Reinstall the extension built for this Python/CUDA; the last Python line names the "
    "import that loaded it.",
    fires=Example({"kind": "import", "outcome": "crashed", "returncode": -11}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

IMPORT_TIMEOUT = rule(
    id="TP-ENV-IMPORT-TIMEOUT", level=Level.FAIL, group=G,
    title="Importing the training module did not finish in time.",
    evidence="{detail} (--import-timeout {timeout:g} s); stuck at {raised_at} (your code: {user_frame})",
    summary="The import was still running when the timeout expired; the child and its process "
    "group were killed.",
    why="Imports that block (a network call, a lock, a dataset download at import time) stall "
    "every launch, and on a cluster they burn the allocation.",
    fix="Move work out of module scope; raise --import-timeout if the import is legitimately slow.",
    thresholds={"timeout": Threshold(120, "s", "Heavy stacks (torch + transformers + CUDA init) "
                                     "import in 5-30 s; 120 s is far past any healthy import.")},
    fires=Example({"kind": "import", "outcome": "timeout"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

PYTHON_UNUSABLE = rule(
    id="TP-ENV-PYTHON-UNUSABLE", level=Level.NOT_CHECKED, group=G,
    title="The interpreter could not run the import probe.",
    evidence="{detail}",
    summary="--python does not exist, is not executable, or exited before the probe started; exit 2.",
    why="Nothing was learned about the module, so neither PASS nor FAIL is honest.",
    fix="Pass the interpreter training uses: --python /path/to/venv/bin/python.",
    fires=Example({"kind": "import", "outcome": "python-unusable"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)

CWD_MISSING = rule(
    id="TP-ENV-CWD-MISSING", level=Level.NOT_CHECKED, group=G,
    title="The working directory for the import probe does not exist.",
    evidence="{detail}",
    summary="--cwd names no directory; the import was not attempted; exit 2.",
    why="Imports resolve relative to the working directory; probing from elsewhere would "
    "report a missing module that imports fine where training launches.",
    fix="Pass the directory training is launched from.",
    fires=Example({"kind": "import", "outcome": "cwd-missing"}),
    passes=Example({"kind": "import", "outcome": "imported"}),
)


def _import_loc(r: ImportResult) -> Location:
    where = r.user_frame or r.raised_at
    file, _, line = where.rpartition(":")
    if file and line.isdigit():
        return Location(file, line=int(line))
    return Location(r.file or r.cwd)


@check("import", IMPORT_OK, IMPORT_FAIL, IMPORT_CRASH, IMPORT_TIMEOUT, PYTHON_UNUSABLE, CWD_MISSING)
def import_outcome(r: ImportResult) -> list[Finding]:
    loc = _import_loc(r)
    common = dict(module=r.module, python=r.python, cwd=r.cwd)
    if r.outcome == "imported":
        return [IMPORT_OK.finding(loc, seconds=r.seconds, version=r.python_version or "?", **common)]
    if r.outcome == "raised":
        return [IMPORT_FAIL.finding(loc, exc_type=r.exc_type, message=r.message,
                                    raised_at=r.raised_at or "?", user_frame=r.user_frame or "none found",
                                    **common)]
    if r.outcome == "crashed":
        return [IMPORT_CRASH.finding(loc, detail=r.detail, raised_at=r.raised_at or "unknown",
                                     user_frame=r.user_frame or "none found",
                                     returncode=r.returncode, signal=r.signal or None, **common)]
    if r.outcome == "timeout":
        return [IMPORT_TIMEOUT.finding(loc, detail=r.detail, timeout=r.seconds,
                                       raised_at=r.raised_at or "unknown",
                                       user_frame=r.user_frame or "none found", **common)]
    rule_ = CWD_MISSING if r.outcome == "cwd-missing" else PYTHON_UNUSABLE
    return [rule_.finding(loc, detail=r.detail, **common)]
