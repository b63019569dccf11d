"""Highway-BP on residual networks: Theorems 1 and 2, the γ trick, FPI (spec §9 checks 2–4)."""

import itertools

import pytest
import torch
from torch import nn

from iclr25.highway_bp.highway import (
    HighwayStack,
    PostLNResidual,
    PreActResidual,
    ScaledResidual,
    flat_grad,
    gradient_cosine,
    highway_backward,
    highway_iterate,
    highway_step,
    stack_forward,
)
from iclr25.highway_bp.reference import exact_backprop_matrices, path_sum_bruteforce

CE = nn.functional.cross_entropy


def _losses(model, cache, y, intermediate: bool):
    """Total loss = CE at the end (+ linear losses on every h_i); returns (e, exact ∂𝓛/∂h_i, total loss)."""
    L = model.depth
    gen = torch.Generator().manual_seed(7)
    coefs = [torch.randn(cache.out.shape[-1], generator=gen, dtype=torch.float64) for _ in range(L + 1)]

    def total(hs):  # hs: h_0..h_L
        loss = CE(model.head(hs[-1]), y)
        if intermediate:
            loss = loss + sum((torch.tanh(h) @ c).sum() for h, c in zip(hs[:-1], coefs, strict=False))
        return loss

    leaves = [cache.h0.detach().requires_grad_(True)] + [h.detach().requires_grad_(True) for h in cache.hs]
    grads = torch.autograd.grad(total(leaves), leaves, allow_unused=True)
    e = torch.stack([torch.zeros_like(h) if g is None else g for g, h in zip(grads, leaves, strict=True)])
    # exact ∂𝓛/∂h_i through the whole network
    h = cache.h0.detach().requires_grad_(True)
    hs = [h]
    for layer in model.layers:
        hs.append(layer(hs[-1]))
    exact = torch.stack(torch.autograd.grad(total(hs), hs))
    return e, exact, total


@pytest.mark.parametrize("kind", ["preact", "scaled", "postrelu", "postln"])
@pytest.mark.parametrize("intermediate", [False, True], ids=["final-loss", "intermediate-losses"])
def test_theorem2_exact_rows(stack_factory, batch, kind, intermediate):
    x, y = batch
    L = 7
    model = stack_factory(kind, L)
    for k in range(L + 1):
        cache = stack_forward(model, x)
        e, exact, _ = _losses(model, cache, y, intermediate)
        w = highway_backward(model, cache, e, k)
        model.zero_grad(set_to_none=True)
        assert torch.equal(w[L], e[L])
        for i in range(L + 1):
            rel = (w[i] - exact[i]).norm() / exact[i].norm()
            if i >= L - k:
                assert rel < 1e-10, (k, i, float(rel))
            else:
                assert rel > 1e-6, (k, i, float(rel))


@pytest.mark.parametrize("kind", ["preact", "scaled", "postrelu", "postln"])
@pytest.mark.parametrize("algo", ["hbp", "fpi"])
def test_parameter_gradients_exact_at_k_equal_L(stack_factory, batch, kind, algo):
    x, y = batch
    model = stack_factory(kind, 6)
    model.zero_grad()
    CE(model(x), y).backward()
    exact = flat_grad(model).clone()
    for k in (6, 9):
        model.zero_grad(set_to_none=True)
        highway_step(model, CE, x, y, k, algo=algo)
        assert (flat_grad(model) - exact).norm() / exact.norm() < 1e-8
    model.zero_grad(set_to_none=True)
    highway_step(model, CE, x, y, 2, algo=algo)
    assert (flat_grad(model) - exact).norm() / exact.norm() > 1e-6


def test_k0_parameter_gradient_is_vjp_with_final_cotangent(stack_factory, batch):
    """K = I, final loss: block i's k = 0 gradient is VJP(g_i at h_{i−1}, e_L) (uses w^k, not w^{k−1})."""
    x, y = batch
    model = stack_factory("preact", 5)
    cache = stack_forward(model, x)
    loss = CE(model.head(cache.out), y)
    (e_L,) = torch.autograd.grad(loss, cache.out)
    expected = []
    for layer, xi in zip(model.layers, cache.xs, strict=True):
        params = list(layer.parameters())
        expected += [g.reshape(-1) for g in torch.autograd.grad(layer.g(xi.detach()), params, e_L)]
    model.zero_grad(set_to_none=True)
    highway_step(model, CE, x, y, 0)
    got = torch.cat([p.grad.reshape(-1) for layer in model.layers for p in layer.parameters()])
    assert torch.allclose(got, torch.cat(expected), atol=1e-12)


def test_theorem1_random_matrices():
    """w^k − w^{k−1} is the sum over the paths with exactly k J-factors (random dense J, K)."""
    gen = torch.Generator().manual_seed(3)
    L, D = 5, 3
    J = torch.randn(L, D, D, generator=gen, dtype=torch.float64) * 0.7
    K = torch.randn(L, D, D, generator=gen, dtype=torch.float64) * 0.7
    e = torch.randn(L + 1, D, generator=gen, dtype=torch.float64)
    paths = path_sum_bruteforce(J, K, e, L)
    prev = torch.zeros_like(e)
    for k in range(L + 1):
        for parallel in (False, True):
            w = highway_iterate(e, K, lambda wn: torch.einsum("ld,lde->le", wn, J), k, "matrix", parallel)
            assert torch.allclose(w - prev, paths[k], atol=1e-10)
        prev = w
    assert torch.allclose(w, exact_backprop_matrices(J, K, e), atol=1e-10)


@pytest.mark.parametrize("kind", ["preact", "postrelu", "postln"])
def test_theorem1_on_a_network(stack_factory, kind):
    """Path sums from the network's explicit Jacobians J_m, K_m match Highway-BP's increments (L ≤ 6)."""
    L, d = 4, 3
    model = stack_factory(kind, L, d=d)
    x = torch.randn(1, 3, dtype=torch.float64)
    y = torch.tensor([1])
    cache = stack_forward(model, x)
    Js, Ks = [], []
    for layer, xi, zi in zip(model.layers, cache.xs, cache.zs, strict=True):
        x0, z0 = xi.detach()[0], zi.detach()
        dgdx = torch.autograd.functional.jacobian(lambda v, layer=layer: layer.g(v[None]), x0)  # (z..., d)
        drdz = torch.autograd.functional.jacobian(lambda z, layer=layer, x0=x0: layer.r(x0[None], z)[0], z0)
        drdx = torch.autograd.functional.jacobian(lambda v, layer=layer, z0=z0: layer.r(v[None], z0)[0], x0)
        jac = drdz.reshape(d, -1) @ dgdx.reshape(-1, d)  # ∂h/∂x through the block
        Js.append(jac)  # row-vector convention: w ↦ w J
        Ks.append(drdx)
    J, K = torch.stack(Js), torch.stack(Ks)
    loss = CE(model.head(cache.out), y)
    e = torch.zeros(L + 1, d, dtype=torch.float64)
    e[L] = torch.autograd.grad(loss, cache.out)[0][0]
    paths = path_sum_bruteforce(J, K, e, L)
    prev = torch.zeros_like(e)
    for k in range(L + 1):
        w = highway_backward(model, stack_forward(model, x), e[:, None, :], k)[:, 0]
        assert torch.allclose(w - prev, paths[k], atol=1e-10), k
        prev = w


def test_gamma_trick(stack_factory, batch):
    """k = L does not depend on γ, k < L does, and γ = 1 is exactly FPI."""
    x, y = batch
    L = 5
    base = stack_factory("preact", L)

    def with_gamma(gamma):
        layers = [ScaledResidual(layer.block, gamma) for layer in base.layers]
        return HighwayStack(layers, stem=base.stem, head=base.head)

    def grad(model, k, algo="hbp"):
        model.zero_grad(set_to_none=True)
        highway_step(model, CE, x, y, k, algo=algo)
        return flat_grad(model).clone()

    exact = [grad(with_gamma(g), L) for g in (0.0, 0.3, 0.8)]
    assert all(torch.allclose(exact[0], ex, atol=1e-12) for ex in exact[1:])
    approx = [grad(with_gamma(g), 1) for g in (0.0, 0.3, 0.8)]
    for a, b in itertools.combinations(approx, 2):
        assert (a - b).norm() > 1e-6 * a.norm()
    for k in range(L + 1):
        assert torch.allclose(grad(with_gamma(1.0), k), grad(base, k, "fpi"), atol=1e-12)


def test_post_ln_layer_is_layernorm_of_residual_sum(stack_factory):
    model = stack_factory("postln", 1)
    layer = model.layers[0]
    assert isinstance(layer, PostLNResidual)
    x = torch.randn(4, 5, dtype=torch.float64)
    ref = nn.functional.layer_norm(x + layer.block(x), (5,), layer.weight, layer.bias, eps=layer.eps)
    assert torch.allclose(layer(x), ref, atol=1e-12)


def test_drdz_matches_autograd(stack_factory):
    """Each container's explicit w·∂r/∂z and K equal autograd's."""
    x = torch.randn(4, 5, dtype=torch.float64)
    w = torch.randn(4, 5, dtype=torch.float64)
    for kind in ("preact", "scaled", "postrelu", "postln"):
        layer = stack_factory(kind, 1).layers[0]
        z = layer.g(x).detach().requires_grad_(True)
        xx = x.clone().requires_grad_(True)
        gz, gx = torch.autograd.grad(layer.r(xx, z), (z, xx), w)
        assert torch.allclose(layer.drdz(w, x, z.detach()), gz, atol=1e-12), kind
        K = layer.k_value(x, z.detach())
        wk = w if K is None else w * K
        assert torch.allclose(wk, gx, atol=1e-12), kind


def test_gradient_cosine_grows_to_one(stack_factory, batch):
    x, y = batch
    model = stack_factory("preact", 6)
    cos = gradient_cosine(model, CE, x, y, [0, 2, 6])
    assert cos[0] < cos[2] < 1.0 + 1e-12
    assert cos[6] == pytest.approx(1.0, abs=1e-10)
    assert all(p.grad is None for p in model.parameters())


def test_bad_input(stack_factory, batch):
    x, y = batch
    model = stack_factory("preact", 2)
    with pytest.raises(ValueError, match="algo must be one of"):
        highway_step(model, CE, x, y, 1, algo="sgd")
    with pytest.raises(ValueError, match="k must be >= 0"):
        highway_step(model, CE, x, y, -1)
    with pytest.raises(ValueError, match="gamma must be in"):
        ScaledResidual(nn.Identity(), 1.5)
    with pytest.raises(ValueError, match="ResidualLayer"):
        HighwayStack([nn.Linear(2, 2)])
    with pytest.raises(ValueError, match="at least one"):
        HighwayStack([])
    assert isinstance(PreActResidual(nn.Identity())(torch.ones(1)), torch.Tensor)


class _SelfAttention(nn.Module):
    """Pre-LN self-attention sub-layer Attn(LN(x)) on (B, T, D)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, num_heads=2, batch_first=True)

    def forward(self, x):
        h = self.ln(x)
        return self.attn(h, h, h, need_weights=False)[0]


def _conv_block(c: int) -> nn.Module:
    return nn.Sequential(nn.GroupNorm(1, c), nn.Tanh(), nn.Conv2d(c, c, 3, padding=1))


@pytest.mark.parametrize("arch", ["cnn-preact", "cnn-postrelu", "transformer-gamma"])
def test_other_architectures_exact_at_L_and_rows(arch):
    torch.manual_seed(0)
    if arch.startswith("cnn"):
        from iclr25.highway_bp.highway import PostReLUResidual

        wrap = PreActResidual if arch == "cnn-preact" else PostReLUResidual
        layers = [wrap(_conv_block(3)) for _ in range(4)]
        head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 5 * 5, 4))
        x = torch.randn(2, 3, 5, 5, dtype=torch.float64)
    else:  # pre-LN Transformer, attention and FFN as separate layers, γ = 0.2 (§5.2)
        d = 4
        ffn = [nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 8), nn.GELU(), nn.Linear(8, d)) for _ in range(2)]
        layers = [
            ScaledResidual(m, 0.2)
            for pair in zip([_SelfAttention(d) for _ in range(2)], ffn, strict=True)
            for m in pair
        ]
        head = nn.Sequential(nn.Flatten(), nn.Linear(3 * d, 4))
        x = torch.randn(2, 3, d, dtype=torch.float64)
    model = HighwayStack(layers, head=head).double()
    y = torch.tensor([0, 3])
    L = model.depth
    model.zero_grad()
    CE(model(x), y).backward()
    exact = flat_grad(model).clone()
    for k, close in ((1, False), (L, True)):
        model.zero_grad(set_to_none=True)
        highway_step(model, CE, x, y, k)
        rel = float((flat_grad(model) - exact).norm() / exact.norm())
        assert (rel < 1e-8) if close else (rel > 1e-6), (k, rel)
    cache = stack_forward(model, x)
    e = torch.zeros(L + 1, *cache.out.shape, dtype=torch.float64)
    e[L] = torch.autograd.grad(CE(model.head(cache.out), y), cache.out)[0]
    h = cache.h0.detach().requires_grad_(True)
    hs = [h]
    for layer in model.layers:
        hs.append(layer(hs[-1]))
    true = torch.autograd.grad(CE(model.head(hs[-1]), y), hs)
    w = highway_backward(model, cache, e, 2)
    for i in range(L - 2, L + 1):
        assert torch.allclose(w[i], true[i], atol=1e-10)
