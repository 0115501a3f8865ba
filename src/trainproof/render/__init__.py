"""Output formats. Each module renders a finished ReportSet to a string; none of
them judges, prints on its own or exits. `write_outputs` sends them where the
command-line options say, through `sink` (one format on standard output, report
files written atomically, a closed pipe ended quietly)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import TextIO

from trainproof.model import ReportSet
from trainproof.render.sink import (
    STDOUT,
    OutputError,
    append_step_summary,
    stdout_format,
    write_report,
    write_stdout,
)


def _module(name: str, function: str = "render") -> Callable[[ReportSet], str]:
    """`render.<name>.<function>`, imported on the first call: a plain `epoch --json` need
    not import the HTML, SARIF (the whole rule catalogue) or JUnit (XML) code."""

    def render(rs: ReportSet) -> str:
        return getattr(importlib.import_module(f"{__name__}.{name}"), function)(rs)

    return render


def _colour() -> ModuleType:
    """render.colour, imported when a text report is written."""
    return importlib.import_module(f"{__name__}.colour")


def _json_file(rs: ReportSet) -> str:
    from trainproof.render import jsonout

    return jsonout.render(replace(rs, streamed=False))  # a file holds one indented document


RENDERERS: dict[str, Callable[[ReportSet], str]] = {
    "text": _module("text"), "json": _module("jsonout"), "json_out": _json_file,
    "json_lines": _module("jsonout", "render_lines"), "sarif": _module("sarif"), "html": _module("html"),
    "junit": _module("junit"), "gitlab": _module("gitlab"), "github": _module("github"),
}


_KIND = {"json_out": "json", "sarif": "sarif", "html": "html", "junit": "junit", "gitlab": "gitlab"}


def _text(rs: ReportSet, args: argparse.Namespace) -> str:
    """The text on standard output: the report, or its --statistics / --quiet form."""
    if getattr(args, "statistics", False):
        return _module("summary", "render_statistics")(rs)
    if getattr(args, "quiet", False):
        return _module("summary", "render_quiet")(rs)
    return RENDERERS["text"](rs)


def write_outputs(rs: ReportSet, args: argparse.Namespace, out: TextIO) -> None:
    """Standard output first (a closed pipe ends it quietly), then every report file,
    each written whole, then the GitHub job summary; OutputError names the first that
    could not be written, after the others were tried."""
    fmt = stdout_format(args)
    body = _text(rs, args) if fmt == "text" else RENDERERS[fmt](rs)
    if fmt == "text" and _colour().wanted(getattr(args, "color", None), out):
        body = _colour().paint(body)
    annotations = fmt == "github" or getattr(args, "github", False)
    if fmt == "text" and annotations:
        body += _module("github")(rs)
    failed: list[str] = []
    try:
        write_stdout(body, out)
    except OutputError as exc:
        failed.append(str(exc))
    for option in _KIND:
        target = getattr(args, option, None)
        if target and target != STDOUT:
            try:
                write_report(target, RENDERERS[option](rs), _KIND[option])
            except OutputError as exc:
                failed.append(str(exc))
    if annotations:
        try:
            append_step_summary(_module("github", "summary")(rs))
        except OutputError as exc:
            failed.append(str(exc))
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise OutputError(failed[0] + more)
