"""Standard streams as the CLI uses them. Standard output holds one thing a machine
reads, or the text report (with `--github` annotations, which GitHub reads from the
job log): `--output-format`, `--json` and every report file option given `-` claim it,
and two claims, or a claim beside `--github`, are refused before any work is done (exit
2, one line).
A reader that goes away (`| head -1`) ends the output quietly instead of with a
BrokenPipeError traceback; a stream that cannot be written (a full disk) is one error
line; a closed stderr is not worth a traceback either. Light on purpose: `--version`,
`--help` and `rules` pass through here without the renderers."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from trainproof import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TextIO

STDOUT = "-"
# option attribute -> the flag users type
FILE_OPTIONS = {"json_out": "--json-out", "sarif": "--sarif", "html": "--html", "junit": "--junit",
                "gitlab": "--gitlab"}
# --output-format NAME -> the renderer that holds standard output
OUTPUT_FORMATS = {"text": "text", "json": "json", "json-lines": "json_lines", "sarif": "sarif",
                  "github": "github", "junit": "junit", "gitlab": "gitlab", "html": "html"}


class OutputError(Exception):
    """A report could not be written: one line for the user, exit 2."""


def stdout_format(args: argparse.Namespace) -> str:
    """'text', or the renderer that holds standard output: `--output-format`'s (json,
    json_lines, sarif, github, junit, gitlab, html), `--json`'s, or a file option's given
    `-`; InputError when the options would mix machine output on standard output.
    `--json` is `--output-format json`; `--github` beside the text is annotations after it."""
    empty = [flag for opt, flag in FILE_OPTIONS.items() if getattr(args, opt, None) == ""]
    if empty:  # an unset CI variable (`--sarif "$OUT"`): no report would be written, silently
        _refuse(f"{empty[0]} was given an empty PATH")
    named = getattr(args, "output_format", None)
    claims = [(OUTPUT_FORMATS[named], f"--output-format {named}")] if named else []
    if getattr(args, "json", False) and named != "json":  # the same claim twice is one claim
        claims.append(("json", "--json"))
    claims += [(opt, f"{flag} {STDOUT}") for opt, flag in FILE_OPTIONS.items() if getattr(args, opt, None) == STDOUT]
    if claims and claims[0][0] == "text" and len(claims) > 1:
        _refuse(f"--output-format text and {claims[1][1]} would each write to standard output; "
                "give all but one of them a file path")
    claims = [c for c in claims if c[0] != "text"]
    if claims and claims[0][0] == "github":
        if len(claims) > 1:
            _refuse(f"--output-format github annotations go to standard output, which {claims[1][1]} "
                    "would also write: give it a file path")
        return "github"
    if len(claims) > 1:
        _refuse(f"{' and '.join(c[1] for c in claims)} would each write to standard output; "
                "give all but one of them a file path")
    if claims and getattr(args, "github", False):
        opt, shown = claims[0]
        hint = "--json-out PATH" if opt == "json" else f"{FILE_OPTIONS[opt]} PATH"
        _refuse(f"--github annotations go to standard output, which {shown} holds: "
                f"write that report to a file ({hint}) to use both")
    return claims[0][0] if claims else "text"


def _refuse(why: str) -> None:
    from trainproof.model import InputError  # only when refusing: documentation calls stay light

    raise InputError(why)


def write_stdout(text: str, out: TextIO | None = None) -> None:
    """Write and flush to standard output (or `out`); a reader that closed the pipe
    ends the output quietly. Any other failure (a full disk) is an OutputError."""
    stream = sys.stdout if out is None else out
    try:
        stream.write(printable(text, stream))
        stream.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        silence_stdout()
        raise OutputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def printable(text: str, stream: TextIO) -> str:
    """`text` as the stream can encode it: a character it cannot (an undecodable byte of
    a file name, under a strict UTF-8 or an ASCII locale) is written as an escape, the
    same way report files write it, instead of raising half-way through the output."""
    enc = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(enc)
        return text
    except (UnicodeEncodeError, LookupError):
        return text.encode(enc if enc != "unknown" else "utf-8", "backslashreplace").decode(enc, "replace")


def silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so what is still buffered (and the
    interpreter's last flush) goes nowhere instead of raising again at exit."""
    with contextlib.suppress(OSError, ValueError):  # stdout without a descriptor (captured)
        fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def say(line: str) -> None:
    """One line on stderr."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)
