"""Homogeneous ensembles as one vectorised batched model (no Python loop over members in forward/backward).

Members differ only by their initialisation seed (and, in `training`, their data order), as in the paper's
homogeneous families (spec §3.6). Every member is initialised like a fresh PyTorch layer, U(±1/√fan_in) for
weights and biases, from its own generator, so members sharing a seed are identical (the negative control).

- `BatchedMLPEnsemble`: weights (M, fan_in, fan_out), one `baddbmm` per layer (spec §6a MLP in->k->k->C).
- `BatchedCNNEnsemble`: the Nakkiran et al. 5-layer CNN, members stacked along channels with grouped convs.
- `BatchedResNet18Ensemble`: width-k pre-activation ResNet18, members stacked the same way.
All take inputs (M, B, ...) (member m sees its own minibatch) or (B, ...) (shared by all) and return logits
(M, B, C). `member(m)` returns member m as a plain single model of `reference` (tests check they agree).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from iclr25.ensemble_homogeneity import reference


def member_seeds(seed: int, n_members: int, identical: bool = False) -> list[int]:
    """One independent 63-bit seed per member, from `seed`; all equal with `identical` (negative control)."""
    children = np.random.SeedSequence(seed).spawn(1 if identical else n_members)
    seeds = [int(c.generate_state(2, dtype=np.uint64)[0] >> np.uint64(1)) for c in children]
    return seeds * n_members if identical else seeds


def _uniform_(t: torch.Tensor, bound: float, gen: torch.Generator) -> None:
    with torch.no_grad():
        t.copy_((torch.rand(t.shape, generator=gen, dtype=t.dtype) * 2 - 1) * bound)


class _Batched(nn.Module):
    n_members: int

    def _init_members(self, seeds: Sequence[int]) -> None:
        """Initialise member m's slice of every layer from generator(seeds[m]), layer by layer in order."""
        if len(seeds) != self.n_members:
            raise ValueError(f"need {self.n_members} seeds, got {len(seeds)}")
        for m, s in enumerate(seeds):
            gen = torch.Generator().manual_seed(int(s))
            for mod in self.modules():
                if isinstance(mod, BatchedLinear):
                    bound = 1 / math.sqrt(mod.weight.shape[1])
                    _uniform_(mod.weight.data[m], bound, gen)
                    _uniform_(mod.bias.data[m], bound, gen)
                elif isinstance(mod, nn.Conv2d):
                    cout = mod.out_channels // self.n_members
                    sl = slice(m * cout, (m + 1) * cout)
                    fan_in = mod.weight.shape[1] * mod.weight.shape[2] * mod.weight.shape[3]
                    bound = 1 / math.sqrt(fan_in)
                    _uniform_(mod.weight.data[sl], bound, gen)
                    if mod.bias is not None:
                        _uniform_(mod.bias.data[sl], bound, gen)


class BatchedLinear(nn.Module):
    """M independent linear layers: y_m = x_m W_m + b_m, weights (M, in, out)."""

    def __init__(self, n_members: int, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_members, in_dim, out_dim))
        self.bias = nn.Parameter(torch.empty(n_members, 1, out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(M, B, in) -> (M, B, out)."""
        return torch.baddbmm(self.bias, x, self.weight)


class BatchedMLPEnsemble(_Batched):
    """M independent MLPs in -> k (-> k)*(depth-1) -> C with ReLU, trained as one model."""

    def __init__(
        self,
        in_dim: int,
        width: int,
        n_classes: int,
        n_members: int,
        depth: int = 2,
        seeds: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        if min(in_dim, width, n_classes, n_members, depth) < 1:
            raise ValueError("in_dim, width, n_classes, n_members and depth must all be >= 1")
        self.n_members, self.width, self.depth = n_members, width, depth
        self.in_dim, self.n_classes = in_dim, n_classes
        dims = [in_dim] + [width] * depth + [n_classes]
        self.layers = nn.ModuleList(BatchedLinear(n_members, a, b) for a, b in itertools.pairwise(dims))
        self._init_members(member_seeds(0, n_members) if seeds is None else seeds)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (M, B, C) of inputs (M, B, in) or (B, in)."""
        h = x if x.dim() == 3 else x.unsqueeze(0).expand(self.n_members, -1, -1)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = torch.relu(h)
        return h

    def member(self, m: int) -> reference.MLP:
        """Member m as a plain `reference.MLP` with copied weights."""
        net = reference.MLP(self.in_dim, self.width, self.n_classes, self.depth).to(self.layers[0].weight.dtype)
        linears = [mod for mod in net if isinstance(mod, nn.Linear)]
        with torch.no_grad():
            for lin, bl in zip(linears, self.layers, strict=True):
                lin.weight.copy_(bl.weight[m].T)
                lin.bias.copy_(bl.bias[m, 0])
        return net


def mlp_param_count(in_dim: int, width: int, n_classes: int, depth: int = 2) -> int:
    """Parameters of one MLP member."""
    dims = [in_dim] + [width] * depth + [n_classes]
    return sum(a * b + b for a, b in itertools.pairwise(dims))


def _to_grouped(x: torch.Tensor, n_members: int) -> torch.Tensor:
    """(M, B, c, H, W) or (B, c, H, W) -> (B, M*c, H, W), member-major channels."""
    if x.dim() == 4:
        x = x.unsqueeze(0).expand(n_members, -1, -1, -1, -1)
    M, B, c, H, W = x.shape
    return x.transpose(0, 1).reshape(B, M * c, H, W)


class _GroupedHead(nn.Module):
    def __init__(self, n_members: int, in_dim: int, n_classes: int) -> None:
        super().__init__()
        self.n_members, self.n_classes = n_members, n_classes
        self.fc = nn.Conv2d(n_members * in_dim, n_members * n_classes, 1, groups=n_members)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Pooled features (B, M*d) -> logits (M, B, C)."""
        B = h.shape[0]
        out = self.fc(h[:, :, None, None]).reshape(B, self.n_members, self.n_classes)
        return out.transpose(0, 1)


class BatchedCNNEnsemble(_Batched):
    """M independent Nakkiran-style 5-layer CNNs (spec §3.6) as grouped convolutions."""

    def __init__(
        self,
        width: int,
        n_classes: int,
        n_members: int,
        in_channels: int = 3,
        seeds: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        if min(width, n_classes, n_members, in_channels) < 1:
            raise ValueError("width, n_classes, n_members and in_channels must all be >= 1")
        self.n_members, self.width, self.n_classes, self.in_channels = n_members, width, n_classes, in_channels
        M, k = n_members, width
        chans = [in_channels, k, 2 * k, 4 * k, 8 * k]
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [
                nn.Conv2d(M * chans[i], M * chans[i + 1], 3, padding=1, groups=M),
                nn.BatchNorm2d(M * chans[i + 1]),
                nn.ReLU(),
            ]
            if i > 0:
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
        self.features = nn.Sequential(*layers)
        self.head = _GroupedHead(M, 8 * k, n_classes)
        self._init_members(member_seeds(0, n_members) if seeds is None else seeds)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (M, B, C) of images (M, B, c, H, W) or (B, c, H, W)."""
        h = self.features(_to_grouped(x, self.n_members))  # (B, M*8k, h, w)
        return self.head(torch.amax(h, dim=(2, 3)))

    def member(self, m: int) -> reference.SmallCNN:
        """Member m as a plain `reference.SmallCNN` with copied weights and BN statistics."""
        net = reference.SmallCNN(self.width, self.n_classes, self.in_channels).to(self.head.fc.weight.dtype)
        _copy_grouped(self, net, m, self.n_members)
        return net


class _BatchedPreActBlock(nn.Module):
    def __init__(self, M: int, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(M * cin)
        self.conv1 = nn.Conv2d(M * cin, M * cout, 3, stride, 1, bias=False, groups=M)
        self.bn2 = nn.BatchNorm2d(M * cout)
        self.conv2 = nn.Conv2d(M * cout, M * cout, 3, 1, 1, bias=False, groups=M)
        self.shortcut = (
            nn.Conv2d(M * cin, M * cout, 1, stride, bias=False, groups=M) if stride != 1 or cin != cout else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(x))
        short = self.shortcut(out) if self.shortcut is not None else x
        out = self.conv1(out)
        out = self.conv2(torch.relu(self.bn2(out)))
        return out + short


class BatchedResNet18Ensemble(_Batched):
    """M independent width-k pre-activation ResNet18s (Nakkiran et al. widths [k, 2k, 4k, 8k]) as grouped convs."""

    def __init__(
        self,
        width: int,
        n_classes: int,
        n_members: int,
        in_channels: int = 3,
        seeds: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        self.n_members, self.width, self.n_classes, self.in_channels = n_members, width, n_classes, in_channels
        M, k = n_members, width
        self.conv1 = nn.Conv2d(M * in_channels, M * k, 3, 1, 1, bias=False, groups=M)
        blocks: list[nn.Module] = []
        cin = k
        for i, c in enumerate([k, 2 * k, 4 * k, 8 * k]):
            for b in range(2):
                blocks.append(_BatchedPreActBlock(M, cin, c, 2 if (b == 0 and i > 0) else 1))
                cin = c
        self.blocks = nn.Sequential(*blocks)
        self.head = _GroupedHead(M, 8 * k, n_classes)
        self._init_members(member_seeds(0, n_members) if seeds is None else seeds)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (M, B, C) of images (M, B, c, H, W) or (B, c, H, W)."""
        h = self.blocks(self.conv1(_to_grouped(x, self.n_members)))
        return self.head(h.mean(dim=(2, 3)))

    def member(self, m: int) -> reference.PreActResNet18:
        """Member m as a plain `reference.PreActResNet18` with copied weights and BN statistics."""
        net = reference.PreActResNet18(self.width, self.n_classes, self.in_channels).to(self.head.fc.weight.dtype)
        _copy_grouped(self, net, m, self.n_members)
        return net


def _copy_grouped(batched: nn.Module, single: nn.Module, m: int, M: int) -> None:
    """Copy member m's slices of the grouped convs / BNs / head of `batched` into the plain `single` model."""
    b_layers = [mod for mod in batched.modules() if isinstance(mod, nn.Conv2d | nn.BatchNorm2d)]
    s_layers = [mod for mod in single.modules() if isinstance(mod, nn.Conv2d | nn.BatchNorm2d | nn.Linear)]
    if len(b_layers) != len(s_layers):
        raise RuntimeError("batched and single architectures differ")
    with torch.no_grad():
        for b, s in zip(b_layers, s_layers, strict=True):
            n = b.weight.shape[0] // M
            sl = slice(m * n, (m + 1) * n)
            s.weight.copy_(b.weight[sl].reshape(s.weight.shape))
            if b.bias is not None:
                s.bias.copy_(b.bias[sl])
            if isinstance(b, nn.BatchNorm2d):
                s.running_mean.copy_(b.running_mean[sl])
                s.running_var.copy_(b.running_var[sl])


MODELS = {"mlp": BatchedMLPEnsemble, "cnn": BatchedCNNEnsemble, "resnet18": BatchedResNet18Ensemble}


def make_ensemble(
    model: str,
    width: int,
    n_classes: int,
    n_members: int,
    input_shape: Sequence[int],
    seeds: Sequence[int] | None = None,
) -> nn.Module:
    """A batched ensemble by name ("mlp" on flat inputs (d,), "cnn"/"resnet18" on images (c, H, W))."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}: model must be one of {', '.join(MODELS)}")
    if model == "mlp":
        if len(input_shape) != 1:
            raise ValueError(f"model 'mlp' needs flat inputs, got shape {tuple(input_shape)}")
        return BatchedMLPEnsemble(input_shape[0], width, n_classes, n_members, seeds=seeds)
    if len(input_shape) != 3:
        raise ValueError(f"model {model!r} needs images (channels, height, width), got shape {tuple(input_shape)}")
    return MODELS[model](width, n_classes, n_members, in_channels=input_shape[0], seeds=seeds)
