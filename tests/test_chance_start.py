"""TP-START-ABOVE-CHANCE: a first loss far above ln V, with V known from --vocab-size,
a config.json or a tokenizer.json. Proven on the gallery (tiny GPT-2, vocab 2048,
pretrained base; bad_labels shuffles the labels) and on from-scratch GPT-2 runs
written by the HF Trainer (tests/fixtures/vocab/, scripts/fixtures/make_vocab_fixtures.py)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT
from trainproof.engine import judge_run
from trainproof.examples import run_from
from trainproof.parsers import read_run
from trainproof.probes.vocab import Vocabulary, find_vocabulary
from trainproof.rules.vocab import START_ABOVE_CHANCE

GALLERY = ROOT / "examples" / "gallery"
GALLERY2 = ROOT / "examples" / "gallery2"  # tiny Llama, vocab 1024, untied head; never tuned on
SCRATCH = ROOT / "tests" / "fixtures" / "vocab"
EXPECTED = json.loads((SCRATCH / "expected.json").read_text())
CONFIGS = sorted(p.name for p in GALLERY.iterdir() if p.is_dir())
SEEDS = ("", "seed43", "seed44")
ID = "TP-START-ABOVE-CHANCE"
CAP = int(START_ABOVE_CHANCE.t("max_file_bytes"))


def verdict(run_cli, log: Path, *extra) -> tuple[str, set[str], dict]:
    _code, out, _ = run_cli("epoch", log, "--json", *extra)
    (rep,) = json.loads(out)["reports"]
    bad = {f["id"] for f in rep["findings"] if f["level"] in ("FAIL", "WARN")}
    return rep["verdict"], bad, rep


def gallery_with_config(tmp_path: Path, config: str, seed: str, gallery: Path = GALLERY) -> Path:
    """The gallery run beside the config.json its Trainer's save would have written:
    the model dict of run_meta.json (the config class's defaults otherwise, init std 0.02)."""
    meta = json.loads((gallery / config / "run_meta.json").read_text())["model"]
    d = tmp_path / gallery.name / config / (seed or "seed42")
    d.mkdir(parents=True)
    shutil.copy(gallery / config / seed / "trainer_state.json", d)
    if "n_embd" in meta:
        doc = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": meta["n_embd"]}
    else:
        doc = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": meta["hidden_size"]}
    (d / "config.json").write_text(json.dumps({**doc, "vocab_size": meta["vocab"]}))
    return d / "trainer_state.json"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("config", CONFIGS)
def test_gallery_with_vocab_size_only_bad_labels_may_fail_from_it(run_cli, config, seed):
    log = GALLERY / config / seed / "trainer_state.json"
    before, before_ids, _ = verdict(run_cli, log)
    after, after_ids, rep = verdict(run_cli, log, "--vocab-size", "2048")
    assert "chance-start" in rep["checks"]["ran"]
    if config != "bad_labels":
        assert ID not in after_ids and (after, after_ids) == (before, before_ids)
    # With V alone the width is unknown: the limit allows a 70B-wide init (1.64 nats),
    # which the gallery's bad_labels start (0.4-0.6 nats above ln V) stays under.
    assert ID not in after_ids


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("config", CONFIGS)
def test_gallery_with_its_config_json_bad_labels_fails_and_nothing_else_moves(run_cli, tmp_path, config, seed):
    before, before_ids, _ = verdict(run_cli, GALLERY / config / seed / "trainer_state.json")
    after, after_ids, rep = verdict(run_cli, gallery_with_config(tmp_path, config, seed))
    if config == "bad_labels":
        # on its own a WARN (TP-EVAL-NEVER-BETTER: its eval loss never beat its first evaluation)
        assert before == "WARN" and before_ids == {"TP-EVAL-NEVER-BETTER"}
        assert after == "FAIL" and after_ids == {ID, "TP-EVAL-NEVER-BETTER"}
        (f,) = [f for f in rep["findings"] if f["id"] == ID]
        assert "config.json (vocab_size)" in f["values"]["vocab_source"] and f["values"]["width"] == 64
        assert f["values"]["ln_v"] == pytest.approx(math.log(2048))
        assert f["values"]["limit_tolerance"] == START_ABOVE_CHANCE.t("tolerance")
        assert f["values"]["start"] > f["values"]["max_start"]
    else:
        assert (after, after_ids) == (before, before_ids)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("config", CONFIGS)
def test_out_of_sample_gallery2_only_bad_labels_fails_from_it(run_cli, tmp_path, config, seed):
    """gallery2 (tiny Llama, vocab 1024, ln V 6.93) was never looked at while the rule was
    written. With its config.json bad_labels FAILs on every seed; the nan runs, whose first
    logged window is already inside the blow-up (7.1-7.8, then 16-19), do not, because
    their loss climbs above its start. With --vocab-size alone only bad_labels may fire."""
    before, before_ids, _ = verdict(run_cli, GALLERY2 / config / seed / "trainer_state.json")
    after, after_ids, _ = verdict(run_cli, gallery_with_config(tmp_path, config, seed, GALLERY2))
    only_v, only_v_ids, _ = verdict(run_cli, GALLERY2 / config / seed / "trainer_state.json", "--vocab-size", "1024")
    if config == "bad_labels":
        assert ID in after_ids and after == "FAIL"
    else:
        assert (after, after_ids) == (before, before_ids)
        assert (only_v, only_v_ids) == (before, before_ids)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("gallery", [GALLERY, GALLERY2], ids=lambda g: g.name)
def test_bad_labels_fails_alone_and_healthy_passes_with_vocab_size_and_config(run_cli, tmp_path, gallery, seed):
    """Issue #11's "done when": given the vocabulary both ways at once (--vocab-size N, and
    the config.json the Trainer saves beside the log, which adds the width), a bad-labels
    run FAILs from the single run, on both galleries and every seed, and the healthy run
    of the same seed still PASSes."""
    v = json.loads((gallery / "bad_labels" / "run_meta.json").read_text())["model"]["vocab"]
    bad, bad_ids, rep = verdict(run_cli, gallery_with_config(tmp_path / "b", "bad_labels", seed, gallery),
                                "--vocab-size", str(v))
    assert bad == "FAIL" and ID in bad_ids
    (f,) = [f for f in rep["findings"] if f["id"] == ID]
    assert f["values"]["vocab_source"] == "--vocab-size" and f["values"]["width"] == 64
    healthy, healthy_ids, _ = verdict(run_cli, gallery_with_config(tmp_path / "h", "healthy", seed, gallery),
                                      "--vocab-size", str(v))
    assert (healthy, healthy_ids) == ("PASS", set())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_from_scratch_fixture_reads_what_the_trainer_logged_and_starts_near_ln_v(name):
    exp = EXPECTED[name]
    run = read_run(SCRATCH / name / "trainer_state.json", "auto", {})
    assert run.series["loss"].values[:5].tolist() == pytest.approx(exp["first_logged_losses"])
    # The untrained model's loss is ln V plus about half its logit variance (s^2 = width x 0.02^2).
    assert exp["init_loss_first_batch"] == pytest.approx(exp["predicted_init_loss"], abs=0.1)
    assert exp["logit_std_at_init"] == pytest.approx(math.sqrt(exp["width"]) * 0.02, rel=0.05)
    assert abs(exp["first_logged_losses"][0] - exp["ln_vocab"]) < 0.5


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_from_scratch_runs_do_not_fire(run_cli, name):
    log = SCRATCH / name / "trainer_state.json"
    for extra, source in (((), "config.json (vocab_size)"), (("--vocab-size", "2048"), "--vocab-size")):
        _v, bad, rep = verdict(run_cli, log, *extra)
        assert "chance-start" in rep["checks"]["ran"] and ID not in bad
        assert any(source in n for n in rep["notes"])


def _judge(losses: list[float], vocab: Vocabulary | None):
    from dataclasses import replace

    run = run_from({"loss": losses})
    if vocab is not None:
        run = replace(run, meta={"vocabulary": vocab})
    return judge_run(run)


def test_the_start_is_the_first_point():
    # from scratch, width 1024, lr 1e-3 on source-code bytes: 7.20, 8.83, 10.07 (ln V 7.62):
    # the model nearest its init was not confidently wrong; the climb is a divergence.
    v = Vocabulary(2048, "tokens", "test", 1024, 0.02, "test")
    assert ID not in {f.rule_id for f in _judge([7.20, 8.83, 10.07, 6.06, 4.10], v).findings}
    assert ID in {f.rule_id for f in _judge([8.9, 7.0, 6.5, 6.0, 5.0], v).findings}
    # a first logging window already inside a blow-up: the loss climbs past its start
    assert ID not in {f.rule_id for f in _judge([8.9, 16.5, 8.6, 7.0, 6.0], v).findings}


@pytest.mark.parametrize("seed", SEEDS)
def test_bad_labels_fails_at_every_logging_phase_and_interval(tmp_path, seed):
    """Logged every other point (either phase), or with its first point lost, the
    gallery's bad_labels still FAILs with its config. The other configs never fire while
    the log keeps its first point; a nan log cut to begin at its second point begins
    inside the blow-up (7.85-8.64 > 7.84) and does fire - the rule sees only the start."""
    from dataclasses import replace

    from trainproof.model import Series

    for config in CONFIGS:
        log = gallery_with_config(tmp_path / config, config, seed)
        run = read_run(log, "auto", {})
        vocab, _ = find_vocabulary(log, None, CAP)
        loss = run.series["loss"]
        for sl in (slice(None), slice(0, None, 2), slice(1, None, 2), slice(1, None)):
            cut = replace(run, series={**run.series, "loss": Series("loss", loss.steps[sl], loss.values[sl])},
                          meta={"vocabulary": vocab})
            fired = ID in {f.rule_id for f in judge_run(cut).findings}
            if config == "bad_labels":
                assert fired, (seed, sl)
            elif sl.start is None or config != "nan":
                assert not fired, (config, seed, sl)


def test_without_a_vocabulary_the_check_is_skipped_saying_how_to_give_one():
    rep = _judge([8.1, 8.0, 7.9, 7.5], None)
    assert "--vocab-size" in rep.skipped["chance-start"]


def test_non_positive_loss_is_not_judged_as_cross_entropy():
    rep = _judge([-1.0, -2.0, -3.0, -4.0], Vocabulary(10, "tokens", "t"))
    assert "chance-start" in rep.skipped and ID not in {f.rule_id for f in rep.findings}


# ---------------------------------------------------------------- where V comes from

def _dir(tmp_path: Path, name: str, doc) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return tmp_path / "trainer_state.json"


def test_lm_config_gives_vocab_width_and_init(tmp_path):
    log = _dir(tmp_path, "config.json", {"vocab_size": 32000, "hidden_size": 4096, "initializer_range": 0.01})
    v, notes = find_vocabulary(log, None, CAP)
    assert (v.size, v.kind, v.width, v.init_std) == (32000, "tokens", 4096, 0.01) and not notes


def test_classifier_config_gives_the_class_count(tmp_path):
    log = _dir(tmp_path, "config.json", {"architectures": ["BertForSequenceClassification"], "vocab_size": 30522,
                                         "hidden_size": 768, "id2label": {"0": "a", "1": "b", "2": "c"}})
    v, _ = find_vocabulary(log, None, CAP)
    assert (v.size, v.kind) == (3, "labels")
    multi = _dir(tmp_path / "m", "config.json", {"architectures": ["BertForSequenceClassification"],
                                                 "num_labels": 5, "problem_type": "multi_label_classification"})
    assert find_vocabulary(multi, None, CAP)[0] is None


def test_tokenizer_json_in_the_parent_run_directory(tmp_path):
    tok = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}}, "added_tokens": [{"id": 5, "content": "<s>"}]}
    _dir(tmp_path, "tokenizer.json", tok)
    log = tmp_path / "checkpoint-10" / "trainer_state.json"
    log.parent.mkdir()
    v, _ = find_vocabulary(log, None, CAP)
    assert v.size == 6 and v.source.endswith("tokenizer.json")


def test_vocab_size_flag_wins_but_the_config_width_stays(tmp_path):
    log = _dir(tmp_path, "config.json", {"vocab_size": 100, "n_embd": 64})
    v, _ = find_vocabulary(log, 2048, CAP)
    assert (v.size, v.source, v.width) == (2048, "--vocab-size", 64)


def test_unreadable_or_oversized_files_are_noted_never_fatal(tmp_path, run_cli):
    log = _dir(tmp_path, "config.json", "{not json")
    v, notes = find_vocabulary(log, None, CAP)
    assert v is None and "could not be read" in notes[0]
    big = _dir(tmp_path / "big", "config.json", {"vocab_size": 10})
    v, notes = find_vocabulary(big, None, 5)
    assert v is None and "over 5 bytes" in notes[0]
    shutil.copy(GALLERY / "healthy" / "trainer_state.json", log)
    code, _out, _ = run_cli("epoch", log)
    assert code == 0


def test_vocab_size_must_be_a_class_count(run_cli):
    code, _out, err = run_cli("epoch", GALLERY / "healthy" / "trainer_state.json", "--vocab-size", "1")
    assert code == 2 and "--vocab-size" in err


def test_doctor_and_watch_take_vocab_size(run_cli, tmp_path):
    log = GALLERY / "bad_labels" / "trainer_state.json"
    _code, out, _ = run_cli("doctor", log, "--vocab-size", "2048", "--json")
    assert "chance-start" in json.loads(out)["reports"][0]["checks"]["ran"]
    _code, out, _ = run_cli("watch", log, "--vocab-size", "2048", "--json", "--max-duration", "0.5",
                            "--interval", "0.1")
    assert "chance-start" in json.loads(out.strip().splitlines()[-1])["reports"][0]["checks"]["ran"]
