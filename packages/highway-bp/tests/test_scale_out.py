"""Scale-out of the training loop (Lightning Fabric): 2 CPU processes (gloo) equal 1 process with the whole batch
for the residual MLP under Highway-BP, an interrupted run resumed from its checkpoint equals an uninterrupted one,
and the full preset (MLP, GRU, ResNet) starts with `--devices 2 --device cpu`, trains and checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.highway_bp.data import load_digits_split
from iclr25.highway_bp.models import resmlp, seeded
from iclr25.highway_bp.train import train_classifier
from iclr25.shared.fabric import Checkpointer
from iclr25.shared.testing import flat_parameters, reproduce_full_preset, two_processes_equal_one

WORKER = """
import torch

from iclr25.highway_bp.data import load_digits_split
from iclr25.highway_bp.models import resmlp, seeded
from iclr25.highway_bp.train import train_classifier
from iclr25.shared.testing import finish_worker


def run(fabric, out):
    torch.set_num_threads(1)
    Xtr, ytr, Xte, yte = load_digits_split()
    data = (Xtr[:35].astype("float64"), ytr[:35], Xte[:8].astype("float64"), yte[:8])  # 35: a last batch of 3
    model = seeded(lambda: resmlp(64, 8, 8, 4, 10), 0).double()
    train_classifier(model, data, algo="hbp", k=2, epochs=2, batch_size=8, lr=1e-2, seed=0, device="cpu",
                     clip=1.0, fabric=fabric)
    finish_worker(fabric, model, out)
"""


@pytest.mark.enable_socket  # gloo talks over the loopback interface
def test_two_processes_equal_one_with_the_whole_batch(tmp_path: Path) -> None:
    one, _ = two_processes_equal_one(WORKER, tmp_path)
    start = flat_parameters(seeded(lambda: resmlp(64, 8, 8, 4, 10), 0).double())
    assert (one - start).abs().max() > 1e-3  # it trained
    fake = type("TwoProcesses", (), {"global_rank": 0, "world_size": 2})
    with pytest.raises(ValueError, match="multiple of the 2 processes"):
        train_classifier(resmlp(64, 8, 8, 1, 10), _digits(), algo="bp", k=0, epochs=1, batch_size=7, lr=1e-3,
                         seed=0, fabric=fake)  # fmt: skip


def _digits() -> tuple[np.ndarray, ...]:
    Xtr, ytr, Xte, yte = load_digits_split()
    return Xtr[:35], ytr[:35], Xte[:8], yte[:8]


class _Interrupt(Exception):
    pass


def _stop_after_first_epoch(row: dict) -> None:
    raise _Interrupt  # as Ctrl-C at the end of epoch 0 (step 5; the last checkpoint is step 4, mid-epoch)


def _train(folder: Path, **kwargs):
    model = seeded(lambda: resmlp(64, 8, 8, 4, 10), 0)
    res = train_classifier(model, _digits(), algo="hbp", k=2, epochs=2, batch_size=8, lr=1e-2, seed=0,
                           checkpointer=Checkpointer(folder, every=4), **kwargs)  # fmt: skip
    return model, res


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    straight, straight_res = _train(tmp_path / "a")
    with pytest.raises(_Interrupt):
        _train(tmp_path / "b", log=_stop_after_first_epoch)
    assert [p.name for p in Checkpointer(tmp_path / "b", every=4).checkpoints()] == ["step-4.ckpt"]
    resumed, resumed_res = _train(tmp_path / "b", resume="auto")
    assert torch.equal(flat_parameters(straight), flat_parameters(resumed))
    assert resumed_res.train_loss == straight_res.train_loss and resumed_res.steps == straight_res.steps == 10
    assert [p.name for p in Checkpointer(tmp_path / "a", every=4).checkpoints()] == ["step-8.ckpt", "step-10.ckpt"]


@pytest.mark.enable_socket
def test_full_preset_starts_on_two_cpu_processes_and_checkpoints(cifar_writer, tmp_path: Path) -> None:
    cifar_writer(tmp_path / "cifar", n=8)
    tiny = ["fidelity=false", "seeds=1", "mlp_depth=2", "mlp_width=8", "mlp_hidden=8", "mlp_epochs=1", "mlp_ks=1",
            "mlp_batch=512", "gru_task=digits", "gru_hidden=4", "gru_steps=2", "gru_batch=512", "gru_warmup=0",
            "gru_hbp_ks=1", "gru_fpi_ks=1", "gate_k=1", "gru_bptt=false", "cifar_dir=cifar", "resnet_blocks=1",
            "resnet_width=4", "resnet_steps=2", "resnet_batch=4", "resnet_ks=1", "figures=false",
            "checkpoint_every=2"]  # fmt: skip
    result, run_dir, saved = reproduce_full_preset("highway-bp", tiny, tmp_path, "--devices", "2")
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: a gated claim need not hold after 2 steps
    assert saved == [
        "gru-fpi_k1-seed0/step-2.ckpt", "gru-hbp_k1-seed0/step-2.ckpt",
        "mlp-bp-seed0/step-2.ckpt", "mlp-bp-seed0/step-3.ckpt", "mlp-hbp_k1-seed0/step-2.ckpt",
        "mlp-hbp_k1-seed0/step-3.ckpt",
        "resnet8-bp-seed0/step-2.ckpt", "resnet8-hbp_k1-seed0/step-2.ckpt",
    ]  # fmt: skip
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sum(row.get("part") == "mlp" and row.get("run") == "bp" for row in rows) == 1  # logged once, by rank 0
