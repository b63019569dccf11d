"""Scale-out of the training loops (Lightning Fabric, DDP): 2 CPU processes (gloo) equal 1 process with the whole
batch for Dist Loss (the predictions are gathered, so the loss stays the whole batch's), for a loss with its own
parameter, and for the ResNet (BatchNorm over the whole global batch), an interrupted fit resumed from its
checkpoint equals an uninterrupted one, and the full preset starts with `--devices 2 --device cpu`, trains and
checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.dist_loss.train import MLP, fit, make_loss, rrt
from iclr25.shared.fabric import Checkpointer
from iclr25.shared.testing import reproduce_full_preset, two_processes_equal_one

# The workers train with SGD in place of the loops' Adam: Adam's steps barely change when every gradient of a
# parameter is scaled alike, SGD's are proportional, so a gradient off by the number of processes shows. They run in
# float64 throughout (Fabric's 64-true casts a wrapped model's outputs to the default dtype, which they make float64).
WORKER = """
from unittest import mock

import numpy as np
import torch

from iclr25.dist_loss.train import MLP, fit, make_loss, rrt
from iclr25.shared.testing import finish_worker


def run(fabric, out):
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)  # the one-process run is in this process: restored below
    try:
        rng = np.random.default_rng(0)
        y = rng.gamma(4.0, 8.0, 128).clip(1, 100)
        x = torch.as_tensor(np.c_[y / 50, rng.normal(size=(128, 3))])
        torch.manual_seed(0)
        model = MLP(4, 16, 2, float(y.mean()))
        gen = torch.Generator().manual_seed(0)
        with mock.patch("torch.optim.Adam", torch.optim.SGD):
            fit(model, list(model.parameters()), x, torch.as_tensor(y), make_loss("dist", y, 32), x[:16], y[:16], 2, 32,
                1e-2, "plain", gen, fabric=fabric)
            head, _ = rrt(model, "bmc", x, y, x[:16], y[:16], 2, 32, 1e-2, gen, fabric=fabric)
        finish_worker(fabric, torch.cat([p.detach().flatten() for p in [*model.parameters(), *head.head.parameters()]]),
                      out)
    finally:
        torch.set_default_dtype(torch.float32)
"""

RESNET_WORKER = """
import copy
from types import SimpleNamespace
from unittest import mock

import numpy as np
import torch

from iclr25.dist_loss.images import ResNet, _fit, _loader
from iclr25.dist_loss.train import make_loss
from iclr25.shared.testing import finish_worker


def run(fabric, out):
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)  # the one-process run is in this process: restored below
    try:
        rng = np.random.default_rng(0)
        y = rng.gamma(4.0, 8.0, 40).clip(1, 100)
        x = torch.as_tensor(rng.normal(size=(40, 3, 8, 8))) + torch.as_tensor(y / 50).view(-1, 1, 1, 1)
        data = torch.utils.data.TensorDataset(x, torch.as_tensor(y), torch.arange(40))
        val = _loader(torch.utils.data.TensorDataset(x[:8], torch.as_tensor(y[:8]), torch.arange(8)), 8, False, 0)
        torch.manual_seed(0)
        model = ResNet((1, 1), 2, 3, float(y.mean()))
        config = SimpleNamespace(lr=1e-2, lr_steps=(), epochs_stage1=2, epochs_stage2=2)
        gen = torch.Generator().manual_seed(0)
        train = _loader(data, 8, True, 0, gen, fabric)
        with mock.patch("torch.optim.Adam", torch.optim.SGD):
            dist = make_loss("dist", y, 8)
            _fit(model, list(model.parameters()), train, val, y[:8], dist, config, "cpu", "plain", True, fabric=fabric,
                 gen=gen)
            head = copy.deepcopy(model)
            for p in head.features.parameters():
                p.requires_grad_(False)
            head.reset_head(float(y.mean()), zero_weight=True)
            bmc = make_loss("bmc", y, 8)
            _fit(head, list(head.head.parameters()), train, val, y[:8], bmc, config, "cpu", "balanced", False,
                 fabric=fabric, gen=gen)
        kept = [*model.parameters(), *model.buffers(), *head.head.parameters(), *bmc.params]
        finish_worker(fabric, torch.cat([t.detach().flatten() for t in kept if t.is_floating_point()]), out)
    finally:
        torch.set_default_dtype(torch.float32)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_two_processes_equal_one_with_the_whole_batch(tmp_path: Path) -> None:
    """Stage 1 with Dist Loss (the whole batch's sort) and an RRT head with Balanced MSE (a loss parameter)."""
    two_processes_equal_one(WORKER, tmp_path)
    fake = type("TwoProcesses", (), {"global_rank": 0, "world_size": 2})
    y = np.linspace(1, 90, 64).astype(np.float32)
    with pytest.raises(ValueError, match="multiple of the 2 processes"):
        fit(MLP(1, 4, 1), [], torch.zeros(64, 1), torch.as_tensor(y), make_loss("l1", y, 7), torch.zeros(4, 1), y[:4],
            1, 7, 1e-3, "plain", torch.Generator(), fabric=fake)  # fmt: skip


@pytest.mark.enable_socket
def test_two_processes_equal_one_for_the_resnet_with_global_batch_norm(tmp_path: Path) -> None:
    """The image ResNet: stage 1 with Dist Loss, BatchNorm over the whole global batch; then an RRT head on the
    frozen backbone with Balanced MSE."""
    two_processes_equal_one(RESNET_WORKER, tmp_path)


def _data() -> tuple[torch.Tensor, np.ndarray]:
    rng = np.random.default_rng(1)
    y = rng.gamma(4.0, 8.0, 96).clip(1, 100).astype(np.float32)
    return torch.as_tensor(np.c_[y / 50, rng.normal(size=(96, 3))], dtype=torch.float32), y


class _Interrupt(Exception):
    pass


class _StopAt(Checkpointer):
    """A checkpointer that stops the fit after epoch `at`, as Ctrl-C would."""

    def __init__(self, folder: Path, every: int, at: int) -> None:
        super().__init__(folder, every)
        self.at = at

    def maybe_save(self, state: dict, fabric=None):
        path = super().maybe_save(state, fabric)
        if state["step"] == self.at:
            raise _Interrupt
        return path


def _fits(folder: Path, interrupt_at: int = 0, **kwargs):
    """Stage 1 (L1), then an RRT head with Dist Loss, sharing one generator as the reproduction does."""
    x, y = _data()
    torch.manual_seed(0)
    model = MLP(4, 8, 2, float(y.mean()))
    gen = torch.Generator().manual_seed(0)
    fit(model, list(model.parameters()), x, torch.as_tensor(y), make_loss("l1", y, 16), x[:16], y[:16], 5, 16,
        1e-2, "plain", gen, checkpointer=Checkpointer(folder / "stage1", every=2), **kwargs)  # fmt: skip
    head = _StopAt(folder / "head", 2, interrupt_at) if interrupt_at else Checkpointer(folder / "head", every=2)
    return rrt(model, "dist", x, y, x[:16], y[:16], 5, 16, 1e-2, gen, checkpointer=head, **kwargs)


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    straight, straight_res = _fits(tmp_path / "a")
    with pytest.raises(_Interrupt):
        _fits(tmp_path / "b", interrupt_at=3)
    assert [p.name for p in Checkpointer(tmp_path / "b" / "head", every=2).checkpoints()] == ["step-2.ckpt"]
    resumed, resumed_res = _fits(tmp_path / "b", resume="auto")  # stage 1 resumes at its end, the head at epoch 2
    assert torch.equal(straight.head.weight, resumed.head.weight) and torch.equal(straight.head.bias, resumed.head.bias)
    assert resumed_res.history == straight_res.history and resumed_res.best_epoch == straight_res.best_epoch
    assert [p.name for p in Checkpointer(tmp_path / "a" / "head", every=2).checkpoints()] == ["step-4.ckpt",
                                                                                               "step-5.ckpt"]  # fmt: skip


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_and_checkpoints(tmp_path: Path) -> None:
    tiny = ["seeds=1", "epochs_stage1=2", "epochs_stage2=2", "lr_steps=1", "methods=l1,dist", "hidden=8",
            "compare_default_init=false", "end_to_end=false", "bench_batches=8", "bench_repeats=1", "figures=false",
            "data_scale=1", "threads=1", "batch_size=1024", "checkpoint_every=1"]  # fmt: skip
    result, run_dir, saved = reproduce_full_preset("dist-loss", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold after 2 epochs
    assert saved == [
        "seed0-rrt_dist/step-1.ckpt", "seed0-rrt_dist/step-2.ckpt", "seed0-rrt_l1/step-1.ckpt",
        "seed0-rrt_l1/step-2.ckpt", "seed0-stage1-l1/step-1.ckpt", "seed0-stage1-l1/step-2.ckpt",
    ]  # fmt: skip
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum(row.get("method") == "rrt_dist" for row in rows) == 1  # logged once, by rank 0


def _write_dir_images(root: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    rows = ["age,path,split"]
    for i in range(24):
        split = "train" if i < 16 else ("val" if i < 20 else "test")
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(root / f"{i}.png")
        rows.append(f"{int(rng.integers(1, 90))},{i}.png,{split}")
    (root / "agedb.csv").write_text("\n".join(rows) + "\n")


@pytest.mark.enable_socket
def test_full_preset_image_path_starts_on_two_cpu_processes_and_checkpoints(tmp_path: Path) -> None:
    (tmp_path / "agedb").mkdir()
    _write_dir_images(tmp_path / "agedb")
    tiny = ["data_dir=agedb", "seeds=1", "epochs_stage1=2", "epochs_stage2=1", "lr_steps=1", "methods=l1,dist",
            "image_size=8", "resnet_layers=1", "resnet_width=2", "num_workers=0", "batch_size=8",
            "bench_batches=8", "bench_repeats=1", "figures=false", "threads=1", "checkpoint_every=1"]  # fmt: skip
    result, _, saved = reproduce_full_preset("dist-loss", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert saved == [
        "seed0-rrt_dist/step-1.ckpt", "seed0-rrt_l1/step-1.ckpt", "seed0-stage1-l1/step-1.ckpt",
        "seed0-stage1-l1/step-2.ckpt",
    ]  # fmt: skip
