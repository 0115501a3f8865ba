"""The HTML report in a real headless browser (Debian's chromium, over the DevTools
Protocol; tests/cdp.py): every command's page loads from file:// with no console error
and no request beyond itself, a marker is drawn at the x of every step a finding cites,
clicking a finding highlights its marker, and a screenshot of each page is kept.

Screenshots go to $TRAINPROOF_HTML_ARTIFACTS (default: a trainproof-html directory in
the system temp dir); `TRAINPROOF_HTML_ARTIFACTS=docs pytest tests/test_html_browser.py`
refreshes the README's pictures (then shrink them: scripts/shrink_png.py). Skipped,
saying so, where no chromium is installed."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from .cdp import Browser, find_chromium, problems
from .conftest import ROOT

GALLERY = Path("examples") / "gallery"  # relative to ROOT, where the pages are made: the shots show short paths
CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium): "
                                "the HTML report's browser tests did not run")

ARTIFACTS = Path(os.environ.get("TRAINPROOF_HTML_ARTIFACTS") or Path(tempfile.gettempdir()) / "trainproof-html")

CASES = {
    "epoch": ["epoch", str(GALLERY / "nan" / "trainer_state.json")],
    "doctor": ["doctor", str(GALLERY)],
    "compare": ["compare", "--baseline", str(GALLERY / "healthy" / "trainer_state.json"), "--baseline",
                str(GALLERY / "healthy" / "seed43" / "trainer_state.json"),
                str(GALLERY / "lr_hot" / "trainer_state.json"), str(GALLERY / "overfit" / "trainer_state.json"),
                str(GALLERY / "bad_labels" / "trainer_state.json")],
    "preflight": ["preflight", str(Path("tests") / "fixtures" / "preflight" / "alpaca.json")],
    "data": ["data", str(Path("tests") / "fixtures" / "data" / "broken")],
    "env": ["env"],
}

SHOTS = {"compare": "html-report.png"}  # the README's picture: the gallery compared with its baseline seeds

# For each marker: its step, its svg's step range and plot edges (viewBox units), and where
# the browser laid out its line and the svg, in CSS pixels.
_MARKERS_JS = """
Array.from(document.querySelectorAll('g.mk')).map(function(g){
  var svg = g.closest('svg'), line = g.querySelector('line');
  var r = svg.getBoundingClientRect(), l = line.getBoundingClientRect();
  return {rule: g.dataset.rule, step: parseFloat(g.dataset.step), finding: g.dataset.finding,
          s0: parseFloat(svg.dataset.s0), s1: parseFloat(svg.dataset.s1),
          x0: parseFloat(svg.dataset.x0), x1: parseFloat(svg.dataset.x1),
          vb: svg.viewBox.baseVal.width, left: r.left, width: r.width, x: l.left + l.width / 2,
          shown: l.height > 0};
})
"""


@pytest.fixture(scope="module")
def browser():
    b = Browser(CHROMIUM)
    yield b
    b.close()


def _page(run_cli, tmp_path: Path, argv: list[str], monkeypatch) -> tuple[Path, dict]:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "report.html"
    code, stdout, err = run_cli(*argv, "--html", out, "--json")
    assert code in (0, 1, 2) and out.exists(), err
    return out, json.loads(stdout)


@pytest.mark.parametrize("case", list(CASES))
def test_page_loads_offline_with_markers_where_findings_point(browser, run_cli, tmp_path, monkeypatch, case):
    page, doc = _page(run_cli, tmp_path, CASES[case], monkeypatch)
    events = browser.open(page)
    assert problems(events, page) == []
    assert browser.evaluate("document.title").startswith(f"trainproof {doc['command']}")
    marks = browser.evaluate(_MARKERS_JS)
    cited = sorted((f["id"], float(f["location"]["step"])) for r in doc["reports"] for f in r["findings"]
                   if f.get("location", {}).get("step") is not None)
    assert sorted((m["rule"], m["step"]) for m in marks) == cited
    for m in marks:
        vb_x = m["x0"] + (m["step"] - m["s0"]) / (m["s1"] - m["s0"]) * (m["x1"] - m["x0"])
        expected = m["left"] + vb_x * m["width"] / m["vb"]
        assert m["shown"] and abs(m["x"] - expected) < 1.0, m
    if case in ("epoch", "doctor", "compare"):
        assert marks and browser.evaluate("document.querySelectorAll('svg.chart').length") > 0
    else:
        assert browser.evaluate("document.querySelectorAll('svg').length") == 0
        assert browser.evaluate("document.querySelectorAll('table.findings tr').length") > 1
    browser.screenshot(ARTIFACTS / SHOTS.get(case, f"html-{case}.png"))


def test_clicking_a_finding_highlights_its_marker(browser, run_cli, tmp_path, monkeypatch):
    page, _ = _page(run_cli, tmp_path, CASES["compare"], monkeypatch)
    browser.open(page)
    got = browser.evaluate("""(function(){
      var a = document.querySelector('a[data-marker]'); a.click();
      var m = document.getElementById(a.dataset.marker), row = document.getElementById(a.dataset.finding);
      var first = [m.classList.contains('hl'), row.classList.contains('hl')];
      var other = document.querySelectorAll('g.mk')[1];
      other.dispatchEvent(new MouseEvent('click', {bubbles: true}));
      return first.concat([other.classList.contains('hl'),
        document.getElementById(other.dataset.finding).classList.contains('hl'), m.classList.contains('hl'),
        document.querySelectorAll('.hl').length]);
    })()""")
    assert got == [True, True, True, True, False, 2]


def test_the_harness_sees_requests_and_console_errors(browser, tmp_path):
    """A control: the checks above would catch a page that reached out or failed."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body>"
                   "<img src='http://example.invalid/x.png'><script>console.error('boom')</script></body></html>")
    found = problems(browser.open(bad), bad)
    assert any(p.startswith("request: http://example.invalid") for p in found)
    assert any("boom" in p for p in found)


def test_tokenizer_page_loads_with_its_findings(browser, run_cli, tmp_path, monkeypatch):
    pytest.importorskip("tokenizers")
    from .test_tokenizer import corpus, train_bpe, transcripts

    tok = train_bpe(tmp_path / "tokenizer.json")
    rows = [(s, 2.0) for s in corpus(30)] + [("The cat sat on 2023-05-12 at 10:30 \u2603 \u2603.", 2.0)]
    page, doc = _page(run_cli, tmp_path, ["tokenizer", str(tok), str(transcripts(tmp_path / "t.jsonl", rows))],
                      monkeypatch)
    assert problems(browser.open(page), page) == []
    shown = browser.evaluate("Array.from(document.querySelectorAll('table.findings code')).map(c => c.textContent)")
    assert shown == [f["id"] for r in doc["reports"] for f in r["findings"]] and "TP-TOK-HIGH-OOV" in shown
    assert browser.evaluate("document.querySelectorAll('svg').length") == 0
    browser.screenshot(ARTIFACTS / "html-tokenizer.png")


def test_a_hostile_file_name_stays_text_in_the_browser(browser, run_cli, tmp_path, monkeypatch):
    import shutil

    evil = "<img src=x onerror=alert(1)>'\"><script>alert(2)<_script><svg onload=alert(3)>"
    (tmp_path / "logs" / evil).mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "core" / "hf_nonfinite" / "trainer_state.json",
                tmp_path / "logs" / evil / "trainer_state.json")
    page, _ = _page(run_cli, tmp_path, ["doctor", str(tmp_path / "logs")], monkeypatch)
    events = browser.open(page)
    assert problems(events, page) == []
    assert not any(e.get("method") == "Page.javascriptDialogOpening" for e in events)
    assert browser.evaluate("document.querySelectorAll('img, script').length") == 1  # our own script
    assert browser.evaluate(f"document.body.textContent.includes({json.dumps(evil)})")
