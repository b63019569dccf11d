"""Trainer factory, loggers, seeding and device helpers, on CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from iclr25.shared import device  # noqa: E402
from iclr25.shared.logging import MetricsLogger, resolve_wandb_mode  # noqa: E402
from iclr25.shared.seed import seed_everything  # noqa: E402


def _tiny_module():  # a LightningModule fitting y = 2x + 1
    import lightning as L

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Tiny()


def _loader():
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    data = torch.utils.data.TensorDataset(x, 2 * x + 1)
    return torch.utils.data.DataLoader(data, batch_size=16)


def test_trainer_fits_and_writes_only_into_its_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from iclr25.shared.trainer import fit, make_trainer

    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    module = _tiny_module()
    trainer = make_trainer(run_dir, max_epochs=30, device="cpu", seed=0)
    fit(trainer, module, _loader())
    assert abs(module.layer.weight.item() - 2) < 0.05 and abs(module.layer.bias.item() - 1) < 0.05
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing in the current folder
    metrics = (run_dir / "metrics.csv").read_text().splitlines()
    assert metrics[0].startswith("epoch") or "train_loss" in metrics[0]


def test_trainer_offline_wandb_run_is_written_and_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from iclr25.shared.trainer import fit, make_trainer

    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    trainer = make_trainer(run_dir, max_epochs=1, device="cpu", wandb="offline", run_name="t")
    fit(trainer, _tiny_module(), _loader())
    offline_runs = list((run_dir / "wandb").glob("offline-run-*"))
    assert len(offline_runs) == 1 and list(offline_runs[0].glob("*.wandb"))  # what `wandb sync` uploads
    assert sys.modules["wandb"].run is None  # finished
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_fit_finishes_wandb_even_when_training_raises(tmp_path: Path) -> None:
    from iclr25.shared.trainer import fit, make_trainer

    class Broken(Exception):
        pass

    module = _tiny_module()

    def explode(*args, **kwargs):
        raise Broken

    module.training_step = explode
    trainer = make_trainer(tmp_path / "run", max_epochs=1, device="cpu", wandb="offline")
    with pytest.raises(Broken):
        fit(trainer, module, _loader())
    assert sys.modules["wandb"].run is None


def test_ctrl_c_under_lightning_stays_an_interrupt(tmp_path: Path) -> None:
    """Lightning turns Ctrl-C into sys.exit(1), the code of a failing claim; `fit` gives back the interrupt."""
    import signal

    from iclr25.shared.trainer import fit, make_trainer

    module = _tiny_module()

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    module.training_step = interrupt
    trainer = make_trainer(tmp_path / "run", max_epochs=1, device="cpu")
    try:
        with pytest.raises(KeyboardInterrupt):
            fit(trainer, module, _loader())
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_metrics_logger_writes_csv_jsonl_and_offline_wandb(tmp_path: Path) -> None:
    with MetricsLogger(tmp_path / "run", wandb="offline", name="loop") as logger:
        logger.log({"loss": torch.tensor(1.5)}, step=0)
        logger.log({"loss": 1.0, "acc": 0.5}, step=1)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert rows == [{"step": 0, "loss": 1.5}, {"step": 1, "loss": 1.0, "acc": 0.5}]
    assert (tmp_path / "run" / "metrics.csv").read_text().splitlines() == ["step,loss,acc", "0,1.5,", "1,1.0,0.5"]
    assert list((tmp_path / "run" / "wandb").glob("offline-run-*"))
    assert sys.modules["wandb"].run is None


def test_metrics_logger_steps_may_restart_under_wandb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, tuple, dict]] = []

    class Recorder:
        def __getattr__(self, name: str):
            return lambda *args, **kwargs: calls.append((name, args, kwargs))

    import wandb

    monkeypatch.setattr(wandb, "init", lambda **kwargs: Recorder())
    with MetricsLogger(tmp_path / "run", wandb="offline") as logger:
        logger.log({"seed0/loss": 1.0}, step=2000)
        logger.log({"seed1/loss": 2.0}, step=100)  # a second curve starts again
    logs = [(args, kwargs) for name, args, kwargs in calls if name == "log"]
    # wandb's own step counter would drop the second row; the step travels as a field instead
    assert logs == [(({"step": 2000, "seed0/loss": 1.0},), {}), (({"step": 100, "seed1/loss": 2.0},), {})]
    assert ("define_metric", ("*",), {"step_metric": "step"}) in calls


def test_wandb_mode_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert resolve_wandb_mode(None) == "offline"
    assert resolve_wandb_mode("off") == "off"
    monkeypatch.delenv("WANDB_MODE")
    assert resolve_wandb_mode(None) == "off"
    with pytest.raises(ValueError, match="wandb mode"):
        resolve_wandb_mode("sometimes")


def test_seed_everything_makes_draws_repeatable() -> None:
    import numpy as np

    seed_everything(7)
    a = (torch.rand(3), np.random.rand(3))  # noqa: NPY002
    seed_everything(7)
    b = (torch.rand(3), np.random.rand(3))  # noqa: NPY002
    assert torch.equal(a[0], b[0]) and (a[1] == b[1]).all()
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)


def test_device_choice_and_throughput() -> None:
    assert device.pick_device("cpu") == "cpu"
    assert device.pick_device("auto") in ("cpu", "cuda")
    assert device.pick_precision("cpu") == "32-true"
    with pytest.raises(ValueError, match="device must be one of"):
        device.pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            device.pick_device("cuda")
        assert device.mfu(1e9, 100.0, "cpu") is None
    meter = device.Throughput("cpu")
    with meter.measure(1000):
        sum(range(10000))
    assert meter.items == 1000 and meter.seconds > 0 and meter.per_second > 0


@device.requires_gpu
def test_gpu_precision_is_mixed() -> None:
    assert device.pick_precision("cuda") in ("bf16-mixed", "32-true")
    assert device.peak_flops("cuda") is None or device.peak_flops("cuda") > 1e12


def test_torch_threads_restores_the_previous_count() -> None:
    before = torch.get_num_threads()
    with device.torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="thread count"), device.torch_threads(0):
        pass


def test_trainer_takes_the_scale_out_options(tmp_path: Path) -> None:
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.strategies import DDPStrategy

    from iclr25.shared.trainer import make_trainer

    one = make_trainer(tmp_path / "one", max_steps=1, device="cpu")
    assert (one.num_devices, one.num_nodes) == (1, 1) and not isinstance(one.strategy, DDPStrategy)
    two = make_trainer(tmp_path / "two", max_steps=1, device="cpu", devices=2, precision="64-true",
                       checkpoint=True, checkpoint_every=5)  # fmt: skip
    assert two.num_devices == 2 and isinstance(two.strategy, DDPStrategy)  # several processes: DDP (gloo on CPU)
    saver = next(c for c in two.callbacks if isinstance(c, ModelCheckpoint))
    assert saver._every_n_train_steps == 5 and saver.save_last
    with pytest.raises(ValueError, match="devices"):
        make_trainer(tmp_path / "bad", device="cpu", devices=0)
    with pytest.raises(ValueError, match="num_nodes"):
        make_trainer(tmp_path / "bad", device="cpu", num_nodes=0)
