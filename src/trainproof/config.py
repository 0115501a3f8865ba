"""Configuration: `[tool.trainproof]` in pyproject.toml or a `trainproof.toml`, read
and validated into one frozen `Config`, and where each value came from.

Owns finding the file (upward from the working directory, stopping at a directory
that holds `.git` or at the filesystem root), the keys and their validation (every
error is an InputError of one line: exit 2), and which rules a config selects.
Applying a config is done while judging: `active(cfg)` puts it in a context the
engine reads (trainproof.screen) and lends its thresholds to `Rule.t`, and restores
both on the way out; nothing is changed for the process.

Kept light: the rule catalogue is imported only when a file is validated, so
commands that read no configuration never pay for it."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import field
from pathlib import Path
from typing import Any

from trainproof.frozen import FACTORY, NamedTuple, record

FILES = ("trainproof.toml", "pyproject.toml")  # looked for in this order in each directory
KEYS = ("select", "extend-select", "ignore", "severity", "thresholds", "per-path-ignores")
SEVERITIES = {"info": "INFO", "warn": "WARN", "fail": "FAIL"}
DEFAULT = "default"
COMMAND_LINE = "command line"
_set = object.__setattr__


class PathIgnore(NamedTuple):
    """A per-path ignore from the configuration: these rules, on files the pattern matches."""

    pattern: str  # as written
    rules: tuple[str, ...]  # rule IDs or prefixes
    reason: str
    root: str  # the directory the pattern is relative to (the config file's)


@record()
class Config:
    """The effective configuration. `origin` says where each key's value came from:
    "default", a file path, or "command line"."""

    source: str | None = None  # the file read, None when none was (or --isolated)
    isolated: bool = False
    select: tuple[str, ...] = ("TP",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, str] = field(default_factory=dict)  # rule ID -> Level value
    thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    per_path_ignores: tuple[PathIgnore, ...] = ()
    origin: Mapping[str, str] = field(default_factory=dict)
    cli_select: tuple[str, ...] | None = None  # --select replaces the file's select
    cli_ignore: tuple[str, ...] = ()
    cli_extend_select: tuple[str, ...] = ()

    def __init__(self, source: str | None = None, isolated: bool = False, select: tuple[str, ...] = ("TP",),
                 extend_select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
                 severity: Mapping[str, str] = FACTORY, thresholds: Mapping[str, Mapping[str, float]] = FACTORY,
                 per_path_ignores: tuple[PathIgnore, ...] = (), origin: Mapping[str, str] = FACTORY,
                 cli_select: tuple[str, ...] | None = None, cli_ignore: tuple[str, ...] = (),
                 cli_extend_select: tuple[str, ...] = ()) -> None:
        # written out, not generated (trainproof.frozen, #14)
        _set(self, "source", source)
        _set(self, "isolated", isolated)
        _set(self, "select", select)
        _set(self, "extend_select", extend_select)
        _set(self, "ignore", ignore)
        _set(self, "severity", {} if severity is FACTORY else severity)
        _set(self, "thresholds", {} if thresholds is FACTORY else thresholds)
        _set(self, "per_path_ignores", per_path_ignores)
        _set(self, "origin", {} if origin is FACTORY else origin)
        _set(self, "cli_select", cli_select)
        _set(self, "cli_ignore", cli_ignore)
        _set(self, "cli_extend_select", cli_extend_select)

    def where(self, key: str) -> str:
        return self.origin.get(key, DEFAULT)

    @property
    def changed(self) -> bool:
        return bool(self.severity or self.thresholds or self.per_path_ignores or self.ignore
                    or self.extend_select or self.select != ("TP",) or self.cli_select is not None
                    or self.cli_ignore or self.cli_extend_select)

    def summary(self) -> dict[str, Any]:
        """What a report was judged against (JSON `config`, SARIF properties, text line)."""
        return {
            "source": self.source, "isolated": self.isolated,
            "select": list(self.select), "extend_select": list(self.extend_select), "ignore": list(self.ignore),
            "command_line": {"select": None if self.cli_select is None else list(self.cli_select),
                             "extend_select": list(self.cli_extend_select), "ignore": list(self.cli_ignore)},
            "severity": dict(self.severity),
            "thresholds": {k: dict(v) for k, v in self.thresholds.items()},
            "per_path_ignores": [{"pattern": p.pattern, "rules": list(p.rules), "reason": p.reason}
                                 for p in self.per_path_ignores],
        }


_ACTIVE: ContextVar[Config | None] = ContextVar("trainproof_config", default=None)


def current() -> Config | None:
    """The config the judging in progress runs under (None: the defaults)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def active(cfg: Config | None) -> Iterator[None]:
    """Judge under `cfg` inside the block: the engine screens findings by it and
    `Rule.t` answers its thresholds. Both are restored on leaving, also on error."""
    from trainproof.rules.base import overridden_thresholds

    token = _ACTIVE.set(cfg)
    try:
        with overridden_thresholds(cfg.thresholds if cfg else {}):
            yield
    finally:
        _ACTIVE.reset(token)


def _error(msg: str) -> Exception:
    from trainproof.model import InputError

    return InputError(msg)


# -- finding and reading the file -------------------------------------------------


def _has_table(path: Path) -> bool:
    data = _read_bytes(path)
    # a pyproject.toml that cannot spell the key tool.trainproof, as most cannot (a project
    # that names trainproof as its dependency or its own name included), is passed over
    # unparsed: tomllib costs ~3 ms of every start-up, and ~7 ms in trainproof's own
    # repository (#14)
    if not _may_name_the_table(data):
        return False
    return "trainproof" in _parse_toml(path, data).get("tool", {})


_BARE_KEY = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_QUOTES = (b'"', b"'")


def _may_name_the_table(data: bytes) -> bool:
    """False only when no TOML in `data` can name the key trainproof in the table tool: every
    "trainproof" in it is plainly not that key (not a whole key: within a word or a string,
    or followed by no `.`, `=` or `]`; a value's or a top-level table's: after `=` or `[`;
    under a dotted key whose part before is not `tool`; the first key of its line in a
    file that has no [tool] header). An escape (`\\u`, `\\U`) may spell it: True. Anything
    else (after `{` or `,`, an inline table's key or an array's item): True, parsed."""
    if b"\\u" in data or b"\\U" in data:
        return True
    word = b"trainproof"
    at = data.find(word)
    while at >= 0:
        end = at + len(word)
        before = data[data.rfind(b"\n", 0, at) + 1:at]
        line_end = data.find(b"\n", end)
        after = data[end:] if line_end < 0 else data[end:line_end]
        if before[-1:] in _QUOTES:
            before = before[:-1]
        elif before and before[-1] in _BARE_KEY:  # part of a longer bare key or word
            at = data.find(word, end)
            continue
        if after[:1] in _QUOTES:
            after = after[1:]
        if after.lstrip(b" \t")[:1] in (b".", b"=", b"]"):  # a key (or a value that looks like one)
            prev = before.rstrip(b" \t")
            if not prev:  # the first key on its line: a key of the table the last header opened
                if _has_tool_header(data):
                    return True
            elif prev.endswith(b"."):  # dotted: tool.trainproof only after `tool`
                part = prev[:-1].rstrip(b" \t")
                if part.removesuffix(part[-1:] if part[-1:] in _QUOTES else b"").endswith(b"tool"):
                    return True
            elif prev[-1:] not in (b"=", b"["):  # not a value, not a top-level table's name
                return True
        at = data.find(word, end)
    return False


def _has_tool_header(data: bytes) -> bool:
    """Whether a line of `data` reads as the header [tool] (or [[tool]]), quoted or spaced:
    in a string or an array it is not one, and the answer is True all the same."""
    for line in data.split(b"\n"):
        line = line.strip()
        if line.startswith(b"["):
            name = line.lstrip(b"[").split(b"]", 1)[0].strip()
            if name in (b"tool", b'"tool"', b"'tool'"):
                return True
    return False


def discover(start: Path | None = None) -> Path | None:
    """The nearest trainproof.toml, or pyproject.toml with a [tool.trainproof] table,
    from `start` upward; the search stops after a directory that holds `.git` (the
    repository's root) or at the filesystem root."""
    here = (start or Path.cwd()).absolute()
    for d in (here, *here.parents):
        for name in FILES:
            p = d / name
            if p.is_file() and (name != "pyproject.toml" or _has_table(p)):
                return p
        if (d / ".git").exists():
            return None
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    return _parse_toml(path, _read_bytes(path))


def _read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise _error(f"config file {path} does not exist") from None
    except OSError as exc:
        raise _error(f"cannot read config file {path}: {exc}") from None


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    # imported here, not with the module: most runs find no config file, and the parser
    # costs ~2.5 ms of every start-up (#14)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, from PyPI, before it joined the standard library
        import tomli as tomllib
    try:
        return tomllib.loads(data.decode())  # what tomllib.load does with the bytes
    except UnicodeDecodeError as exc:
        raise _error(f"cannot read config file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise _error(f"{path}: not valid TOML: {exc}") from None


def table_of(path: Path) -> dict[str, Any]:
    """The trainproof keys of a file: pyproject's [tool.trainproof] table, or a
    trainproof.toml's top level."""
    doc = _read_toml(path)
    if path.name == "pyproject.toml":
        table = doc.get("tool", {}).get("trainproof")
        if table is None:
            raise _error(f"{path} has no [tool.trainproof] table")
        if not isinstance(table, dict):
            raise _error(f"{path}: [tool.trainproof] must be a table")
        return table
    return doc


# -- validation -------------------------------------------------------------------


def configurable_rules() -> tuple[dict[str, Any], set[str]]:
    """The catalogue, and the IDs a config may select, ignore or re-level: FAIL/WARN/INFO
    rules. Outcome statements (PASS) and could-not-judge findings are never configurable."""
    from trainproof.rules import catalogue

    cat = catalogue()
    return cat, {k for k, r in cat.items() if r.level.value in SEVERITIES.values()}


def matches(selector: str, rule_id: str) -> bool:
    """A selector is a rule ID or a prefix of whole dash-separated parts: `TP-GRAD`
    covers TP-GRAD-SPIKE, not TP-GRADIENT; `TP` covers every rule."""
    return rule_id == selector or rule_id.startswith(selector + "-")


def _close(word: str, options: list[str]) -> str:
    import difflib  # only an unknown name needs it; every judging run imports this module

    near = difflib.get_close_matches(word, options, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(near)}?)" if near else ""


def _selectors(value: Any, where: str, configurable: set[str]) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _error(f"{where} must be a list of rule IDs or prefixes, got {value!r}")
    for sel in value:
        if not any(matches(sel, r) for r in configurable):
            raise _error(f"{where}: {sel!r} is no configurable rule ID or prefix{_close(sel, sorted(configurable))}; "
                         "`trainproof rules` lists them (PASS and NOT-CHECKED rules cannot be configured)")
    return tuple(value)


def _severity(value: Any, where: str, configurable: set[str]) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _error(f"{where} must be a table of rule ID = \"info\" | \"warn\" | \"fail\"")
    out = {}
    for rid, lv in value.items():
        if rid not in configurable:
            raise _error(f"{where}: {rid!r} is no configurable rule ID{_close(rid, sorted(configurable))}")
        if not isinstance(lv, str) or lv.lower() not in SEVERITIES:
            raise _error(f"{where}: {rid} = {lv!r}; expected one of {', '.join(SEVERITIES)}")
        out[rid] = SEVERITIES[lv.lower()]
    return out


def _number(rid: str, key: str, value: Any, default: float, where: str) -> float:
    """An override has the default's kind (a whole number where the default is one) and
    its sign: a positive limit stays positive, a non-negative one non-negative."""
    name = f"{where}: {rid}.{key}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _error(f"{name} = {value!r}; expected a finite number like the default {default!r}")
    if isinstance(default, int) and not isinstance(default, bool) and not float(value).is_integer():
        raise _error(f"{name} = {value!r}; expected a whole number like the default {default!r}")
    if (default > 0 and value <= 0) or (default >= 0 and value < 0) or (default < 0 and value >= 0):
        sign = "> 0" if default > 0 else ">= 0" if default == 0 else "< 0"
        raise _error(f"{name} = {value!r}; expected a number {sign} (the default is {default!r})")
    return int(value) if isinstance(default, int) else float(value)


def _thresholds(value: Any, where: str, cat: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    if not isinstance(value, dict):
        raise _error(f"{where} must be a table of rule ID = {{ name = number }}")
    tunable = sorted(k for k, r in cat.items() if r.thresholds)
    out: dict[str, dict[str, float]] = {}
    for rid, table in value.items():
        if rid not in cat or not cat[rid].thresholds:
            raise _error(f"{where}: {rid!r} is no rule with thresholds{_close(rid, tunable)}; "
                         f"rules with thresholds: {', '.join(tunable)}")
        declared = cat[rid].thresholds
        if not isinstance(table, dict):
            raise _error(f"{where}: {rid} must be a table of {', '.join(declared)}")
        for key, v in table.items():
            if key not in declared:
                raise _error(f"{where}: {rid} has no threshold {key!r}; its thresholds: {', '.join(declared)}")
            out.setdefault(rid, {})[key] = _number(rid, key, v, declared[key].value, where)
    return out


def _per_path(value: Any, where: str, root: Path, configurable: set[str]) -> tuple[PathIgnore, ...]:
    if not isinstance(value, dict):
        raise _error(f"{where} must be a table of \"GLOB\" = {{ rules = [...], reason = \"...\" }}")
    out = []
    for pattern, entry in value.items():
        name = f"{where} {pattern!r}"
        if not isinstance(entry, dict):
            raise _error(f"{name} must be a table with rules = [...] and reason = \"...\"")
        extra = sorted(set(entry) - {"rules", "reason"})
        if extra:
            raise _error(f"{name}: unknown key {extra[0]!r}; expected rules and reason")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise _error(f"{name} needs a reason = \"...\": say why these findings are expected there")
        rules = _selectors(entry.get("rules"), f"{name} rules", configurable)
        out.append(PathIgnore(pattern, rules, reason.strip(), str(root)))
    return tuple(out)


def from_table(table: Mapping[str, Any], source: str, root: Path) -> Config:
    """Validate a file's trainproof keys into a Config (unknown keys refused by name)."""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise _error(f"{source}: unknown key {unknown[0]!r}{_close(unknown[0], list(KEYS))}; "
                     f"valid keys: {', '.join(KEYS)}")
    cat, configurable = configurable_rules()
    kw: dict[str, Any] = {}
    for key in ("select", "extend-select", "ignore"):
        if key in table:
            kw[key.replace("-", "_")] = _selectors(table[key], f"{source}: {key}", configurable)
    if "severity" in table:
        kw["severity"] = _severity(table["severity"], f"{source}: severity", configurable)
    if "thresholds" in table:
        kw["thresholds"] = _thresholds(table["thresholds"], f"{source}: thresholds", cat)
    if "per-path-ignores" in table:
        kw["per_path_ignores"] = _per_path(table["per-path-ignores"], f"{source}: per-path-ignores", root,
                                           configurable)
    return Config(source=source, origin=dict.fromkeys(table, source), **kw)


def shown(path: Path) -> str:
    """A found file as reports name it: relative to the working directory when under it."""
    rel = os.path.relpath(path.absolute(), Path.cwd())
    return str(path) if rel.startswith("..") else rel


def load(path: str | os.PathLike[str], name: str | None = None) -> Config:
    """A config file validated (pyproject.toml: its [tool.trainproof] table); `name`
    is how reports name it (default: the path as given)."""
    p = Path(path)
    if p.is_dir():
        raise _error(f"config {p} is a directory; name a trainproof.toml or pyproject.toml")
    return from_table(table_of(p), name or str(p), p.absolute().parent)


def as_config(value: Config | Mapping[str, Any] | str | os.PathLike[str] | None) -> Config | None:
    """What the Python API and the training callbacks accept as `config=`: a Config, a
    path to a config file, or a table of the same keys (validated like a file's)."""
    if value is None or isinstance(value, Config):
        return value
    if isinstance(value, Mapping):
        return from_table(value, "config argument", Path.cwd())
    return load(value)


# -- the command line ---------------------------------------------------------------


def _cli_list(text: str | None, option: str, configurable: set[str]) -> tuple[str, ...] | None:
    if text is None:
        return None
    return _selectors([s.strip() for s in text.split(",") if s.strip()], option, configurable)


def resolve(args: argparse.Namespace) -> Config:
    """The configuration a command runs under: --isolated, else --config PATH, else the
    file found upward from the working directory; then --select/--extend-select/--ignore."""
    if getattr(args, "isolated", False) and getattr(args, "config", None):
        raise _error("--config and --isolated contradict each other; give one")
    if getattr(args, "isolated", False):
        cfg = Config(isolated=True)
    elif getattr(args, "config", None):
        cfg = load(args.config)
    else:
        found = discover()
        cfg = load(found, shown(found)) if found is not None else Config()
    opts = {k: getattr(args, k, None) for k in ("select", "extend_select", "ignore")}
    if all(v is None for v in opts.values()):
        return cfg
    _, configurable = configurable_rules()
    sel = _cli_list(opts["select"], "--select", configurable)
    ext = _cli_list(opts["extend_select"], "--extend-select", configurable) or ()
    ign = _cli_list(opts["ignore"], "--ignore", configurable) or ()
    origin = dict(cfg.origin)
    origin.update({f"--{k.replace('_', '-')}": COMMAND_LINE for k, v in opts.items() if v is not None})
    return dataclasses.replace(cfg, cli_select=sel, cli_extend_select=ext, cli_ignore=ign, origin=origin)


def _selection(d: Mapping[str, Any], base: list[str] | None) -> list[str]:
    out = [] if d.get("select") in (None, base) else ["select=" + ",".join(d["select"])]
    return out + [f"{k.replace('_', '-')}=" + ",".join(d[k]) for k in ("extend_select", "ignore") if d.get(k)]


def judged_with(summary: Mapping[str, Any]) -> str | None:
    """The one text line that says what a report was judged against, when that is not
    the defaults, each value with where it came from:
    `judged with: TP-DIVERGE.ratio=2.0, ignore=TP-GRAD (pyproject.toml); ignore=TP-NAN (command line)`."""
    if not summary:
        return None
    parts = [f"{rid}.{k}={v}" for rid, t in summary.get("thresholds", {}).items() for k, v in t.items()]
    parts += [f"{rid}={lv.lower()}" for rid, lv in summary.get("severity", {}).items()]
    parts += _selection(summary, ["TP"])
    parts += [f"per-path-ignores {p['pattern']}: {','.join(p['rules'])}" for p in summary.get("per_path_ignores", ())]
    cli = _selection(summary.get("command_line") or {}, None)
    said = ([f"{', '.join(parts)} ({summary.get('source') or 'config argument'})"] if parts else []) + \
        ([f"{', '.join(cli)} ({COMMAND_LINE})"] if cli else [])
    return f"judged with: {'; '.join(said)}" if said else None
