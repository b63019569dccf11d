"""Highway backpropagation for residual networks (Fagnou et al., ICLR 2025, arXiv 2501.17086).

Every layer is written `f_i(x) = r_i(x, g_i(x))` (§4.1): an expensive block g_i and a cheap residual
connection r_i, so that `∂f_i/∂x = J_i + K_i` with `K_i = ∂r_i/∂x` cheap (identity, scalar or diagonal).
Implemented here:

- the residual containers of Table 1 / App. C.3: pre-activation (K = I), the γ trick (K = (1−γ)I),
  post-ReLU (K = diag(1[x+z>0])) and post-LN (K = diag((1−γ)a(x)));
- `highway_iterate`, Theorem 2 / Eqs. 8–11: `w⁰ = CumSumProd(e, K)`,
  `w^{k+1}_i = w⁰_i + CumSumProd(v, K)_i` with `v_i = w^k_{i+1} J_{i+1}` computed for all blocks in one
  batched VJP, and `w^{k+1}_L = e_L`;
- parameter gradients `∂𝓛/∂θ_i ≈ w^k_i ∂f_i/∂θ_i` (§4.2): one more batched VJP with cotangent w^k
  (not the w^{k−1} that fed the k-th iteration);
- fixed-point iteration (FPI, Wang & Ragni 2021) as the K = 0 special case (`g = f`, `r = z`).

Deviation: none from the paper's equations; the paper gives no code. The autograd graph of every block is
cut at its input (`x_i = h_{i−1}.detach()`), so each VJP reaches only block i, as in the spec's pseudocode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from iclr25.highway_bp.scan import cumsumprod

ALGOS = ("bp", "hbp", "fpi")


# --------------------------------------------------------------------------------------------------
# Residual containers (Table 1, App. C.3)


class ResidualLayer(nn.Module):
    """A layer `f(x) = r(x, g(x))` with a cheap residual Jacobian `K = ∂r/∂x` (§4.1)."""

    k_mode: str = "identity"  # "identity" | "scalar" | "diag" | "zero"

    def g(self, x: Tensor) -> Tensor:
        """The expensive block g(x) -> z."""
        raise NotImplementedError

    def r(self, x: Tensor, z: Tensor) -> Tensor:
        """The cheap residual connection r(x, z) -> h."""
        raise NotImplementedError

    def k_value(self, x: Tensor, z: Tensor) -> Tensor | float | None:
        """K = ∂r/∂x: None (identity), a number (scalar) or a tensor shaped like x (diagonal)."""
        return None

    def drdz(self, w: Tensor, x: Tensor, z: Tensor) -> Tensor:
        """The block cotangent `w · ∂r/∂z` for an output cotangent w."""
        return w

    def forward(self, x: Tensor) -> Tensor:
        """f(x) = r(x, g(x))."""
        return self.r(x, self.g(x))


class PreActResidual(ResidualLayer):
    """Pre-activation residual `f(x) = x + block(x)`: g = block, r = x + z, K = I (Table 1)."""

    k_mode = "identity"

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block

    def g(self, x: Tensor) -> Tensor:
        """z = block(x)."""
        return self.block(x)

    def r(self, x: Tensor, z: Tensor) -> Tensor:
        """h = x + z."""
        return x + z


class ScaledResidual(ResidualLayer):
    """The γ trick (§5.2, GPT-2): `g = block(x) + γx`, `r = (1−γ)x + z`, so K = (1−γ)I; f is unchanged.

    γ = 0 is the plain pre-activation split; γ = 1 gives K = 0, i.e. fixed-point iteration.
    """

    k_mode = "scalar"

    def __init__(self, block: nn.Module, gamma: float = 0.2) -> None:
        super().__init__()
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.block, self.gamma = block, float(gamma)

    def g(self, x: Tensor) -> Tensor:
        """z = block(x) + γx."""
        return self.block(x) + self.gamma * x

    def r(self, x: Tensor, z: Tensor) -> Tensor:
        """h = (1−γ)x + z."""
        return (1.0 - self.gamma) * x + z

    def k_value(self, x: Tensor, z: Tensor) -> float:
        """K = (1−γ)I."""
        return 1.0 - self.gamma


class PostReLUResidual(ResidualLayer):
    """Original (post-ReLU) ResNet block `f(x) = ReLU(x + block(x))`: K = ∂r/∂z = diag(1[x+z>0]) (Table 1)."""

    k_mode = "diag"

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block

    def g(self, x: Tensor) -> Tensor:
        """z = block(x)."""
        return self.block(x)

    def r(self, x: Tensor, z: Tensor) -> Tensor:
        """h = ReLU(x + z)."""
        return torch.relu(x + z)

    def k_value(self, x: Tensor, z: Tensor) -> Tensor:
        """K = diag(1[x + z > 0])."""
        return (x + z > 0).to(x.dtype)

    def drdz(self, w: Tensor, x: Tensor, z: Tensor) -> Tensor:
        """w · diag(1[x + z > 0])."""
        return w * (x + z > 0).to(w.dtype)


class PostLNResidual(ResidualLayer):
    """Post-LN Transformer sub-layer `f(x) = LN(x + block(x))` over the last axis (App. C.3, RoBERTa).

    `LN(y) = x⊙a + b` with `a = α/σ(y)`, `b = (block(x) − μ(y))⊙α/σ(y) + β` (μ, σ belong to g);
    `g = [(1−γ)a, b + γ x⊙a]`, `r(x, z) = x⊙z₁ + z₂`, so K = diag((1−γ)a). Paper default γ = 0.8.
    """

    k_mode = "diag"

    def __init__(self, block: nn.Module, dim: int, gamma: float = 0.8, eps: float = 1e-5) -> None:
        super().__init__()
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.block, self.gamma, self.eps = block, float(gamma), eps
        self.weight = nn.Parameter(torch.ones(dim))  # α
        self.bias = nn.Parameter(torch.zeros(dim))  # β

    def g(self, x: Tensor) -> Tensor:
        """z = stack([(1−γ)a, b + γ x⊙a]) along a new leading axis."""
        blk = self.block(x)
        y = x + blk
        mu = y.mean(-1, keepdim=True)
        sigma = torch.sqrt(y.var(-1, unbiased=False, keepdim=True) + self.eps)
        a = self.weight / sigma
        b = (blk - mu) * a + self.bias
        return torch.stack([(1.0 - self.gamma) * a, b + self.gamma * x * a])

    def r(self, x: Tensor, z: Tensor) -> Tensor:
        """h = x⊙z₁ + z₂."""
        return x * z[0] + z[1]

    def k_value(self, x: Tensor, z: Tensor) -> Tensor:
        """K = diag(z₁) = diag((1−γ)a)."""
        return z[0]

    def drdz(self, w: Tensor, x: Tensor, z: Tensor) -> Tensor:
        """w · ∂r/∂z = [w⊙x, w]."""
        return torch.stack([w * x, w])


class HighwayStack(nn.Module):
    """`head(f_L ∘ ⋯ ∘ f_1(stem(x)))`: a residual network whose layers are `ResidualLayer`s."""

    def __init__(self, layers: Sequence[ResidualLayer], stem: nn.Module | None = None, head: nn.Module | None = None):
        super().__init__()
        if len(layers) == 0:
            raise ValueError("HighwayStack needs at least one residual layer")
        for layer in layers:
            if not isinstance(layer, ResidualLayer):
                raise ValueError(f"every layer must be a ResidualLayer, got {type(layer).__name__}")
        self.layers = nn.ModuleList(layers)
        self.stem = stem if stem is not None else nn.Identity()
        self.head = head if head is not None else nn.Identity()

    @property
    def depth(self) -> int:
        """L, the number of residual layers."""
        return len(self.layers)

    def trunk(self, h: Tensor) -> Tensor:
        """h_L from h_0."""
        for layer in self.layers:
            h = layer(h)
        return h

    def forward(self, x: Tensor) -> Tensor:
        """Plain forward pass (the same function whichever backward is used)."""
        return self.head(self.trunk(self.stem(x)))


# --------------------------------------------------------------------------------------------------
# The iteration (Theorem 2, Eqs. 8–11)


def _pad_transfer(K: Tensor | None) -> Tensor | None:
    """Append one unused transfer so that the scan covers positions 0..L (for w⁰)."""
    return None if K is None else torch.cat([K, K[-1:]])


def highway_iterate(
    e: Tensor,
    K: Tensor | None,
    vjp: Callable[[Tensor], Tensor],
    k: int,
    mode: str = "identity",
    parallel: bool = True,
) -> Tensor:
    """Return w^k (L+1, ...): Highway-BP's estimate of ∂𝓛/∂h_i for i = 0..L (Theorem 2).

    e: (L+1, ...) direct loss gradients ∂𝓛_i/∂h_i (zeros where there is no loss). K: (L, ...) the residual
    transfers K_1..K_L in `mode` ("identity", "zero", "scalar", "diag", "matrix"). vjp: maps w_{1..L} (L, ...)
    to v_{0..L−1} with v_i = w_{i+1} J_{i+1} (all blocks at once).
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    L = e.shape[0] - 1
    if L < 1:
        raise ValueError("e must hold gradients for h_0..h_L with L >= 1")
    w0 = cumsumprod(e, _pad_transfer(K), mode, parallel=parallel)  # w⁰_i = e_i + w⁰_{i+1} K_{i+1}
    w = w0
    for _ in range(min(k, L)):  # beyond k = L nothing changes (Theorem 2: w^L is exact)
        v = vjp(w[1:])  # Eq. 8: v_i = w^k_{i+1} J_{i+1}, one batched VJP   # (L, ...)
        u = cumsumprod(v, K, mode, parallel=parallel)  # Eq. 9–10: u_i = v_i + u_{i+1} K_{i+1}
        w = torch.cat([w0[:L] + u, e[L:]])  # Eq. 11: w^{k+1}_i = w⁰_i + u_i, w^{k+1}_L = e_L
    return w


@dataclass
class StackCache:
    """Forward activations of a `HighwayStack`, with each block's graph cut at its input."""

    h0: Tensor  # stem output (graph to the stem's parameters)
    xs: list[Tensor]  # x_i = h_{i−1}, detached leaves requiring grad
    zs: list[Tensor]  # z_i = g_i(x_i), graph to block i only
    hs: list[Tensor]  # h_i = r_i(x_i, z_i), graph to block i only (used by FPI)
    out: Tensor  # h_L, a detached leaf requiring grad (input of the head)


def stack_forward(model: HighwayStack, x: Tensor) -> StackCache:
    """Run the trunk layer by layer, keeping each layer's local graph (spec §3 pseudocode)."""
    h0 = model.stem(x)
    h = h0.detach()
    xs, zs, hs = [], [], []
    for layer in model.layers:
        xi = h.detach().requires_grad_(True)
        zi = layer.g(xi)
        hi = layer.r(xi, zi)
        xs.append(xi)
        zs.append(zi)
        hs.append(hi)
        h = hi
    return StackCache(h0=h0, xs=xs, zs=zs, hs=hs, out=h.detach().requires_grad_(True))


def _stack_transfers(layers: Sequence[ResidualLayer], cache: StackCache) -> tuple[str, Tensor | None]:
    """K_1..K_L stacked in the cheapest common mode (identity ⊂ scalar ⊂ diag)."""
    modes = {layer.k_mode for layer in layers}
    values = [layer.k_value(x.detach(), z.detach()) for layer, x, z in zip(layers, cache.xs, cache.zs, strict=True)]
    ref = cache.xs[0]
    if modes == {"identity"}:
        return "identity", None
    if modes <= {"identity", "scalar"}:
        scalars = [1.0 if v is None else float(v) for v in values]
        return "scalar", torch.tensor(scalars, dtype=ref.dtype, device=ref.device)
    full = []
    for v in values:
        if v is None:
            full.append(torch.ones_like(ref))
        elif isinstance(v, Tensor):
            full.append(v.expand_as(ref))
        else:
            full.append(torch.full_like(ref, float(v)))
    return "diag", torch.stack(full)


def highway_backward(
    model: HighwayStack,
    cache: StackCache,
    e: Tensor,
    k: int,
    algo: str = "hbp",
    parallel: bool = True,
) -> Tensor:
    """Highway-BP (or FPI) backward over a cached forward: returns w^k and accumulates parameter `.grad`s.

    e: (L+1, ...) loss gradients at h_0..h_L. The head is not touched (its gradient is exact, from 𝓛).
    """
    if algo not in ("hbp", "fpi"):
        raise ValueError(f"algo must be 'hbp' or 'fpi' here, got {algo!r}")
    layers = list(model.layers)
    xs, zs = cache.xs, cache.zs
    if algo == "hbp":
        mode, K = _stack_transfers(layers, cache)
        outs = zs

        def cotangents(w_next: Tensor) -> list[Tensor]:
            return [
                layer.drdz(w_next[i], xs[i].detach(), zs[i].detach()) for i, layer in enumerate(layers)
            ]  # w_{i+1} ∂r_{i+1}/∂z

    else:  # FPI: g = f, r = z, K = 0 (§5.3)
        mode, K = "zero", None
        outs = cache.hs

        def cotangents(w_next: Tensor) -> list[Tensor]:
            return list(w_next.unbind(0))

    def vjp(w_next: Tensor) -> Tensor:
        grads = torch.autograd.grad(outs, xs, cotangents(w_next), retain_graph=True, allow_unused=True)
        return torch.stack([torch.zeros_like(x) if g is None else g for g, x in zip(grads, xs, strict=True)])

    w = highway_iterate(e, K, vjp, k, mode, parallel=parallel)
    # §4.2: parameter gradients with the final estimate w^k (one more batched VJP)
    cots = cotangents(w[1:])
    pairs = [(o, c) for o, c in zip(outs, cots, strict=True) if o.requires_grad]
    if pairs:
        torch.autograd.backward([o for o, _ in pairs], [c for _, c in pairs])
    if cache.h0.requires_grad:
        cache.h0.backward(w[0])  # the stem gets w^k_0
    return w


def highway_step(
    model: HighwayStack,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    x: Tensor,
    y: Tensor,
    k: int,
    algo: str = "hbp",
    parallel: bool = True,
) -> Tensor:
    """One forward + backward with `algo` ("bp" exact, "hbp" Highway-BP(k), "fpi" FPI(k)); accumulates `.grad`.

    Optimizer-agnostic: call `optimizer.zero_grad()` before and `optimizer.step()` after. Returns the loss.
    """
    if algo not in ALGOS:
        raise ValueError(f"algo must be one of {', '.join(ALGOS)}; got {algo!r}")
    if algo == "bp":
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss.detach()
    cache = stack_forward(model, x)
    loss = loss_fn(model.head(cache.out), y)
    loss.backward()  # exact head gradient and e_L = ∂𝓛/∂h_L
    L = model.depth
    e = torch.zeros((L + 1, *cache.out.shape), dtype=cache.out.dtype, device=cache.out.device)
    e[L] = cache.out.grad
    highway_backward(model, cache, e, k, algo=algo, parallel=parallel)
    return loss.detach()


def flat_grad(model: nn.Module) -> Tensor:
    """All parameter gradients of `model` as one vector (zeros where a gradient is missing)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in model.parameters()])


def gradient_cosine(
    model: HighwayStack,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    x: Tensor,
    y: Tensor,
    ks: Sequence[int],
    algo: str = "hbp",
) -> dict[int, float]:
    """Cosine between the Highway-BP(k) (or FPI(k)) parameter gradient and the exact one, for each k."""
    model.zero_grad(set_to_none=True)
    highway_step(model, loss_fn, x, y, 0, algo="bp")
    exact = flat_grad(model).clone()
    out: dict[int, float] = {}
    for k in ks:
        model.zero_grad(set_to_none=True)
        highway_step(model, loss_fn, x, y, k, algo=algo)
        est = flat_grad(model)
        out[int(k)] = float(torch.nn.functional.cosine_similarity(est, exact, dim=0))
    model.zero_grad(set_to_none=True)
    return out
