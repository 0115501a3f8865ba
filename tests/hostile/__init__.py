"""The hostile-input campaign (issue 12): a seeded generator of malformed and
adversarial inputs for every command and format, a fork-per-case runner that
measures each run, and the oracle that says whether a run was honest."""
