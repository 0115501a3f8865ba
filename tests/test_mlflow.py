"""MLflow tracking stores written by the real MLflow client (tests/fixtures/mlflow,
scripts/fixtures/make_mlflow_fixtures.py): the series read equal what was logged,
both stores agree, NaN/Inf markers are read as non-finite, bad databases are exit 2,
and `epoch` / `doctor` name and judge each run."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from trainproof.parsers import detect, mlflow, mlflow_files, mlflow_sqlite

FIX = Path(__file__).parent / "fixtures" / "mlflow"
EXPECTED = json.loads((FIX / "expected.json").read_text())
RUNS = ("healthy", "nonfinite", "hf")


@pytest.fixture
def stores(tmp_path) -> dict[str, Path]:
    """A project directory holding both stores as MLflow wrote them."""
    shutil.copytree(FIX / "mlruns", tmp_path / "mlruns")
    with gzip.open(FIX / "mlflow.db.gz") as src, open(tmp_path / "mlflow.db", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return {"file": tmp_path / "mlruns", "sqlite": tmp_path / "mlflow.db"}


def ids(path: Path) -> dict[str, str]:
    return {ref.name: ref.id for ref in mlflow.runs(path)}


def logged(store: str, run: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    pts = EXPECTED[store][run][key]
    return (np.array([p[0] for p in pts], dtype=float), np.array([float(p[1]) for p in pts]))


def by_step(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points in step order, writes at one step in write order: the database returns
    them so (HF logs to MLflow asynchronously, so its row order is not write order)."""
    order = np.argsort(steps, kind="stable")
    return steps[order], values[order]


@pytest.mark.parametrize("store", ["file", "sqlite"])
@pytest.mark.parametrize("run", RUNS)
def test_series_equal_what_the_script_logged(stores, store, run):
    raw = mlflow.read_one(stores[store], ids(stores[store])[run])
    assert set(raw.columns) == set(EXPECTED[store][run])
    for key, (steps, values) in raw.columns.items():
        want_steps, want_values = by_step(*logged(store, run, key))
        steps, values = by_step(steps, values)
        np.testing.assert_array_equal(steps, want_steps, err_msg=key)
        np.testing.assert_array_equal(values, want_values, err_msg=key)


@pytest.mark.parametrize("run", RUNS)
def test_both_stores_give_the_same_series(stores, run):
    by_file = mlflow.read_one(stores["file"], ids(stores["file"])[run]).columns
    by_db = mlflow.read_one(stores["sqlite"], ids(stores["sqlite"])[run]).columns
    assert set(by_file) == set(by_db)
    for key in by_file:
        if "runtime" in key or "per_second" in key:  # wall-clock rates of two HF runs
            continue
        for a, b in zip(by_step(*by_file[key]), by_db[key], strict=True):
            np.testing.assert_array_equal(a, b, err_msg=key)


@pytest.mark.parametrize("store", ["file", "sqlite"])
def test_nan_and_inf_are_non_finite_never_numbers(stores, store):
    raw = mlflow.read_one(stores[store], ids(stores[store])["nonfinite"])
    steps, loss = raw.columns["train/loss"]
    assert np.isnan(loss[steps == 20]).all() and np.isfinite(loss[steps != 20]).all()
    steps, gn = raw.columns["train/grad_norm"]
    assert np.isposinf(gn[steps == 25]).all() and np.isfinite(gn[steps != 25]).all()
    if store == "sqlite":  # stored as 0.0 + is_nan and as the largest double
        assert any("2 value(s) stored with MLflow's NaN/Inf markers" in n for n in raw.notes)


def test_negative_infinity_marker(tmp_path, stores):
    db = tmp_path / "copy.db"
    shutil.copy(stores["sqlite"], db)
    run = ids(db)["healthy"]
    with sqlite3.connect(db) as con:
        con.execute("UPDATE metrics SET value = -1.7976931348623157e308 WHERE run_uuid = ? "
                    "AND key = 'train/loss' AND step = 3", (run,))
    steps, loss = mlflow.read_one(db, run).columns["train/loss"]
    assert np.isneginf(loss[steps == 3]).all()


def test_sniffing(stores, tmp_path):
    assert detect(stores["sqlite"]).name == "mlflow"
    assert detect(stores["file"]).name == "mlflow"
    exp = next(p for p in stores["file"].iterdir() if p.name != "0")
    assert detect(exp).name == "mlflow"
    run_dir = exp / ids(stores["file"])["healthy"]
    assert detect(run_dir).name == "mlflow"
    assert detect(run_dir / "metrics") is None and detect(run_dir / "metrics" / "train" / "loss") is None
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "meta.yaml").write_text("name: not a run\n")
    assert detect(tmp_path / "other") is None


def test_epoch_on_a_store_of_several_runs_names_them(run_cli, stores):
    for path in stores.values():
        code, out, err = run_cli("epoch", path)
        assert code == 2
        line = err.strip().splitlines()
        assert len(line) == 1 and "holds 3 runs" in line[0] and "::RUN_ID" in line[0]
        for name, run_id in ids(path).items():
            assert f"{run_id} ({name})" in line[0]


@pytest.mark.parametrize("store", ["file", "sqlite"])
def test_epoch_on_one_run_by_id_prefix_or_name(run_cli, stores, store):
    path = stores[store]
    run_id = ids(path)["nonfinite"]
    for name in (run_id, run_id[:8], "nonfinite"):
        code, out, _ = run_cli("epoch", f"{path}::{name}", "--json")
        report = json.loads(out)["reports"][0]
        assert code == 1 and report["verdict"] == "FAIL"
        # one isolated inf norm while the loss falls: the scaler's skip (INFO, #17)
        assert {"TP-NAN", "TP-NAN-GRAD-SKIPPED"} <= {f["id"] for f in report["findings"]}
        assert report["file"] == f"{path}::{run_id}"
        assert report["notes"][0] == "MLflow run 'nonfinite' (FINISHED)"
    code, out, _ = run_cli("epoch", f"{path}::healthy", "--json")
    assert code == 0 and json.loads(out)["reports"][0]["verdict"] == "PASS"
    code, out, err = run_cli("epoch", f"{path}::nosuchrun")
    assert code == 2 and "no such run" in err and "healthy" in err


def test_epoch_on_a_run_directory_and_the_only_run(run_cli, stores, tmp_path):
    run_dir = next(stores["file"].glob(f"*/{ids(stores['file'])['hf']}"))
    code, out, _ = run_cli("epoch", run_dir, "--json")
    report = json.loads(out)["reports"][0]
    assert code == 0 and report["verdict"] == "PASS" and report["file"] == str(run_dir)
    db = tmp_path / "one.db"  # the other runs deleted: MLflow keeps them, marked
    shutil.copy(stores["sqlite"], db)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET lifecycle_stage = 'deleted' WHERE name != 'nonfinite'")
    code, out, _ = run_cli("epoch", db, "--json")
    assert code == 1 and json.loads(out)["reports"][0]["file"] == f"{db}::{ids(stores['sqlite'])['nonfinite']}"


def test_run_address_on_a_single_run_log_is_refused(run_cli):
    log = Path(__file__).parent / "fixtures" / "core" / "jsonl" / "train_log.jsonl"
    code, _, err = run_cli("epoch", f"{log}::abc")
    assert code == 2 and "holds one run" in err


def test_compare_takes_run_addresses(run_cli, stores):
    db = stores["sqlite"]
    code, out, _ = run_cli("compare", f"{db}::healthy", f"{db}::hf", "--json")
    assert code in (0, 1) and json.loads(out)["error"] is None


def test_doctor_judges_each_run_once(run_cli, stores):
    root = stores["file"].parent
    code, out, _ = run_cli("doctor", root, "--json")
    doc = json.loads(out)
    assert doc["not_judged"] == []
    reports = {r["file"].removeprefix(str(root) + "/"): r for r in doc["reports"]}
    file_ids, db_ids = ids(stores["file"]), ids(stores["sqlite"])
    want = {f"mlflow.db::{db_ids[name]}" for name in RUNS}
    want |= {str(next(stores["file"].glob(f"*/{file_ids[name]}")).relative_to(root)) for name in RUNS}
    assert set(reports) == want
    verdicts = sorted((r["notes"][0], r["verdict"]) for r in reports.values())
    assert verdicts == sorted([(f"MLflow run '{n}' (FINISHED)", "FAIL" if n == "nonfinite" else "PASS")
                               for n in RUNS] * 2)
    assert code == 1


def test_doctor_on_the_database_alone(run_cli, stores):
    code, out, _ = run_cli("doctor", stores["sqlite"], "--json")
    doc = json.loads(out)
    assert code == 1 and len(doc["reports"]) == 3
    assert all(r["file"].startswith(f"{stores['sqlite']}::") for r in doc["reports"])


def test_a_database_that_is_not_mlflow(run_cli, tmp_path):
    db = tmp_path / "optuna.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE trials (trial_id INTEGER, value FLOAT)")
    code, _, err = run_cli("epoch", db, "--format", "mlflow")
    assert code == 2 and "not an MLflow tracking store" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("epoch", db)
    assert code == 2 and "not a recognised log format" in err
    (tmp_path / ".coverage").write_bytes(db.read_bytes())  # pytest-cov's data is SQLite too
    log = Path(__file__).parent / "fixtures" / "core" / "jsonl" / "train_log.jsonl"
    shutil.copy(log, tmp_path)
    code, out, _ = run_cli("doctor", tmp_path, "--json")
    doc = json.loads(out)
    assert [Path(r["file"]).name for r in doc["reports"]] == ["train_log.jsonl"]


@pytest.mark.parametrize("cut", [100, 20_000, 200_000])
def test_a_truncated_database(run_cli, stores, tmp_path, cut):
    db = tmp_path / "cut.db"
    db.write_bytes(stores["sqlite"].read_bytes()[:cut])
    code, out, err = run_cli("epoch", f"{db}::healthy")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_corrupt_database(run_cli, tmp_path):
    db = tmp_path / "junk.db"
    db.write_bytes(mlflow_sqlite.MAGIC + bytes(range(256)) * 64)
    code, _, err = run_cli("epoch", db)
    assert code == 2 and err.startswith("trainproof: error:") and len(err.strip().splitlines()) == 1
    code, out, _ = run_cli("doctor", tmp_path, "--json")  # damaged: still listed, never dropped
    doc = json.loads(out)
    assert code == 2 and [r["verdict"] for r in doc["reports"]] == ["NOT-CHECKED"]


def test_a_malformed_metric_line_is_a_note(run_cli, stores):
    run_dir = next(stores["file"].glob(f"*/{ids(stores['file'])['healthy']}"))
    with open(run_dir / "metrics" / "train" / "loss", "a") as fh:
        fh.write("1796284389259 not-a-number 61\n" + "9" * 10_000 + "\n1796284389259 1.0 61 x\n")
    code, out, _ = run_cli("epoch", run_dir, "--json")
    report = json.loads(out)["reports"][0]
    assert code == 0 and report["verdict"] == "PASS"
    assert "3 malformed line(s) in metrics/train/loss skipped" in report["notes"]
    steps, _ = mlflow_files.read(run_dir, ids(stores["file"])["healthy"]).columns["train/loss"]
    assert steps.size == 60


def test_old_two_field_lines_are_step_zero(tmp_path, stores):
    run_dir = next(stores["file"].glob(f"*/{ids(stores['file'])['healthy']}"))
    (run_dir / "metrics" / "old").write_text("1796284389259 0.5\n")
    steps, values = mlflow_files.read(run_dir, ids(stores["file"])["healthy"]).columns["old"]
    assert steps.tolist() == [0.0] and values.tolist() == [0.5]


def test_watch_follows_one_run_of_a_store(run_cli, stores):
    code, out, _ = run_cli("watch", f"{stores['sqlite']}::nonfinite", "--max-duration", "1", "--interval", "0.2")
    assert code == 1 and "TP-NAN" in out and "MLflow run 'nonfinite'" in out


def test_doctor_with_a_run_of_the_store_as_baseline(run_cli, stores):
    db = stores["sqlite"]
    code, out, _ = run_cli("doctor", db, "--baseline", f"{db}::healthy", "--json")
    doc = json.loads(out)
    assert [r["reason"] for r in doc["not_judged"]] == ["the baseline itself"]
    assert doc["not_judged"][0]["file"] == f"{db}::{ids(db)['healthy']}"
    assert len(doc["reports"]) == 2 and code == 1
