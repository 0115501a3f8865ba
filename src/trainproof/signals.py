"""SIGTERM ends trainproof the way Ctrl-C does: as an exception raised where the
program is, so `watch` can still print its final verdict, report files are never
left half-written (their temporary files are removed on the way out), and the exit
code is one the contract knows. CI runners and `timeout` stop jobs with SIGTERM."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived. A KeyboardInterrupt, so every place that finishes cleanly on
    Ctrl-C finishes the same way on SIGTERM."""


def _raise(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM while finishing up ends it at once
    raise Terminated()


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated (main thread only: elsewhere Python
    cannot install handlers, and the embedding program owns its signals)."""
    try:  # signal itself says where it may install (importing threading costs ~1 ms, #14)
        previous = signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread of the main interpreter
        installed = False
    else:
        installed = True
    if not installed:  # the block runs outside the except clause: its errors chain to nothing
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def interrupt_word(exc: BaseException) -> str:
    return "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
