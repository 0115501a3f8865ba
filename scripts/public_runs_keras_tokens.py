"""Keep, in a `keras_fit_stdout` run file, the numbers its Keras printout held around the metrics
(batch counter, seconds, per-epoch and per-step times), and check the rebuild against the original.

    python scripts/public_runs_keras_tokens.py ORIGINAL RUN.json          # check only
    python scripts/public_runs_keras_tokens.py ORIGINAL RUN.json --write  # fill layout.lines first

ORIGINAL is the printout at the run's cited commit (e.g. `git show COMMIT:PATH > ORIGINAL` in the
repository's snapshot). `--write` reads each epoch's closing line in file order, checks its metrics
equal the run file's series at that line, and stores the line's print name and numbers as the
fourth and fifth elements of its `layout.lines` entry (only the layout block of the file changes).
The check rebuilds the run's `fit.log` (scripts/public_runs_logs.py) and compares its lines with
the original's `Epoch e/E` and closing lines, character for character; it prints the SHA-256 of
those lines (joined with "\\n"), which tests/test_public_runs.py keeps for each run.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from public_runs_logs import keras_fit_stdout

_TIME = r"(\d+)(s|ms|us)"
_CLOSING = {
    "keras20_v2": re.compile(r"^(?P<seconds>\d+)s - (?P<metrics>\S+: .*)$"),
    "tfkeras2_v2": re.compile(rf"^(?P<batches>\d+)/(?P=batches) - (?P<seconds>\d+)s - (?P<metrics>.*) - "
                              rf"(?P<epoch_time>{_TIME})/epoch - (?P<step_time>{_TIME})/step$"),
    "tfkeras2_v1": re.compile(rf"^(?P<batches>\d+)/(?P=batches) \[=+\] - (?P<seconds>\d+)s "
                              rf"(?P<step_time>{_TIME})/step - (?P<metrics>.*)$"),
}
_EPOCH = re.compile(r"^Epoch \d+/\d+$")


def _time(token: str) -> list:
    number, unit = re.fullmatch(_TIME, token).groups()
    return [int(number), unit]


def closing_lines(text: str) -> list[tuple[str, dict, dict[str, float]]]:
    """(print name, numbers around the metrics, metrics) per epoch-closing line, in file order."""
    out = []
    for line in text.splitlines():
        for name, regex in _CLOSING.items():
            m = regex.match(line)
            if m is None:
                continue
            found = m.groupdict()
            fields = {k: int(found[k]) for k in ("batches", "seconds") if found.get(k)}
            fields |= {k: _time(found[k]) for k in ("epoch_time", "step_time") if found.get(k)}
            metrics = dict(pair.split(": ") for pair in found["metrics"].split(" - "))
            out.append((name, fields, {k: float(v) for k, v in metrics.items()}))
            break
    return out


def epoch_lines(text: str) -> list[str]:
    """The original's `Epoch e/E` and epoch-closing lines, in order, without line endings."""
    return [line for line in text.splitlines()
            if _EPOCH.match(line) or any(r.match(line) for r in _CLOSING.values())]


def fill(doc: dict, text: str) -> dict:
    layout, series = doc["layout"], doc["series"]
    closing = closing_lines(text)
    if len(closing) != len(layout["lines"]):
        raise SystemExit(f"{len(closing)} closing lines in the original, {len(layout['lines'])} in the layout")
    cursor = dict.fromkeys(series, 0)
    lines = []
    for (step, keyset, total, *_), (name, fields, metrics) in zip(layout["lines"], closing, strict=True):
        if list(metrics) != layout["keysets"][keyset]:
            raise SystemExit(f"epoch {step}: the original prints {list(metrics)}")
        for key, value in metrics.items():
            at, kept = series[key][cursor[key]]
            if (at, kept) != (step, value):
                raise SystemExit(f"{key}: the original prints {value} at epoch {step}, the series has {kept} at {at}")
            cursor[key] += 1
        lines.append([step, keyset, total, name, fields])
    layout["lines"] = lines
    if "\r\n" in text:
        layout["newline"] = "\r\n"
    return layout


def _render_layout(layout: dict) -> str:
    """The layout block as the run files write JSON (indent 1), one layout line per text line."""
    text = json.dumps({**layout, "lines": "@LINES@"}, indent=1).replace("\n", "\n ")
    body = ",\n".join("   " + json.dumps(line) for line in layout["lines"])
    return text.replace('"@LINES@"', "[\n" + body + "\n  ]")


def write(run: Path, layout: dict) -> None:
    text = run.read_text()
    start, end = text.index('"layout": '), text.index(',\n "label": ')
    run.write_text(text[:start] + '"layout": ' + _render_layout(layout) + text[end:])
    if json.loads(run.read_text())["layout"] != layout:
        raise SystemExit("the rewritten layout does not read back equal")


def check(doc: dict, original: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        rebuilt = keras_fit_stdout(doc, Path(tmp)).read_bytes().decode()
    want = epoch_lines(original)
    got = rebuilt.split(doc["layout"].get("newline", "\n"))[:-1]
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            raise SystemExit(f"line {i + 1}: original {a!r}, rebuilt {b!r}")
    if len(want) != len(got):
        raise SystemExit(f"{len(want)} epoch lines in the original, {len(got)} rebuilt")
    if original.count("\r\n") and "\r\n" not in rebuilt:
        raise SystemExit("the original ends its lines with \\r\\n, the rebuild does not")
    return hashlib.sha256("\n".join(got).encode()).hexdigest()


def main(argv: list[str]) -> None:
    original_path, run = Path(argv[0]), Path(argv[1])
    original = original_path.read_bytes().decode()
    doc = json.loads(run.read_text())
    if "--write" in argv:
        write(run, fill(doc, original))
        doc = json.loads(run.read_text())
    digest = check(doc, original)
    print(f"{doc['id']}: {len(doc['layout']['lines'])} epochs, rebuilt lines equal the original's; sha256 {digest}")


if __name__ == "__main__":
    main(sys.argv[1:])
