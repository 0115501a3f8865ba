"""Judge the public-runs corpus (public_runs/runs/*.json) and score trainproof against its labels.

Each corpus file holds the numeric series extracted from one training log that a
stranger committed to a public repository (source cited: repository, commit,
path), the run's planned length, and a label an engineer wrote by reading the
curve *before* running the tool. This script rebuilds the file the writer
would have written (HF `trainer_state.json`, LLaMA-Factory `trainer_log.jsonl`, the CSV writers')
in a temporary folder and runs `trainproof epoch` on it through the same parser
and command a user runs, so the reader is exercised too.

Scoring (per rule, per half):
- a FAIL finding is *true* on a run labelled FAIL and *false* on any other;
- a WARN finding is *true* on a run labelled WARN or FAIL and *false* on a PASS;
- a run labelled broken that gets PASS is *missed*; so is one labelled WARN or
  FAIL that gets PASS (under-called).
Per-rule truth is run-level: a FAIL rule on a broken run is counted true even
if another rule names the real cause; the "why" column of the labels lets a
reader check.

    python scripts/public_runs.py              # the table, printed
    python scripts/public_runs.py --write      # rewrite the table in EVIDENCE_MATRIX.md
    python scripts/public_runs.py --runs       # one line per run: label, verdict, findings
    python scripts/public_runs.py --sources    # rewrite public_runs/SOURCES.md from the run files
    python scripts/public_runs.py --runs --half fresh   # the fresh half alone

The fresh halves (public_runs/fresh/, fresh2/ .. fresh9/) are later batches,
each from repositories none of the earlier runs come from. A fresh half is
scored and shown in its own column once its first scoring is committed
(public_runs/<half>_first_scoring.txt, the `--runs --half <half>` output kept
verbatim); until then it is loaded and checked but never judged - not by
`--write`, not by `--runs` without `--half`, not by the tests - so the tool
first runs on it when `--runs --half <half>` makes that first scoring. It is
never held to the bar in tests: its misses are the out-of-sample estimate,
reported rather than fixed - except for the rules changed or added after a half
was scored, for which that half is in-sample: public_runs_history.py says which.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import public_runs_history as history  # the prose that opens the section in EVIDENCE_MATRIX.md
import public_runs_logs as logs  # rebuilds the JSON-lines and text writers' files (Detectron2, MMEngine, Keras, stdout)
import public_runs_tabular as tabular  # rebuilds the CSV writers' files (Lightning, Keras, fastai, YOLO, timm)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "public_runs" / "runs"
MATRIX = ROOT / "EVIDENCE_MATRIX.md"
SOURCES = ROOT / "public_runs" / "SOURCES.md"
DISAGREEMENTS = ROOT / "public_runs" / "disagreements.json"
BEGIN, END = "<!-- public-runs:begin -->", "<!-- public-runs:end -->"
HALVES = ("design", "report")  # the halves the hash splits runs/ into; the bar holds on both
# Later batches, oldest first: half -> folder. Each is scored and shown once its first scoring is
# committed, never tuned on; the folder gives the half.
FRESH_HALVES = {h: ROOT / "public_runs" / h for h in ("fresh", *(f"fresh{i}" for i in range(2, 49)))}
ALL_HALVES = (*HALVES, *FRESH_HALVES)
VERDICTS = ("PASS", "WARN", "FAIL")
WRITERS = ("hf_trainer_state", "llamafactory_trainer_log", *tabular.REBUILDERS, *logs.REBUILDERS)
# HF keeps these top-level fields beside log_history; the corpus keeps them under "planned".
_HF_TOP = ("max_steps", "num_train_epochs", "logging_steps", "eval_steps", "global_step",
           "train_batch_size", "best_model_checkpoint", "best_metric")


def half_of(run_id: str) -> str:
    """The half is computed from the id, never chosen: even sha1 = design, odd = report."""
    return HALVES[int(hashlib.sha1(run_id.encode()).hexdigest(), 16) % 2]


def load_corpus(folder: Path = CORPUS, fresh: Mapping[str, Path] | None = None) -> list[dict]:
    """The runs of runs/ (half from the hash) and those of each fresh half's folder (all of
    FRESH_HALVES unless `fresh` says which; an empty mapping loads none)."""
    runs = _load(folder, half=None)
    for half, path in (FRESH_HALVES if fresh is None else fresh).items():
        runs += _load(path, half=half) if path.is_dir() else []
    return runs


def first_scoring_path(half: str) -> Path:
    """Where a fresh half's first scoring is kept verbatim (the lead commits it once)."""
    return ROOT / "public_runs" / f"{half}_first_scoring.txt"


def shown_halves() -> tuple[str, ...]:
    """The halves the table shows: design and report, and each fresh half already scored once.
    A fresh half without its first scoring is left out, so no verdict on it is written early."""
    return (*HALVES, *(h for h in FRESH_HALVES if first_scoring_path(h).exists()))


def scorable(docs: Iterable[Mapping]) -> list[Mapping]:
    """The runs the tool may judge unasked: those of the shown halves. A fresh half waiting for
    its first scoring is left out, so nothing runs the tool on it before that scoring does."""
    shown = shown_halves()
    return [d for d in docs if d["half"] in shown]


def _load(folder: Path, half: str | None) -> list[dict]:
    runs = []
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        problems = check_entry(doc, path.stem, half)
        if problems:
            raise ValueError(f"{path.name}: {'; '.join(problems)}")
        runs.append(doc)
    return runs


def check_entry(doc: Mapping, stem: str, half: str | None = None) -> list[str]:
    """What is wrong with one corpus file's shape (empty when it is well formed). `half` is the
    half its folder gives it; None means the one computed from the id."""
    out = []
    if doc.get("id") != stem:
        out.append(f"id {doc.get('id')!r} is not the file name")
    src = doc.get("source") or {}
    if not (src.get("repo") and src.get("path") and len(str(src.get("commit", ""))) == 40):
        out.append("source needs repo, path and a 40-hex commit")
    if src.get("writer") not in WRITERS:
        out.append(f"writer must be one of {WRITERS}")
    label = doc.get("label") or {}
    if label.get("verdict") not in VERDICTS or not label.get("why"):
        out.append("label needs a verdict (PASS/WARN/FAIL) and a why")
    if half is not None and doc.get("half") != half:
        out.append(f"half must be {half!r} in this folder")
    elif half is None and doc.get("half") != half_of(str(doc.get("id"))):
        out.append("half is not the one computed from the id")
    series = doc.get("series") or {}
    if not series or not all(isinstance(v, list) for v in series.values()):
        out.append("series must map names to [[step, value], ...]")
    return out


def _hf_state(doc: Mapping) -> dict:
    train: dict[float, dict] = defaultdict(dict)
    evals: dict[float, dict] = defaultdict(dict)
    epochs: dict[float, float] = {}
    for name, points in doc["series"].items():
        for step, value in points:
            if name == "epoch":
                epochs[step] = value
            else:
                (evals if name.startswith("eval_") else train)[step][name] = value
    history = []
    for step in sorted(set(train) | set(evals)):
        for part in (train, evals):  # the Trainer logs the training entry before the evaluation at a step
            if step in part:
                entry = dict(part[step], step=int(step))
                if step in epochs:
                    entry["epoch"] = epochs[step]
                history.append(entry)
    if doc.get("summary"):
        last = max(train | evals, default=0)
        history.append(dict(doc["summary"], step=int(last)))
    planned = doc.get("planned") or {}
    state = {k: planned[k] for k in _HF_TOP if planned.get(k) is not None}
    state["log_history"] = history
    return state


def _llamafactory_lines(doc: Mapping) -> list[dict]:
    total = (doc.get("planned") or {}).get("total_steps")
    rows: dict[tuple[bool, float], dict] = defaultdict(dict)
    for name, points in doc["series"].items():
        for step, value in points:
            rows[(name.startswith("eval_"), step)][name] = value
    lines = []
    for (_is_eval, step), values in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        line = {"current_steps": int(step), **values}
        if total is not None:
            line["total_steps"] = total
        lines.append(line)
    return lines


def rebuild(doc: Mapping, folder: Path) -> Path:
    """Write the file the run's writer would have written; return its path."""
    if doc["source"]["writer"] in tabular.REBUILDERS:
        return tabular.REBUILDERS[doc["source"]["writer"]](doc, folder)
    if doc["source"]["writer"] in logs.REBUILDERS:
        return logs.REBUILDERS[doc["source"]["writer"]](doc, folder)
    if doc["source"]["writer"] == "hf_trainer_state":
        path = folder / "trainer_state.json"
        path.write_text(json.dumps(_hf_state(doc), indent=2))
    else:
        path = folder / "trainer_log.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in _llamafactory_lines(doc)))
    return path


@dataclass(frozen=True)
class Judged:
    run_id: str
    half: str
    label: str
    broken: bool
    verdict: str
    findings: tuple[tuple[str, str], ...]  # (rule id, level) of WARN and FAIL findings
    why: str


def judge(doc: Mapping) -> Judged:
    """`trainproof epoch` on the rebuilt file, through the command a user runs."""
    from trainproof.cli import build_parser
    from trainproof.commands import registry
    from trainproof.model import InputError, Level

    with tempfile.TemporaryDirectory() as tmp:
        path = rebuild(doc, Path(tmp))
        args = build_parser(registry()).parse_args(["epoch", str(path)])
        try:
            rs = args._cmd.run(args)
        except InputError as exc:
            # the rebuilt file's temporary folder is no part of the finding: the table must not move with it
            verdict, findings = "NOT-CHECKED", ((f"input error: {str(exc).replace(tmp + '/', '')}", "error"),)
        else:
            rep = rs.reports[0]
            verdict = rep.verdict.value
            findings = tuple((f.rule_id, f.level.value) for f in rep.findings
                             if f.level in (Level.WARN, Level.FAIL))
    label = doc["label"]
    return Judged(doc["id"], doc["half"], label["verdict"], bool(label.get("broken")), verdict,
                  findings, label["why"])


def judge_all(docs: Iterable[Mapping]) -> list[Judged]:
    return [judge(d) for d in docs]


def score(judged: Iterable[Judged]) -> dict:
    """Per rule and half: true/false findings; per half: runs missed and label x verdict counts."""
    rules: dict[str, Counter] = defaultdict(Counter)
    missed: dict[str, list[Judged]] = defaultdict(list)
    confusion: dict[str, Counter] = defaultdict(Counter)
    for j in judged:
        confusion[j.half][(j.label, j.verdict)] += 1
        for rule, level in j.findings:
            right = j.label == "FAIL" if level == "FAIL" else j.label in ("WARN", "FAIL")
            rules[rule][(j.half, "true" if right else "false")] += 1
        if j.verdict == "PASS" and (j.broken or j.label != "PASS"):
            missed[j.half].append(j)
    return {"rules": rules, "missed": missed, "confusion": confusion}


def disagreements() -> dict[str, str]:
    """The runs where the tool misses the bar, each with why it was left (reviewed by hand)."""
    return json.loads(DISAGREEMENTS.read_text(encoding="utf-8")) if DISAGREEMENTS.exists() else {}


def review_path(half: str) -> Path:
    return ROOT / "public_runs" / f"{half}_review.json"


def fresh_review(half: str = "fresh") -> dict[str, str]:
    """Why the tool and the label part on a fresh half's misses: written after its first
    scoring, for the reader; unlike disagreements.json it licenses nothing in the tests."""
    path = review_path(half)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def render(judged: list[Judged], docs: Iterable[Mapping] | None = None) -> str:
    """The table from the judged runs of the shown halves; the halves still waiting for their first
    scoring are counted from the run files (`docs`, all of the corpus unless given), never judged."""
    shown = shown_halves()
    waiting = Counter(d["half"] for d in (load_corpus() if docs is None else docs) if d["half"] not in shown)
    judged = [j for j in judged if j.half in shown]
    s = score(judged)
    lines = [BEGIN, *history.intro(Counter(j.half for j in judged)), *_unscored(waiting), *_rule_table(s, shown), "",
             "Label (rows) against verdict (columns), per half:", ""]
    cols = ("PASS", "WARN", "FAIL", "NOT-CHECKED")
    for half in shown:
        c = s["confusion"][half]
        lines += [f"**{half}**", "", "| label | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        lines += [f"| {lab} | " + " | ".join(str(c[(lab, v)]) for v in cols) + " |" for lab in VERDICTS]
        lines.append("")
    lines += _misses(judged, s, shown)
    lines.append(END)
    return "\n".join(lines) + "\n"


def _unscored(waiting: Counter) -> list[str]:
    return [f"The {h} half ({n} runs, public_runs/{h}/) is labelled and not yet scored: its labels were "
            f"committed before the tool ran on any of its runs, and its first scoring will be kept verbatim in "
            f"`public_runs/{first_scoring_path(h).name}` before it gets a column here." for h, n in waiting.items()] \
        + ([""] if waiting else [])


def _rule_table(s: dict, shown: tuple[str, ...]) -> list[str]:
    head = " | ".join(f"{h}: true | {h}: false" for h in shown)
    lines = [f"| rule | {head} |", "|---" * (1 + 2 * len(shown)) + "|"]
    for rule in sorted(s["rules"]):
        c = s["rules"][rule]
        lines.append(f"| {rule} | " + " | ".join(f"{c[h, 'true']} | {c[h, 'false']}" for h in shown) + " |")
    return lines


def _misses(judged: list[Judged], s: dict, shown: tuple[str, ...]) -> list[str]:
    known = disagreements()
    wrong = [j for j in judged if not agrees(j) and j.half in HALVES]
    lines = ["Where the tool misses the bar (a FAIL on a run not labelled FAIL, or a PASS on a run "
             "labelled broken), with why it was left (`public_runs/disagreements.json`):", ""]
    lines += [f"- `{j.run_id}` ({j.half}; labelled {j.label}, got {j.verdict}): "
              f"{known.get(j.run_id, 'NOT REVIEWED')}" for j in wrong] or ["- none"]
    for half in (h for h in shown if h in FRESH_HALVES):
        review = fresh_review(half)
        lines += ["", f"Where it misses the bar on the {half} half, reviewed after its first scoring and not "
                  f"fixed here (`public_runs/{review_path(half).name}`):", ""]
        lines += [f"- `{j.run_id}` (labelled {j.label}, got {j.verdict}: "
                  f"{', '.join(f'{r} {lvl}' for r, lvl in j.findings) or 'no finding'}): "
                  f"{review.get(j.run_id, 'NOT REVIEWED')}"
                  for j in judged if j.half == half and not agrees(j)] or ["- none"]
    lines.append("")
    for half in shown:
        gone = s["missed"][half]
        lines.append(f"Missed on the {half} half (labelled WARN/FAIL or broken, verdict PASS): "
                     + (", ".join(f"`{j.run_id}` ({j.label}: {j.why})" for j in gone) if gone else "none") + ".")
        lines.append("")
    return lines


def write_matrix(text: str) -> None:
    doc = MATRIX.read_text(encoding="utf-8")
    if BEGIN in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + text + rest.split(END, 1)[1].lstrip("\n")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    MATRIX.write_text(doc, encoding="utf-8")


def render_sources(docs: Iterable[Mapping]) -> str:
    """public_runs/SOURCES.md: where every run's numbers came from, with its label."""
    lines = [
        "# Sources of the public runs",
        "",
        "Generated from `runs/*.json` by `python scripts/public_runs.py --sources`. Each row cites the file the "
        "numbers were read from (repository, commit, path); the label was written from the curve before the "
        "tool ran.",
        "",
        "| id | source | task | half | label | why |",
        "|---|---|---|---|---|---|",
    ]
    for d in sorted(docs, key=lambda d: d["id"]):
        src, label = d["source"], d["label"]
        url = f"https://github.com/{src['repo']}/blob/{src['commit']}/{src['path']}"
        cell = [d["id"], f"[{src['repo']}@{src['commit'][:7]}]({url.replace(' ', '%20')})", d.get("task", ""),
                d["half"], label["verdict"] + (" (broken)" if label.get("broken") else ""), label["why"]]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cell) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite the table in {MATRIX.name}")
    ap.add_argument("--runs", action="store_true", help="one line per run")
    ap.add_argument("--half", choices=ALL_HALVES, help="only this half")
    ap.add_argument("--sources", action="store_true", help=f"rewrite {SOURCES.name} from the run files")
    opts = ap.parse_args(argv)
    if opts.sources:
        SOURCES.write_text(render_sources(load_corpus()), encoding="utf-8")
        print(f"wrote {SOURCES.relative_to(ROOT)}")
        return 0
    corpus = load_corpus()
    # a named half is judged as asked (that is how a fresh half's first scoring is made); unasked,
    # only the shown halves are, so a half waiting for its first scoring is never judged early
    docs = [d for d in corpus if d["half"] == opts.half] if opts.half else scorable(corpus)
    judged = judge_all(docs)
    if opts.runs:
        for j in judged:
            found = ", ".join(f"{r}:{lvl}" for r, lvl in j.findings) or "-"
            mark = "ok " if agrees(j) else "BAD"
            print(f"{mark} {j.half:6} {j.label:4} -> {j.verdict:11} {j.run_id}  [{found}]")
        return 0
    text = render(judged, corpus)
    if opts.write:
        write_matrix(text)
        print(f"wrote {MATRIX.name}")
    else:
        sys.stdout.write(text)
    return 0


def agrees(j: Judged) -> bool:
    """The issue's bar: every FAIL is right and no clearly broken run passes. (A WARN on a run
    labelled PASS, or a PASS on one labelled WARN, is shown in the table, not failed: a WARN is
    "right or arguable".)"""
    if j.verdict == "FAIL" and j.label != "FAIL":
        return False
    return not (j.verdict == "PASS" and (j.broken or j.label == "FAIL"))


if __name__ == "__main__":
    sys.exit(main())
