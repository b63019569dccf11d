"""CIFAR ResNets with the App. G downsampling of Fagnou et al., ICLR 2025 (arXiv 2501.17086).

A strided or projection shortcut breaks K = ∂r/∂x, so App. G keeps the residual stream at the stem resolution
(C × 32 × 32) and wraps every block as `g_i(x) = U_s(Block_i(D_s(x)))`:
- `D_s` (space-to-depth, averaged): cut the map into s × s cells, average each cell over its height and flatten
  the s remaining vectors into channels: C × H × W → C·s × H/s × W/s;
- `U_s` (its right inverse): unflatten and repeat each row s times, so D_s(U_s(y)) = y.
Stages use the cumulative block size s ∈ {1, 2, 4} (16, 32, 64 channels at 32², 16², 8²), stage blocks are plain
C→C blocks, and the head applies D_4 before its usual layers. With pre-activation blocks r = x + z, so K = I
(the network equals the original pre-act ResNet); with post-ReLU blocks K = diag(1[x + z > 0]) (§5.1, App. G).
`train_resnet` trains one on CIFAR-10 (`resnet_data`) with the Table 4 recipe.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from iclr25.highway_bp.data import CIFAR_MEAN, CIFAR_STD, load_cifar10
from iclr25.highway_bp.highway import HighwayStack, PostReLUResidual, PreActResidual
from iclr25.highway_bp.models import seeded
from iclr25.highway_bp.train import train_classifier

if TYPE_CHECKING:
    from iclr25.highway_bp.config import Config


def downsample(x: Tensor, s: int) -> Tensor:
    """App. G downsample D_s: (B, C, H, W) → (B, C·s, H/s, W/s), each s × s cell averaged over its height."""
    if s == 1:
        return x
    B, C, H, W = x.shape
    if H % s or W % s:
        raise ValueError(f"H and W must be divisible by s={s}, got {H}x{W}")
    cells = x.reshape(B, C, H // s, s, W // s, s).mean(3)  # (B, C, H/s, W/s, s): average over the cell's height
    return cells.permute(0, 1, 4, 2, 3).reshape(B, C * s, H // s, W // s)


def upsample(y: Tensor, s: int) -> Tensor:
    """App. G upsample U_s, the right inverse of D_s: unflatten channels and repeat each row s times."""
    if s == 1:
        return y
    B, Cs, h, w = y.shape
    if Cs % s:
        raise ValueError(f"channels must be divisible by s={s}, got {Cs}")
    cells = y.reshape(B, Cs // s, s, h, w).permute(0, 1, 3, 4, 2)  # (B, C, h, w, s)
    return cells.unsqueeze(3).expand(B, Cs // s, h, s, w, s).reshape(B, Cs // s, h * s, w * s)


class Resampled(nn.Module):
    """g(x) = U_s(block(D_s(x))): a block run at a coarser resolution on a full-resolution residual stream (App. G)."""

    def __init__(self, block: nn.Module, s: int) -> None:
        super().__init__()
        self.block, self.s = block, s

    def forward(self, x: Tensor) -> Tensor:
        """Apply the wrapped block at resolution / s."""
        return upsample(self.block(downsample(x, self.s)), self.s)


class Downsample(nn.Module):
    """D_s as a module (used by the head)."""

    def __init__(self, s: int) -> None:
        super().__init__()
        self.s = s

    def forward(self, x: Tensor) -> Tensor:
        """Apply D_s."""
        return downsample(x, self.s)


def basic_block(c: int, preact: bool = True) -> nn.Module:
    """The CIFAR ResNet basic block C→C: pre-act BN-ReLU-conv-BN-ReLU-conv, or conv-BN-ReLU-conv-BN (post-ReLU)."""
    conv = lambda: nn.Conv2d(c, c, 3, padding=1, bias=False)  # noqa: E731
    if preact:
        return nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), conv(), nn.BatchNorm2d(c), nn.ReLU(), conv())
    return nn.Sequential(conv(), nn.BatchNorm2d(c), nn.ReLU(), conv(), nn.BatchNorm2d(c))


def resnet_cifar(blocks_per_stage: int = 5, width: int = 16, classes: int = 10, preact: bool = True) -> HighwayStack:
    """ResNet(6n+2) for CIFAR with App. G downsampling: n = 5 → ResNet32 (L = 15), n = 18 → ResNet110 (L = 54)."""
    if min(blocks_per_stage, width, classes) < 1:
        raise ValueError("blocks_per_stage, width and classes must be >= 1")
    wrap = PreActResidual if preact else PostReLUResidual
    layers = [
        wrap(Resampled(basic_block(width * s, preact), s)) for s in (1, 2, 4) for _ in range(blocks_per_stage)
    ]  # stage s: width·s channels at 32/s (cumulative block sizes 1, 2, 4)
    stem = [nn.Conv2d(3, width, 3, padding=1, bias=False)]
    if not preact:
        stem += [nn.BatchNorm2d(width), nn.ReLU()]
    head = [Downsample(4)]
    if preact:
        head += [nn.BatchNorm2d(4 * width), nn.ReLU()]
    head += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, classes)]
    return HighwayStack(layers, stem=nn.Sequential(*stem), head=nn.Sequential(*head))


def cifar_images(images: np.ndarray) -> np.ndarray:
    """CIFAR images (N, 3, 32, 32) uint8 → float32, scaled to [0, 1] and normalised per channel."""
    if images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"images must be (N, 3, H, W), got {images.shape}")
    x = images.astype(np.float32) / 255.0
    return (x - CIFAR_MEAN[:, None, None]) / CIFAR_STD[:, None, None]


def augment_cifar(x: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """Standard CIFAR augmentation: random horizontal flip and a random 32×32 crop of the 4-pixel zero-padded image."""
    B, _, H, W = x.shape
    dev = x.device
    flip = torch.rand(B, generator=generator) < 0.5
    x = torch.where(flip.to(dev)[:, None, None, None], x.flip(3), x)
    padded = nn.functional.pad(x, (4, 4, 4, 4))
    dy, dx = (torch.randint(0, 9, (B,), generator=generator) for _ in range(2))
    rows = (dy[:, None] + torch.arange(H)).to(dev)  # (B, H)
    cols = (dx[:, None] + torch.arange(W)).to(dev)  # (B, W)
    idx = torch.arange(B, device=dev)[:, None, None]
    return padded.permute(0, 2, 3, 1)[idx, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)


def resnet_data(root: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CIFAR-10 train/test images (N, 3, 32, 32) float32, normalised, and int64 labels from python pickles."""
    Xtr, ytr = load_cifar10(root, "train")
    Xte, yte = load_cifar10(root, "test")
    return cifar_images(Xtr), ytr, cifar_images(Xte), yte


def train_resnet(
    config: Config,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    blocks: int,
    algo: str,
    k: int,
    seed: int,
    device: str,
    desc: str = "train",
    scale: dict[str, Any] | None = None,
) -> dict[str, float]:
    """One ResNet(6n+2) run with App. G downsampling: SGD (Table 4), BP or Highway-BP(k), flip + crop augmentation.

    `scale`: `train_classifier`'s fabric/checkpointer/resume, if any. Returns `TrainResult.summary()`."""
    preact = blocks != 18  # ResNet110 is the original post-ReLU network (K = diag(1[x+z>0])), the others pre-act
    model = seeded(lambda: resnet_cifar(blocks, config.resnet_width, 10, preact=preact), seed)
    torch.manual_seed(seed)
    res = train_classifier(
        model,
        data,
        algo=algo,
        k=k,
        epochs=config.resnet_epochs,
        batch_size=config.resnet_batch,
        lr=config.resnet_lr,
        seed=seed,
        device=device,
        schedule="step",
        max_steps=config.resnet_steps,
        optimizer="sgd",
        momentum=0.9,
        weight_decay=config.resnet_wd,
        augment=augment_cifar,
        desc=desc,
        **(scale or {}),
    )
    return res.summary()
