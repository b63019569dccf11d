"""Soft sort (spec 9.1-9.2): acceptance values, invariants, reference parity and gradcheck."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.dist_loss.reference import numpy_pipeline_soft_sort, reference_soft_sort
from iclr25.dist_loss.sorting import isotonic_decreasing, soft_sort
from iclr25.shared.device import requires_gpu

V = [5.3, 2.1, 6.2, 3.4, 2.5, 7.7, 1.05, 4.0]


@pytest.mark.parametrize(
    ("eps", "values", "vjp"),
    [
        (1.0, [1.075, 2.075, 2.5, 3.4, 4.3, 5.3, 6.3, 7.3], [6.5, 1.5, 6.5, 4, 3, 6.5, 1.5, 6.5]),
        (0.1, sorted(V), [6, 2, 7, 4, 3, 8, 1, 5]),
    ],
    ids=["eps1-pooled", "eps0.1-hard"],
)
def test_acceptance_values_and_vjp(eps: float, values: list[float], vjp: list[float]) -> None:
    v = torch.tensor(V, dtype=torch.float64, requires_grad=True)
    out = soft_sort(v, eps=eps)
    np.testing.assert_allclose(out.detach().numpy(), values, atol=1e-12)
    out.backward(torch.arange(1.0, 9.0, dtype=torch.float64))
    np.testing.assert_allclose(v.grad.numpy(), vjp, atol=1e-12)


def test_pooled_block_is_arithmetic_progression() -> None:
    out = soft_sort(torch.tensor([0.0, 10.0, 10.5, 30.0], dtype=torch.float64), eps=0.1)
    np.testing.assert_allclose(out.numpy(), [0, 10, 15.25, 25.25], atol=1e-12)


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0], ids=lambda e: f"eps{e}")
@pytest.mark.parametrize("n", [1, 5, 64], ids=lambda n: f"n{n}")
def test_invariants(n: int, eps: float) -> None:
    gen = torch.Generator().manual_seed(n)
    v = torch.randn(3, n, generator=gen, dtype=torch.float64) * 5
    out = soft_sort(v, eps=eps)
    assert torch.all(out[:, 1:] >= out[:, :-1] - 1e-12)
    torch.testing.assert_close(out.sum(-1), v.sum(-1), atol=1e-6, rtol=0)
    perm = torch.randperm(n, generator=gen)
    torch.testing.assert_close(soft_sort(v[:, perm], eps=eps), out)


@pytest.mark.parametrize("eps", [0.05, 0.5, 3.0], ids=lambda e: f"eps{e}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_matches_reference_outputs_and_gradients(eps: float, dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        v = (torch.randn(7, generator=gen) * 4).to(dtype).requires_grad_(True)
        g = torch.randn(7, generator=gen).to(dtype)
        fast = soft_sort(v, eps=eps)
        (grad_fast,) = torch.autograd.grad(fast, v, g)
        ref = reference_soft_sort(v, eps=eps)
        (grad_ref,) = torch.autograd.grad(ref, v, g)
        tol = 1e-4 if dtype == torch.float32 else 1e-10
        torch.testing.assert_close(fast, ref, atol=tol, rtol=tol)
        torch.testing.assert_close(grad_fast, grad_ref, atol=tol, rtol=tol)
        pipe = numpy_pipeline_soft_sort(v, eps=eps)
        (grad_pipe,) = torch.autograd.grad(pipe, v, g)
        torch.testing.assert_close(pipe, fast, atol=tol, rtol=tol)
        torch.testing.assert_close(grad_pipe, grad_fast, atol=tol, rtol=tol)


@pytest.mark.parametrize(
    ("values", "eps"),
    [([0.0, 9.0, 10.5, 30.0], 0.1), ([3.1, -2.0, 7.4, 0.3, 5.9], 0.1), ([0.3, 2.9, 1.1, 5.2], 1.0)],
    ids=["pooled", "hard", "mixed"],
)
def test_gradcheck(values: list[float], eps: float) -> None:
    v = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: soft_sort(t, eps=eps), (v,), eps=1e-6, atol=1e-6)


def test_descending_and_batched_shapes() -> None:
    v = torch.randn(2, 3, 6, dtype=torch.float64)
    out = soft_sort(v, eps=0.01, descending=True)
    assert out.shape == v.shape
    torch.testing.assert_close(out, torch.sort(v, dim=-1, descending=True).values)


def test_isotonic_is_non_increasing_and_optimal() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(size=50)
    u, ids = isotonic_decreasing(y)
    assert np.all(np.diff(u) <= 1e-12)
    for b in np.unique(ids):  # each block holds the mean of its entries
        np.testing.assert_allclose(u[ids == b], y[ids == b].mean())


@pytest.mark.parametrize("bad", [0.0, -1.0], ids=["zero", "negative"])
def test_bad_eps(bad: float) -> None:
    with pytest.raises(ValueError, match="eps must be > 0"):
        soft_sort(torch.ones(3), eps=bad)


def test_bad_input_types() -> None:
    with pytest.raises(ValueError, match="floating-point"):
        soft_sort(torch.arange(3))
    with pytest.raises(ValueError, match=r"torch\.Tensor"):
        soft_sort([1.0, 2.0])  # type: ignore[arg-type]


@pytest.mark.gpu
@requires_gpu
def test_cuda_matches_cpu() -> None:
    gen = torch.Generator().manual_seed(0)
    v = (torch.randn(4, 512, generator=gen) * 30).requires_grad_(True)
    g = torch.randn(4, 512, generator=gen)
    for eps in (0.1, 1.0):
        cpu = soft_sort(v, eps=eps)
        (grad_cpu,) = torch.autograd.grad(cpu, v, g)
        vc = v.detach().cuda().requires_grad_(True)
        gpu = soft_sort(vc, eps=eps)
        (grad_gpu,) = torch.autograd.grad(gpu, vc, g.cuda())
        torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-3, rtol=1e-5)
        torch.testing.assert_close(grad_gpu.cpu(), grad_cpu, atol=1e-5, rtol=1e-5)
