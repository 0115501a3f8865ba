"""The rule catalogue: every rule trainproof can report, declared once, grouped by
what it judges. Importing this package registers them all."""

from trainproof.rules import compare, run, status, timing  # noqa: F401  (registration)
from trainproof.rules.base import Check, Rule, Threshold, catalogue, checks, run_example

__all__ = ["Check", "Rule", "Threshold", "catalogue", "checks", "run_example"]
