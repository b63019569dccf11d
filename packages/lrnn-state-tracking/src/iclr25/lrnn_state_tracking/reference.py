"""Step-by-step reference forms of the recurrences of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs
Through Negative Eigenvalues" (ICLR 2025, arXiv 2411.12537).

Every function here is a plain loop over time that follows the paper's equations literally; the fast forms in
`ops.py` are tested against them (outputs, final states and gradients).

- `diagonal_scan_reference`: eq. (1) with a diagonal transition, h_t = a_t ⊙ h_{t-1} + b_t.
- `delta_rule_recurrent`: the DeltaNet recurrence (§3, Table 1), S_t = (I - β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ.
- `selective_scan_reference`: the Mamba recurrence (§3, Table 1) with Ā = exp(ΔA) ([0,1]) or 2·exp(ΔA) - 1 ([-1,1]).
"""

from __future__ import annotations

import torch
from torch import Tensor


def diagonal_scan_reference(a: Tensor, b: Tensor, h0: Tensor | None = None) -> Tensor:
    """Loop over time: h_t = a_t * h_{t-1} + b_t (eq. 1, diagonal A); a, b (B, T, ...) -> h (B, T, ...)."""
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    h = torch.zeros_like(b[:, 0]) if h0 is None else h0
    out = []
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]  # eq. (1): H_t = A(x_t) H_{t-1} + B(x_t)
        out.append(h)
    return torch.stack(out, dim=1)


def delta_rule_recurrent(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    initial_state: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Loop over time of the delta rule; q, k (B, H, T, Dk), v (B, H, T, Dv), beta (B, H, T) -> (o, S_T).

    u_t = β_t (v_t - S_{t-1}ᵀ k_t); S_t = S_{t-1} + k_t u_tᵀ, which is S_t = (I - β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ;
    o_t = S_tᵀ q_t · scale (scale = Dk^{-1/2} by default). β ∈ (0, 2) gives the paper's [-1, 1] range.
    """
    B, H, T, Dk = k.shape
    Dv = v.shape[-1]
    scale = Dk**-0.5 if scale is None else scale
    S = q.new_zeros(B, H, Dk, Dv) if initial_state is None else initial_state
    out = []
    for t in range(T):
        k_t, v_t, b_t = k[:, :, t], v[:, :, t], beta[:, :, t, None]  # (B, H, Dk), (B, H, Dv), (B, H, 1)
        u_t = b_t * (v_t - torch.einsum("bhkv,bhk->bhv", S, k_t))  # error term, same β for erase and write
        S = S + k_t[..., :, None] * u_t[..., None, :]  # (B, H, Dk, Dv)
        out.append(torch.einsum("bhkv,bhk->bhv", S, q[:, :, t] * scale))
    return torch.stack(out, dim=2), S


def selective_scan_reference(
    x: Tensor,
    delta: Tensor,
    A: Tensor,
    B: Tensor,
    C: Tensor,
    D: Tensor | None = None,
    eig_range: str = "[0,1]",
) -> Tensor:
    """Loop over time of Mamba's selective scan; x, delta (B, T, E), A (E, N), B, C (B, T, N) -> y (B, T, E).

    h_t = Ā_t ⊙ h_{t-1} + Δ_t B_t x_t with Ā_t = exp(Δ_t A) on [0, 1] or 2·exp(Δ_t A) - 1 on [-1, 1]; y_t = C_tᵀ h_t + D x_t.
    """
    from iclr25.lrnn_state_tracking.ops import parse_eig_range

    negative = parse_eig_range(eig_range) == "[-1,1]"
    Bsz, T, E = x.shape
    h = x.new_zeros(Bsz, E, A.shape[1])
    ys = []
    for t in range(T):
        decay = torch.exp(delta[:, t, :, None] * A)  # (B, E, N)
        a_bar = 2 * decay - 1 if negative else decay  # paper §4: Ā ↦ 2Ā - 1 extends the range to [-1, 1]
        h = a_bar * h + delta[:, t, :, None] * B[:, t, None, :] * x[:, t, :, None]
        y = (h * C[:, t, None, :]).sum(-1)
        if D is not None:
            y = y + D * x[:, t]
        ys.append(y)
    return torch.stack(ys, dim=1)
