"""scripts/make_gallery.py still trains with the installed libraries: a few real
Trainer steps on a shortened text, and trainproof reads what the Trainer wrote."""

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import pytest

from trainproof.parsers import read_run

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("transformers", reason="make_gallery.py trains through the HF Trainer")
pytest.importorskip("tokenizers", reason="make_gallery.py trains its own BPE tokenizer")


def _load_script(monkeypatch):
    spec = importlib.util.spec_from_file_location("make_gallery", ROOT / "scripts" / "make_gallery.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "make_gallery", mod)  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_a_tiny_gallery_run_is_readable(tmp_path, monkeypatch):
    mg = _load_script(monkeypatch)
    monkeypatch.setattr(mg, "TEXT_MODULES", ("json", "csv", "argparse", "textwrap"))
    monkeypatch.setattr(mg, "PRETRAIN_STEPS", 2)
    monkeypatch.setattr(mg, "EVAL_BLOCKS", 8)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the base-model cache
    out = tmp_path / "gallery"
    assert mg.main(["--only", "bad_labels", "--seeds", "43", "--steps", "8", "--out", str(out)]) == 0
    run_dir = out / "bad_labels" / "seed43"
    assert sorted(p.name for p in run_dir.iterdir()) == ["run_meta.json", "trainer_state.json"]
    meta = json.loads((run_dir / "run_meta.json").read_text())
    assert (meta["config"], meta["seed"], meta["settings"]["shuffle_labels"]) == ("bad_labels", 43, True)
    run = read_run(run_dir / "trainer_state.json")
    assert run.format == "hf" and len(run.series["loss"]) == 2  # steps 4 and 8
