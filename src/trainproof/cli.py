"""Command line: argparse built from the command registry; main(argv) -> exit code.
The only place that prints results and decides the process exit status.

Start-up is kept light: only the command being run is imported and given its
arguments (the others are listed by their declared help alone), and the model,
the renderers and numpy are imported after the arguments are parsed, so that
`--version`, `--help` and `rules` never pay for what judging needs."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Sequence

from trainproof import TYPE_CHECKING, __version__
from trainproof.commands import Command, registry
from trainproof.stdio import OUTPUT_FORMATS, OutputError, say, write_stdout

if TYPE_CHECKING:
    from trainproof.model import ReportSet

_OK, _CANNOT_JUDGE = 0, 2  # model.ExitCode's values, for the paths that do not import the model


def _columns() -> int:
    """The width argparse lays help out for, as shutil.get_terminal_size() gives it:
    $COLUMNS when a positive number, else the terminal's, else 80. Asked here because
    argparse imports shutil for it on every parser built, and shutil its compression
    modules: ~3 ms of every start-up, help or not (#14)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, closed, or not a terminal
        return 80


class _Parser(argparse.ArgumentParser):
    def _get_formatter(self) -> argparse.HelpFormatter:
        # the width argparse's own default gives (the columns less 2), without shutil
        return self.formatter_class(prog=self.prog, width=_columns() - 2)

    def error(self, message: str) -> None:  # type: ignore[override]
        from trainproof.model import InputError

        where = self.prog.removeprefix("trainproof").strip()
        raise InputError(f"{where}: {message}" if where else message)


def _map_pair(text: str) -> tuple[str, str]:
    canon, sep, col = text.partition("=")
    if not sep or not canon.strip() or not col.strip():
        raise argparse.ArgumentTypeError(f"expected CANONICAL=COLUMN, got {text!r}")
    return canon.strip(), col.strip()


def _add_shared(p: argparse.ArgumentParser, cmd: Command) -> None:
    out = p.add_argument_group("output", "Report files are written whole (a temporary file renamed "
                               "over PATH). A PATH of '-' is standard output, instead of the text report.")
    out.add_argument("--json", action="store_true",
                     help="print JSON (schema_version 3); watch prints one line per verdict change")
    out.add_argument("--json-out", metavar="PATH", help="also write the --json document to PATH")
    out.add_argument("--sarif", metavar="PATH", help="also write SARIF 2.1.0 for code scanning")
    out.add_argument("--html", metavar="PATH", nargs="?", const="trainproof-report.html",
                     help="also write a self-contained HTML report (default trainproof-report.html)")
    out.add_argument("--github", action="store_true",
                     help="also print GitHub Actions workflow annotations (not beside a machine "
                     "format on standard output)")
    out.add_argument("--junit", metavar="PATH", help="also write a JUnit XML report")
    out.add_argument("--gitlab", metavar="PATH", help="also write a GitLab Code Quality report (JSON)")
    out.add_argument("--output-format", choices=list(OUTPUT_FORMATS), metavar="FORMAT",
                     help="what standard output holds: " + "|".join(OUTPUT_FORMATS) + " (default text; "
                     "--json is json, --github adds annotations after the text)")
    out.add_argument("-q", "--quiet", action="store_true",
                     help="text: one line per report that did not PASS, nothing on PASS")
    out.add_argument("--statistics", action="store_true",
                     help="text: count the findings per rule ID instead of listing them")
    out.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                     help="colour the verdicts in the text report: auto (default: on a terminal, "
                     "unless NO_COLOR is set or FORCE_COLOR asks for it), always, never")
    gate = p.add_argument_group("exit code", "0 pass, 1 FAIL, 2 could not judge (see CONTRACTS.md)")
    gate.add_argument("--exit-zero", action="store_true",
                      help="exit 0 even when a report FAILs; could-not-judge still exits 2")
    gate.add_argument("--fail-on", choices=["fail", "warn"], default="fail",
                      help="the verdict that exits 1: fail (default), or warn (WARN exits 1 too)")
    from trainproof.config_args import add_arguments as add_config_arguments

    add_config_arguments(p)
    if cmd.log_input:
        from trainproof.parsers import FORMATS

        p.add_argument("--format", default="auto", choices=["auto", *FORMATS],
                       help="log format (default: sniffed from name and content)")
        p.add_argument("--map", action="append", default=[], type=_map_pair,
                       metavar="CANONICAL=COLUMN", help="name a metric's column (repeatable)")


def build_parser(commands: Sequence[Command], lazy: bool = False,
                 only: Command | None = None, alone: bool = False) -> argparse.ArgumentParser:
    """The whole CLI; `lazy` gives arguments to `only` alone (or to no command) and lists
    the others by name and help without importing their modules: all that parsing needs.
    `alone` leaves the others out (all of them, without `only`): for a call whose first word
    names `only` or is --version, where nothing parsed or printed lists them (the top-level
    help and the invalid-choice error need another first word); each parser argparse
    builds asks gettext for its words, ~0.3 ms each at start-up (#14)."""
    parser = _Parser(prog="trainproof", description="A deterministic linter for ML training runs.")
    parser.add_argument("--version", action="version", version=f"trainproof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for cmd in commands:
        if alone and cmd is not only:
            continue
        p = sub.add_parser(cmd.name, aliases=list(cmd.aliases), help=cmd.help, description=cmd.help)
        if not lazy or cmd is only:
            cmd.add_arguments(p)
            _add_shared(p, cmd)
        p.set_defaults(_cmd=cmd)
    return parser


def _called(commands: Sequence[Command], argv: Sequence[str]) -> Command | None:
    """The command a call names: the top level takes no option with a value, so its
    first word that is not an option is the command (None: no command, or an unknown one)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return next((c for c in commands if word == c.name or word in c.aliases), None)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while the command's code is still being imported
        say("trainproof: interrupted")
        return _CANNOT_JUDGE
    with contextlib.suppress(OutputError):  # said already, where the output was written
        write_stdout("")  # what is still buffered (help, documentation), to a reader that may have gone
    return code


def _main(argv: Sequence[str] | None) -> int:
    whole_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # what argparse's version action writes, without a parser (#14)
        with contextlib.suppress(AttributeError, OSError):  # as argparse writes it
            sys.stdout.write(f"trainproof {__version__}\n")
        return _OK
    commands = registry()
    only = _called(commands, argv)
    alone = bool(argv) and (argv[0] == "--version" or (only is not None and argv[0] in (only.name, *only.aliases)))
    # Building the parser imports the command's module, and with it numpy, the readers and
    # the rules: ~35k objects that live as long as the process, where the cyclic collector
    # finds next to nothing to free (~400 objects); its ~50 passes over them cost ~20 ms of
    # `epoch` on a small log (#14). Off while they are imported, on again (unless the caller
    # had it off) before any work; and when this process is the command (argv from its
    # command line, not a caller's list), they are frozen: no later pass looks at them again.
    collecting = gc.isenabled()
    gc.disable()
    try:
        parser = build_parser(commands, lazy=True, only=only, alone=alone)
    finally:
        if whole_process:
            gc.freeze()
        if collecting:
            gc.enable()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help / --version: done before the model is imported
        return int(exc.code or 0)
    except Exception as exc:
        from trainproof.model import ExitCode, InputError

        if not isinstance(exc, InputError):  # _Parser.error raises InputError, nothing else is expected
            raise
        print(f"trainproof: error: {exc}", file=sys.stderr)
        return int(ExitCode.CANNOT_JUDGE)
    if getattr(args, "_cmd", None) is None:
        from trainproof.model import ExitCode

        parser.print_help(sys.stderr)
        return int(ExitCode.CANNOT_JUDGE)
    cmd: Command = args._cmd
    if hasattr(args, "map"):
        args.map = dict(args.map)
    if getattr(args, "output_format", None) == "json":
        args.json = True  # one spelling for the commands that stream JSON (watch)
    if not getattr(cmd.module, "JUDGES", True):  # documentation: nothing to stop gracefully
        return _run(cmd, args)
    from trainproof.signals import sigterm_interrupts

    with sigterm_interrupts():
        return _run(cmd, args)


def _interrupt_word(exc: BaseException) -> str:
    from trainproof.signals import interrupt_word

    return interrupt_word(exc)


def _run(cmd: Command, args: argparse.Namespace) -> int:
    """Run the command and emit its result; every way out is an exit code and at most
    one line on stderr. The model is imported only for a result that needs it."""
    from trainproof.stdio import stdout_format

    try:
        fmt = stdout_format(args)  # refused before any work: machine formats never share stdout
    except Exception as exc:  # InputError, the only one it raises
        say(f"trainproof: error: {exc}")
        return _CANNOT_JUDGE
    if getattr(args, "statistics", False) and fmt != "text":
        say("trainproof: error: --statistics replaces the text report, but standard output holds "
            f"{fmt.replace('_', '-')}: write that report to a file to use both")
        return _CANNOT_JUDGE
    try:
        result = _judged(cmd, args)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (watch turns both into its final verdict)
        say(f"trainproof: {_interrupt_word(exc)}")
        return _CANNOT_JUDGE
    except Exception as exc:  # the contract: an internal error is exit 2 and one line
        from trainproof.model import InputError, ReportSet

        why = str(exc) if isinstance(exc, InputError) else f"internal error: {type(exc).__name__}: {exc}"
        result = ReportSet(cmd.name, error=why)
    try:
        if isinstance(result, str):  # documentation (`rules`)
            write_stdout(result if result.endswith("\n") else result + "\n")
            return _OK
        return _emit(result, args)
    except OutputError as exc:
        say(f"trainproof: error: {exc}")
        return _CANNOT_JUDGE
    except KeyboardInterrupt as exc:
        say(f"trainproof: {_interrupt_word(exc)} while writing the reports")
        return _CANNOT_JUDGE


def _judged(cmd: Command, args: argparse.Namespace) -> ReportSet | str:
    """Run the command under its configuration (config.resolve); the report set says
    what it was judged against. Documentation commands (JUDGES = False) read none."""
    if not getattr(cmd.module, "JUDGES", True):
        return cmd.run(args)
    from dataclasses import replace

    from trainproof.config import active, resolve

    cfg = resolve(args)
    with active(cfg):
        result = cmd.run(args)
    return result if isinstance(result, str) else replace(result, config=cfg.summary())


def _emit(rs: ReportSet, args: argparse.Namespace) -> int:
    from trainproof.model import ExitCode
    from trainproof.render import write_outputs

    try:
        write_outputs(rs, args, sys.stdout)
    except OutputError as exc:
        say(f"trainproof: error: {rs.error}; and {exc}" if rs.error else f"trainproof: error: {exc}")
        return int(ExitCode.CANNOT_JUDGE)
    if rs.error is not None:
        say(f"trainproof: error: {rs.error}")
    return int(rs.gated_exit_code(getattr(args, "fail_on", "fail"), getattr(args, "exit_zero", False)))
