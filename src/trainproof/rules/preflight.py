"""Preflight rules: is this fine-tuning dataset (and, with --tokenizer, this tokenizer)
safe to start training on. Judges read the measurements of probes/dataset.py and
probes/dataset_tokens.py; every rule is declared once, in the module for its job.

This module owns the subject (Preflight) and how findings place records in it, whether
the dataset could be read at all (malformed and oversized lines, no records, no known
text field), the PASS statement and the executable examples. Record contents (fields,
exact duplicates, chat and preference shapes) are judged in preflight_records.py, the
tokenizer in preflight_tokens.py, near-duplicates and eval contamination in
preflight_overlap.py."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainproof.model import Finding, Level, Location
from trainproof.probes.dataset import DatasetMeasurement
from trainproof.probes.dataset_contamination import Contamination
from trainproof.probes.dataset_near import NearDuplicates
from trainproof.probes.dataset_read import unpack
from trainproof.probes.dataset_shape import Tally
from trainproof.probes.dataset_tokens import TokenCounts
from trainproof.probes.tokenizer_load import SpecialTokens
from trainproof.rules.base import Example, Rule, Threshold, check, example_subject, rule, statement

G = "preflight"


@dataclass(frozen=True)
class Preflight:
    """The subject the preflight checks judge."""

    data: DatasetMeasurement
    special: SpecialTokens | None = None  # None: no --tokenizer
    tokens: TokenCounts | None = None
    tokenizer: str = ""
    near: NearDuplicates | None = None  # None: no --near-dup
    contamination: Contamination | None = None  # None: no --eval
    eval_files: tuple[str, ...] = ()
    eval_notes: tuple[str, ...] = ()  # eval records that could not be read into the index


def place(m: DatasetMeasurement, w: int) -> str:
    """A record's position as a user finds it: `line 12`, or `shard.jsonl:12` across shards."""
    fi, pos = unpack(w)
    unit = "row" if m.kinds[fi] in ("parquet", "arrow") else "line"
    return f"{Path(m.files[fi]).name}:{pos}" if len(m.files) > 1 else f"{unit} {pos}"


def location(m: DatasetMeasurement, w: int | None) -> Location:
    """Where record w is (its file and line), or the dataset itself when w is None."""
    if w is None:
        return Location(m.files[0] if len(m.files) == 1 else m.path)
    fi, pos = unpack(w)
    return Location(m.files[fi], line=None if m.kinds[fi] in ("parquet", "arrow") else pos)


def first_places(m: DatasetMeasurement, t: Tally, with_detail: bool = True) -> str:
    """The first records a tally kept, placed as a user finds them (with their details)."""
    parts = [place(m, w) + (f" ({d})" if with_detail and d else "") for w, d in zip(t.first, t.detail, strict=False)]
    more = ", ..." if t.count > len(t.first) else ""
    return ", ".join(parts) + more


def share_of(n: int, total: int) -> float:
    """n as a share of total; 0 of nothing."""
    return n / total if total else 0.0


def tally_finding(r: Rule, s: Preflight, name: str, **extra: Any) -> list[Finding]:
    """r's finding for the dataset's tally `name`: count, share and first records; none at 0."""
    t = s.data.tallies.get(name)
    if t is None or t.count == 0:
        return []
    return [r.finding(location(s.data, t.first[0]), count=t.count, n=s.data.records,
                      share=share_of(t.count, s.data.records), first=first_places(s.data, t), **extra)]


# ---------------------------------------------------------------- outcome statements

OK = rule(
    id="TP-PRE-OK", level=Level.PASS, group=G,
    title="Dataset is safe to start on.",
    evidence="{n} records ({shape}). Ran: {ran}. Skipped: {skipped}.",
    summary="The PASS statement: no preflight rule fired; lists what ran and what was skipped.",
    why="A PASS that does not say what it covered invites reading it as covering everything.",
    fix="Nothing to fix. Skipped checks are not passed checks: pass --tokenizer and --max-len "
    "to have the token checks run.",
    limits="Preflight checks the mechanics of the data (it parses, it is not empty, it is not "
    "repeated, it fits), not whether the content teaches what you want.",
)

NO_RECORDS = rule(
    id="TP-PRE-NO-RECORDS", level=Level.NOT_CHECKED, group=G,
    title="The dataset holds no records.",
    evidence="{detail}",
    summary="Nothing could be read as a record (an empty file, or no line parsed); exit 2.",
    why="An empty dataset is not a safe dataset: a PASS would be a lie, and a FAIL would blame "
    "data that is simply not there.",
    fix="Check the path; preflight reads JSONL, a JSON array of objects, Parquet, Arrow "
    "(datasets.save_to_disk), or a directory of those.",
)

UNKNOWN_SHAPE = rule(
    id="TP-PRE-UNKNOWN-SHAPE", level=Level.NOT_CHECKED, group=G,
    title="No known text field in the records.",
    evidence="fields seen: {fields}. Known shapes: text; prompt+completion; instruction+output; "
    "messages/conversations; chosen+rejected. Name the field with --text-field.",
    summary="The records have none of the fields the known shapes use; exit 2.",
    why="Checking the wrong field would judge data the training never reads.",
    fix="Pass --text-field FIELD.",
)

# ---------------------------------------------------------------- parsing

MALFORMED = rule(
    id="TP-PRE-MALFORMED-JSONL", level=Level.FAIL, group=G,
    title="Lines that are not JSON records.",
    evidence="{count} of {total} lines are not JSON objects; first: {first}",
    summary="A line is not valid JSON, not UTF-8, or not a JSON object.",
    why="datasets.load_dataset('json') stops at the first such line; a hand-written loader "
    "that skips it silently trains on less data than you think.",
    fix="Fix or drop the listed lines (a half-written last line means the export was cut short).",
    fires=Example({"lines": ['{"text": "a"}', '{"text": "b"']}),
    passes=Example({"lines": ['{"text": "a"}', '{"text": "b"}']}),
)

OVERSIZED = rule(
    id="TP-PRE-OVERSIZED-RECORD", level=Level.WARN, group=G,
    title="Records too long to read were skipped.",
    evidence="{count} line(s) longer than {limit_max_bytes} bytes were not read; first: {first}",
    summary="A single line is longer than any real training record; it is skipped unread.",
    why="A line of many megabytes is an export bug (a whole file on one line, binary data); "
    "reading it would hold it all in memory, and a loader that does will stall.",
    fix="Look at the listed line: split it into records, or drop it.",
    thresholds={"max_bytes": Threshold(16 << 20, "bytes per line", "Sixteen MiB is thousands of "
                                       "times a long-context sample; memory stays bounded.")},
)


@check("malformed", MALFORMED, OVERSIZED)
def malformed_lines(s: Preflight) -> list[Finding]:
    rt, m = s.data.read, s.data
    out = []
    if rt.malformed_count:
        first = ", ".join(f"{place(m, w)} ({why})" for w, why in rt.malformed)
        more = ", ..." if rt.malformed_count > len(rt.malformed) else ""
        out.append(MALFORMED.finding(location(m, rt.malformed[0][0]), count=rt.malformed_count,
                                     total=m.records + rt.malformed_count, first=first + more))
    if rt.oversized_count:
        first = ", ".join(place(m, w) for w in rt.oversized)
        out.append(OVERSIZED.finding(location(m, rt.oversized[0]), count=rt.oversized_count, first=first))
    return out


# ---------------------------------------------------------------- the report

def _no_records_detail(m: DatasetMeasurement) -> str:
    rt = m.read
    if rt.malformed_count:
        _w, why = rt.malformed[0]
        return f"{rt.malformed_count} line(s), none parsed as a JSON object (first error: {why})"
    if rt.oversized_count:
        return f"{rt.oversized_count} line(s), all longer than {OVERSIZED.t('max_bytes'):.0f} bytes"
    return "the dataset is empty"


def _unjudgeable(s: Preflight) -> Finding | None:
    """Fields whose shape is unknown, or no record at all: no preflight check can run."""
    m = s.data
    if m.shape is None and m.fields:
        return UNKNOWN_SHAPE.finding(location(m, None), fields=", ".join(m.fields))
    if m.records == 0:
        return NO_RECORDS.finding(location(m, None), detail=_no_records_detail(m))
    return None


def _ok_values(s: Preflight) -> dict[str, Any]:
    return dict(n=s.data.records, shape=s.data.shape.describe() if s.data.shape else "?")


statement(G, OK, lambda s: location(s.data, None), values=_ok_values, precheck=_unjudgeable)


# ---------------------------------------------------------------- examples

def _tokens_from(spec: Mapping[str, int], n: int) -> TokenCounts:
    t = TokenCounts(max_len=spec.get("max_len", 8), units=n)
    for name in ("overflow", "zero_trainable", "no_eos"):
        for _ in range(spec.get(name, 0)):
            getattr(t, name).add(1)
    return t


@example_subject(G)
def _example(data: Mapping[str, Any]) -> tuple[str, Preflight]:
    from trainproof.commands.preflight import overlap_subject

    lines = data.get("lines") or [json.dumps(r) for r in data["records"]]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "example.jsonl"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        evals = []
        if "eval" in data:
            evals = [str(Path(d) / "eval.jsonl")]
            Path(evals[0]).write_text("".join(json.dumps(r) + "\n" for r in data["eval"]), encoding="utf-8")
        m, near, contamination, eval_files, eval_notes = overlap_subject(p, None, bool(data.get("near_dup")),
                                                                         evals)
    special = SpecialTokens(**data["special"]) if "special" in data else None
    tokens = _tokens_from(data.get("tokens", {}), m.records) if special is not None else None
    return G, Preflight(m, special, tokens, "example", near, contamination, eval_files, eval_notes)
