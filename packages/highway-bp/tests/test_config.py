"""Config values are checked when a config is made, before torch loads or any work starts (issue 14)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iclr25.highway_bp.config import PRESETS, Config, TrainConfig


def test_presets_are_valid():
    assert set(PRESETS) == {"ci", "quick", "full"}
    assert all(isinstance(c, Config) for c in PRESETS.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mlp_lr": float("nan")}, "mlp_lr must be a finite number"),
        ({"mlp_lr": -1e-3}, "mlp_lr must be > 0"),
        ({"gru_lr": float("inf")}, "gru_lr must be a finite number"),
        ({"resnet_lr": 0.0}, "resnet_lr must be > 0"),
        ({"resnet_wd": -1.0}, "resnet_wd must be >= 0"),
        ({"threads": 0}, "threads must be an integer >= 1"),
        ({"fidelity_batch": 0}, "fidelity_batch must be an integer >= 1"),
        ({"mlp_depth": 0}, "mlp_depth must be an integer >= 1"),
        ({"mlp_epochs": 1.5}, "mlp_epochs must be an integer >= 1"),
        ({"gru_batch": 0}, "gru_batch must be an integer >= 1"),
        ({"gru_steps": -1}, "gru_steps must be an integer >= 0"),
        ({"gru_warmup": -5}, "gru_warmup must be an integer >= 0"),
        ({"gru_task": "mnist"}, "gru_task must be one of"),
        ({"gru_schedule": "linear"}, "gru_schedule must be one of"),
        ({"mlp_ks": (0, -1)}, r"mlp_ks\[1\] must be an integer >= 0"),
        ({"resnet_blocks": ()}, "resnet_blocks must not be empty"),
        ({"resnet_steps": -1}, "resnet_steps must be an integer >= 0"),
        ({"figures": "no"}, "figures must be true or false"),
        ({"gate_k": 4}, "gate_k=4 must be in gru_hbp_ks and gru_fpi_ks"),
    ],
)
def test_bad_values_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        replace(PRESETS["quick"], **change)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": "transformer"}, "model must be one of"),
        ({"backward": "rtrl"}, "backward must be one of"),
        ({"k": -1}, "k must be an integer >= 0"),
        ({"depth": 0}, "depth must be an integer >= 1"),
        ({"lr": float("nan")}, "lr must be a finite number"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
    ],
)
def test_bad_train_values_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        replace(TrainConfig(), **change)


def test_train_lr_defaults_by_model():
    assert TrainConfig().learning_rate == 1e-3
    assert TrainConfig(model="gru").learning_rate == 3e-3
    assert TrainConfig(model="gru", lr=0.01).learning_rate == 0.01
