"""Log paths as CI systems want them: relative to the checkout (GitHub's
`$GITHUB_WORKSPACE`, GitLab's `$CI_PROJECT_DIR`, else the working directory), with
'/' separators, so an annotation or a Code Quality entry lands on the file in the
repository. A file outside the checkout keeps its absolute path: there is nothing
in the repository it could point at, and a made-up relative path would be wrong."""

from __future__ import annotations

import os
from pathlib import Path

from trainproof.address import split_address
from trainproof.model import InputError


def checkout(env_var: str) -> Path:
    """The directory named by `env_var` when it is set, else the working directory."""
    where = os.environ.get(env_var) or os.getcwd()
    try:
        return Path(where).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(where))


def relative(file: str, base: Path) -> str:
    """`file` (the PATH of a `PATH::RUN_ID` address) relative to `base`, '/'-joined."""
    try:
        where = Path(split_address(file)[0])
        p = where.resolve()
    except InputError:  # not an address after all (a subject named with a trailing '::')
        p = Path(os.path.abspath(file))
    except (OSError, RuntimeError):  # a symlink loop: as written, made absolute
        p = Path(os.path.abspath(where))
    if p.is_relative_to(base):
        return p.relative_to(base).as_posix() or "."
    return p.as_posix()
