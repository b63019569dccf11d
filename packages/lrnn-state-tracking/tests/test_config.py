"""Config values are checked when a config is made, before torch loads or any work starts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iclr25.lrnn_state_tracking.config import MODELS, PRESETS, TASKS, Config, TrainConfig, parse_eig_range


def test_names_match_the_heavy_modules():
    from iclr25.lrnn_state_tracking.baselines import ALL_MODELS
    from iclr25.lrnn_state_tracking.data import TASKS as DATA_TASKS
    from iclr25.lrnn_state_tracking.ops import parse_eig_range as ops_parse

    assert MODELS == ALL_MODELS and tuple(DATA_TASKS) == TASKS and ops_parse is parse_eig_range


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fig1_lr": float("nan")}, "fig1_lr must be a finite number"),
        ({"grid_lr": -1e-3}, "grid_lr must be > 0"),
        ({"fig1_steps": 0}, "fig1_steps must be an integer >= 1"),
        ({"fig1_batch": 2.5}, "fig1_batch must be an integer >= 1"),
        ({"grid_seeds": 0}, "grid_seeds must be an integer >= 1"),
        ({"grid_warmup_mod": -1}, "grid_warmup_mod must be an integer >= 0"),
        ({"grid_wd_mod": float("inf")}, "grid_wd_mod must be a finite number"),
        ({"grid_models": ("rwkv",)}, r"grid_models\[0\] must be one of"),
        ({"eval_n": 0}, "eval_n must be an integer >= 1"),
        ({"eval_max_len": 512}, "eval_max_len <= 256"),
        ({"speed_reps": 0}, "speed_reps must be an integer >= 1"),
        ({"threads": 0}, "threads must be an integer >= 1"),
        ({"log_every": -1}, "log_every must be an integer >= 0"),
        ({"theory": "yes"}, "theory must be true or false"),
        ({"grid_deltanet_mode": "triton"}, "grid_deltanet_mode must be one of chunk, recurrent, fla"),
        ({"mamba_train_max_len": 3}, "mamba_train_max_len must be an integer >= 5"),
        ({"mamba": 1}, "mamba must be true or false"),
    ],
)
def test_bad_values_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        replace(PRESETS["quick"], **change)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task": "dyck"}, "task must be one of"),
        ({"eig_range": "0,2"}, "eig_range must be one of"),
        ({"lr": float("nan")}, "lr must be a finite number"),
        ({"weight_decay": -0.1}, "weight_decay must be >= 0"),
        ({"grad_clip": float("nan")}, "grad_clip must be a finite number"),
        ({"min_lr_ratio": 2.0}, r"min_lr_ratio must lie in \[0, 1\]"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"amp": 1}, "amp must be true or false"),
        ({"train_max_len": 4}, "train_max_len must be an integer >= 5"),
        ({"train_max_len": 300}, "train_max_len must be <= 256"),
    ],
)
def test_bad_train_values_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        replace(TrainConfig(), **change)


def test_presets_are_valid():
    assert all(isinstance(c, Config) for c in PRESETS.values())
    assert TrainConfig(eig_range="-1, 1").eig_range == "[-1,1]"
