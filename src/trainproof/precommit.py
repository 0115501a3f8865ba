"""`python -m trainproof.precommit COMMAND FILE...`: what the pre-commit hooks run
(.pre-commit-hooks.yaml). pre-commit hands a hook every matching file at once, and the
log commands judge one log per call, so each file is judged by the CLI in turn and the
exit codes are combined as CONTRACTS.md combines reports: any FAIL is 1, else any
could-not-judge is 2, else 0."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trainproof.cli import main as cli_main

COMMANDS = ("epoch",)  # the log commands that take one LOG per call


def combined(codes: Sequence[int]) -> int:
    """1 if any FAIL, else 2 if any input could not be judged, else 0 (none given: 2)."""
    if not codes:
        return 2
    if 1 in codes:
        return 1
    return 2 if any(c != 0 for c in codes) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Options before the files are given to every call: `epoch --vocab-size 50257 A B`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        print(f"trainproof.precommit: error: expected one of {', '.join(COMMANDS)} and files", file=sys.stderr)
        return 2
    command, rest = args[0], args[1:]
    split = next((i for i, a in enumerate(rest) if not a.startswith("-") and (i == 0 or not _takes_value(rest[i - 1]))),
                 len(rest))
    options, files = rest[:split], rest[split:]
    return combined([cli_main([command, f, *options]) for f in files])


def _takes_value(option: str) -> bool:
    """The options of `epoch` that take a value (a file must not be read as one)."""
    return option in ("--vocab-size", "--format", "--map", "--sarif", "--junit", "--json-out") and "=" not in option


if __name__ == "__main__":
    sys.exit(main())
