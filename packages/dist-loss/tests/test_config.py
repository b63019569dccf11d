"""Config values are checked when a config is made, before torch loads or any work starts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iclr25.dist_loss.config import PRESETS, Config, TrainConfig


def test_presets_are_valid() -> None:
    assert set(PRESETS) == {"ci", "quick", "full"}
    assert all(isinstance(c, Config) for c in PRESETS.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seeds": 0}, "seeds must be an integer >= 1"),
        ({"data_scale": 0}, "data_scale must be an integer >= 1"),
        ({"dim": 2.5}, "dim must be an integer >= 1"),
        ({"depth": -1}, "depth must be an integer >= 0"),
        ({"label_noise": -1.0}, "label_noise must be >= 0"),
        ({"feature_noise": float("nan")}, "feature_noise must be a finite number"),
        ({"epochs_stage2": 0}, "epochs_stage2 must be an integer >= 1"),
        ({"lr_steps": (60, 0)}, r"lr_steps\[1\] must be an integer >= 1"),
        ({"batch_size": 1}, "batch_size must be an integer >= 2"),
        ({"lr": -1.0}, "lr must be > 0"),
        ({"lr": float("nan")}, "lr must be a finite number"),
        ({"lam": -0.5}, "lam must be >= 0"),
        ({"eps": 0.0}, "eps must be > 0"),
        ({"bw": float("inf")}, "bw must be a finite number"),
        ({"max_label": -1.0}, "max_label must be > min_label"),
        ({"step": 0.0}, "step must be > 0"),
        ({"methods": ()}, "methods must not be empty"),
        ({"methods": ("l1", "dist", "magic")}, r"methods\[2\] must be one of"),
        ({"methods": ("l1",)}, "methods must include"),
        ({"rrt_head_init": "ones"}, "rrt_head_init must be one of"),
        ({"end_to_end": "yes"}, "end_to_end must be true or false"),
        ({"bench_batches": ()}, "bench_batches must not be empty"),
        ({"bench_repeats": 0}, "bench_repeats must be an integer >= 1"),
        ({"threads": -1}, "threads must be an integer >= 0"),
        ({"image_size": 4}, "image_size must be an integer >= 8"),
        ({"resnet_layers": (3, 0)}, r"resnet_layers\[1\] must be an integer >= 1"),
        ({"num_workers": -1}, "num_workers must be an integer >= 0"),
    ],
)
def test_bad_values_are_rejected(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replace(PRESETS["quick"], **change)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epochs": 0}, "epochs must be an integer >= 1"),
        ({"batch_size": 1}, "batch_size must be an integer >= 2"),
        ({"lr": float("nan")}, "lr must be a finite number"),
        ({"eps": -0.1}, "eps must be > 0"),
        ({"threads": 0}, "threads must be an integer >= 1"),
    ],
)
def test_bad_train_values_are_rejected(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replace(TrainConfig(), **change)
