"""Start-up stays light: `--version`, `--help`, `rule`/`rules` import neither numpy nor
the judging, parsing or rendering code, and `epoch` on a trainer_state.json imports the
reader, rules and renderer it uses and no other (checked in a fresh interpreter, not
timed); the light declarations they use agree with the code they stand for."""

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
from trainproof.ruledocs import SNAPSHOT, heads, load, load_one, snapshot_of, text_of
from trainproof.rules import base, catalogue, checks
from trainproof.rules.base import LAZY_GROUPS, statements

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
        assert "trainproof.config" not in mods  # nor a configuration: it judges nothing
        assert "trainproof.signals" not in mods  # nor a graceful stop: there is nothing to stop
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
    live = catalogue()
    stale = json.loads(Path(SNAPSHOT).read_text(encoding="utf-8")) != json.loads(
        json.dumps(snapshot_of(live), ensure_ascii=False))
    assert not stale, "rules changed: regenerate with `PYTHONPATH=src python -m trainproof.ruledocs`"
    # laid out as written: one rule a line, its head first (what heads and load_one read)
    assert Path(SNAPSHOT).read_text(encoding="utf-8") == text_of(snapshot_of(live))
    docs = load()
    assert list(docs) == list(live)
    assert heads() == [{"id": r.id, "level": r.level.value, "group": r.group, "title": r.title}
                       for r in live.values()]
    for rid, r in live.items():
        assert rule_text(docs[rid]) == rule_text(r) == rule_text(load_one(rid))
        assert rule_markdown(docs[rid]) == rule_markdown(r) == rule_markdown(load_one(rid))
    assert load_one("TP-NO-SUCH-RULE") is None
    assert rules_markdown(docs) == rules_markdown()


def test_a_snapshot_head_is_read_as_json_reads_it(tmp_path: Path) -> None:
    """ruledocs reads a line's head without decoding the line unless a member holds a
    backslash (an escape: a quote, a control character, a non-BMP character as JSON may
    spell them); either way what it reads is what json.loads reads."""
    rows = [{"id": "TP-A", "level": "FAIL", "group": "g", "title": 'says "quoted" \\ and \t', "x": 1},
            {"id": "TP-B", "level": "WARN", "group": "g\u00e9", "title": "plain, é", "x": [1, "a"]},
            {"id": "TP-C", "level": "INFO", "group": "g", "title": "\ud83d\ude00 \u2028", "x": None}]
    rest = {"summary": "s", "why": "w", "fix": "f", "limits": "", "thresholds": {}, "fires": None, "passes": None}
    rows = json.loads(json.dumps([{**r, **rest} for r in rows]))  # the strings as JSON reads them back
    path = tmp_path / "snapshot.json"
    path.write_text(text_of(rows), encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == rows
    assert heads(str(path)) == [{k: r[k] for k in ("id", "level", "group", "title")} for r in rows]
    assert [load_one(r["id"], str(path)).title for r in rows] == [r["title"] for r in rows]  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="begins with id, level, group, title"):
        text_of([{"level": "FAIL", "id": "TP-A", "group": "g", "title": "t"}])


@pytest.mark.parametrize("argv", [["--help"], ["-h", "epoch"], ["--help", "rules"]])
def test_help_lists_every_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0  # a command word after the help option: still the whole list
    out = capsys.readouterr().out
    for cmd in registry():
        assert cmd.name in out and cmd.help.split()[0] in out


def test_a_parser_for_its_command_alone_parses_and_prints_as_the_whole_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    """cli._main builds no other command's parser for a call whose first word is the
    command (#14): what that call parses, prints and refuses must not change."""
    from trainproof.cli import build_parser
    from trainproof.model import InputError

    commands = registry()
    for cmd in commands:
        calls = [[cmd.name], [cmd.name, "--help"], [cmd.name, "x", "--no-such-option"], [cmd.name, "--version"],
                 [cmd.name, "x", "y", "z"], *([alias, "--json", "x"] for alias in cmd.aliases)]
        for argv in calls:
            seen = []
            for alone in (False, True):
                parser = build_parser(commands, lazy=True, only=cmd, alone=alone)
                try:
                    got: object = vars(parser.parse_args(argv))
                except SystemExit as exc:
                    got = exc.code
                except InputError as exc:
                    got = str(exc)
                seen.append((got, capsys.readouterr()))
            assert seen[0] == seen[1], argv
    for argv in (["--version"], ["--version", "epoch", "x"], ["--version", "--help"], ["--version", "nosuch"]):
        outs = []
        for alone in (False, True):  # --version first: no command's parser at all
            with pytest.raises(SystemExit) as exc:
                build_parser(commands, lazy=True, only=None, alone=alone).parse_args(argv)
            outs.append((exc.value.code, capsys.readouterr()))
        assert outs[0] == outs[1] and "trainproof " in outs[0][1].out, argv
    assert main(["--version"]) == 0  # written without a parser: what argparse's action writes
    assert capsys.readouterr() == outs[0][1] and outs[0][0] == 0


FROZEN = """
import gc, json, sys
from trainproof.cli import main
sys.argv = ["trainproof", *{argv!r}]
code = main({given})
print(json.dumps([code, gc.isenabled(), gc.get_freeze_count()]))
"""


@pytest.mark.parametrize("given", ["None", "sys.argv[1:]"])
def test_the_collector_is_on_again_before_the_work(given: str, tmp_path: Path) -> None:
    """cli._main turns the cyclic collector off while the parser (and with it the command's
    modules) is built, on again before the command runs (#14); what was imported is frozen
    only when main() read the process's own command line, never for a caller's argv."""
    argv = ["epoch", str(GALLERY_STATE), "--json"]
    proc = subprocess.run([sys.executable, "-c", FROZEN.format(argv=argv, given=given)], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
    code, enabled, frozen = json.loads(proc.stdout.splitlines()[-1])
    assert code == 0 and enabled
    assert (frozen > 10000) if given == "None" else (frozen == 0)


def test_a_caller_that_turned_the_collector_off_keeps_it_off(capsys: pytest.CaptureFixture[str]) -> None:
    import gc

    gc.disable()
    try:
        assert main(["rule", "TP-NAN"]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert main(["rule", "TP-NAN"]) == 0 and gc.isenabled()
    assert "TP-NAN" in capsys.readouterr().out


# `epoch` on a small trainer_state.json: the HF reader, the single-run rules, the JSON
# renderer, numpy; nothing a different format, group, output or command needs.
STATE = Path(__file__).resolve().parent / "fixtures" / "vocab" / "scratch_w64" / "trainer_state.json"
GALLERY_STATE = Path(__file__).resolve().parents[1] / "examples" / "gallery" / "healthy" / "trainer_state.json"
EPOCH_LAZY = ("numpy.ma", "orjson", "msgspec", "importlib.metadata", "tomllib", "pkgutil",
              *(f"trainproof.parsers.{m}" for m in ("wandb", "tfevents", "textlog", "clearml", "mlflow", "coqui",
                                                    "csvlog", "jsonl", "incremental")),
              *(f"trainproof.rules.{m}" for names in LAZY_GROUPS.values() for m in names),
              *(f"trainproof.render.{m}" for m in ("text", "github", "sarif", "html", "junit", "svg")),
              *(f"trainproof.probes.{m}" for m in ("audio", "checkpoint", "dataset", "imports", "machine",
                                                   "pickle_scan", "safetensors_scan", "speech", "tokenizer")),
              *(f"trainproof.commands.{m}" for m in ("doctor", "compare", "watch", "preflight", "tokenizer",
                                                     "data", "env", "rules_cmd")))


@pytest.mark.parametrize("state", [STATE, GALLERY_STATE])  # the gallery's: floats of 16-19 digits
def test_epoch_imports_only_what_its_log_needs(state: Path) -> None:
    mods = _imported(["epoch", str(state), "--json"])
    assert {"trainproof.parsers.hf", "trainproof.rules.run", "trainproof.render.jsonout"} <= set(mods)
    lazy = [m for m in mods if any(m == h or m.startswith((h + ".", h + "_")) for h in EPOCH_LAZY)]
    # numpy.ma comes with np.median/np.nanmedian/np.unique's first call: stats.median instead
    assert lazy == [], f"epoch on a trainer_state.json imported {lazy}"


# Standard-library modules `epoch` on a plain trainer_state.json does without (#14): the
# compression modules (a plain log; argparse's shutil would bring them: cli._columns),
# threading (signals asks signal itself), tomllib (no config file to parse). Counted
# from what the call itself imports, so that a .pth file's imports do not count.
NEW = """
import json, sys
before = set(sys.modules)
from trainproof.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted(set(sys.modules) - before)))
"""
EPOCH_STDLIB_LAZY = ("shutil", "gzip", "bz2", "lzma", "zlib", "threading", "tomllib")


def test_epoch_leaves_the_stdlib_it_does_not_need_unimported(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", NEW.format(argv=["epoch", str(STATE), "--json"])],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
    new = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "trainproof.commands.epoch" in new
    assert sorted(set(EPOCH_STDLIB_LAZY) & new) == []


@pytest.mark.parametrize(("argv", "unneeded"), [(["rules"], {"typing", "json", "textwrap"}),
                                                (["rule", "TP-NAN"], {"typing"})])
def test_documentation_imports_only_what_it_prints_with(argv: list[str], unneeded: set[str],
                                                        tmp_path: Path) -> None:
    """`rules` and `rule TP-X` (#14): no typing (trainproof.TYPE_CHECKING); a listing reads
    the snapshot's heads without json and wraps no text. Run without site (-S), whose .pth
    files may import typing."""
    proc = subprocess.run([sys.executable, "-S", "-c", NEW.format(argv=argv)], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
    new = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "trainproof.ruledocs" in new and "TP-NAN" in proc.stdout
    assert sorted(unneeded & new) == []


def test_version_imports_neither_typing_nor_a_help_formatter(tmp_path: Path) -> None:
    """`--version` (#14): no typing (trainproof.TYPE_CHECKING), and no textwrap or locale (it
    is written without a parser). Run without site (-S), whose .pth files may import typing."""
    proc = subprocess.run([sys.executable, "-S", "-c", NEW.format(argv=["--version"])], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
    new = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "trainproof.cli" in new and proc.stdout.startswith("trainproof ")
    assert sorted({"typing", "textwrap", "locale"} & new) == []


@pytest.mark.parametrize("columns", [None, "50", "200", "abc", "-3", "0"])
def test_help_is_as_wide_as_argparse_would_make_it(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from trainproof import cli

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert cli._columns() == shutil.get_terminal_size().columns


def test_lazy_rule_modules_declare_their_groups_only() -> None:
    """checks(G) loads LAZY_GROUPS[G] only: a listed module must not declare another group."""
    catalogue()
    for group, names in LAZY_GROUPS.items():
        mods = {f"trainproof.rules.{n}" for n in names}
        for g in {*base._CHECKS, *LAZY_GROUPS}:
            for c in checks(g):
                assert c.judge.__module__ not in mods or c.group == group, (c.name, group)
        for st in statements().values():
            assert st.where.__module__ not in mods or st.group == group, (st.scope, group)
        for rid, r in catalogue().items():
            assert base._MODULE_OF[rid] not in names or r.group == group, (rid, group)


ORDER = """
import json, sys
from trainproof.rules import base, checks, catalogue
for g in sys.argv[1:]:
    checks(g)
print(json.dumps(list(catalogue())))
"""


def test_catalogue_order_does_not_depend_on_what_was_loaded_first() -> None:
    def order(*first: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-c", ORDER, *first], capture_output=True, text=True,
                              env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
        return json.loads(proc.stdout)

    assert order() == order("tokenizer", "compare", "env") == order("live", "preflight", "data")


def test_rule_modules_are_listed_as_pkgutil_lists_them() -> None:
    import pkgutil

    import trainproof.rules

    assert trainproof.rules.module_names() == [m.name for m in pkgutil.iter_modules(trainproof.rules.__path__)]


def test_declared_formats_match_their_modules() -> None:
    from trainproof.parsers import _DIR_SNIFFS, FORMATS, textlog

    for name, fmt in FORMATS.items():
        module = importlib.import_module(f"trainproof.parsers.{fmt.read.__name__.split('.')[0]}")
        assert name == module.NAME
        assert callable(module.read)
    assert FORMATS["textlog"].head == textlog.HEAD
    for name, sniff_dir in _DIR_SNIFFS.items():
        mod, attr = sniff_dir.__name__.split(".")
        assert callable(getattr(importlib.import_module(f"trainproof.parsers.{mod}"), attr)), name
