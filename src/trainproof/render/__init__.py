"""Output formats. Each module renders a finished ReportSet to a string; none of
them judges, prints on its own or exits. `write_outputs` sends them where the
command-line options say, through `sink` (one format on standard output, report
files written atomically, a closed pipe ended quietly)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import TextIO

from trainproof.model import ReportSet
from trainproof.render import colour, github, gitlab, html, jsonout, junit, sarif, summary, text
from trainproof.render.sink import (
    STDOUT,
    OutputError,
    append_step_summary,
    stdout_format,
    write_report,
    write_stdout,
)


def _json_file(rs: ReportSet) -> str:
    return jsonout.render(replace(rs, streamed=False))  # a file holds one indented document


RENDERERS: dict[str, Callable[[ReportSet], str]] = {
    "text": text.render, "json": jsonout.render, "json_out": _json_file, "json_lines": jsonout.render_lines,
    "sarif": sarif.render, "html": html.render, "junit": junit.render, "gitlab": gitlab.render,
    "github": github.render,
}


_KIND = {"json_out": "json", "sarif": "sarif", "html": "html", "junit": "junit", "gitlab": "gitlab"}


def _text(rs: ReportSet, args: argparse.Namespace) -> str:
    """The text on standard output: the report, or its --statistics / --quiet form."""
    if getattr(args, "statistics", False):
        return summary.render_statistics(rs)
    if getattr(args, "quiet", False):
        return summary.render_quiet(rs)
    return text.render(rs)


def write_outputs(rs: ReportSet, args: argparse.Namespace, out: TextIO) -> None:
    """Standard output first (a closed pipe ends it quietly), then every report file,
    each written whole, then the GitHub job summary; OutputError names the first that
    could not be written, after the others were tried."""
    fmt = stdout_format(args)
    body = _text(rs, args) if fmt == "text" else RENDERERS[fmt](rs)
    if fmt == "text" and colour.wanted(getattr(args, "color", None), out):
        body = colour.paint(body)
    annotations = fmt == "github" or getattr(args, "github", False)
    if fmt == "text" and annotations:
        body += github.render(rs)
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
            append_step_summary(github.summary(rs))
        except OutputError as exc:
            failed.append(str(exc))
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise OutputError(failed[0] + more)
