"""The training loop and the full preset's per-task hyper-parameters."""

from __future__ import annotations

import math

import pytest
import torch

from iclr25.lrnn_state_tracking.config import PRESETS
from iclr25.lrnn_state_tracking.experiments import _grid_config
from iclr25.lrnn_state_tracking.training import TrainConfig, evaluate, load_checkpoint, lr_at, save_checkpoint, train


def test_full_preset_uses_official_hyperparameters():
    full = PRESETS["full"]
    parity = _grid_config(full, "parity", "deltanet", "[-1,1]", 0)
    mod = _grid_config(full, "mod", "mamba", "[0,1]", 1)
    assert (parity.steps, parity.warmup, parity.weight_decay, parity.batch_size) == (20_000, 2_000, 0.0, 256)
    assert (mod.steps, mod.warmup, mod.weight_decay, mod.eig_range) == (100_000, 10_000, 0.1, "[0,1]")
    assert (parity.d_model, parity.n_layers, parity.n_heads) == (128, 2, 4)


def test_lr_schedule_warmup_then_cosine_to_floor():
    cfg = TrainConfig(steps=100, warmup=10, lr=1e-3)
    assert lr_at(0, cfg) == pytest.approx(1e-4)
    assert lr_at(9, cfg) == pytest.approx(1e-3)
    assert lr_at(100, cfg) == pytest.approx(1e-6)
    assert lr_at(55, cfg) == pytest.approx(1e-6 + 0.5 * (1e-3 - 1e-6) * (1 + math.cos(math.pi * 0.5)), rel=1e-6)


@pytest.mark.parametrize(("task", "model"), [("mod", "mamba"), ("modbra", "lstm"), ("parity", "transformer")])
def test_train_and_checkpoint_roundtrip(task, model, tmp_path):
    torch.set_num_threads(1)
    cfg = TrainConfig(task=task, model=model, d_model=16, n_layers=1, n_heads=2, steps=3, batch_size=8, warmup=1)
    result = train(cfg, log_every=1)
    assert len(result.history) == 3 and all(math.isfinite(r["loss"]) for r in result.history)
    save_checkpoint(result, tmp_path / "m.pt")
    model_back, cfg_back = load_checkpoint(tmp_path / "m.pt")
    assert cfg_back == cfg
    a = evaluate(result.model, task, n=16, lengths=(40, 60))
    b = evaluate(model_back, task, n=16, lengths=(40, 60))
    assert a["scaled_accuracy"] == b["scaled_accuracy"]
    assert len(a["correct"]) == 16 and a["lengths"].min() >= 39


def test_train_config_rejects_bad_values():
    with pytest.raises(ValueError, match="model must be one of"):
        TrainConfig(model="rwkv")
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(schedule="linear")
    with pytest.raises(ValueError, match="n_heads must be an integer >= 1"):
        TrainConfig(n_heads=0)
    with pytest.raises(ValueError, match="divisible"):
        TrainConfig(model="transformer", d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="lr must be > 0"):
        TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match="warmup must be an integer >= 0"):
        TrainConfig(warmup=-5)
    with pytest.raises(ValueError, match="min_lr_ratio"):
        TrainConfig(min_lr_ratio=-2.0)


def test_bad_checkpoint_and_eval_size_rejected(tmp_path):
    path = tmp_path / "garbage.pt"
    path.write_text("not a checkpoint\n")
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(path)
    model = torch.nn.Identity()
    with pytest.raises(ValueError, match="n and batch_size must be >= 1"):
        evaluate(model, "parity", n=0)


def test_train_max_len_bounds_the_training_sequences():
    torch.set_num_threads(1)
    cfg = TrainConfig(model="figure1", d_model=4, steps=5, batch_size=32, warmup=0, train_max_len=6)
    result = train(cfg)
    assert result.train_tokens <= 5 * 32 * 5  # inputs are cropped to the longest sequence minus its answer: <= 5
    assert TrainConfig().train_max_len == 40  # the official training lengths 3-40
