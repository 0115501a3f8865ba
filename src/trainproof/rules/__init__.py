"""The rule catalogue: every rule trainproof can report, declared once, grouped by
what it judges. Importing this package imports every module in it but those that
base.LAZY_GROUPS lists, which are imported when their group is first asked for
(checks, statements, catalogue); importing a module is what registers its rules (a
new rule group is a new module here, nothing else)."""

import importlib
import pkgutil

from trainproof.rules.base import LAZY_GROUPS, Check, Rule, Threshold, catalogue, checks

_LAZY = {name for names in LAZY_GROUPS.values() for name in names}
for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base" and _mod.name not in _LAZY:
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["Check", "Rule", "Threshold", "catalogue", "checks"]
