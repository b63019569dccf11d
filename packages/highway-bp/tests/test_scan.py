"""cumsumprod: sequential, Hillis–Steele and brute force agree (spec §9 check 1)."""

import pytest
import torch

from iclr25.highway_bp.reference import cumsumprod_bruteforce
from iclr25.highway_bp.scan import cumsumprod


def _transfer(mode: str, L: int, D: int, gen: torch.Generator):
    if mode == "identity" or mode == "zero":
        return None
    if mode == "scalar":
        return torch.rand(L, generator=gen, dtype=torch.float64) + 0.2
    if mode == "diag":
        return torch.rand(L, D, generator=gen, dtype=torch.float64) * 1.5
    return torch.randn(L, D, D, generator=gen, dtype=torch.float64) * 0.6  # dense, non-commuting


@pytest.mark.parametrize("L", [1, 2, 3, 7, 16])
@pytest.mark.parametrize("mode", ["identity", "zero", "scalar", "diag", "matrix"])
@pytest.mark.parametrize("parallel", [False, True], ids=["sequential", "hillis-steele"])
def test_cumsumprod_matches_bruteforce(L, mode, parallel):
    gen = torch.Generator().manual_seed(L)
    a = torch.randn(L, 4, generator=gen, dtype=torch.float64)
    M = _transfer(mode, L, 4, gen)
    expected = cumsumprod_bruteforce(a, M, mode)
    got = cumsumprod(a, M, mode, parallel=parallel)
    assert torch.allclose(got, expected, atol=1e-10, rtol=0)


def test_cumsumprod_batched_dims_and_scalar_number():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(9, 3, 5, generator=gen, dtype=torch.float64)  # (L, B, D)
    M = torch.randn(9, 5, 5, generator=gen, dtype=torch.float64) * 0.5
    seq = cumsumprod(a, M, "matrix")
    par = cumsumprod(a, M, "matrix", parallel=True)
    assert torch.allclose(seq, par, atol=1e-10)
    for b in range(3):
        assert torch.allclose(seq[:, b], cumsumprod_bruteforce(a[:, b], M, "matrix"), atol=1e-10)
    s = cumsumprod(a[:, 0], 0.5, "scalar", parallel=True)
    assert torch.allclose(s, cumsumprod_bruteforce(a[:, 0], 0.5, "scalar"), atol=1e-12)


def test_transfer_index_is_k_of_next_layer():
    # u_0 = a_0 + a_1 M_0 with M_0 = K_1: using the last transfer instead would give a different value.
    a = torch.tensor([[1.0], [1.0]], dtype=torch.float64)
    M = torch.tensor([[2.0], [3.0]], dtype=torch.float64)
    assert cumsumprod(a, M, "diag", parallel=True)[0].item() == pytest.approx(3.0)
    assert cumsumprod(a, M, "diag")[0].item() == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("mode", "M", "match"),
    [
        ("bogus", None, "mode must be one of"),
        ("diag", None, "needs the transfer"),
        ("diag", torch.ones(3, 2), "same shape"),
        ("matrix", torch.ones(4, 2, 3), r"shape \(L, D, D\)"),
    ],
)
def test_cumsumprod_bad_input(mode, M, match):
    with pytest.raises(ValueError, match=match):
        cumsumprod(torch.ones(4, 2), M, mode)
