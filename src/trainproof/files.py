"""Opening what the user names, safely: stat before open, so a FIFO, a device
(/dev/zero) or a socket is refused with one line instead of hanging or streaming
forever. Every probe and reader that takes a path starts here."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from trainproof.model import InputError


def stat_input(path: Path) -> os.stat_result:
    """The path's stat, or InputError when it does not exist or cannot be read."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot stat: {exc.strerror}") from None


def special_kind(st: os.stat_result) -> str:
    """How to name something that is neither a regular file nor a directory."""
    if stat.S_ISFIFO(st.st_mode):
        return "a FIFO"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "a device"
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    return "a socket or other special file"


def require_regular(path: Path) -> os.stat_result:
    """Stat a path that must be a regular file; anything else is refused, never read."""
    st = stat_input(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: is {special_kind(st)}, not a regular file; never opened")
    return st
