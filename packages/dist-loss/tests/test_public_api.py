"""The public names: every `__all__` name imports from the package root as the documented kind of object, also
after every submodule is imported (a submodule named like a public name would shadow it)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import torch
from torch import nn

import iclr25.dist_loss as pkg
from iclr25.shared.paper import Paper

FUNCTIONS = {
    "agedb_labels", "balanced_mae", "batch_label_counts", "isotonic_decreasing", "kde_label_density", "label_grid",
    "label_weights", "make_tabular", "pseudo_labels", "ranksim_regularizer", "resnet50", "rrt", "shot_metrics",
    "soft_sort", "wasserstein1",
}  # fmt: skip
MODULES = {"BMCLoss", "DistLoss", "FDS", "FocalL1", "HuberLoss", "MLP", "ResNet"}  # torch.nn.Module classes


def test_all_names_have_a_documented_kind() -> None:
    assert set(pkg.__all__) == FUNCTIONS | MODULES | {"PAPER"}


@pytest.mark.parametrize("name", sorted(FUNCTIONS | MODULES | {"PAPER"}))
def test_every_public_name_is_the_documented_object(name: str) -> None:
    for info in pkgutil.iter_modules(pkg.__path__, prefix="iclr25.dist_loss."):
        if not info.name.endswith(("cli", "__main__")):
            importlib.import_module(info.name)  # every submodule loaded: none may shadow a public name
    namespace: dict = {}
    exec(f"from iclr25.dist_loss import {name} as obj", namespace)  # the way a user imports it
    obj = namespace["obj"]
    if name in FUNCTIONS:
        assert inspect.isfunction(obj) and inspect.getdoc(obj), name
    elif name in MODULES:
        assert inspect.isclass(obj) and issubclass(obj, nn.Module) and inspect.getdoc(obj), name
    else:
        assert isinstance(obj, Paper) and obj.slug == "dist-loss"


def test_soft_sort_from_the_root_sorts() -> None:
    from iclr25.dist_loss import soft_sort

    out = soft_sort(torch.tensor([3.0, 1.0, 2.0]))
    assert out.tolist() == [1.0, 2.0, 3.0]
