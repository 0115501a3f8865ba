"""trainproof: a deterministic linter for ML training runs.

The Python API (`judge_log`, `compare`, `doctor`, `preflight`, ...) and the report
types (`Report`, `Finding`, `Verdict`, `Level`, ...) are exported from here but
imported on first use (module `__getattr__`), so that `import trainproof` and
`trainproof --version` stay light: no numpy, no parser, until a function is called."""

from __future__ import annotations

# typing.TYPE_CHECKING spelt as type checkers read it, without importing typing (~6 ms of
# `trainproof --version`, #14): they take any name TYPE_CHECKING to be true
TYPE_CHECKING = False

__version__ = "0.19.0"

# name -> the module that defines it
_LAZY = {
    **dict.fromkeys(("judge_log", "judge_metrics", "compare", "compare_runs", "doctor", "preflight",
                     "tokenizer", "data", "env"), "trainproof.api"),
    **dict.fromkeys(("Report", "ReportSet", "Finding", "Verdict", "Level", "Location", "ExitCode",
                     "InputError"), "trainproof.model"),
}
__all__ = ["ExitCode", "Finding", "InputError", "Level", "Location", "Report", "ReportSet", "Verdict",
           "__version__", "compare", "compare_runs", "data", "doctor", "env", "judge_log", "judge_metrics",
           "preflight", "tokenizer"]

if TYPE_CHECKING:
    from typing import Any

    from trainproof.api import (
        compare,
        compare_runs,
        data,
        doctor,
        env,
        judge_log,
        judge_metrics,
        preflight,
        tokenizer,
    )
    from trainproof.model import ExitCode, Finding, InputError, Level, Location, Report, ReportSet, Verdict


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trainproof' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
