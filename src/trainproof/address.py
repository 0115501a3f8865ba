"""The `PATH::RUN_ID` address that names one run inside a multi-run store (an MLflow
database, an mlruns/ tree). Kept free of numpy and the parsers so renderers and the
CLI can split an address without importing them."""

from __future__ import annotations

from pathlib import Path

from trainproof.model import InputError

SEPARATOR = "::"


def split_address(text: str) -> tuple[str, str | None]:
    """`PATH::RUN` -> (PATH, RUN). A path that exists as written is never split, so a
    file whose name holds '::' still reads as itself."""
    if SEPARATOR not in text or Path(text).exists():
        return text, None
    path, run = text.rsplit(SEPARATOR, 1)
    if not path or not run:
        raise InputError(f"{text}: expected PATH{SEPARATOR}RUN_ID")
    return path, run


def join_address(path: str, run_id: str) -> str:
    return f"{path}{SEPARATOR}{run_id}"
