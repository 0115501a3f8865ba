"""Progress for long work (doctor over many logs), on standard error and only when it is
a terminal: one line rewritten in place (`[12/300] judging runs/a/trainer_state.json`),
erased when the work ends. A pipe, a file or a CI log never sees it, so standard output
and captured stderr stay exactly what the contracts say."""

from __future__ import annotations

import contextlib
import sys

MIN_ITEMS = 20  # fewer logs than this finish before a progress line would help
_WIDTH = 79


class Progress:
    def __init__(self, total: int) -> None:
        self.total = total
        try:
            self.on = total >= MIN_ITEMS and sys.stderr.isatty()
        except (AttributeError, ValueError):
            self.on = False

    def step(self, i: int, what: str) -> None:
        if self.on:
            line = f"[{i}/{self.total}] judging {what}"
            self._write("\r" + line[:_WIDTH].ljust(_WIDTH))

    def done(self) -> None:
        if self.on:
            self._write("\r" + " " * _WIDTH + "\r")

    @staticmethod
    def _write(text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(text)
            sys.stderr.flush()
