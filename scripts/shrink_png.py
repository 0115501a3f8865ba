"""Shrink the README's report screenshots (docs/html-*.png) to 256-colour PNGs, so the
repository keeps them small. Needs Pillow (not a trainproof dependency):

    TRAINPROOF_HTML_ARTIFACTS=docs python -m pytest tests/test_html_browser.py
    python scripts/shrink_png.py docs/html-*.png
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image


def shrink(path: Path) -> None:
    before = path.stat().st_size
    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)
    print(f"{path}: {before} -> {path.stat().st_size} bytes")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        shrink(Path(arg))
