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


def _tiny(mg, monkeypatch, tmp_path, family: str) -> None:
    """Shorten the text and the pretraining so a real run takes seconds."""
    from dataclasses import replace

    monkeypatch.setattr(mg, "TEXT_MODULES", ("json", "csv", "argparse", "textwrap"))
    monkeypatch.setattr(mg, "TOPIC_LIMIT", 12)
    monkeypatch.setitem(mg.FAMILIES, family, replace(mg.FAMILIES[family], pretrain_steps=2))
    monkeypatch.setattr(mg, "EVAL_BLOCKS", 8)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the base-model cache


@pytest.mark.parametrize(("family", "logging_steps", "model"), [
    ("gpt2", 4, "GPT2LMHeadModel"), ("llama", 5, "LlamaForCausalLM")])
def test_a_tiny_gallery_run_is_readable(tmp_path, monkeypatch, family, logging_steps, model):
    mg = _load_script(monkeypatch)
    _tiny(mg, monkeypatch, tmp_path, family)
    out = tmp_path / "gallery"
    steps = 2 * logging_steps
    assert mg.main(["--family", family, "--only", "bad_labels", "--seeds", "43",
                    "--steps", str(steps), "--out", str(out)]) == 0
    run_dir = out / "bad_labels" / "seed43"
    assert sorted(p.name for p in run_dir.iterdir()) == ["run_meta.json", "trainer_state.json"]
    meta = json.loads((run_dir / "run_meta.json").read_text())
    assert (meta["config"], meta["seed"], meta["settings"]["shuffle_labels"]) == ("bad_labels", 43, True)
    assert (meta["family"], meta["model"]["architecture"].split()[0]) == (family, model)
    run = read_run(run_dir / "trainer_state.json")
    assert run.format == "hf" and len(run.series["loss"]) == 2  # two logging intervals


def test_both_families_break_the_same_knobs_by_the_same_factors(monkeypatch):
    mg = _load_script(monkeypatch)
    first, second = (mg.FAMILIES[f].configs for f in ("gpt2", "llama"))
    assert list(first) == list(second) == ["healthy", "lr_hot", "lr_zero", "nan", "bad_labels",
                                           "overfit"]
    for configs in (first, second):
        lr = configs["healthy"].learning_rate
        assert configs["lr_hot"].learning_rate == pytest.approx(100 * lr)
        assert configs["nan"].learning_rate == pytest.approx(300 * lr)
        assert configs["nan"].fp16_no_scaler and configs["bad_labels"].shuffle_labels
    # the first gallery's recipe is what examples/gallery/*/run_meta.json records
    assert first["lr_hot"].broken == "learning rate x100 (1e-3 -> 1e-1)"
    assert (first["healthy"].logging_steps, first["healthy"].lr_scheduler) == (4, "linear")
