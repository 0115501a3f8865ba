"""Output formats. Each module renders a finished ReportSet to a string; none of
them judges, prints on its own or exits. `write_outputs` sends them where the
command-line options say."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from trainproof.model import ReportSet
from trainproof.render import github, html, jsonout, junit, sarif, text


def write_outputs(rs: ReportSet, args: argparse.Namespace, out: TextIO) -> None:
    if getattr(args, "json", False):
        out.write(jsonout.render(rs))
    else:
        out.write(text.render(rs))
    if getattr(args, "github", False):
        out.write(github.render(rs))
    for option, module in (("sarif", sarif), ("html", html), ("junit", junit)):
        target = getattr(args, option, None)
        if target:
            Path(target).write_text(module.render(rs), encoding="utf-8")
