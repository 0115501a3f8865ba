"""Keras `model.fit` stdout read by the text-log scanner (keras_epoch / keras_fit in
parsers/textlog_patterns.py).

keras_fit/*.log are the real stdout of keras 3.15.1 (torch backend) runs, written by
scripts/fixtures/make_keras_fit_fixtures.py with `history.history` beside each;
synthetic/SYNTHETIC_tfkeras2_*.log follow tf-keras 2.15.1's print format
(scripts/fixtures/make_textlog_synthetic_keras2.py), TensorFlow being too heavy here;
synthetic/SYNTHETIC_keras208_*.log / SYNTHETIC_keras224_*.log are printed by Keras 2.0.8's
and 2.2.4's own Progbar, driven as their ProgbarLogger does, no model trained
(scripts/fixtures/make_textlog_synthetic_keras2x.py)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from trainproof.model import InputError
from trainproof.parsers import detect, read_run, textlog
from trainproof.parsers.incremental import TextlogDecoder

from .conftest import ROOT

TEXT = ROOT / "tests" / "fixtures" / "textlog"
KERAS = TEXT / "keras_fit"
SYN = TEXT / "synthetic"


def _printed(v: float, verbose: int) -> float:
    """What Keras' Progbar prints of an epoch value: .4f, or .4e when small (verbose=1
    tests |v|, verbose=2 tests v itself)."""
    big = abs(v) > 1e-3 if verbose == 1 else v > 1e-3
    return float(f"{v:.4f}") if big else float(f"{v:.4e}")


def _check_history(path, expected, verbose: int, lines: int | None = None, pattern: str = "keras_fit") -> None:
    doc = json.loads(expected.read_text())
    raw = textlog.read(path)
    history = doc["history"]
    assert set(raw.columns) == {*history, "epoch"}  # the printed `Epoch N` kept as the epoch column
    assert raw.columns["epoch"][1].tolist() == [float(e) for e in range(1, doc["epochs"] + 1)]
    for key, values in history.items():
        steps, got = raw.columns[key]
        assert steps.tolist() == [float(e) for e in range(1, doc["epochs"] + 1)], key
        np.testing.assert_array_equal(got, [_printed(v, verbose) for v in values], err_msg=key)
    assert raw.meta["patterns"] == {pattern: lines or doc["epochs"]}
    assert raw.meta["planned_epochs"] == doc["epochs"]


@pytest.mark.parametrize("name", ["healthy_v1", "healthy_v2", "hot_v1", "hot_v2"])
def test_keras3_fit_stdout_equals_history(name):
    """One point per epoch, equal to History as printed; the verbose=1 redraws (running
    averages, each erased by backspaces) are not points."""
    _check_history(KERAS / f"{name}.log", KERAS / f"{name}.expected.json", int(name[-1]))
    assert detect(KERAS / f"{name}.log").name == "textlog"


@pytest.mark.parametrize("verbose", [1, 2])
def test_tf_keras2_synthetic_stdout(verbose):
    name = f"SYNTHETIC_tfkeras2_v{verbose}"
    _check_history(SYN / f"{name}.log", SYN / f"{name}.expected.json", verbose)


@pytest.mark.parametrize(("name", "pattern"), [
    ("keras208_v1", "keras_fit_seconds"),  # `8000/8000 [====] - 67s - loss: ...`, redrawn with \b and \r
    ("keras208_v2", "keras_fit_seconds"),  # `67s - loss: ...`
    ("keras224_v1", "keras_fit"),  # `8000/8000 [====] - 67s 8ms/step - loss: ...`, a line per redraw
    ("keras224_v2", "keras_fit_seconds"),  # ` - 67s - loss: ...`
])
def test_keras2x_progbar_stdout_equals_history(name, pattern):
    """Keras 2.0-2.3 close an epoch with its seconds and no per-step time; every generation's
    closing line is one point at its epoch, equal to History as printed."""
    path = SYN / f"SYNTHETIC_{name}.log"
    _check_history(path, SYN / f"SYNTHETIC_{name}.expected.json", int(name[-1]), pattern=pattern)
    assert detect(path).name == "textlog"


def test_seconds_lines_need_an_open_epoch(tmp_path):
    """`67s - loss: ...` alone is too plain to claim: read only inside an epoch an `Epoch N/M`
    header opened, once; a counter (`128/128 - 5s - loss: ...`, tf.keras without the
    `/epoch` suffix) closes an epoch by itself."""
    bare = tmp_path / "train.log"
    bare.write_text("67s - loss: 2.4808 - acc: 0.2275\n64s - loss: 1.7988 - acc: 0.4308\n")
    assert detect(bare) is None
    with pytest.raises(InputError):
        textlog.read(bare)
    twice = tmp_path / "twice.log"
    twice.write_text("Epoch 1/2\n67s - loss: 2.4808\n - 3s - loss: 9.0\nEpoch 2/2\n - 64s - loss: 1.7988\n")
    raw = textlog.read(twice)
    assert raw.columns["loss"][0].tolist() == [1.0, 2.0]
    assert raw.columns["loss"][1].tolist() == [2.4808, 1.7988]
    counted = tmp_path / "tfkeras.log"
    counted.write_text("Epoch 1/2\n128/128 - 5s - loss: 3.1494 - accuracy: 0.1463\n"
                       "Epoch 2/2\n 64/128 - 0s - loss: 2.9 - accuracy: 0.15\n")
    raw = textlog.read(counted)
    assert raw.columns["accuracy"][1].tolist() == [0.1463]  # epoch 2 was cut mid-way


def test_canonical_columns_and_notes():
    run = read_run(KERAS / "healthy_v1.log")
    assert run.format == "textlog"
    want = json.loads((KERAS / "healthy_v1.expected.json").read_text())["history"]
    assert run.series["eval_loss"].values.tolist() == [_printed(v, 1) for v in want["val_loss"]]
    assert run.series["lr"].values.tolist() == [_printed(v, 1) for v in want["learning_rate"]]
    notes = " ".join(run.notes)
    assert "8 epoch(s) read" in notes and "planned 8 epochs" in notes
    assert "lr" in read_run(SYN / "SYNTHETIC_tfkeras2_v2.log").series  # tf.keras 2's `lr`


def test_evaluate_after_fit_is_not_an_epoch():
    raw = textlog.read(KERAS / "evaluate_v1.log")
    assert raw.columns["loss"][0].tolist() == [1.0, 2.0, 3.0]
    want = json.loads((KERAS / "evaluate_v1.expected.json").read_text())["history"]["loss"]
    assert raw.columns["loss"][1].tolist() == [_printed(v, 1) for v in want]
    assert any("model.evaluate" in n for n in raw.notes)


def test_hot_lr_run_fails_through_the_cli(run_cli):
    code, out, _ = run_cli("epoch", KERAS / "hot_v1.log", "--json")
    doc = json.loads(out)
    assert code == 1
    assert "TP-NAN" in {f["id"] for f in doc["reports"][0]["findings"] if f["level"] == "FAIL"}
    code, _, _ = run_cli("epoch", KERAS / "healthy_v2.log")
    assert code == 0


def test_cut_mid_epoch_keeps_the_epochs_before(tmp_path):
    """A run killed mid-epoch: its last bar (current < target) is not a point."""
    data = (KERAS / "healthy_v1.log").read_bytes()
    cut = data.index(b"Epoch 6/8")
    cut = data.index(b"\x08", cut + 40) - 3  # inside epoch 6's first redraw
    p = tmp_path / "train.log"
    p.write_bytes(data[:cut])
    assert textlog.read(p).columns["loss"][0].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_second_fit_numbered_on_and_no_header_counted(tmp_path):
    text = (KERAS / "healthy_v2.log").read_text()
    p = tmp_path / "two.log"
    p.write_text(text + text)
    raw = textlog.read(p)
    assert raw.columns["loss"][0].tolist() == [float(s) for s in range(1, 17)]
    assert any("more than one fit()" in n for n in raw.notes)
    # epochs=1 prints no `Epoch 1/1`: the closing lines are numbered in order
    one = tmp_path / "one.log"
    one.write_text("12/12 - 0s - 4ms/step - loss: 3.5894 - val_loss: 3.3697\n"
                   "12/12 - 0s - 3ms/step - loss: 1.8408 - val_loss: 1.9313\n")
    steps, values = textlog.read(one).columns["loss"]
    assert (steps.tolist(), values.tolist()) == ([1.0, 2.0], [3.5894, 1.8408])


def test_incremental_decoder_matches_read():
    """`watch` feeds the log in pieces: an epoch split across two polls reads the same."""
    data = (KERAS / "healthy_v1.log").read_bytes()
    cut = data.index(b"\r", data.index(b"Epoch 4/8") + 20)
    dec = TextlogDecoder()
    dec.feed(data[:cut])
    dec.feed(data[cut:])
    whole = textlog.read(KERAS / "healthy_v1.log")
    for key in ("loss", "val_loss", "learning_rate"):
        np.testing.assert_array_equal(dec.raw().columns[key][1], whole.columns[key][1])


def test_doctor_finds_train_log(tmp_path, run_cli):
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    shutil.copy(KERAS / "healthy_v1.log", run / "train.log")
    code, out, _ = run_cli("doctor", tmp_path / "runs", "--json")
    doc = json.loads(out)
    assert [r["format"] for r in doc["reports"]] == ["textlog"]
    assert code == 0


def test_damaged_input_is_one_line_or_points_before(tmp_path, run_cli):
    garbage = tmp_path / "train.log"
    garbage.write_bytes(b"Epoch 1/3\n\x00\xff\xfe" * 50 + b"12/12 - 0s - 4ms/step - loss: \xff\xfe\n")
    code, out, err = run_cli("epoch", garbage)
    assert code == 2 and "Traceback" not in out + err
    bad = tmp_path / "bad.log"
    bad.write_text("Epoch 1/2\n12/12 - 0s - 4ms/step - loss: 0.5 - val_loss: 0.6\n"
                   "Epoch 2/2\n12/12 - 0s - 4ms/step - loss: 0.4 - val_loss: zz\n")
    raw = textlog.read(bad)
    assert raw.columns["loss"][1].tolist() == [0.5, 0.4]
    assert raw.columns["val_loss"][1].tolist() == [0.6]  # `zz` is not a number: counted, not read
    assert any("val_loss" in n for n in raw.notes)


def test_many_planned_lengths_keep_the_notes_bounded(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("".join(f"Epoch 1/{m}\n12/12 - 0s - 4ms/step - loss: 0.5\n" for m in range(2, 2002)))
    raw = textlog.read(p)
    assert len(raw.notes) < 8 and raw.meta["planned_epochs"] == 2001
    assert any("changed 1999 time(s)" in n for n in raw.notes)


def test_backspaces_stripped_last_redraw_then_closing_line(tmp_path):
    """A log whose backspaces were removed (carriage returns kept): the last batch's
    redraw at N/N reads as the epoch's train values, the closing line adds val_* and the
    LR; nothing is read twice."""
    text = (KERAS / "healthy_v1.log").read_bytes().replace(b"\x08", b"").decode()
    lines = text.split("\n")
    out = []
    for line in lines:
        if line.startswith("\r") and "val_loss" in line:
            last = line.rsplit("\r", 1)[1]
            out.append(line.rsplit("\r", 1)[0] + "\r" + last.split(" - val_loss")[0] + "\r" + last)
        else:
            out.append(line)
    p = tmp_path / "train.log"
    p.write_text("\n".join(out))
    _check_history(p, KERAS / "healthy_v1.expected.json", 1, lines=16)  # two lines an epoch
