"""Classifiers that follow the model protocol every explainer here uses.

Protocol (`Classifier`): `representation(x) -> h` (penultimate features, (n, m)), `head` (the last
`nn.Linear`, m -> C), `forward(x) = head(representation(x))` (logits) and `predict_proba(x)` (softmax).
Any torch module with these members can be explained. `MLP` is the synthetic/digits network of the
official code (`models/classifiers.py`); `ResNet18` is the CIFAR-style ResNet-18 (3x3 stem, stride 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn


@runtime_checkable
class Classifier(Protocol):
    """What an explainer needs from a model."""

    head: nn.Linear

    def representation(self, x: torch.Tensor) -> torch.Tensor: ...

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor: ...


class _Protocol(nn.Module):
    head: nn.Linear

    def representation(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - overridden
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (n, C)."""
        return self.head(self.representation(x))

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        """Softmax probabilities f(x) (n, C)."""
        return torch.softmax(self(x), dim=-1)


class MLP(_Protocol):
    """in -> hidden... (ReLU) -> C; the representation is the last hidden layer's activation."""

    def __init__(self, in_dim: int, hidden: tuple[int, ...] | list[int], n_classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, n_classes)
        self.arch = {"kind": "mlp", "in_dim": in_dim, "hidden": list(hidden), "n_classes": n_classes}

    def representation(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate activation (n, hidden[-1])."""
        return self.body(x)


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.short(x))


class ResNet18(_Protocol):
    """CIFAR ResNet-18: 3x3 stem (stride 1), 4 stages of 2 basic blocks, global average pool, fc."""

    def __init__(self, n_classes: int = 10, in_channels: int = 3, width: int = 64) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        blocks, cin = [], width
        for i, stride in enumerate((1, 2, 2, 2)):
            cout = width * 2**i
            blocks += [_Block(cin, cout, stride), _Block(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, n_classes)
        self.arch = {"kind": "resnet18", "n_classes": n_classes, "in_channels": in_channels, "width": width}

    def representation(self, x: torch.Tensor) -> torch.Tensor:
        """Globally pooled last-stage features (n, 8 width)."""
        return F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1)


def build_model(arch: dict[str, Any]) -> _Protocol:
    """Rebuild a model from its `arch` dict (as stored in a checkpoint)."""
    if not isinstance(arch, Mapping):
        raise ValueError(
            f"arch must be a mapping with kind, n_classes, ... (mlp or resnet18); got {type(arch).__name__}"
        )
    kind = arch.get("kind")
    if kind == "mlp":
        return MLP(int(arch["in_dim"]), tuple(int(h) for h in arch["hidden"]), int(arch["n_classes"]))
    if kind == "resnet18":
        return ResNet18(int(arch["n_classes"]), int(arch.get("in_channels", 3)), int(arch.get("width", 64)))
    raise ValueError(f"unknown model kind {kind!r}; allowed: mlp, resnet18")


def check_input(model: Any, X: Any, what: str = "the data") -> None:
    """Refuse data `model` (an `MLP` or `ResNet18`) cannot read, in one line naming `what`: an MLP's number of
    features per example, a ResNet-18's images (n, C, H, W) with its channels."""
    arch = model.arch
    if arch["kind"] == "mlp" and int(X[0].size) != int(arch["in_dim"]):
        raise ValueError(f"{what} has {int(X[0].size)} features per example but the model expects {arch['in_dim']}")
    if arch["kind"] == "resnet18" and (X.ndim != 4 or X.shape[1] != arch["in_channels"]):
        raise ValueError(f"{what} must be images (n, {arch['in_channels']}, H, W) for a ResNet-18, got {X.shape}")
