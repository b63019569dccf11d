"""The models of the quick reproduction (spec §6a of Fagnou et al., ICLR 2025, arXiv 2501.17086).

- `resmlp`: stem Linear(d_in, width), L pre-activation blocks `x + W2·GELU(W1·LN(x))` (r = x + z, K = I,
  or the γ trick when γ > 0), then LN and Linear(width, classes).
- `SeqClassifier`: input Linear(d_in, hidden) → GRU/LSTM cell (PyTorch layout, s_0 = 0) → MLP head on the
  last hidden state (loss at the last step only: the small-scale analogue of the paper's pixel-CIFAR GRU).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from iclr25.highway_bp.highway import HighwayStack, PreActResidual, ScaledResidual
from iclr25.highway_bp.rnn import HighwayRNN, rnn_step


def mlp_block(width: int, hidden: int) -> nn.Module:
    """W2·GELU(W1·LN(x)) (PyTorch default initialisation)."""
    return nn.Sequential(nn.LayerNorm(width), nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))


def resmlp(
    d_in: int = 64, width: int = 64, hidden: int = 128, depth: int = 16, classes: int = 10, gamma: float = 0.0
) -> HighwayStack:
    """The residual MLP of spec §6a.2 as a `HighwayStack` (γ = 0: K = I; γ > 0: the γ trick)."""
    if min(d_in, width, hidden, depth, classes) < 1:
        raise ValueError("d_in, width, hidden, depth and classes must all be >= 1")

    def wrap(block: nn.Module) -> nn.Module:
        return PreActResidual(block) if gamma == 0.0 else ScaledResidual(block, gamma)

    layers = [wrap(mlp_block(width, hidden)) for _ in range(depth)]
    head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, classes))
    return HighwayStack(layers, stem=nn.Linear(d_in, width), head=head)


class SeqClassifier(nn.Module):
    """Input projection → `HighwayRNN` → MLP head on the last hidden state."""

    def __init__(self, d_in: int = 1, hidden: int = 64, classes: int = 10, cell: str = "gru") -> None:
        super().__init__()
        self.embed = nn.Linear(d_in, hidden)
        self.rnn = HighwayRNN(hidden, hidden, cell)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x: Tensor) -> Tensor:
        """Logits (B, classes) for sequences x (B, T, d_in)."""
        return self.head(self.rnn(self.embed(x).transpose(0, 1))[-1])

    def step(
        self,
        x: Tensor,
        y: Tensor,
        k: int = 0,
        algo: str = "hbp",
        loss: Callable[[Tensor, Tensor], Tensor] = nn.functional.cross_entropy,
    ) -> Tensor:
        """Forward + backward (BPTT, Highway-BP(k) or FPI(k)) of `loss(logits, y)` at the last step (cross-entropy)."""

        def loss_fn(hs: Tensor) -> Tensor:  # hs: (T, B, H)
            return loss(self.head(hs[-1]), y)

        return rnn_step(self.rnn, self.embed(x).transpose(0, 1), loss_fn, k=k, algo=algo)


def stack_loss() -> Callable[[Tensor, Tensor], Tensor]:
    """Cross-entropy, the loss of every classification run."""
    return nn.functional.cross_entropy


def count_params(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def seeded(fn: Callable[[], nn.Module], seed: int) -> nn.Module:
    """Build a model under a fixed torch seed (initialisation independent of the global RNG state)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return fn()
