"""Start-up stays light: `--version`, `--help`, `rule`/`rules` import neither numpy nor
the judging, parsing or rendering code (checked in a fresh interpreter, not timed), and
the light declarations they use agree with the code they stand for."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainproof.cli import main
from trainproof.commands import registry
from trainproof.docs import rule_markdown, rule_text, rules_markdown
from trainproof.ruledocs import SNAPSHOT, load, snapshot_of

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("numpy", "trainproof.rules", "trainproof.parsers", "trainproof.render", "trainproof.probes",
         "trainproof.engine", "trainproof.commands.epoch", "trainproof.commands.doctor")
PROBE = """
import json, sys
from trainproof.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'trainproof'))))
"""


def _imported(argv: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["rule", "TP-NAN"], ["rules"],
                                  ["rules", "--markdown"], ["nosuchcommand"], []])
def test_light_calls_import_nothing_heavy(argv: list[str]) -> None:
    mods = _imported(argv)
    heavy = [m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == [], f"{argv} imported {heavy}"
    if argv[:1] in (["--version"], ["--help"], ["rule"], ["rules"]):  # documentation needs no model
        assert "trainproof.model" not in mods
    if argv in (["--version"], ["--help"]):  # nothing past the parser: no command
        assert [m for m in mods if m.startswith(("trainproof.model", "trainproof.commands."))] == []


def test_a_judging_call_imports_its_command_only() -> None:
    mods = _imported(["epoch", "/nonexistent/trainer_state.json"])
    assert "trainproof.commands.epoch" in mods
    assert not {"trainproof.commands.preflight", "trainproof.commands.data", "trainproof.commands.env"} & set(mods)


def test_declared_commands_match_their_modules() -> None:
    for cmd in registry():
        mod = importlib.import_module(cmd.module_name)
        assert (cmd.name, cmd.help, cmd.aliases, cmd.log_input) == (
            mod.NAME, mod.HELP, tuple(getattr(mod, "ALIASES", ())), bool(getattr(mod, "LOG_INPUT", False)))


def test_rule_docs_snapshot_is_current() -> None:
    from trainproof.rules import catalogue

    live = catalogue()
    stale = json.loads(Path(SNAPSHOT).read_text(encoding="utf-8")) != json.loads(
        json.dumps(snapshot_of(live), ensure_ascii=False))
    assert not stale, "rules changed: regenerate with `PYTHONPATH=src python -m trainproof.ruledocs`"
    docs = load()
    assert list(docs) == list(live)
    for rid, r in live.items():
        assert rule_text(docs[rid]) == rule_text(r)
        assert rule_markdown(docs[rid]) == rule_markdown(r)
    assert rules_markdown(docs) == rules_markdown()


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in registry():
        assert cmd.name in out and cmd.help.split()[0] in out
