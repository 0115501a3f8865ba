"""A small inline SVG line chart for the HTML report: loss (and eval loss) against
step, with the steps findings point at marked. No scripts, no external assets."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

W, H, PAD = 640, 200, 34
COLOURS = {"loss": ("#1f5fbf", "blue"), "eval_loss": ("#c2410c", "orange")}


def _scale(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def chart(curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], marks: Sequence[float] = ()) -> str:
    pts = [(x, y) for xs, ys in curves.values() for x, y in zip(xs, ys, strict=True)]
    if not pts:
        return ""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    log = min(ys) > 0 and max(ys) / min(ys) > 50  # many decades: a log axis shows the shape
    ty = (lambda v: math.log10(v)) if log else (lambda v: v)
    sx = _scale(min(xs), max(xs), PAD, W - 8)
    sy = _scale(ty(min(ys)), ty(max(ys)), H - PAD / 2, 8)
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {H}' width='100%' role='img' "
             f"aria-label='loss by step'><rect width='{W}' height='{H}' fill='#fff'/>"]
    for m in marks:
        x = sx(m)
        parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='8' y2='{H - PAD / 2}' stroke='#b3261e' "
                     "stroke-dasharray='3 3'/>")
    for name, (cx, cy) in curves.items():
        path = " ".join(f"{sx(x):.1f},{sy(ty(y)):.1f}" for x, y in zip(cx, cy, strict=True))
        parts.append(f"<polyline fill='none' stroke='{COLOURS.get(name, ('#444', ''))[0]}' stroke-width='1.5' "
                     f"points='{path}'><title>{name}</title></polyline>")
    axis = "log " if log else ""
    parts.append(f"<text x='{PAD}' y='{H - 4}' font-size='11' fill='#555'>step {min(xs):g} .. {max(xs):g}; "
                 f"{axis}loss {min(ys):.4g} .. {max(ys):.4g}; "
                 + "; ".join(f"{n} {c[1]}" for n, c in COLOURS.items() if n in curves)
                 + ("; dashed: steps findings name" if marks else "") + "</text></svg>")
    return "".join(parts)
