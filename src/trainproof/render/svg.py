"""Inline SVG charts for the HTML report, drawn here in Python (the page needs no chart
library): a metric against step with axes, ticks and units, a log axis when the values
span more than a decade, the baselines' envelope of a compare, and a marker labelled
with its rule ID at every step a finding cites. Every text that came from a file is
escaped; nothing here judges."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from trainproof.curves import BASELINE, ENVELOPE_HI, ENVELOPE_LO, Curve, as_arrays, thin

LOG_SPAN = 10.0  # more than one decade between the lowest and highest value: a log axis shows the shape
LEFT, RIGHT, TOP, BOTTOM = 58, 14, 12, 36
DOTS_BELOW = 60  # a curve of few points (evaluations) gets a dot per point: one point draws no line
STYLE = {  # curve name -> (colour, dash, legend text)
    "loss": ("#1f5fbf", "", "train loss"), "eval_loss": ("#c2410c", "", "eval loss"),
    BASELINE: ("#6b7280", "5 3", "baseline loss"), "lr": ("#7c3aed", "", "learning rate"),
    "grad_norm": ("#0f766e", "", "gradient norm"),
}


@dataclass(frozen=True, slots=True)
class Marker:
    anchor: str  # the element id the findings table links to
    finding: str  # the id of the finding's table row
    rule_id: str
    step: float
    level: str


@dataclass(frozen=True, slots=True)
class Axis:
    """Maps data to the plot area; `log` draws log10 of the value."""

    lo: float
    hi: float
    a: float
    b: float
    log: bool = False

    def __call__(self, v: float) -> float:
        t, lo, hi = (math.log10(v), math.log10(self.lo), math.log10(self.hi)) if self.log else (v, self.lo, self.hi)
        return self.a + (t - lo) / ((hi - lo) or 1.0) * (self.b - self.a)


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def nice_ticks(lo: float, hi: float, log: bool, want: int = 5) -> list[float]:
    """Round tick values inside [lo, hi]: 1-2-5 steps, or decades (with 2 and 5 when few)."""
    if log:
        e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        mults = (1,) if e1 - e0 > 3 else (1, 2, 5)
        return [m * 10.0 ** e for e in range(e0, e1 + 1) for m in mults if lo <= m * 10.0 ** e <= hi]
    span = (hi - lo) or abs(hi) or 1.0
    raw = span / want
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _yaxis(curves: Sequence[Curve], a: float, b: float) -> Axis:
    ys = [y for c in curves for y in c[1]]
    lo, hi = min(ys), max(ys)
    log = lo > 0 and hi / lo > LOG_SPAN
    if hi == lo:
        lo, hi = (lo / 2, lo * 2) if log or lo > 0 else (lo - 1, hi + 1)
    return Axis(lo, hi, a, b, log)


def _points(c: Curve, sx: Axis, sy: Axis) -> str:
    return " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(*c, strict=True) if not sy.log or y > 0)


def _axes(sx: Axis, sy: Axis, w: int, h: int, ylabel: str) -> list[str]:
    """Frame, grid, ticks and labels; lines share one path each (a page holds many charts)."""
    out = [f"<rect x='{LEFT}' y='{TOP}' width='{w - LEFT - RIGHT}' height='{h - TOP - BOTTOM}' class='plot'/>"]
    yt = [(sy(t), t) for t in nice_ticks(sy.lo, sy.hi, sy.log)]
    xt = [(sx(t), t) for t in nice_ticks(sx.lo, sx.hi, False, want=6)]
    out.append("<path class='grid' d='" + "".join(f"M{LEFT} {y:.1f}H{w - RIGHT}" for y, _ in yt) + "'/>"
               "<path class='axis' d='" + "".join(f"M{x:.1f} {h - BOTTOM}v4" for x, _ in xt) + "'/>")
    out += [f"<text x='{LEFT - 4}' y='{y + 3:.1f}' class='tick ty'>{_fmt(t)}</text>" for y, t in yt]
    out += [f"<text x='{x:.1f}' y='{h - BOTTOM + 15}' class='tick tx'>{_fmt(t)}</text>" for x, t in xt]
    out.append(f"<text x='{(LEFT + w - RIGHT) / 2:.0f}' y='{h - 4}' class='lab tx'>step</text>"
               f"<text transform='translate(12 {(TOP + h - BOTTOM) / 2:.0f}) rotate(-90)' class='lab tx'>"
               f"{escape(ylabel)}{' (log)' if sy.log else ''}</text>")
    return out


def _markers(markers: Sequence[Marker], sx: Axis, h: int, labelled: bool) -> list[str]:
    out = []
    for i, m in enumerate(markers):
        x = sx(m.step)
        line = f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{h - BOTTOM}'/>"
        if not labelled:
            out.append(f"<g class='mk2 {escape(m.level)}'>{line}</g>")
            continue
        ty = TOP + 11 + (i % 4) * 12  # four label rows, so markers at nearby steps stay readable
        right = x > LEFT + 0.7 * (sx.b - LEFT)  # a label near the right edge reads leftwards
        tx, anchor = (x - 3, "end") if right else (x + 3, "start")
        out.append(
            f"<g class='mk {escape(m.level)}' id='{escape(m.anchor)}' data-rule='{escape(m.rule_id)}' "
            f"data-step='{m.step!r}' data-finding='{escape(m.finding)}' tabindex='0'>"
            f"<title>{escape(m.rule_id)} at step {_fmt(m.step)}</title>{line}"
            f"<text x='{tx:.1f}' y='{ty}' text-anchor='{anchor}'>{escape(m.rule_id)}</text></g>")
    return out


def chart(curves: Mapping[str, Curve], names: Sequence[str], ylabel: str, xrange: tuple[float, float],
          markers: Sequence[Marker] = (), width: int = 720, height: int = 260, labelled: bool = True) -> str:
    """One chart of the curves in `names` that `curves` holds (and the envelope, when
    it holds one), on the shared step range `xrange`; "" when there is nothing to draw."""
    drawn = [n for n in names if n in curves and curves[n][0]]
    env = [curves[n] for n in (ENVELOPE_LO, ENVELOPE_HI) if BASELINE in names and n in curves and curves[n][0]]
    if not drawn:
        return ""
    sx = Axis(xrange[0], xrange[1] if xrange[1] > xrange[0] else xrange[0] + 1, LEFT, width - RIGHT)
    sy = _yaxis([curves[n] for n in drawn] + env, height - BOTTOM, TOP)
    parts = [f"<svg viewBox='0 0 {width} {height}' class='chart' role='img' data-x0='{sx.a}' "
             f"data-x1='{sx.b}' data-s0='{sx.lo!r}' data-s1='{sx.hi!r}' data-log='{int(sy.log)}' "
             f"aria-label='{escape(ylabel)} by step'>", *_axes(sx, sy, width, height, ylabel)]
    if len(env) == 2:
        lo, hi = env
        ring = [*zip(*lo, strict=True), *reversed(list(zip(*hi, strict=True)))]
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in ring if not sy.log or y > 0)
        parts.append(f"<polygon class='env' points='{pts}'><title>baselines' envelope</title></polygon>")
    for n in drawn:
        colour, dash, text = STYLE.get(n, ("#444", "", n))
        dashed = f" stroke-dasharray='{dash}'" if dash else ""
        parts.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.4'{dashed} class='c' "
                     f"data-curve='{escape(n)}' points='{_points(curves[n], sx, sy)}'><title>{escape(text)}"
                     "</title></polyline>")
        if len(curves[n][0]) <= DOTS_BELOW:
            # zero-length round-capped segments: a dot per point for a few bytes each
            d = "".join(f"M{p}h0" for p in _points(curves[n], sx, sy).split())
            parts.append(f"<path class='dots' stroke='{colour}' stroke-width='4.4' stroke-linecap='round' d='{d}'/>")
    parts += _markers(markers, sx, height, labelled)
    parts.append("</svg>")
    return "".join(parts)


def legend(curves: Mapping[str, Curve], names: Sequence[str]) -> str:
    keys = [f"<span class='key' style='border-color:{STYLE[n][0]}'></span>{escape(STYLE[n][2])}"
            for n in names if n in curves and n in STYLE]
    if ENVELOPE_LO in curves:
        keys.append("<span class='key envkey'></span>baselines' envelope (lowest..highest)")
    return "<p class='legend'>" + " &nbsp; ".join(keys) + "</p>" if keys else ""


def sparkline(c: Curve, width: int = 120, height: int = 26) -> str:
    """A tiny loss curve for the summary table (log axis when it spans a decade)."""
    if not c[0]:
        return ""
    c = thin(*as_arrays(c), buckets=width // 2)
    lo, hi = c[0][0], c[0][-1]
    sx = Axis(lo, hi if hi > lo else lo + 1, 1, width - 1)
    sy = _yaxis([c], height - 2, 2)
    return (f"<svg viewBox='0 0 {width} {height}' width='{width}' height='{height}' class='spark' "
            f"aria-hidden='true'><polyline fill='none' stroke='#1f5fbf' stroke-width='1' "
            f"points='{_points(c, sx, sy)}'/></svg>")


def is_log(curves: Mapping[str, Curve], names: Sequence[str]) -> bool:
    """Whether `chart` draws these curves on a log axis (the page says so in words too)."""
    drawn = [curves[n] for n in names if n in curves and curves[n][0]]
    return bool(drawn) and _yaxis(drawn, 1, 0).log
