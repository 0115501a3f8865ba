"""TensorBoard event files from every real writer, checked against TensorBoard's own
readers: EventAccumulator for simple values, a protobuf decode of the same records
for tensor scalars. Fixtures: tests/fixtures/tfevents (scripts/fixtures/make_tfevents_*.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import read_run, tfevents
from trainproof.parsers.columns import choose

FIX = Path(__file__).parent / "fixtures" / "tfevents"
HF_RUN = next((FIX / "hf" / "runs").iterdir()).relative_to(FIX).as_posix()
SIMPLE_VALUE_RUNS = ["torch_default", "torch_diverging", "tbx", "torch_resumed", "torch_steps",
                     "lightning/lightning_logs/version_0", "lightning/lightning_logs/version_1", HF_RUN]
TENSOR_RUNS = ["torch_new_style", "keras/fit/train", "keras/fit/validation", "keras/summary", "dtypes"]


def accumulator_scalars(run: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    ea_mod = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                 reason="tensorboard is the oracle for simple values; not installed")
    ea = ea_mod.EventAccumulator(str(run), size_guidance={"scalars": 0}, purge_orphaned_data=False)
    ea.Reload()
    out = {}
    for tag in ea.Tags()["scalars"]:
        events = ea.Scalars(tag)
        out[tag] = (np.array([e.step for e in events], dtype=np.float64),
                    np.array([e.value for e in events], dtype=np.float64))
    return out


def _bf16(bits: int) -> float:
    return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])


def _tensor_value(t) -> float | None:
    """A rank-0 float tensor's value, decoded from the protobuf message."""
    from tensorboard.compat.proto import types_pb2
    from tensorboard.util import tensor_util

    if t.tensor_shape.dim:
        return None
    if t.dtype == types_pb2.DT_BFLOAT16:
        return _bf16(int.from_bytes(t.tensor_content, "little") if t.tensor_content else t.half_val[0])
    if t.dtype not in (types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_HALF):
        return None
    return float(tensor_util.make_ndarray(t))


def protobuf_scalars(run: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every scalar as TensorBoard's scalars plugin defines it, from protobuf-decoded records."""
    pytest.importorskip("google.protobuf", reason="protobuf decodes the oracle records; not installed")
    loader = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader",
                                 reason="tensorboard reads the oracle records; not installed")
    from tensorboard.compat.proto import event_pb2

    plugins: dict[str, str] = {}
    points: dict[str, list[tuple[float, float]]] = {}
    for f in tfevents.event_files(run):
        for raw in loader.RawEventFileLoader(str(f)).Load():
            event = event_pb2.Event.FromString(raw)
            for v in event.summary.value:
                if v.HasField("metadata") and v.tag not in plugins:
                    plugins[v.tag] = v.metadata.plugin_data.plugin_name
                if v.HasField("simple_value"):
                    value = v.simple_value
                elif v.HasField("tensor") and plugins.get(v.tag) == "scalars":
                    value = _tensor_value(v.tensor)
                    if value is None:
                        continue
                else:
                    continue
                points.setdefault(v.tag, []).append((float(event.step), value))
    return {tag: (np.array([p[0] for p in pts]), np.array([p[1] for p in pts])) for tag, pts in points.items()}


def assert_same(ours: dict, oracle: dict) -> None:
    assert sorted(ours) == sorted(oracle)
    for tag, (steps, values) in oracle.items():
        np.testing.assert_array_equal(ours[tag][0], steps, err_msg=tag)
        np.testing.assert_array_equal(ours[tag][1], values, err_msg=tag)


@pytest.mark.parametrize("run", SIMPLE_VALUE_RUNS)
def test_simple_values_match_event_accumulator(run):
    raw = tfevents.read(FIX / run)
    assert raw.notes == []
    assert_same(raw.columns, accumulator_scalars(FIX / run))


@pytest.mark.parametrize("run", SIMPLE_VALUE_RUNS + TENSOR_RUNS)
def test_every_scalar_matches_a_protobuf_decode(run):
    columns = tfevents.read(FIX / run).columns
    if run.endswith("/train"):  # Keras: the validation sibling's tags join, prefixed
        columns = {k: v for k, v in columns.items() if not k.startswith(tfevents.VALIDATION_PREFIX)}
    assert_same(columns, protobuf_scalars(FIX / run))


def test_single_file_reads_like_its_directory():
    (f,) = tfevents.event_files(FIX / "tbx")
    assert_same(tfevents.read(f).columns, tfevents.read(FIX / "tbx").columns)


def test_histograms_images_text_are_not_scalars():
    tags = set(tfevents.read(FIX / "torch_default").columns)
    assert tags == {"train/loss", "train/learning_rate", "train/grad_norm", "eval/loss"}
    assert set(tfevents.read(FIX / "tbx").columns) == {"TrainIterStats/loss", "lr-AdamW", "grad_norm/total",
                                                       "EvalStats/avg_loss"}


def test_tensor_dtypes_and_plugins():
    raw = tfevents.read(FIX / "dtypes")
    assert set(raw.columns) == {f"scalar/{k}" for k in ("f32_content", "f32_val", "f64_content", "f64_val",
                                                         "f16_content", "f16_val", "bf16_content", "bf16_val")
                                } | {"later_meta"}
    x = 1.0 + np.arange(5) / 3
    np.testing.assert_array_equal(raw.columns["scalar/f64_val"][1], x / 3)
    np.testing.assert_array_equal(raw.columns["scalar/f16_content"][1], x.astype(np.float16).astype(float))
    np.testing.assert_array_equal(raw.columns["scalar/f16_val"][1], x.astype(np.float16).astype(float))
    bf16 = (x.astype(np.float32).view(np.uint32) >> 16 << 16).view(np.float32).astype(float)
    np.testing.assert_array_equal(raw.columns["scalar/bf16_val"][1], bf16)
    # rank-1 and int32 tensors in the scalars plugin: 5 steps each, counted, not read
    assert any("10 scalars-plugin tensor(s) are not a rank-0" in n for n in raw.notes)


def test_negative_and_zero_steps_are_kept():
    steps, values = tfevents.read(FIX / "torch_steps").columns["loss"]
    np.testing.assert_array_equal(steps, [*range(-5, 6), -(2 ** 40)])
    np.testing.assert_allclose(values, [1.0 + s / 10 for s in range(-5, 6)] + [7.0], rtol=1e-6)
    run = read_run(FIX / "torch_steps")
    # The last write's step goes back below the first: a restarted counter, kept in log
    # order after step 5 (never sorted to the front) and reported as a boundary.
    np.testing.assert_array_equal(run.series["loss"].steps, np.arange(-5, 7))
    assert run.series["loss"].values[-1] == pytest.approx(7.0)
    assert run.meta["resumes"]["loss"] == [{"kind": "restart", "from": 5.0, "to": float(-(2 ** 40)),
                                            "replaced": 0}]


def test_resumed_run_later_write_wins():
    first, second = tfevents.event_files(FIX / "torch_resumed")
    old = accumulator_scalars(first)["Loss/train"]
    new = accumulator_scalars(second)["Loss/train"]
    run = read_run(FIX / "torch_resumed")
    s = run.series["loss"]
    np.testing.assert_array_equal(s.steps, np.arange(0, 45))
    np.testing.assert_array_equal(s.values[:20], old[1][:20])
    np.testing.assert_array_equal(s.values[20:], new[1])
    assert any("repeated step replaced by a later" in n for n in run.notes)


def test_keras_validation_dir_supplies_eval_loss():
    run = read_run(FIX / "keras" / "fit")
    assert {"loss", "eval_loss", "lr"} <= set(run.series)
    val = protobuf_scalars(FIX / "keras" / "fit" / "validation")["epoch_loss"]
    np.testing.assert_array_equal(run.series["eval_loss"].values, val[1])
    np.testing.assert_array_equal(run.series["eval_loss"].steps, val[0])
    # the train/ directory alone is the same run: its validation sibling joins it
    assert set(read_run(FIX / "keras" / "fit" / "train").series) == set(run.series)


def test_lightning_columns_resolve_without_map():
    run = read_run(FIX / "lightning" / "lightning_logs" / "version_0")
    assert choose(run.columns, {})["loss"] == "train_loss_step"
    assert {"loss", "eval_loss", "lr"} <= set(run.series)


@pytest.mark.parametrize(("tag", "canon"), [
    ("train/loss", "loss"), ("Loss/train", "loss"), ("loss/train", "loss"), ("train_loss_step", "loss"),
    ("train/loss_epoch", "loss"), ("val/loss", "eval_loss"), ("EvalStats/avg_loss", "eval_loss"),
    ("TrainIterStats/loss", "loss"), ("lr-AdamW", "lr"), ("learning_rate", "lr"),
    ("grad_norm/total", "grad_norm"), ("epoch_loss", "loss"), ("validation/epoch_loss", "eval_loss"),
    ("batch_loss", "loss"), ("eval/loss", "eval_loss"), ("train/learning_rate", "lr"),
    ("reduced_train_loss", "loss"), ("train_step_timing", "step_time"), ("lm loss validation", "eval_loss"),
    ("TrainIterStats/current_lr", "lr"), ("TrainIterStats/grad_norm", "grad_norm"),
    ("TrainIterStats/step_time", "step_time"), ("TrainIterStats/loader_time", "loader_time"),
])
def test_writer_tag_spellings_resolve(tag, canon):
    assert choose([tag], {}) == {canon: tag}


def test_sniff_by_content_without_the_usual_name(tmp_path):
    (f,) = tfevents.event_files(FIX / "tbx")
    renamed = tmp_path / "metrics.bin"
    renamed.write_bytes(f.read_bytes())
    assert read_run(renamed).format == "tfevents"


ALL_RUNS = SIMPLE_VALUE_RUNS + TENSOR_RUNS + ["keras/fit"]


@pytest.mark.parametrize("path", ["no-shape", "general-only", "templates-everywhere", "sorted-tags"])
def test_every_decoding_path_reads_the_same(monkeypatch, path):
    """The vectorised add_scalar shape, the learned layouts and the one-by-one decoder agree."""
    from trainproof.parsers import tfevents_decode as dec

    expected = {run: tfevents.read(FIX / run) for run in ALL_RUNS}
    if path in ("no-shape", "general-only"):
        monkeypatch.setattr(dec, "_simple_shape", lambda rows, width: np.zeros(rows.shape[0], dtype=bool))
    if path == "general-only":
        monkeypatch.setattr(dec, "_MAX_TEMPLATES", 0)
    if path == "templates-everywhere":
        monkeypatch.setattr(dec, "_MIN_TEMPLATE_ROWS", 1)
    if path == "sorted-tags":  # many tags of one length (per-layer metrics) are sorted, not scanned
        monkeypatch.setattr(dec, "_FEW_TAGS", 1)
    for run, want in expected.items():
        got = tfevents.read(FIX / run)
        assert got.notes == want.notes and got.records == want.records, run
        assert_same(got.columns, want.columns)
