"""Fast (parallel-in-time) forms of the recurrences of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs
Through Negative Eigenvalues" (ICLR 2025, arXiv 2411.12537).

- `diagonal_scan(method="assoc")`: a Hillis–Steele associative scan on pairs (a, b) ↦ (a₂a₁, a₂b₁ + b₂), valid for
  negative a (log-space cumulative products, as used by Mamba-2/GLA chunking, are not: spec §3.7.3).
- `delta_rule_chunked`: the chunked WY/UT form of the delta rule (DeltaNet, Yang et al. 2024), which the paper uses
  unchanged for β ∈ (0, 2). Inside a chunk, (I + L) U = diag(β)(V - K S₀) with L = strictly_lower(diag(β) K Kᵀ).
- `delta_rule_fla`: the same by FLA's Triton kernel (optional, CUDA only; imported only when asked for).
- `selective_scan`: Mamba's scan with Ā = exp(ΔA) or 2·exp(ΔA) - 1 (paper §4), computed with `diagonal_scan`.

The step-by-step forms they are tested against live in `reference.py`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from iclr25.lrnn_state_tracking.config import DELTA_MODES, parse_eig_range  # the stdlib-only config module owns them

EIG_RANGES = ("[0,1]", "[-1,1]")


SCAN_METHODS = ("auto", "assoc", "chunk", "loop")


def diagonal_scan(
    a: Tensor, b: Tensor, h0: Tensor | None = None, method: str = "auto", chunk_size: int | None = None
) -> Tensor:
    """h_t = a_t * h_{t-1} + b_t along dim 1 (eq. 1, diagonal A); a, b (B, T, ...) -> h (B, T, ...); a may be < 0.

    method: "assoc" (Hillis–Steele scan, log-depth: best on GPUs), "chunk" (two-level blocked scan, O(√T) Python
    steps and O(T) work: best on CPUs), "loop" (the reference), "auto" (assoc on CUDA, chunk elsewhere).
    """
    if method not in SCAN_METHODS:
        raise ValueError(f"method must be one of {', '.join(SCAN_METHODS)}; got {method!r}")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if method == "auto":
        method = "assoc" if a.is_cuda else "chunk"
    if method == "loop":
        from iclr25.lrnn_state_tracking.reference import diagonal_scan_reference

        return diagonal_scan_reference(a, b, h0)
    if method == "chunk":
        return _blocked_scan(a, b, h0, chunk_size)
    if h0 is not None:  # fold the initial state into the first input: h_0 = a_0 h0 + b_0
        b = torch.cat([b[:, :1] + a[:, :1] * h0[:, None], b[:, 1:]], dim=1)
    T, step = a.shape[1], 1
    while step < T:  # Hillis–Steele: after the pass with offset `step`, (a_t, b_t) composes 2·step inputs
        b = torch.cat([b[:, :step], a[:, step:] * b[:, :-step] + b[:, step:]], dim=1)
        a = torch.cat([a[:, :step], a[:, step:] * a[:, :-step]], dim=1)
        step *= 2
    return b


def _blocked_scan(a: Tensor, b: Tensor, h0: Tensor | None, chunk_size: int | None) -> Tensor:
    """Two-level scan: local scans inside chunks (in parallel over chunks), then a scan over the chunk carries."""
    B, T = a.shape[:2]
    C = chunk_size or max(1, round(T**0.5))
    pad = (-T) % C
    if pad:  # a = 1, b = 0 continues the state unchanged; padded outputs are dropped
        a = torch.cat([a, a.new_ones((B, pad, *a.shape[2:]))], dim=1)
        b = torch.cat([b, b.new_zeros((B, pad, *b.shape[2:]))], dim=1)
    N = (T + pad) // C
    a = a.reshape(B, N, C, *a.shape[2:])
    b = b.reshape(B, N, C, *b.shape[2:])
    h_loc = [b[:, :, 0]]
    for t in range(1, C):  # local scans from a zero state, all chunks at once
        h_loc.append(a[:, :, t] * h_loc[-1] + b[:, :, t])
    h_local = torch.stack(h_loc, dim=2)  # (B, N, C, ...)
    a_prod = torch.cumprod(a, dim=2)  # Π_{r ≤ t} a_r inside each chunk (no division: safe for a ≤ 0)
    carry = torch.zeros_like(b[:, 0, 0]) if h0 is None else h0
    carries = []
    for n in range(N):  # state entering each chunk: h_in(n+1) = A_n h_in(n) + h_local(n, last)
        carries.append(carry)
        carry = a_prod[:, n, -1] * carry + h_local[:, n, -1]
    h = h_local + a_prod * torch.stack(carries, dim=1)[:, :, None]  # h_t = h_local_t + (Π a) h_in
    return h.reshape(B, N * C, *h.shape[3:])[:, :T]


def delta_rule_chunked(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    chunk_size: int = 64,
    initial_state: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Chunked delta rule, equal to `delta_rule_recurrent`; q, k (B, H, T, Dk), v (B, H, T, Dv), beta (B, H, T)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    B, H, T, Dk = k.shape
    Dv = v.shape[-1]
    scale = Dk**-0.5 if scale is None else scale
    C = min(chunk_size, T)
    pad = (-T) % C
    if pad:  # k = v = β = 0 leaves the state unchanged; the padded outputs are dropped
        q, k, v = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        beta = torch.nn.functional.pad(beta, (0, pad))
    N = (T + pad) // C
    q, k, v = (t.reshape(B, H, N, C, -1) for t in (q * scale, k, v))  # (B, H, N, C, D)
    beta = beta.reshape(B, H, N, C, 1)
    kb, vb = k * beta, v * beta
    eye = torch.eye(C, dtype=k.dtype, device=k.device)
    lower = (kb @ k.transpose(-1, -2)).tril(-1)  # L = strictly_lower(diag(β) K Kᵀ), (B, H, N, C, C)
    # Tm = (I + L)^{-1} applied to diag(β)K and diag(β)V: the WY/UT transform
    w = torch.linalg.solve_triangular(eye + lower, kb, upper=False, unitriangular=True)  # W = Tm diag(β) K
    u = torch.linalg.solve_triangular(eye + lower, vb, upper=False, unitriangular=True)  # U = Tm diag(β) V
    qk = (q @ k.transpose(-1, -2)).tril()  # causal scores incl. the diagonal, (B, H, N, C, C)
    S = q.new_zeros(B, H, Dk, Dv) if initial_state is None else initial_state
    outs = []
    for n in range(N):
        u_n = u[:, :, n] - w[:, :, n] @ S  # U' = U - W S₀: the true error terms of the chunk
        outs.append(q[:, :, n] @ S + qk[:, :, n] @ u_n)  # O = Q S₀ + tril(Q Kᵀ) U'
        S = S + k[:, :, n].transpose(-1, -2) @ u_n  # S ← S₀ + Kᵀ U'
    o = torch.stack(outs, dim=2).reshape(B, H, N * C, Dv)[:, :, :T]
    return o, S


def delta_rule_fla(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    initial_state: Tensor | None = None,
    scale: float | None = None,
    kernel: Any = None,
) -> tuple[Tensor, Tensor]:
    """The delta rule by FLA's Triton chunk kernel (optional `fla-core`, CUDA only), on our (B, H, T, D) layout.

    `fla.ops.delta_rule.chunk_delta_rule` (fla-core 0.5-0.6) takes (B, T, H, D) and refuses float32, so inputs go in
    as bfloat16 (its state accumulates in float32) and the output comes back in q's dtype. β ∈ (0, 2) is passed as
    it is: FLA's `allow_neg_eigval=True` is the same doubling of σ(·) before this kernel. `kernel` defaults to that
    function, imported only here; a stand-in with its signature (tests) skips the CUDA check.
    """
    if kernel is None:
        if not q.is_cuda:
            raise ValueError("delta-rule mode 'fla' (FLA's Triton kernel) needs CUDA tensors; use mode 'chunk'")
        try:
            from fla.ops.delta_rule import chunk_delta_rule as kernel
        except ImportError as e:
            raise ValueError(
                f"delta-rule mode 'fla' needs the optional package fla-core with triton ({e}); use mode 'chunk'"
            ) from None
    low = q.dtype if q.dtype in (torch.float16, torch.bfloat16) else torch.bfloat16
    q_, k_, v_ = (t.transpose(1, 2).to(low).contiguous() for t in (q, k, v))  # (B, T, H, D)
    beta_ = beta.transpose(1, 2).to(low).contiguous()  # (B, T, H)
    h0 = None if initial_state is None else initial_state.float()  # (B, H, Dk, Dv), as ours
    o, state = kernel(q_, k_, v_, beta_, scale=scale, initial_state=h0, output_final_state=True)
    return o.transpose(1, 2).to(q.dtype), state.to(q.dtype)


def delta_rule(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    mode: str = "chunk",
    chunk_size: int = 64,
    initial_state: Tensor | None = None,
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Dispatch to the chunked ("chunk"), step-by-step ("recurrent") or FLA-kernel ("fla", CUDA) delta rule."""
    if mode == "chunk":
        return delta_rule_chunked(q, k, v, beta, chunk_size, initial_state, scale)
    if mode == "recurrent":
        from iclr25.lrnn_state_tracking.reference import delta_rule_recurrent

        return delta_rule_recurrent(q, k, v, beta, initial_state, scale)
    if mode == "fla":
        return delta_rule_fla(q, k, v, beta, initial_state, scale)
    raise ValueError(f"mode must be one of {', '.join(DELTA_MODES)}; got {mode!r}")


def mamba_transition(delta: Tensor, A: Tensor, eig_range: str = "[0,1]") -> Tensor:
    """Ā = exp(Δ A) for [0,1], or 2·exp(Δ A) - 1 for [-1,1] (paper §4); delta (..., E), A (E, N) -> (..., E, N)."""
    decay = torch.exp(delta[..., None] * A)
    return 2 * decay - 1 if parse_eig_range(eig_range) == "[-1,1]" else decay


def selective_scan(
    x: Tensor,
    delta: Tensor,
    A: Tensor,
    B: Tensor,
    C: Tensor,
    D: Tensor | None = None,
    eig_range: str = "[0,1]",
    method: str = "auto",
) -> Tensor:
    """Mamba's selective scan; x, delta (B, T, E), A (E, N), B, C (B, T, N) -> y (B, T, E)."""
    if method == "loop":
        from iclr25.lrnn_state_tracking.reference import selective_scan_reference

        return selective_scan_reference(x, delta, A, B, C, D, eig_range)
    a_bar = mamba_transition(delta, A, eig_range)  # (B, T, E, N)
    bx = delta[..., None] * B[:, :, None, :] * x[..., None]  # Δ_t B_t x_t, (B, T, E, N)
    h = diagonal_scan(a_bar, bx, method=method)
    y = (h * C[:, :, None, :]).sum(-1)  # y_t = C_tᵀ h_t
    return y if D is None else y + D * x
