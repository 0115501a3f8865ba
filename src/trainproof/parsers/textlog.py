"""Training stdout and text logs, read by one generic line scanner over the declared
patterns in textlog_patterns.py (HF Trainer/TRL dicts, nanoGPT, Megatron-LM, NeMo,
DeepSpeed, fairseq, torchtune, Keras model.fit, mlx-lm) and textlog_nlp.py (spaCy,
OpenNMT-py): no reader per project.

Carriage returns end a line as newlines do, so tqdm's redrawn progress bars and the
dict printed after them become separate lines, and one "line" is never longer than
MAX_LINE bytes however long a bar runs without a newline: a longer one is skipped and
counted. ANSI escapes are stripped. Lines no pattern reads (banners, warnings,
tracebacks) are counted, never fatal; a file in which no line matches any pattern is
exit 2 naming what it holds. Memory is proportional to the points kept."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from trainproof.model import InputError
from trainproof.parsers.base import Columns, LineBlocks, RawLog, number, overflowed, require_file
from trainproof.parsers.columns import looks_like_metric
from trainproof.parsers.compressed import open_log
from trainproof.parsers.textlog_nlp import NLP_PATTERNS
from trainproof.parsers.textlog_patterns import PATTERNS as _PATTERNS
from trainproof.parsers.textlog_patterns import Hit, Pattern, State

NAME = "textlog"
BLOCK = 1 << 20
MAX_LINE = 1 << 20  # bytes: a log line is a few hundred; a longer one is not a record
HEAD = 128 << 10  # bytes the sniff reads: stdout starts with banners and argument dumps
# metric lines the head must hold before a file is claimed: a README quoting one example
# line is not a log (a file named on the command line is read whatever it holds)
SNIFF_LINES = 2
_NAMES = re.compile(r"(\.(log|txt|out|err)$|^(stdout|stderr|nohup|slurm))", re.IGNORECASE)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PATTERNS = _PATTERNS + NLP_PATTERNS  # every declared pattern, in the order they are tried
_ORDINAL_NOTE = ("HuggingFace Trainer dicts print no step: their steps are the order of the train dicts "
                 "(1, 2, ...), each eval dict at the train dict before it")


def looks_like_name(name: str) -> bool:
    """Names that stdout captures and text logs go by."""
    return bool(_NAMES.search(name))


def _match(raw: bytes, state: State) -> tuple[Pattern, Hit] | None:
    for pat in PATTERNS:
        if pat.needle not in raw:
            continue
        text = raw.decode("utf-8", "replace")
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        m = pat.regex.search(text)
        if m is None:
            continue
        hit = pat.extract(m, state)
        if hit is not None and hit.values:
            return pat, hit
    return None


def sniff(name: str, head: bytes) -> bool:
    if not looks_like_name(name):
        return False
    state: State = {}
    found = 0
    for raw in head.replace(b"\r", b"\n").split(b"\n"):
        got = _match(raw, state) if raw.strip() else None
        if got is not None and (got[1].role == "summary" or any(looks_like_metric(k) for k, _ in got[1].values)):
            found += 1
            if found >= SNIFF_LINES:
                return True
    return False


class Scanner:
    """The scanner's state: fed blocks of whole lines (by `read`, or by `watch` with what
    each poll found appended), it keeps the points and counts the rest."""

    def __init__(self) -> None:
        self.cols = Columns()
        self.state: State = {}
        self.hits: Counter[str] = Counter()
        self.records = 0
        self.ordinal = 0.0
        self.unmatched = 0
        self.oversized = 0
        self.samples: list[str] = []
        self.summary: dict[str, object] = {}

    def feed(self, data: bytes) -> None:
        for raw in data.replace(b"\r", b"\n").split(b"\n"):
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE:
                self.oversized += 1
                continue
            got = _match(raw, self.state)
            if got is None:
                self.unmatched += 1
                if len(self.samples) < 3:
                    self.samples.append(_ANSI.sub("", raw.decode("utf-8", "replace")).strip()[:60])
                continue
            self._take(*got)

    def _take(self, pat: Pattern, hit: Hit) -> None:
        self.hits[pat.name] += 1
        if hit.role == "summary":
            self.summary = {k: _plain(v) for k, v in hit.values}
            return
        step = hit.step
        if step is None:
            if hit.role == "train":
                self.ordinal += 1
            step = self.ordinal
        self.records += 1
        add = self.cols.add
        for col, v in hit.values:
            try:
                f = float(v)  # float() reads nan, inf and 1.5E+00 too
                if overflowed(v, f):
                    raise ValueError(v)
                add(col, step, f)
            except ValueError:
                value = number(v)
                if value is None:
                    self.cols.reject(col)
                else:
                    add(col, step, value)

    def raw(self) -> RawLog:
        notes = []
        if self.hits:
            notes.append("read as " + ", ".join(f"{n} ({c} lines)" for n, c in sorted(self.hits.items())))
        if self.hits.get("hf_trainer"):
            notes.append(_ORDINAL_NOTE)
            if len(self.hits) > 1:  # e.g. the Trainer under DeepSpeed: its step= lines count steps
                notes.append("other lines here print real steps: their series and the Trainer's ordinals "
                             "are on different step scales")
        notes.extend(note.format(n=n) for note, n in self.state.get("notes", {}).items())
        if self.oversized:
            notes.append(f"{self.oversized} line(s) over {MAX_LINE >> 20} MiB skipped")
        meta: dict[str, object] = {"patterns": dict(self.hits), **self.state.get("meta", {})}
        if self.summary:
            meta["summary"] = self.summary
        return RawLog(self.cols.arrays(), self.records, notes=notes + self.cols.bad_notes(), meta=meta)


def _plain(v: object) -> object:
    n = number(v)
    return v if n is None else n


def read(path: Path) -> RawLog:
    require_file(path)
    scanner = Scanner()
    with open_log(path) as fh:
        lines = LineBlocks(fh, BLOCK, MAX_LINE, cr=True)
        for chunk in lines:
            scanner.feed(chunk)
        scanner.oversized += lines.oversized
        if lines.tail.strip():
            scanner.feed(lines.tail)
    if not scanner.hits:
        raise InputError(_nothing_read(path, scanner))
    return scanner.raw()


def _nothing_read(path: Path, s: Scanner) -> str:
    if not s.unmatched:
        return f"{path}: empty text log (no lines)"
    known = ", ".join(sorted({p.name.split("_")[0] for p in PATTERNS}))
    if s.samples and all(_garbled(x) for x in s.samples):
        # quoting binary bytes back helps no one: say what the file is
        return (f"{path}: not a text log: its lines are not readable text (binary or another "
                f"encoding); the known training-log patterns are {known}")
    shown = "; ".join(repr(x) for x in s.samples)
    return (f"{path}: no line of this text log matches a known training-log pattern ({known}); "
            f"{s.unmatched} line(s), e.g. {shown}; pass --format for a structured log")


def _garbled(sample: str) -> bool:
    """A line a quarter or more of whose characters are undecodable bytes or control characters."""
    bad = sum(1 for c in sample if c == "\ufffd" or (not c.isprintable() and c != "\t"))
    return bad * 4 >= max(len(sample), 1)

