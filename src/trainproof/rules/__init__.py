"""The rule catalogue: every rule trainproof can report, declared once, grouped by
what it judges. Importing this package imports every module in it, which is what
registers the rules (a new rule group is a new module here, nothing else)."""

import importlib
import pkgutil

from trainproof.rules.base import Check, Rule, Threshold, catalogue, checks

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base":
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["Check", "Rule", "Threshold", "catalogue", "checks"]
