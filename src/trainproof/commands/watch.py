"""`trainproof watch LOG`: the single-run verdict on a log while training writes it.

Each poll reads only what was appended (line formats) or re-reads a file that is
rewritten whole (trainer_state.json, TensorBoard event files) when it changed, judges
again if anything new arrived, and adds TP-STALL when the run's step has not advanced
for --stall-timeout seconds. A line is printed whenever new records arrive or the
verdict changes (with --json: one JSON document per line, per verdict change); the
full report follows when the watch ends: --until-fail on a FAIL, --max-duration, the
trainer's end-of-training entry (trainer_state.json), Ctrl-C, SIGTERM, or a reader that
closed standard output. The exit code is the last verdict's. Progress lines go to
standard output only while it holds the text report (--json: JSON lines; another
report on `-`: none, so that report stays the only thing there).

A LOG that does not exist (or cannot be recognised) yet is waited for up to GRACE_S
seconds (less if --stall-timeout or --max-duration is shorter), then exit 2."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from trainproof.address import split_address
from trainproof.commands.common import add_vocab_argument, vocabulary, with_vocabulary
from trainproof.engine import amend, apply, judge_run
from trainproof.model import InputError, Level, Report, ReportSet, Run, Verdict
from trainproof.parsers import resolve
from trainproof.parsers.incremental import LineSource, RereadSource, Update, open_source
from trainproof.probes.vocab import Vocabulary
from trainproof.render import jsonout
from trainproof.rules.live import STALL, Progress
from trainproof.signals import interrupt_word
from trainproof.stdio import printable, silence_stdout, stdout_format

NAME = "watch"
HELP = "judge a growing training log live, while the run writes it"
LOG_INPUT = True
GRACE_S = 30.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", metavar="LOG", help="a log file being written, or a TensorBoard run directory")
    p.add_argument("--interval", type=float, default=10.0, metavar="S", help="seconds between polls (10)")
    p.add_argument("--until-fail", action="store_true", help="exit (code 1) at the first FAIL")
    p.add_argument("--stall-timeout", type=float, default=STALL.t("timeout"), metavar="S",
                   help=f"TP-STALL when the step has not advanced for S seconds ({STALL.t('timeout'):g}; "
                   "0 turns it off)")
    p.add_argument("--max-duration", type=float, default=None, metavar="S",
                   help="stop watching after S seconds and report the last verdict")
    add_vocab_argument(p)


def run(args: argparse.Namespace) -> ReportSet:
    if args.interval <= 0 or args.stall_timeout < 0 or (args.max_duration is not None and args.max_duration <= 0):
        raise InputError("watch: --interval and --max-duration must be > 0, --stall-timeout >= 0")
    return Watch(args, sys.stdout).run()


@dataclass
class _Progress:
    """When the run's highest step last advanced (monotonic seconds)."""

    since: float
    step: float | None = None

    def saw(self, run: Run | None, now: float) -> None:
        span = run.step_span if run is not None else None
        if span is not None and (self.step is None or span[1] > self.step):
            self.step, self.since = span[1], now


class Watch:
    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        self.args, self.out = args, out
        self.progress_lines = stdout_format(args) == "text"
        where, self.run_id = split_address(args.log)  # PATH::RUN_ID: one run of a store
        self.path, self.shown = Path(where), where
        limits = [GRACE_S, args.max_duration or GRACE_S, args.stall_timeout or GRACE_S]
        self.grace = min(limits)
        self.start = time.monotonic()
        self.report: Report | None = None
        self._shown: tuple | None = None
        self._waiting_said = False
        self._problem_since: float | None = None
        self._notes: list[str] = []  # said during the watch; they travel with every later report
        self._ended = "interrupted before anything could be read"
        self._vocab: tuple[Vocabulary | None, list[str]] | None = None  # looked up once, when a run is first read

    def run(self) -> ReportSet:
        try:
            source = self._open()
            self._follow(source)
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the verdict on what was read
            word = interrupt_word(exc)
            self._ended = f"{word} before anything could be read"
            try:
                self._say(word)
            except BrokenPipeError:
                silence_stdout()
        except BrokenPipeError:  # nobody reads the progress any more: stop watching
            silence_stdout()
            self._ended = "standard output was closed before anything could be read"
        if self.report is None:
            return ReportSet(NAME, error=f"{self.args.log}: {self._ended}", streamed=bool(self.args.json))
        return ReportSet(NAME, (self.report,), streamed=bool(self.args.json))

    def _open(self) -> LineSource | RereadSource:
        """Wait (within the grace) until LOG exists and its format is recognised."""
        while True:
            try:
                fmt = resolve(self.path, getattr(self.args, "format", "auto"))
                return open_source(self.path, fmt.name, self.shown, getattr(self.args, "map", {}) or {},
                                   run=self.run_id)
            except InputError as exc:
                waited = time.monotonic() - self.start
                hopeless = self.path.exists() and not (self.path.is_file() or self.path.is_dir())
                if hopeless or waited >= self.grace:
                    raise InputError(f"{exc} (waited {waited:.0f} s for it)" if waited else str(exc)) from None
                if not self._waiting_said:
                    what = "to hold a recognisable log" if self.path.exists() else "to appear"
                    self._say(f"waiting for {self.args.log} {what} (up to {self.grace:g} s)")
                    self._waiting_said = True
                time.sleep(min(self.args.interval, 1.0, self.grace - waited))

    def _follow(self, source: LineSource | RereadSource) -> None:
        progress = _Progress(time.monotonic())
        judged: Report | None = None
        run_: Run | None = None
        missing_since: float | None = None
        while True:
            now = time.monotonic()
            upd: Update = source.update()
            if upd.restarted:
                self._say(f"log {upd.restarted}: judging it from the start")
                progress = _Progress(now)
            if upd.missing:
                missing_since = missing_since or now
                if now - missing_since >= self.grace:
                    self._ended = f"disappeared and did not come back within {self.grace:g} s"
                    self._note(f"the log {self._ended}")
                    return
            else:
                missing_since = None
            if upd.problem:
                self._unreadable(upd.problem, now, judged is None)
            if upd.changed:
                self._problem_since = None
                run_ = source.run()
                if run_ is not None:
                    self._vocab = self._vocab or vocabulary(self.path, self.args)
                    run_ = with_vocabulary(run_, self._vocab)
                    # a log being written: its last state is not where the run ended (TP-STOPPED-SHORT)
                    run_ = replace(run_, meta={**run_.meta, "live": True})
                    progress.saw(run_, now)
                    judged = judge_run(run_)
            if judged is not None:
                report = with_stall(judged, progress, now, self.args)
                self.report = replace(report, notes=(*report.notes, *self._notes))
                self._show(self.report, upd.changed)
            if self._done(run_, now):
                return
            self._sleep(now)

    def _unreadable(self, problem: str, now: float, nothing_yet: bool) -> None:
        """A re-read that keeps failing: tolerated for the grace (a rewrite in progress),
        then said once; exit 2 if nothing was ever read."""
        since = self._problem_since = self._problem_since or now
        if now - since < self.grace:
            return
        if nothing_yet:
            raise InputError(f"{problem} (for {now - since:.0f} s)")
        note = f"cannot re-read the log, keeping the last verdict: {problem}"
        if note not in self._notes:
            self._note(note)

    def _done(self, run_: Run | None, now: float) -> bool:
        if self.args.until_fail and self.report is not None and self.report.verdict is Verdict.FAIL:
            return True
        if run_ is not None and run_.meta.get("summary"):
            self._say("training finished (the trainer wrote its end-of-training summary)")
            return True
        return self.args.max_duration is not None and now - self.start >= self.args.max_duration

    def _sleep(self, now: float) -> None:
        wait = self.args.interval
        if self.args.max_duration is not None:
            wait = min(wait, max(0.0, self.start + self.args.max_duration - now))
        time.sleep(wait)

    def _note(self, text: str) -> None:
        self._say(text)
        self._notes.append(text)
        if self.report is not None:
            self.report = replace(self.report, notes=(*self.report.notes, text))

    def _show(self, report: Report, new_records: bool) -> None:
        ids = tuple(sorted({f.rule_id for f in report.findings if f.level in (Level.FAIL, Level.WARN)}))
        state = (report.verdict, ids)
        changed = state != self._shown
        self._shown = state
        if self.args.json:
            if changed:
                doc = jsonout.document(ReportSet(NAME, (report,)))
                doc["event"], doc["time"] = "verdict", time.strftime("%Y-%m-%dT%H:%M:%S%z")
                self.out.write(printable(json.dumps(doc, allow_nan=False, separators=(",", ":")) + "\n", self.out))
                self.out.flush()
        elif changed or new_records:
            self._say(status_line(report, ids))

    def _say(self, text: str) -> None:
        if not self.progress_lines:
            return
        self.out.write(printable(f"[{time.strftime('%H:%M:%S')}] {text}\n", self.out))
        self.out.flush()


def status_line(report: Report, ids: tuple[str, ...]) -> str:
    if report.verdict is Verdict.NOT_CHECKED:
        why = next((f"{f.rule_id}: {f.evidence}" for f in report.findings), "nothing checked yet")
        return f"warming up ({report.records} records; {why})"
    step = "" if report.span is None else f"step {report.span[1]:g}, "
    tail = f" - {', '.join(ids)}" if ids else ""
    return f"{step}{report.records} records: {report.verdict.value}{tail}"


def with_stall(report: Report, progress: _Progress, now: float, args: argparse.Namespace) -> Report:
    """The judged report plus the stall check. A report that judged nothing stays
    NOT-CHECKED (a stall WARN must not turn "could not judge" into exit 0)."""
    if report.verdict is Verdict.NOT_CHECKED:
        return report
    out = apply("live", Progress(report.subject, progress.step, now - progress.since, args.stall_timeout))
    return amend(report, "single_run", out)
