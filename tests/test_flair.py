"""Flair's model-folder logs: `loss.tsv` (format `flair`, parsers/flair.py) and
`training.log` (the flair* patterns in parsers/textlog_nlp.py).

flair/<model>/ hold the real files ModelTrainer wrote (flair 0.15.1, torch 2.13 CPU,
OneHotEmbeddings on made-up corpora, 5 epochs): a TextClassifier whose dev loss rises
after epoch 2 (15 % of its labels flipped) and a SequenceTagger. expected.json is every
scalar metric Flair recorded, unrounded, by epoch (scripts/fixtures/make_flair_fixtures.py);
the values read must be those, as written (loss.tsv: 4 decimals; training.log: the train
loss to 4 decimals, the dev loss in full)."""

from __future__ import annotations

import json
import shutil

import pytest

from trainproof.discover import discover
from trainproof.model import InputError
from trainproof.parsers import detect, flair, read_run, textlog

from .conftest import ROOT

FLAIR = ROOT / "tests" / "fixtures" / "flair"
MODELS = ["textclassifier", "sequencetagger"]


def _by_epoch(model: str, name: str) -> tuple[list[float], list[float]]:
    recs = json.loads((FLAIR / model / "expected.json").read_text())["records"]
    got = [(float(r["epoch"]), r["value"]) for r in recs if r["name"] == name]
    return [e for e, _ in got], [v for _, v in got]


def _col(raw, key: str) -> tuple[list[float], list[float]]:
    steps, values = raw.columns[key]
    return steps.tolist(), values.tolist()


def _r4(values: list[float]) -> list[float]:
    return [float(f"{v:.4f}") for v in values]


@pytest.mark.parametrize("model", MODELS)
def test_loss_tsv_equals_what_flair_recorded(model):
    raw = flair.read(FLAIR / model / "loss.tsv")
    for column, name in (("TRAIN_LOSS", "train/loss"), ("DEV_LOSS", "dev/loss"),
                         ("DEV_F1", "dev/micro avg/f1-score"), ("DEV_ACCURACY", "dev/accuracy")):
        epochs, values = _by_epoch(model, name)
        assert _col(raw, column) == (epochs, _r4(values)), column
    assert _col(raw, "LEARNING_RATE") == ([1.0, 2.0, 3.0, 4.0, 5.0], [0.1] * 5)
    times = raw.columns["TIMESTAMP"][1]
    assert (times[1:] >= times[:-1]).all()
    assert detect(FLAIR / model / "loss.tsv").name == "flair"
    run = read_run(FLAIR / model / "loss.tsv")
    assert run.series["loss"].steps.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert run.series["eval_loss"].values.tolist() == _r4(_by_epoch(model, "dev/loss")[1])
    assert {"lr", "epoch", "eval_accuracy", "time"} <= set(run.series)


@pytest.mark.parametrize("model", MODELS)
def test_training_log_equals_what_flair_recorded(model):
    raw = textlog.read(FLAIR / model / "training.log")
    epochs, train = _by_epoch(model, "train/loss")
    assert _col(raw, "loss") == (epochs, _r4(train))
    assert _col(raw, "DEV loss") == _by_epoch(model, "dev/loss")  # printed in full
    assert _col(raw, "DEV f1-score (micro avg)") == (
        epochs, [round(v, 4) for v in _by_epoch(model, "dev/micro avg/f1-score")[1]])
    assert _col(raw, "lr") == (epochs, [0.1] * 5)
    assert raw.meta["patterns"] == {"flair": 5, "flair_eval": 5}
    run = read_run(FLAIR / model / "training.log")
    assert run.series["eval_loss"].steps.tolist() == epochs
    assert detect(FLAIR / model / "training.log").name == "textlog"


@pytest.mark.parametrize("model, code, rule", [("textclassifier", 0, "TP-OVERFIT"), ("sequencetagger", 0, "TP-PASS")])
def test_judged_end_to_end_and_found_by_doctor(tmp_path, run_cli, model, code, rule):
    for name in ("loss.tsv", "training.log"):
        got, out, _ = run_cli("epoch", FLAIR / model / name)
        assert got == code and rule in out, out
    shutil.copytree(FLAIR / model, tmp_path / "model")
    found = discover(tmp_path, 10)  # one run, one report: loss.tsv judged, its training.log listed
    assert [(p.name, f.name) for p, f in found.logs] == [("loss.tsv", "flair")]
    assert [(p.name, why.split(":")[0]) for p, why in found.not_judged] == [("training.log", "Flair's training.log")]
    got, out, _ = run_cli("doctor", tmp_path)
    assert got == code and "loss.tsv" in out and "training.log" in out
    (tmp_path / "model" / "loss.tsv").unlink()  # alone, training.log is the run's log
    assert [(p.name, f.name) for p, f in discover(tmp_path, 10).logs] == [("training.log", "textlog")]


def test_older_loss_tsv_layouts(tmp_path):
    """0.4-0.12: each row written after its newline (no newline at the end), the train loss
    unrounded, `_` for a split not evaluated (0.4.x), a TEST_LOSS beside DEV_LOSS; 0.13+
    lists several parameter groups' LR with commas; the clock passes midnight."""
    p = tmp_path / "loss.tsv"
    p.write_text("EPOCH\tTIMESTAMP\tBAD_EPOCHS\tLEARNING_RATE\tTRAIN_LOSS\tDEV_LOSS\tDEV_ACCURACY\tTEST_LOSS\tTEST_ACCURACY"
                 "\n1\t23:59:58\t0\t0.1000\t1.234567891\t1.1\t0.5\t1.3\t0.4"
                 "\n2\t00:00:03\t1\t0.1000,0.0100\t0.9\t_\t_\t1.2\t0.45"
                 "\n3\t00:10:00\t0\t0.0500\t0.8\t0.95\t0.6\t1.1\t0.5")
    raw = flair.read(p)
    assert _col(raw, "TRAIN_LOSS") == ([1.0, 2.0, 3.0], [1.234567891, 0.9, 0.8])
    assert _col(raw, "DEV_LOSS") == ([1.0, 3.0], [1.1, 0.95])
    assert _col(raw, "LEARNING_RATE") == ([1.0, 2.0, 3.0], [0.1, 0.1, 0.05])
    assert _col(raw, "TIMESTAMP")[1] == [86398.0, 86403.0, 87000.0]
    assert any("several parameter groups on 1 row" in n for n in raw.notes)
    run = read_run(p)
    assert run.series["eval_loss"].values.tolist() == [1.1, 0.95]  # DEV before TEST
    assert run.series["eval_accuracy"].values.tolist() == [0.5, 0.6]


def test_loss_tsv_damage(tmp_path):
    p = tmp_path / "loss.tsv"
    p.write_text("EPOCH\tTIMESTAMP\tLEARNING_RATE\tTRAIN_LOSS\n1\tnoon\t0.1\tnan\nx\t10:00:00\t0.1\t0.5\n"
                 "2\t10:00:01\t0.1\t0.4\textra\n3\t10:00:02\t0.1\t0.3")
    raw = flair.read(p)
    assert _col(raw, "TRAIN_LOSS")[0] == [1.0, 2.0, 3.0]
    assert any("without an EPOCH number" in n for n in raw.notes)
    assert any("more cells than the header" in n for n in raw.notes)
    p.write_text("epoch,loss\n1,0.5\n")
    assert detect(p).name == "csv"  # another TSV stays the CSV reader's
    with pytest.raises(InputError, match=r"not Flair's loss\.tsv header"):
        flair.read(p)
    p.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        flair.read(p)
    wide = "\t".join(f"C{i}" for i in range(20_000))  # every line past the line cap: not "empty"
    p.write_text(f"EPOCH\tTIMESTAMP\t{wide}\n" + "".join(f"{e}\t10:00:0{e}\t{wide}\n" for e in range(3)))
    with pytest.raises(InputError, match="every line is over"):
        flair.read(p)


def test_flair_0_12_files_equal_what_train_returned(run_cli):
    """0.12.2 writes loss.tsv itself: rows after their newline (no newline at the end), the
    losses unrounded, BAD_EPOCHS; its training.log prints `- lr 0.100000` (no colon)."""
    folder = FLAIR / "v0_12_textclassifier"
    doc = json.loads((folder / "expected.json").read_text())
    epochs = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert not (folder / "loss.tsv").read_bytes().endswith(b"\n")
    raw = flair.read(folder / "loss.tsv")
    assert _col(raw, "TRAIN_LOSS") == (epochs, doc["train_loss_history"])
    assert _col(raw, "DEV_LOSS") == (epochs, doc["dev_loss_history"])
    assert _col(raw, "BAD_EPOCHS") == (epochs, [0.0, 1.0, 2.0, 3.0, 0.0])
    log = textlog.read(folder / "training.log")
    assert _col(log, "loss") == (epochs, _r4(doc["train_loss_history"]))
    assert _col(log, "DEV loss") == (epochs, doc["dev_loss_history"])
    assert _col(log, "lr") == (epochs, [0.1] * 5)
    assert read_run(folder / "loss.tsv").series["eval_loss"].values.tolist() == doc["dev_loss_history"]
    # both files judge alike: a five-epoch demo whose dev loss never got below its first epoch's
    # (0.742, then 0.748-1.083) while the train loss fell 26 % - TP-EVAL-NEVER-BETTER's WARN, and
    # nothing else (exit 0)
    for name in ("loss.tsv", "training.log"):
        got, out, _ = run_cli("epoch", folder / name)
        assert got == 0 and "VERDICT: WARN" in out and "[WARN] TP-EVAL-NEVER-BETTER" in out, out
        assert "Findings: 0 PASS, 1 WARN, 0 FAIL" in out, out


def test_an_lr_printed_as_zero_to_four_decimals_is_not_judged_zero(tmp_path, run_cli):
    """Flair writes the LR as `{lr:.4f}`: a fine-tune at 5e-6 prints 0.0000 on every row
    (public runs fresh9/ner-ml-models and saradindusengupta, both healthy, failed
    TP-ZERO-LR on it). The real 0.15.1 classifier's loss.tsv with its LR cells printed as
    such a run prints them: TP-ZERO-LR does not judge and says why; the same zeros in
    exponent notation (a writer with full precision) are a zero LR."""
    real = (FLAIR / "textclassifier" / "loss.tsv").read_text().splitlines()
    head = real[0].split("\t")
    at = head.index("LEARNING_RATE")

    def with_lr(cell: str) -> str:
        rows = [real[0]] + ["\t".join(c if i != at else cell for i, c in enumerate(r.split("\t"))) for r in real[1:]]
        p = tmp_path / cell / "loss.tsv"
        p.parent.mkdir()
        p.write_text("\n".join(rows) + "\n")
        return p

    code, out, _ = run_cli("epoch", with_lr("0.0000"), "--json")
    rep = json.loads(out)["reports"][0]
    assert "TP-ZERO-LR" not in {f["id"] for f in rep["findings"]}
    assert "printed to 4 decimals" in json.dumps(rep["checks"])
    code, out, _ = run_cli("epoch", with_lr("0e+00"), "--json")
    assert code == 1 and "TP-ZERO-LR" in {f["id"] for f in json.loads(out)["reports"][0]["findings"]}


def test_every_public_flair_loss_tsv_reads_as_its_collector_read_it(tmp_path):
    """The eleven Flair loss.tsv files strangers committed (public_runs/fresh9, rebuilt byte
    for byte): every series the collector extracted by hand, read the same - including the
    older layouts whose rows carry one doubled tab (after TRAIN_LOSS, or before DEV_ACCURACY),
    which shifted every later value one column right of its name before."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import public_runs as pr

    docs = [d for d in pr.load_corpus() if d["source"]["writer"] == "flair_loss_tsv"]
    assert len(docs) >= 11
    doubled = 0
    for i, doc in enumerate(docs):
        (tmp_path / str(i)).mkdir()
        raw = flair.read(pr.rebuild(doc, tmp_path / str(i)))
        doubled += any("doubled tab" in n for n in raw.notes)
        for name, points in doc["series"].items():
            assert raw.columns[name][1].tolist() == [v for _, v in points], (doc["id"], name)
    assert doubled == 3
