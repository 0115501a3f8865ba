"""The out-of-sample gallery (examples/gallery2/): the same six faults x three seeds as
examples/gallery/, on another model family (a Llama-style decoder), another text (the
pydoc language-reference topics), another tokenizer (SentencePiece-style BPE) and
another schedule (cosine, a log entry every 5 steps). The rules were written before it
existed and were not retuned for it.

Verdicts that are right are asserted; every run where today's rules are wrong is a
named strict expected failure, so a rule fix that makes it right has to remove it here.
Golden snapshots in tests/golden/gallery2/ pin every run's verdict and rule-ID set."""

import json

import pytest

from .conftest import evidence_matrix_module

em = evidence_matrix_module()

RUNS = [(c, s) for c in em.CONFIGS for s in em.SEEDS]
# Bytes per token and points per run differ from the first gallery on purpose.
LOGGING_STEPS, MAX_STEPS = 5, 200


@pytest.fixture(scope="module")
def gallery2():
    return em.judge_gallery(em.GALLERY2)


def log_of(config: str, seed: int):
    return em.gallery_log(config, seed, em.GALLERY2)


@pytest.mark.parametrize(("config", "seed"), RUNS, ids=lambda v: str(v))
def test_gallery2_run_matches_its_golden_snapshot(gallery2, config, seed):
    golden = em.GOLDEN2 / f"{config}_seed{seed}.json"
    assert golden.exists(), f"{golden} missing: python scripts/evidence_matrix.py --update-golden"
    assert em.golden_record(gallery2[(config, seed)]) == json.loads(golden.read_text())


@pytest.mark.parametrize(("config", "seed"), RUNS, ids=lambda v: str(v))
def test_gallery2_run_is_what_the_trainer_wrote_with_its_meta(config, seed):
    log = log_of(config, seed)
    state = json.loads(log.read_text())
    assert state["global_step"] == state["max_steps"] == MAX_STEPS
    assert state["logging_steps"] == LOGGING_STEPS
    train_points = [e for e in state["log_history"] if "loss" in e]
    assert len(train_points) == MAX_STEPS // LOGGING_STEPS
    meta = json.loads((log.parent / "run_meta.json").read_text())
    assert (meta["config"], meta["seed"], meta["family"]) == (config, seed, "llama")
    assert meta["model"]["architecture"].startswith("LlamaForCausalLM")
    assert "pydoc_data" in meta["text"]["source"]
    assert meta["wall_seconds"] > 0 and {"torch", "transformers"} <= set(meta["versions"])
    assert log.stat().st_size < 64 * 1024
    assert sorted(p.name for p in log.parent.iterdir() if p.is_file()) == ["run_meta.json",
                                                                          "trainer_state.json"]


def test_gallery2_is_out_of_sample():
    """Not the first gallery's model, text or cadence: otherwise it proves nothing new."""
    first = json.loads((em.GALLERY / "healthy" / "run_meta.json").read_text())
    second = json.loads((em.GALLERY2 / "healthy" / "run_meta.json").read_text())
    assert first["model"]["architecture"] != second["model"]["architecture"]
    assert first["text"]["sha256"] != second["text"]["sha256"]
    assert first["settings"]["logging_steps"] != second["settings"]["logging_steps"]


# Where today's rules contradict what was broken in gallery 2, per (config, seed, kind),
# with what the rule measured. Reported to the lead; the runs are not tuned to pass.
CONTRADICTIONS: dict[tuple[str, int, str], str] = {
    ("lr_hot", 43, "epoch"): (
        "TP-DEAD-RUN: 40 points, so its first 'block' is 1 raw point (5.788, already past "
        "warm-up's wreck); last block 5.230 is a 9.6 % improvement >= 5 %. The loss rose to "
        "a block median of 8.735 at step 15 (1.51x the first point) and never came back to "
        "the pretrained level (healthy ends at 3.03). TP-DIVERGE: end/floor 1.049 < 1.5."),
}
CASES = [(c, s, kind) for c, s in RUNS for kind in ("epoch", "compare")
         if not (c == "healthy" and kind == "compare")]


@pytest.mark.parametrize(("config", "seed", "kind"), [
    pytest.param(c, s, k, marks=pytest.mark.xfail(reason=CONTRADICTIONS[(c, s, k)], strict=True))
    if (c, s, k) in CONTRADICTIONS else (c, s, k) for c, s, k in CASES], ids=lambda v: str(v))
def test_gallery2_verdict_matches_what_was_broken(gallery2, config, seed, kind):
    single, compare, _ = em.EXPECTED[config]
    allowed = single if kind == "epoch" else compare
    assert gallery2[(config, seed)][kind].verdict in allowed


@pytest.mark.parametrize("seed", em.SEEDS)
def test_gallery2_what_was_broken_is_caught_by_the_rule_for_it(gallery2, seed):
    """Right for the right reason: the rule that names the fault fires."""
    def ids(config, kind):
        return set(gallery2[(config, seed)][kind].ids)

    assert {"TP-NAN", "TP-NAN-GRAD"} <= ids("nan", "epoch")
    assert "TP-END-NONFINITE" in ids("nan", "compare")
    assert "TP-ZERO-LR" in ids("lr_zero", "epoch")
    assert "TP-OVERFIT" in ids("overfit", "epoch")
    assert "TP-END-EXCESS" in ids("bad_labels", "compare")
    assert "TP-END-EXCESS" in ids("lr_hot", "compare")


def test_gallery2_healthy_seeds_compare_clean(gallery2):
    for a, b in ((42, 43), (42, 44), (43, 44)):
        judged = em.judge_compare(gallery2[("healthy", a)]["epoch"].run,
                                  gallery2[("healthy", b)]["epoch"].run)
        assert judged.verdict == "PASS", (a, b, judged)


def test_gallery2_is_in_the_evidence_matrix():
    text = (em.ROOT / "EVIDENCE_MATRIX.md").read_text()
    assert "## Gallery 2 (out of sample" in text and "examples/gallery2/" in text
