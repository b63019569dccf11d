"""Scale-out of the training loop (Lightning Fabric): 2 CPU processes (gloo) equal 1 process with the whole batch,
an interrupted run resumed from its checkpoint equals an uninterrupted one, and the full preset starts with
`--devices 2 --device cpu`, trains and checkpoints."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from iclr25.dynamical_diffusion.config import Config
from iclr25.dynamical_diffusion.training import make_data, make_model, train
from iclr25.shared.fabric import Checkpointer
from iclr25.shared.testing import InterruptAt, flat_parameters, reproduce_full_preset, two_processes_equal_one

TINY = Config(size=8, n_context=2, n_future=2, n_train=16, n_test=2, width=8, ch_mult=(1,), T=20, ddim_steps=2)

WORKER = """
import torch

from iclr25.dynamical_diffusion.config import Config
from iclr25.dynamical_diffusion.training import make_data, make_model, train
from iclr25.shared.testing import finish_worker


def run(fabric, cfg, out):
    torch.set_num_threads(1)
    config = Config(**{**cfg, "ch_mult": tuple(cfg["ch_mult"])})  # a dict: Fabric's launch refuses frozen dataclasses
    data = torch.from_numpy(make_data(config, 0)[0]).double()
    torch.manual_seed(0)
    model = make_model(config, 0.5).double()
    train(model, data, 3, batch_size=8, lr=1e-2, seed=0, log_every=1, fabric=fabric)
    finish_worker(fabric, model.net, out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_two_processes_equal_one_with_the_whole_batch(tmp_path: Path) -> None:
    cfg = dataclasses.asdict(TINY)
    two_processes_equal_one(WORKER, tmp_path, cfg)
    fake = type("TwoProcesses", (), {"global_rank": 0, "world_size": 2})
    with pytest.raises(ValueError, match="multiple of the 2 processes"):
        train(make_model(TINY, 0.5), torch.zeros(4, 4, 1, 8), 1, batch_size=7, fabric=fake)


def _train(folder: Path, **kwargs) -> tuple[torch.nn.Module, object]:
    data = torch.from_numpy(make_data(TINY, 0)[0])
    torch.manual_seed(0)
    model = make_model(TINY, 0.5)
    stats = train(model, data, 10, batch_size=4, seed=0, checkpointer=Checkpointer(folder, every=4), **kwargs)
    return model, stats


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    straight, straight_stats = _train(tmp_path / "a", log_every=1)
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b", log_every=1, logger=InterruptAt(7))
    assert [p.name for p in Checkpointer(tmp_path / "b", every=4).checkpoints()] == ["step-4.ckpt"]
    resumed, resumed_stats = _train(tmp_path / "b", log_every=1, resume="auto")
    assert torch.equal(flat_parameters(straight.net), flat_parameters(resumed.net))
    assert resumed_stats.losses == straight_stats.losses  # the loss curve continues where it stopped
    assert (straight_stats.steps, resumed_stats.steps) == (10, 6)
    assert [p.name for p in Checkpointer(tmp_path / "a", every=4).checkpoints()] == ["step-8.ckpt", "step-10.ckpt"]
    done, _ = _train(tmp_path / "a", log_every=1, resume="auto")  # resuming a finished run trains nothing
    assert torch.equal(flat_parameters(straight.net), flat_parameters(done.net))


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_and_checkpoints(tmp_path: Path) -> None:
    tiny = ["dataset=pde1d", "size=8", "n_context=2", "n_future=2", "n_train=16", "n_test=2", "width=8", "ch_mult=1",
            "T=20", "ddim_steps=2", "n_samples=2", "seeds=1", "steps=4", "batch_size=4", "checkpoint_every=2",
            "noise_ablation=false"]  # fmt: skip
    result, run_dir, saved = reproduce_full_preset("dynamical-diffusion", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a reported claim need not hold after 4 steps
    assert saved == [
        "seed0-dpm/step-2.ckpt", "seed0-dpm/step-4.ckpt", "seed0-dydiff/step-2.ckpt", "seed0-dydiff/step-4.ckpt",
    ]  # fmt: skip
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum("seed0/dpm/loss" in row for row in rows) == 1  # logged once, by rank 0
