"""Exactness checks of Highway-BP on a model of any size (Fagnou et al., ICLR 2025, arXiv 2501.17086, Theorem 2).

For a residual MLP (K = I) or a GRU/LSTM over time: after k iterations the estimate w^k_i equals the exact
∂𝓛/∂h_i for every i ≥ L − k, and at k = L the parameter gradients equal autograd's.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr25.highway_bp.highway import flat_grad, highway_backward, highway_step, stack_forward
from iclr25.highway_bp.models import SeqClassifier, resmlp


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def exactness_checks(
    model: str = "resmlp", depth: int = 8, width: int = 16, batch: int = 4, seed: int = 0
) -> dict[str, tuple[float, bool]]:
    """Return {check name: (worst relative error, passed)} in float64 (tolerance 1e-8)."""
    if model not in ("resmlp", "gru", "lstm"):
        raise ValueError(f"model must be resmlp, gru or lstm; got {model!r}")
    if min(depth, width, batch) < 1:
        raise ValueError("depth, width and batch must be >= 1")
    gen = torch.Generator().manual_seed(seed)
    ce = nn.functional.cross_entropy
    torch.manual_seed(seed)
    out: dict[str, tuple[float, bool]] = {}
    if model == "resmlp":
        net = resmlp(8, width, 2 * width, depth, 5).double()
        x = torch.randn(batch, 8, generator=gen, dtype=torch.float64)
        y = torch.randint(0, 5, (batch,), generator=gen)
        h = net.stem(x).detach().requires_grad_(True)
        hs = [h]
        for layer in net.layers:
            hs.append(layer(hs[-1]))
        exact = torch.stack(torch.autograd.grad(ce(net.head(hs[-1]), y), hs))
        worst = 0.0
        for k in range(depth + 1):
            cache = stack_forward(net, x)
            e = torch.zeros_like(exact)
            e[depth] = torch.autograd.grad(ce(net.head(cache.out), y), cache.out)[0]
            w = highway_backward(net, cache, e, k)
            worst = max(worst, max(_rel(w[i], exact[i]) for i in range(depth - k, depth + 1)))
        out["w^k exact for i >= L-k"] = (worst, worst < 1e-8)
        net.zero_grad()
        ce(net(x), y).backward()
        ref = flat_grad(net).clone()
        for algo in ("hbp", "fpi"):
            net.zero_grad(set_to_none=True)
            highway_step(net, ce, x, y, depth, algo=algo)
            err = _rel(flat_grad(net), ref)
            out[f"{algo} parameter gradients at k=L"] = (err, err < 1e-8)
        return out
    net = SeqClassifier(1, width, 5, model).double()
    x = torch.randn(batch, depth, 1, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 5, (batch,), generator=gen)
    net.zero_grad()
    net.step(x, y, algo="bptt")
    ref = flat_grad(net).clone()
    for algo in ("hbp", "fpi"):
        net.zero_grad(set_to_none=True)
        net.step(x, y, k=depth, algo=algo)
        err = _rel(flat_grad(net), ref)
        out[f"{algo} parameter gradients at k=T"] = (err, err < 1e-8)
    return out
