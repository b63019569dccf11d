"""Slow, obviously-correct forms the fast code is tested against (HD-Explain, arXiv 2403.15576).

- `stein_kernel_autograd`: the Stein kernel s.s'k + s.grad'k + s'.grad k + tr grad grad'k built term by term with torch.autograd on the base
  kernel, one pair at a time, the mixed second derivative traced coordinate by coordinate.
- `scores_loop`: the augmented point d = [x, onehot(y)] and score s = [grad_x log f_y(x), f(x)] of one
  point at a time.
- `last_layer_grads_autograd`: per-example last-layer loss gradients by autograd, one example at a time.

Imports nothing from the fast modules.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F


def rbf_base(h: float) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """k(d, d') = exp(-|d - d'|^2 / (2h))."""
    return lambda a, b: torch.exp(-((a - b) ** 2).sum() / (2.0 * h))


def imq_base(g: float = 1.0, beta: float = 0.5) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """k(d, d') = (1 + g |d - d'|^2)^(-beta)."""
    return lambda a, b: (1.0 + g * ((a - b) ** 2).sum()) ** (-beta)


def linear_base() -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """k(d, d') = d.d'."""
    return lambda a, b: (a * b).sum()


def stein_kernel_autograd(
    base: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    D1: torch.Tensor,
    D2: torch.Tensor,
    S1: torch.Tensor,
    S2: torch.Tensor,
) -> torch.Tensor:
    """kappa(d, d') = s.s' k + s.grad_{d'}k + s'.grad_d k + tr(grad_d grad_{d'} k), pair by pair (n1, n2)."""
    n1, n2, dim = D1.shape[0], D2.shape[0], D1.shape[1]
    rows = []
    for i in range(n1):
        row = []
        for j in range(n2):
            a = D1[i].detach().clone().requires_grad_(True)
            b = D2[j].detach().clone().requires_grad_(True)
            k = base(a, b)
            ga, gb = torch.autograd.grad(k, (a, b), create_graph=True)
            trace = sum(torch.autograd.grad(gb[c], a, retain_graph=True)[0][c] for c in range(dim))
            row.append((S1[i] @ S2[j]) * k.detach() + S1[i] @ gb.detach() + S2[j] @ ga.detach() + trace.detach())
        rows.append(torch.stack(row))
    return torch.stack(rows)  # differentiable in S1, S2 (the scores), not in D


def scores_loop(
    log_prob: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor, y: torch.Tensor, n_classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(d, s) per point: d = [vec x, onehot y], s = [grad_x log f_y(x), f(x)], one point at a time."""
    ds, ss = [], []
    for i in range(X.shape[0]):
        x = X[i : i + 1].detach().clone().requires_grad_(True)
        lp = log_prob(x)[0]  # (C,) log-softmax
        (gx,) = torch.autograd.grad(lp[int(y[i])], x)
        ds.append(torch.cat([x.detach().reshape(-1), F.one_hot(y[i], n_classes).to(X.dtype)]))
        ss.append(torch.cat([gx.reshape(-1), lp.detach().exp()]))
    return torch.stack(ds), torch.stack(ss)


def last_layer_grads_autograd(
    head: torch.nn.Linear, H: torch.Tensor, y: torch.Tensor, loss: str = "ce"
) -> torch.Tensor:
    """Per-example gradient of the loss wrt (W, b) of the last layer, flattened as [W row-major, b] (n, C(m+1))."""
    rows = []
    for i in range(H.shape[0]):
        W = head.weight.detach().clone().requires_grad_(True)
        b = head.bias.detach().clone().requires_grad_(True)
        z = H[i] @ W.T + b
        # "neg_prob" is the official quirk: nll_loss on probabilities = -p_y
        value = -(torch.log_softmax(z, 0) if loss == "ce" else torch.softmax(z, 0))[int(y[i])]
        gW, gb = torch.autograd.grad(value, (W, b))
        rows.append(torch.cat([gW, gb[:, None]], 1).reshape(-1))
    return torch.stack(rows)
