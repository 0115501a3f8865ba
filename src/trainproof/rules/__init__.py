"""The rule catalogue: every rule trainproof can report, declared once, grouped by
what it judges. Importing this package imports every module in it but those that
base.LAZY_GROUPS lists, which are imported when their group is first asked for
(checks, statements, catalogue); importing a module is what registers its rules (a
new rule group is a new module here, nothing else)."""

import importlib
import os

from trainproof.rules.base import LAZY_GROUPS, Check, Rule, Threshold, catalogue, checks


def module_names() -> list[str]:
    """This package's modules, sorted by name as pkgutil.iter_modules lists them (a
    directory listing: importing pkgutil costs ~2.5 ms of every start-up, #14)."""
    return sorted(n[:-3] for n in os.listdir(__path__[0])
                  if n.endswith(".py") and n != "__init__.py" and n[:-3].isidentifier())


_LAZY = {name for names in LAZY_GROUPS.values() for name in names}
for _name in module_names():
    if _name != "base" and _name not in _LAZY:
        importlib.import_module(f"{__name__}.{_name}")

__all__ = ["Check", "Rule", "Threshold", "catalogue", "checks"]
