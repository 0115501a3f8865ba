"""TrainproofCallback on a real lightning.Trainer: a small MLP regression trained a few
dozen steps on CPU, with a logged train_loss and a validation loss every epoch."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="real-training tests need torch")
L = pytest.importorskip("lightning", reason="the Lightning callback needs lightning")

import trainproof.integrations._guardian as guardian  # noqa: E402
from trainproof.integrations.lightning import TrainproofCallback  # noqa: E402
from trainproof.model import Verdict  # noqa: E402

pytestmark = pytest.mark.slow
STEPS = 64  # 8 epochs of 8 batches
EVERY = 4  # log_every_n_steps: the callback records the mean loss of each 4 batches


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


class Regressor(L.LightningModule):
    def __init__(self, lr, nan_at=None):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        self.lr, self.nan_at = lr, nan_at

    def training_step(self, batch, _):
        x, y = batch
        pred = self.net(x).squeeze(-1)
        if self.nan_at is not None and self.global_step >= self.nan_at:
            pred = pred * float("nan")  # a poisoned forward pass, as after an overflow
        loss = torch.nn.functional.mse_loss(pred, y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x).squeeze(-1), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def loaders():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 8, generator=g)
    y = x @ torch.randn(8, generator=g) + 0.5 * torch.randn(512, generator=g)  # irreducible noise
    train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64)
    val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[:64], y[:64]), batch_size=64)
    return train, val


def fit(module, callback, tmp_path):
    torch.manual_seed(0)
    trainer = L.Trainer(max_steps=STEPS, callbacks=[callback], log_every_n_steps=EVERY, accelerator="cpu",
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=str(tmp_path))
    trainer.fit(module, *loaders())
    return trainer


def counting(monkeypatch, calls):
    real = L.pytorch.strategies.Strategy.reduce_boolean_decision

    def reduce(self, decision, all=True):
        calls.append((decision, all))
        return real(self, decision, all)

    monkeypatch.setattr(L.pytorch.strategies.Strategy, "reduce_boolean_decision", reduce)


def test_stop_on_fail_stops_a_run_whose_learning_rate_is_far_too_high(tmp_path, capsys, monkeypatch):
    calls = []
    counting(monkeypatch, calls)
    torch.manual_seed(0)
    cb = TrainproofCallback(policy="stop_on_fail", report_path=tmp_path / "report.json")
    trainer = fit(Regressor(lr=0.5), cb, tmp_path)
    step = trainer.global_step
    assert step < STEPS // 2 and cb.stopped_at == step and trainer.should_stop
    assert calls and all(a is False for _, a in calls)  # shared: any rank's FAIL stops all
    ids = {f.rule_id for f in cb.findings}
    assert cb.verdict is Verdict.FAIL and "TP-LIVE-STOPPED" in ids and ids & {"TP-DIVERGE", "TP-NAN"}
    err = capsys.readouterr().err
    assert f"TRAINPROOF ABORT - stopping training at step {step}." in err
    assert f"run saved       : {(STEPS - step) / STEPS:.0%}" in err
    assert json.loads((tmp_path / "report.json").read_text())["worst_verdict"] == "FAIL"


def test_warn_never_stops_the_same_run(tmp_path, capsys):
    torch.manual_seed(0)
    cb = TrainproofCallback(policy="warn")
    trainer = fit(Regressor(lr=0.5), cb, tmp_path)
    assert trainer.global_step == STEPS and cb.stopped_at is None and cb.verdict is Verdict.FAIL
    assert "ABORT" not in capsys.readouterr().err


def test_a_healthy_run_is_never_stopped_and_its_validation_loss_is_judged(tmp_path, capsys):
    torch.manual_seed(0)
    cb = TrainproofCallback(policy="stop_on_fail")
    trainer = fit(Regressor(lr=0.05), cb, tmp_path)
    assert trainer.global_step == STEPS and cb.stopped_at is None
    assert cb.verdict is not Verdict.FAIL, [f.evidence for f in cb.findings]
    run_checks = set(cb.report.ran)
    assert {"divergence", "lr", "grad-spike", "zero-grad"} <= run_checks  # lr and grad norm were recorded
    assert "overfit" in run_checks  # 8 validation losses were recorded
    assert "throughput" in run_checks and "no gpu_util" in cb.report.skipped["gpu-util"]
    assert "ABORT" not in capsys.readouterr().err


def test_a_nan_loss_stops_the_run_at_once(tmp_path, capsys):
    torch.manual_seed(0)
    cb = TrainproofCallback(policy="stop_on_fail")
    trainer = fit(Regressor(lr=0.05, nan_at=21), cb, tmp_path)
    assert "TP-NAN" in {f.rule_id for f in cb.findings}
    assert trainer.global_step == 24 and cb.stopped_at == 24  # the first record after the NaN


def test_an_exception_inside_the_judge_does_not_stop_training(tmp_path, monkeypatch, capsys):
    def broken_judge(columns, **kw):  # the API function the guardian judges with
        raise RuntimeError("injected failure")

    monkeypatch.setattr(guardian, "judge_metrics", broken_judge)
    torch.manual_seed(0)
    cb = TrainproofCallback(policy="stop_on_fail")
    trainer = fit(Regressor(lr=0.5), cb, tmp_path)
    assert trainer.global_step == STEPS and cb.stopped_at is None
    assert cb.errors and "injected failure" in cb.errors[0]
    assert capsys.readouterr().err.count("internal error in on_train_batch_end") == 1
