"""Generate EVIDENCE_MATRIX.md from the committed logs by asking trainproof itself.

    python scripts/evidence_matrix.py              # print the matrix
    python scripts/evidence_matrix.py --write      # rewrite EVIDENCE_MATRIX.md
    python scripts/evidence_matrix.py --update-golden   # rewrite tests/golden/gallery*/

Every log goes through the format registry (`read_run`, format auto), the single-run
judge (`judge_run`) and the compare machinery (`compare_all`); a log this build cannot
read is marked "not readable by this build", never a crash. `--update-golden` refuses
unless the newest CHANGELOG.md section names every gallery configuration whose
verdict or rule set changes: a verdict change is a release note."""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from trainproof.commands.compare import compare_all  # noqa: E402
from trainproof.engine import judge_run  # noqa: E402
from trainproof.model import InputError, Report, Run  # noqa: E402
from trainproof.parsers import read_run  # noqa: E402
from trainproof.records import loss_disagreement  # noqa: E402

MATRIX = ROOT / "EVIDENCE_MATRIX.md"
GOLDEN = ROOT / "tests" / "golden" / "gallery"
GALLERY = ROOT / "examples" / "gallery"
GOLDEN2 = ROOT / "tests" / "golden" / "gallery2"
GALLERY2 = ROOT / "examples" / "gallery2"
EVIDENCE = ROOT / "evidence"
SEEDS = (42, 43, 44)
UNREADABLE = "not readable by this build"

# What each broken knob should look like, stated before judging (the corpus README's
# table for the same six configurations): (single-run verdicts, compare verdicts).
EXPECTED: dict[str, tuple[frozenset[str], frozenset[str], str]] = {
    "healthy": (frozenset({"PASS"}), frozenset({"PASS"}), "nothing broken"),
    "lr_hot": (frozenset({"FAIL"}), frozenset({"FAIL"}), "diverges"),
    "lr_zero": (frozenset({"FAIL"}), frozenset({"FAIL"}), "does not train"),
    "nan": (frozenset({"FAIL"}), frozenset({"FAIL"}), "non-finite values"),
    "bad_labels": (frozenset({"PASS", "WARN"}), frozenset({"FAIL"}),
                   "looks like learning on its own; relative signature"),
    "overfit": (frozenset({"WARN", "FAIL"}), frozenset({"PASS", "WARN"}),
                "eval loss climbs; train loss is fine"),
}
CONFIGS = tuple(EXPECTED)

# evidence/<framework>/<run>/<record>: the records of one run, in display order.
RECORDS: dict[str, tuple[tuple[str, str], ...]] = {
    "lightning": (("CSVLogger", "csv/metrics.csv"), ("TensorBoardLogger", "tb")),
    "keras": (("CSVLogger", "training.csv"), ("TensorBoard callback", "tb")),
    "pytorch": (("JSON Lines", "metrics.jsonl"),),
    "trl": (("trainer_state.json", "trainer_state.json"),),
    # The two records that hold both jobs of a resumed run; its final trainer_state.json (the
    # resumed job's state, with no boundary left in it) is judged in tests/test_resume_integrity.py.
    "resume": (("TensorBoard callback", "tb"), ("JSON Lines callback", "metrics.jsonl")),
    # HF Trainer output directories: the state doctor judges, the latest checkpoint's
    "declared": (("trainer_state.json", "checkpoint-*/trainer_state.json"),),
    "declared_lightning": (("CSVLogger", "csv/metrics.csv"),),
    # Coqui Trainer run directories: the text log beside the .pth files it names
    "coqui": (("trainer_0_log.txt", "trainer_0_log.txt"),),
}
# The frameworks that ran the shared byte-MLP recipes (healthy, diverging) of
# scripts/make_evidence_common.py; trl's GRPO runs are RL fine-tunes with their own names.
RECIPE_FRAMEWORKS = ("lightning", "keras", "pytorch")
EVIDENCE_EXPECTED = {
    "healthy": frozenset({"PASS"}), "diverging": frozenset({"FAIL"}),
    "grpo_healthy": frozenset({"PASS"}), "grpo_healthy_slow": frozenset({"PASS"}),
    "grpo_no_signal": frozenset({"FAIL"}), "grpo_lr_zero": frozenset({"WARN", "FAIL"}),
    "grpo_lr_tiny": frozenset({"WARN", "FAIL"}), "grpo_echo": frozenset({"FAIL"}),
    "grpo_sparse_saturates": frozenset({"PASS"}), "grpo_sparse_slow": frozenset({"PASS"}),
    # resume/: one HF Trainer run stopped at step 130 and started again (make_evidence_resume.py)
    "uninterrupted": frozenset({"PASS"}), "resume_sound": frozenset({"PASS"}),
    "resume_no_optimizer": frozenset({"FAIL"}), "restart_from_weights": frozenset({"FAIL"}),
    "constant_resume_sound": frozenset({"PASS"}),
    "constant_resume_no_optimizer": frozenset({"PASS"}),  # lost Adam moments alone: not visible
    "lr_wrong_steps": frozenset({"WARN"}), "killed": frozenset({"WARN"}),
    "eval_no_labels": frozenset({"WARN"}), "best_gone": frozenset({"WARN"}),
    "best_kept": frozenset({"PASS"}), "early_stopped": frozenset({"PASS"}),
    "lr_hardcoded": frozenset({"WARN"}), "healthy_cosine": frozenset({"PASS"}),
    # coqui/: both runs overfit on purpose (TP-OVERFIT); only best_unsaved lost its best model
    "best_unsaved": frozenset({"WARN"}), "best_saved": frozenset({"WARN"}),
}


@dataclass(frozen=True)
class Judged:
    """One trainproof answer, reduced to what the matrix and the goldens show."""

    verdict: str
    rules: tuple[tuple[str, str], ...] = ()  # (rule id, level), sorted
    error: str | None = None
    run: Run | None = None

    @property
    def ids(self) -> list[str]:
        return sorted({r for r, _ in self.rules})

    def cell(self) -> str:
        if self.error is not None:
            return f"{self.verdict} ({self.error})"
        shown = [f"{r} {lv}" for r, lv in self.rules if lv != "PASS"]
        return f"**{self.verdict}**" + (f": {', '.join(shown)}" if shown else "")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def from_report(report: Report, run: Run | None = None) -> Judged:
    rules = tuple(sorted({(f.rule_id, f.level.value) for f in report.findings}))
    return Judged(report.verdict.value, rules, run=run)


def load(path: Path) -> Run | Judged:
    """The parsed run, or a Judged saying why this build cannot read it."""
    try:
        return read_run(path, "auto", display=rel(path))
    except InputError as exc:
        return Judged(UNREADABLE, error=str(exc).replace(str(ROOT) + "/", ""))


def judge_single(path: Path) -> Judged:
    run = load(path)
    return run if isinstance(run, Judged) else from_report(judge_run(run), run)


def judge_compare(baseline: Run | None, run: Run | None) -> Judged:
    if baseline is None or run is None:
        return Judged(UNREADABLE, error="a side of the pair could not be read")
    reports, _ = compare_all(baseline, [(run.path, run)])
    return from_report(reports[0], run)


@dataclass(frozen=True)
class Gallery:
    """One committed gallery: where its runs and golden snapshots live, how the matrix
    titles it."""

    key: str
    title: str
    root: Path
    golden: Path


def galleries() -> tuple[Gallery, ...]:
    # built on call so a test that points GALLERY/GOLDEN elsewhere is obeyed
    return (Gallery("gallery", "Gallery", GALLERY, GOLDEN),
            Gallery("gallery2", "Gallery 2 (out of sample: Llama-style decoder, pydoc topics)",
                    GALLERY2, GOLDEN2))


def gallery_log(config: str, seed: int, root: Path | None = None) -> Path:
    base = (root or GALLERY) / config
    return (base if seed == SEEDS[0] else base / f"seed{seed}") / "trainer_state.json"


def judge_gallery(root: Path | None = None) -> dict[tuple[str, int], dict[str, Judged]]:
    """(config, seed) -> {"epoch": single-run, "compare": against same-seed healthy}."""
    out: dict[tuple[str, int], dict[str, Judged]] = {}
    for seed in SEEDS:
        healthy = judge_single(gallery_log("healthy", seed, root))
        for config in CONFIGS:
            single = (healthy if config == "healthy"
                      else judge_single(gallery_log(config, seed, root)))
            entry = {"epoch": single}
            if config != "healthy":
                entry["compare"] = judge_compare(healthy.run, single.run)
            out[(config, seed)] = entry
    return out


def golden_record(entry: dict[str, Judged]) -> dict[str, dict[str, object]]:
    return {k: {"verdict": j.verdict, "rules": j.ids} for k, j in sorted(entry.items())}


def evidence_runs() -> list[tuple[str, str, list[tuple[str, Path, Judged]]]]:
    """(framework, run, [(record name, path, judged)]) for every committed run dir."""
    out = []
    for framework, records in RECORDS.items():
        for run_dir in sorted(p for p in (EVIDENCE / framework).glob("*") if p.is_dir()):
            paths = [(name, _record(run_dir, sub)) for name, sub in records]
            judged = [(name, path, judge_single(path)) for name, path in paths]
            out.append((framework, run_dir.name, judged))
    return out


def _record(run_dir: Path, sub: str) -> Path:
    """The record's path; a `checkpoint-*` pattern is the highest-numbered checkpoint's."""
    if "*" not in sub:
        return run_dir / sub
    found = sorted(run_dir.glob(sub), key=lambda p: int(p.parent.name.rpartition("-")[2]))
    return found[-1] if found else run_dir / sub


def agreement(records: list[tuple[str, Path, Judged]]) -> str:
    if len(records) < 2:
        return "one record"
    if any(j.run is None for _, _, j in records):
        return "cannot tell yet: a record is " + UNREADABLE
    first = records[0][2]
    for name, _, j in records[1:]:
        if (j.verdict, j.ids) != (first.verdict, first.ids):
            return f"DISAGREE: {records[0][0]} says {first.verdict} {first.ids}, {name} {j.verdict} {j.ids}"
        why = loss_disagreement(first.run, j.run)  # type: ignore[arg-type]
        if why is not None:
            return f"same verdict, different numbers: {why}"
    n = len(first.run.get("loss") or ())  # type: ignore[union-attr]
    return f"agree: same verdict and rule set, same {n} loss values"


def mark(verdict: str, allowed: frozenset[str]) -> str:
    if verdict == UNREADABLE:
        return "-"
    return "yes" if verdict in allowed else "**NO**"


def gallery_tables(gallery: dict[tuple[str, int], dict[str, Judged]],
                   title: str = "Gallery") -> list[str]:
    lines = [f"## {title}: one run on its own (`trainproof epoch`)", "",
             "| run | seed | verdict and rules | expected | as expected |", "|---|---|---|---|---|"]
    for (config, seed), entry in gallery.items():
        single, _, why = EXPECTED[config]
        lines.append(f"| {config} | {seed} | {entry['epoch'].cell()} | "
                     f"{'/'.join(sorted(single))} ({why}) | {mark(entry['epoch'].verdict, single)} |")
    lines += ["", f"## {title}: against the same-seed healthy run (`trainproof compare`)", "",
              "| run | seed | verdict and rules | expected | as expected |", "|---|---|---|---|---|"]
    for (config, seed), entry in gallery.items():
        if "compare" in entry:
            allowed = EXPECTED[config][1]
            lines.append(f"| {config} | {seed} | {entry['compare'].cell()} | "
                         f"{'/'.join(sorted(allowed))} | {mark(entry['compare'].verdict, allowed)} |")
    lines += ["", f"## {title}: healthy against healthy, across seeds (the compare rules' noise "
              "floor)", "",
              "| baseline | run | verdict and rules | as expected |", "|---|---|---|---|"]
    for a, b in ((42, 43), (42, 44), (43, 44)):
        j = judge_compare(gallery[("healthy", a)]["epoch"].run, gallery[("healthy", b)]["epoch"].run)
        lines.append(f"| healthy seed {a} | healthy seed {b} | {j.cell()} | "
                     f"{mark(j.verdict, frozenset({'PASS'}))} |")
    return lines


def evidence_tables() -> list[str]:
    lines = ["## Other frameworks (`evidence/`)", "",
             "| framework | run | record | log | verdict and rules | expected | as expected |",
             "|---|---|---|---|---|---|---|"]
    agree = ["", "### Two records of one run", "", "| framework | run | records | agreement |",
             "|---|---|---|---|"]
    for framework, run, records in evidence_runs():
        allowed = EVIDENCE_EXPECTED.get(run, frozenset())
        for name, path, j in records:
            lines.append(f"| {framework} | {run} | {name} | `{rel(path)}` | {j.cell()} | "
                         f"{'/'.join(sorted(allowed))} | {mark(j.verdict, allowed)} |")
        if len(records) > 1:
            names = " + ".join(n for n, _, _ in records)
            agree.append(f"| {framework} | {run} | {names} | {agreement(records)} |")
    return lines + agree


HEADER = """# Evidence matrix

Generated by `python scripts/evidence_matrix.py --write` from the committed logs in
`examples/gallery/`, `examples/gallery2/` and `evidence/`; do not edit by hand (a test
fails when it is stale). Gallery 2 is out of sample: another model family, text,
tokenizer and schedule, made after the rules were written and judged without retuning.
Each log goes through trainproof's format registry, single-run judge and compare rules.
"Expected" is what the broken knob should look like, written down before judging;
**NO** marks a verdict that contradicts what was broken. Rules listed are every
finding except the PASS statements.
"""


def render() -> str:
    lines = [HEADER]
    for g in galleries():
        lines += [*gallery_tables(judge_gallery(g.root), g.title), ""]
    lines += evidence_tables()
    return "\n".join(lines) + "\n"


def golden_changes() -> dict[Path, dict[str, object]]:
    """golden file -> new record, for every run of every gallery whose record differs."""
    changed = {}
    for g in galleries():
        for (config, seed), entry in judge_gallery(g.root).items():
            path = g.golden / f"{config}_seed{seed}.json"
            record = golden_record(entry)
            if not path.exists() or json.loads(path.read_text()) != record:
                changed[path] = record
    return changed


def newest_changelog_section(text: str) -> str:
    heads = [m.start() for m in re.finditer(r"^## ", text, flags=re.M)]
    if not heads:
        return text
    return text[heads[0]:heads[1]] if len(heads) > 1 else text[heads[0]:]


def update_golden(changelog: Path = ROOT / "CHANGELOG.md") -> str:
    changed = golden_changes()
    if not changed:
        return "golden snapshots already match"
    # a snapshot that did not exist yet is new evidence, not a changed verdict
    configs = sorted({p.name.rsplit("_seed", 1)[0] for p in changed if p.exists()})
    section = newest_changelog_section(changelog.read_text()) if changelog.exists() else ""
    missing = [c for c in configs if c not in section]
    if missing:
        raise SystemExit(f"refusing: the newest CHANGELOG.md section does not mention the "
                         f"changed gallery configuration(s) {', '.join(missing)}")
    for path, record in changed.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n")
    names = sorted(f"{p.parent.name}/{p.name}" for p in changed)
    return f"updated {len(changed)} golden snapshot(s): {', '.join(names)}"


_PUBLIC_BEGIN = "<!-- public-runs:begin -->"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {MATRIX.name}")
    ap.add_argument("--update-golden", action="store_true", help="rewrite the gallery goldens")
    opts = ap.parse_args(argv)
    if opts.update_golden:
        print(update_golden())
        return 0
    text = render()
    old = MATRIX.read_text(encoding="utf-8") if MATRIX.exists() else ""
    if _PUBLIC_BEGIN in old:  # the public-runs table is scripts/public_runs.py's: keep it as it is
        text = text.rstrip("\n") + "\n\n" + _PUBLIC_BEGIN + old.split(_PUBLIC_BEGIN, 1)[1]
    if opts.write:
        MATRIX.write_text(text)
        print(f"wrote {rel(MATRIX)}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
