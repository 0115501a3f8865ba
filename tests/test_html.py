"""The HTML report as a document (tests/test_html_browser.py opens it in a browser):
self-contained, escaped, a marker per finding step, the curves thinned without losing
a cited point, and a bounded page for a 1M-point log."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from trainproof.curves import thin

from .conftest import FIXTURES, ROOT

GALLERY = ROOT / "examples" / "gallery"
PAGE_LIMIT = 500_000  # bytes: a typical page, the bound


class _Tags(HTMLParser):
    """Every element with its attributes, and the text of <script> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def _parse(page: str) -> _Tags:
    t = _Tags()
    t.feed(page)
    return t


def _html(run_cli, tmp_path, *argv) -> tuple[str, dict]:
    out = tmp_path / "r.html"
    code, stdout, err = run_cli(*argv, "--html", out, "--json")
    assert code in (0, 1), err
    return out.read_text(), json.loads(stdout)


def _self_contained(page: str) -> None:
    tags = _parse(page)
    for tag, attrs in tags.elements:
        for name in ("src", "href", "xlink:href", "action", "srcset"):
            v = attrs.get(name)
            assert v is None or v.startswith(("#", "data:")), (tag, name, v)
    assert "http:" not in page and "https:" not in page and "url(" not in page and "@import" not in page


def _cited(doc: dict) -> list[tuple[str, float]]:
    return sorted((f["id"], float(f["location"]["step"])) for r in doc["reports"] for f in r["findings"]
                  if f.get("location", {}).get("step") is not None)


def _markers(page: str) -> list[tuple[str, float]]:
    return sorted((a["data-rule"], float(a["data-step"])) for t, a in _parse(page).elements
                  if t == "g" and "data-rule" in a)


def test_epoch_page_marks_every_cited_step_and_links_it(run_cli, tmp_path):
    page, doc = _html(run_cli, tmp_path, "epoch", GALLERY / "nan" / "trainer_state.json")
    _self_contained(page)
    assert _cited(doc) and _markers(page) == _cited(doc)
    tags = _parse(page).elements
    ids = {a.get("id") for _, a in tags}
    links = [a for t, a in tags if t == "a" and a.get("data-marker")]
    assert links and all(a["href"] == "#" + a["data-marker"] and a["data-marker"] in ids for a in links)
    assert all(a["data-finding"] in ids for a in links)
    for axis in ("step", "loss", "learning rate", "grad norm"):
        assert f">{axis}" in page, axis


def test_compare_draws_baseline_envelope_and_ranking(run_cli, tmp_path):
    page, doc = _html(run_cli, tmp_path, "compare", "--baseline", GALLERY / "healthy" / "trainer_state.json",
                      "--baseline", GALLERY / "healthy" / "seed43" / "trainer_state.json",
                      GALLERY / "lr_hot" / "trainer_state.json", GALLERY / "overfit" / "trainer_state.json")
    _self_contained(page)
    assert "id='ranking'" in page and "class='env'" in page and "data-curve='baseline loss'" in page
    order = re.findall(r"<tr><td class='num'>\d+</td>.*?<code>(.*?)</code>", page)
    assert order == [r["run"] for r in doc["ranking"]] and len(order) == 2
    assert _markers(page) == _cited(doc)


def test_doctor_opens_with_a_summary_linking_every_run(run_cli, tmp_path):
    page, doc = _html(run_cli, tmp_path, "doctor", ROOT / "examples")  # both galleries: 36 runs
    _self_contained(page)
    summary = page.split("id='summary'", 1)[1].split("</section>", 1)[0]
    links = re.findall(r"href='#(r\d+)'", summary)
    assert len(links) == len(doc["reports"]) and all(f"<section id='{r}'" in page for r in links)
    assert summary.count("class='spark'") == len(doc["reports"])
    assert len(page.encode()) < PAGE_LIMIT


@pytest.mark.parametrize("argv", [["preflight", str(ROOT / "tests/fixtures/preflight/alpaca.json")],
                                  ["data", str(ROOT / "tests/fixtures/data/broken")], ["env"]])
def test_non_run_commands_get_findings_and_checks_without_charts(run_cli, tmp_path, argv):
    out = tmp_path / "r.html"
    code, _, err = run_cli(*argv, "--html", out)
    assert code in (0, 1, 2), err
    page = out.read_text()
    _self_contained(page)
    assert "class='findings'" in page and "<b>Ran:</b>" in page and "<svg" not in page


def test_hostile_file_name_cannot_inject(run_cli, tmp_path):
    evil = "<img src=x onerror=alert(1)>'\"><script>alert(2)</script>"
    d = tmp_path / evil.replace("/", "_")
    d.mkdir()
    shutil.copy(FIXTURES / "hf_nonfinite" / "trainer_state.json", d / "trainer_state.json")
    page, _ = _html(run_cli, tmp_path, "doctor", tmp_path)
    tags = _parse(page)
    assert not any(t == "img" for t, _ in tags.elements)
    assert not any(k.startswith("on") for _, a in tags.elements for k in a)
    assert len(tags.scripts) == 1 and "alert" not in tags.scripts[0]
    assert "&lt;script&gt;alert(2)&lt;_script&gt;" in page and "onerror=alert(1)&gt;&#x27;&quot;" in page


def test_thin_keeps_extremes_ends_and_cited_points():
    rng = np.random.default_rng(1)
    steps = np.arange(100_000, dtype=float)
    values = rng.random(100_000)
    values[31_337] = 50.0
    values[77_777] = -50.0
    cited = [12_345.0, 99_998.0]
    xs, ys = thin(steps, values, 100, cited)
    assert len(xs) <= 2 * 100 + 2 + len(cited)
    got = dict(zip(xs, ys, strict=True))
    assert got[31_337.0] == 50.0 and got[77_777.0] == -50.0
    assert {0.0, 99_999.0, *cited} <= set(got)
    assert all(got[s] == values[int(s)] for s in xs)  # thinned, never averaged or moved


def _big_log(path: Path, n: int = 1_000_000, spike: int = 654_321) -> None:
    rng = np.random.default_rng(0)
    s = np.arange(1, n + 1)
    loss = 3 * np.exp(-s / 2e5) + 0.5 + 0.02 * rng.standard_normal(n)
    grad = 1 + 0.1 * rng.standard_normal(n)
    grad[spike - 1] = 80.0
    with path.open("w") as fh:
        fh.write("step,loss,grad_norm,lr\n")
        np.savetxt(fh, np.c_[s, loss, grad, np.full(n, 1e-4)], fmt=["%d", "%.5f", "%.4f", "%g"], delimiter=",")


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("big") / "metrics.csv"
    _big_log(p)
    return p


def test_million_point_log_page_is_small_and_keeps_the_cited_point(run_cli, tmp_path, big_log):
    page, doc = _html(run_cli, tmp_path, "epoch", big_log)
    assert len(page.encode()) < PAGE_LIMIT, len(page.encode())
    # an isolated spike the loss does not react to is counted (INFO) and still marked
    assert ("TP-GRAD-SPIKE-ISOLATED", 654_321.0) in _cited(doc) and _markers(page) == _cited(doc)
    # the grad-norm chart draws the spike itself: its highest vertex is at the cited step
    svg = re.search(r"<svg[^>]*data-s0='([^']+)' data-s1='([^']+)'[^>]*>(?:(?!</svg>).)*?"
                    r"data-curve='grad_norm' points='([^']+)'", page)
    assert svg is not None
    pts = [tuple(map(float, p.split(","))) for p in svg.group(3).split()]
    top = min(pts, key=lambda p: p[1])  # SVG y grows downwards
    s0, s1 = float(svg.group(1)), float(svg.group(2))
    x0, x1 = 58, 340 - 14
    assert abs(top[0] - (x0 + (654_321 - s0) / (s1 - s0) * (x1 - x0))) < 0.1


def test_doctor_with_a_baseline_draws_it(run_cli, tmp_path):
    page, doc = _html(run_cli, tmp_path, "doctor", GALLERY / "lr_hot", "--baseline",
                      GALLERY / "healthy" / "trainer_state.json")
    assert page.count("data-curve='baseline loss'") == len(doc["reports"]) > 0
    assert _markers(page) == _cited(doc)


def test_a_report_without_a_chart_links_no_marker():
    """A finding's step with no loss to draw is said in words, never linked to nothing."""
    from trainproof.model import Finding, Level, Location, Report, ReportSet
    from trainproof.render import html

    f = Finding("TP-NAN", Level.FAIL, "Loss is NaN or Inf.", "all NaN", {}, Location("x.csv", 5.0))
    rep = Report("x.csv", "csv", (f,), ran=("nan",), curves={"lr": ((1.0, 2.0), (0.1, 0.1))})
    page = html.render(ReportSet("epoch", (rep,)))
    assert "step 5" in page and "href='#m" not in page and "<svg" not in page


def test_a_changed_threshold_is_said_on_the_page(run_cli, tmp_path):
    """A verdict says what it was judged against, in the HTML as in the text report."""
    cfg = tmp_path / "trainproof.toml"
    cfg.write_text('[thresholds]\n"TP-OVERFIT" = { ratio = 1.3 }\n"TP-EVAL-NEVER-BETTER" = { min_train_fall = 0.8 }\n')
    page, doc = _html(run_cli, tmp_path, "epoch", GALLERY / "overfit" / "trainer_state.json", "--config", cfg)
    assert "judged with: TP-OVERFIT.ratio=1.3" in page and doc["reports"][0]["verdict"] == "PASS"
