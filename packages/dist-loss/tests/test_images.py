"""Image path (paper Sec. 4.1, DIR benchmark): the plain-torch ResNet and one run on a tiny generated DIR folder."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from iclr25.dist_loss.images import ResNet, image_stage1_and_heads, resnet50
from iclr25.dist_loss.reproduce import PRESETS, run


def test_resnet_forward_backward_tiny() -> None:
    torch.manual_seed(0)
    model = ResNet((1, 1), width=4, bias_init=40.0)
    assert model.feature_dim == 32
    x = torch.randn(2, 3, 32, 32)
    pred = model(x)
    assert pred.shape == (2,)
    pred.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    model.reset_head(40.0, zero_weight=True)
    model.eval()
    assert torch.allclose(model(x), torch.full((2,), 40.0))


def test_resnet50_shape() -> None:
    model = resnet50()
    assert model.feature_dim == 2048
    n_params = sum(p.numel() for p in model.parameters())
    assert 23.4e6 < n_params < 23.6e6  # torchvision's ResNet-50 trunk has 23.5M parameters
    with pytest.raises(ValueError, match="layers"):
        ResNet((0,), 4)


def _dir_folder(root: Path) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    rows = []
    for i, (age, split) in enumerate([(20, "train"), (30, "train"), (30, "train"), (60, "train"), (25, "val"),
                                      (50, "val"), (22, "test"), (45, "test")]):  # fmt: skip
        name = f"img/{i}.jpg"
        (root / "img").mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(root / name)
        rows.append({"age": age, "path": name, "split": split})
    with (root / "agedb.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["age", "path", "split"])
        writer.writeheader()
        writer.writerows(rows)
    return root


def test_image_training_step_on_tiny_dir_folder(tmp_path: Path) -> None:
    root = _dir_folder(tmp_path / "agedb")
    cfg = dataclasses.replace(
        PRESETS["ci"], data_dir=str(root), seeds=1, epochs_stage1=1, epochs_stage2=1, batch_size=2,
        image_size=8, resnet_layers=(1,), resnet_width=2, num_workers=0,
    )  # fmt: skip
    metrics, preds, speed = image_stage1_and_heads(cfg, 0, "cpu")
    assert set(metrics) == {"e2e_l1", "rrt_l1", "rrt_dist"}
    assert preds["rrt_dist_test"].shape == (2,) and preds["rrt_dist"].shape == (4,)
    assert all(np.isfinite([m["all_mae"], m["balanced_mae"], m["train_w1"]]).all() for m in metrics.values())
    assert speed["stage1_l1_samples_per_s"] > 0
    report = run("full", tmp_path / "out", device="cpu", config=cfg)
    assert f"data_dir={root}" in report.command.split()
    assert {c.name for c in report.claims} >= {"few_shot_mae_ratio", "w1_ratio"}


def test_image_path_bad_input(tmp_path: Path) -> None:
    cfg = dataclasses.replace(PRESETS["ci"], data_dir=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="data_dir"):
        image_stage1_and_heads(cfg, 0, "cpu")
    root = _dir_folder(tmp_path / "agedb")
    with pytest.raises(ValueError, match="batch_size"):
        image_stage1_and_heads(dataclasses.replace(cfg, data_dir=str(root)), 0, "cpu")
