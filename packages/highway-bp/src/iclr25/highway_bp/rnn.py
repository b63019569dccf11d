"""Highway backpropagation through time for GRU and LSTM cells (Fagnou et al., ICLR 2025, arXiv 2501.17086, §4.1, App. C.3).

The "layer" index is time: `s_t = f_t(s_{t−1}) = r(s_{t−1}, g(s_{t−1}; θ, x_t))` with shared θ.
- GRU (`h' = u⊙h + (1−u)⊙n`, u the update gate): `g = [u, (1−u)⊙n]`, `r(h, z) = z₁⊙h + z₂`, K = diag(u_t).
- LSTM with state [c, h]: `g = [f, i⊙g̃, o⊙tanh(c')]`, `r = [z₁⊙c + z₂, z₃]`, K = diag([f_t, 0]).
The forward pass is a plain loop without graph; the backward recomputes g for all T·B rows at once, so every
VJP of Eq. 8 and the parameter VJP are single large batched calls (the source of the paper's RNN speed-ups,
Table 3). Parameter gradients are summed over cells; the input projection receives its gradient through each
cell's input cotangent. FPI is the K = 0 special case; BPTT is plain autograd through `forward`.
Parameters follow PyTorch's `nn.GRU` / `nn.LSTM` layout and initialisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from iclr25.highway_bp.highway import highway_iterate

CELLS = {"gru": 3, "lstm": 4}
RNN_ALGOS = ("bptt", "hbp", "fpi")


class HighwayRNN(nn.Module):
    """A single-layer GRU or LSTM whose backward can be BPTT, Highway-BP(k) or FPI(k)."""

    def __init__(self, input_size: int, hidden_size: int, cell: str = "gru") -> None:
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {', '.join(CELLS)}; got {cell!r}")
        if input_size < 1 or hidden_size < 1:
            raise ValueError(f"input_size and hidden_size must be >= 1, got {input_size}, {hidden_size}")
        self.cell, self.input_size, self.hidden_size = cell, input_size, hidden_size
        G, H = CELLS[cell], hidden_size
        self.weight_ih = nn.Parameter(torch.empty(G * H, input_size))
        self.weight_hh = nn.Parameter(torch.empty(G * H, H))
        self.bias_ih = nn.Parameter(torch.empty(G * H))
        self.bias_hh = nn.Parameter(torch.empty(G * H))
        bound = 1.0 / math.sqrt(H)  # PyTorch's RNN initialisation
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    @property
    def state_size(self) -> int:
        """Size of the recurrent state s (h for GRU, [c, h] for LSTM)."""
        return self.hidden_size * (1 if self.cell == "gru" else 2)

    def input_proj(self, x: Tensor) -> Tensor:
        """x_t W_ih^T + b_ih for all steps at once: (T, B, I) -> (T, B, G·H)."""
        return x @ self.weight_ih.T + self.bias_ih

    def output(self, s: Tensor) -> Tensor:
        """The hidden output h of a state s (..., S) -> (..., H)."""
        return s if self.cell == "gru" else s[..., self.hidden_size :]

    def parts(self, s: Tensor, xp: Tensor) -> Tensor:
        """z = g(s; θ, x): (P, ..., H) with P = 2 (GRU) or 3 (LSTM), batched over any leading dims."""
        H = self.hidden_size
        if self.cell == "gru":  # split/chunk (not slicing): their backward concatenates instead of zero-filling
            x_r, x_u, x_n = xp.chunk(3, dim=-1)
            w_r, w_u, w_n = self.weight_hh.chunk(3, dim=0)
            b_r, b_u, b_n = self.bias_hh.chunk(3)
            h_r, h_u, h_n = s @ w_r.T + b_r, s @ w_u.T + b_u, s @ w_n.T + b_n
            r = torch.sigmoid(x_r + h_r)
            u = torch.sigmoid(x_u + h_u)
            n = torch.tanh(x_n + r * h_n)
            return torch.stack([u, (1.0 - u) * n])  # g = [u, (1−u)⊙n]
        c, h = s.split(H, dim=-1)
        gates = xp + h @ self.weight_hh.T + self.bias_hh
        a_i, a_f, a_g, a_o = gates.chunk(4, dim=-1)
        i, f, gg, o = torch.sigmoid(a_i), torch.sigmoid(a_f), torch.tanh(a_g), torch.sigmoid(a_o)
        c_new = f * c + i * gg
        return torch.stack([f, i * gg, o * torch.tanh(c_new)])  # g = [f, i⊙g̃, new h]

    def combine(self, s: Tensor, z: Tensor) -> Tensor:
        """s' = r(s, z)."""
        parts = z.unbind(0)
        if self.cell == "gru":
            return parts[0] * s + parts[1]
        c = s[..., : self.hidden_size]
        return torch.cat([parts[0] * c + parts[1], parts[2]], dim=-1)

    def k_diag(self, s: Tensor, z: Tensor) -> Tensor:
        """K = ∂r/∂s (diagonal), shaped like s."""
        if self.cell == "gru":
            return z[0]
        return torch.cat([z[0], torch.zeros_like(z[0])], dim=-1)

    def drdz(self, w: Tensor, s: Tensor, z: Tensor) -> Tensor:
        """w · ∂r/∂z, shaped like z."""
        if self.cell == "gru":
            return torch.stack([w * s, w])
        H = self.hidden_size
        wc, wh = w[..., :H], w[..., H:]
        return torch.stack([wc * s[..., :H], wc, wh])

    @torch.no_grad()
    def gru_block_vjp(self, s: Tensor, xp: Tensor, fpi: bool = False) -> Callable[[Tensor], Tensor]:
        """Closed-form batched VJP through the GRU block (Eq. 8), precomputed once per step.

        With cotangents `w⊙s` for u and `w` for (1−u)⊙n, `v = [w⊙C, w⊙A, w⊙D] · W_hh` where
        A = (s − n)⊙u(1−u), Bn = (1−u)⊙(1−n²), C = Bn⊙(W_hn s + b_hn)⊙r(1−r), D = Bn⊙r: four products and one
        matmul per iteration. `fpi=True` adds the residual part `w⊙u` (the full cell Jacobian).
        """
        if self.cell != "gru":
            raise ValueError("gru_block_vjp needs the GRU cell")
        x_r, x_u, x_n = xp.chunk(3, dim=-1)
        h_r, h_u, h_n = (s @ self.weight_hh.T + self.bias_hh).chunk(3, dim=-1)
        r, u = torch.sigmoid(x_r + h_r), torch.sigmoid(x_u + h_u)
        n = torch.tanh(x_n + r * h_n)
        A = (s - n) * u * (1 - u)
        Bn = (1 - u) * (1 - n * n)
        C = Bn * h_n * r * (1 - r)
        D = Bn * r
        W = self.weight_hh.detach()

        def vjp(w: Tensor) -> Tensor:
            v = torch.cat([w * C, w * A, w * D], dim=-1) @ W
            return v + w * u if fpi else v

        return vjp

    def init_state(self, batch: int, like: Tensor) -> Tensor:
        """s_0 = 0."""
        return torch.zeros(batch, self.state_size, dtype=like.dtype, device=like.device)

    def run(self, xp: Tensor, s0: Tensor | None = None) -> Tensor:
        """All states s_0..s_T (T+1, B, S) from projected inputs xp (T, B, G·H), with autograd (BPTT)."""
        s = self.init_state(xp.shape[1], xp) if s0 is None else s0
        states = [s]
        for t in range(xp.shape[0]):
            s = self.combine(s, self.parts(s, xp[t]))
            states.append(s)
        return torch.stack(states)

    def run_fused(self, x: Tensor) -> Tensor:
        """States s_0..s_T from raw inputs x (T, B, I) with PyTorch's native GRU kernel (GRU only; same math as `run`)."""
        if self.cell != "gru":
            raise ValueError("run_fused supports the GRU cell only")
        h0 = self.init_state(x.shape[1], x)
        params = [self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh]
        out = torch.gru(x, h0[None], params, True, 1, 0.0, self.training, False, False)[0]  # (T, B, H)
        return torch.cat([h0[None], out])

    def lstm_fused(self, x: Tensor) -> Tensor:
        """Hidden outputs h_1..h_T (T, B, H) from raw inputs x with PyTorch's native LSTM kernel (s_0 = 0)."""
        if self.cell != "lstm":
            raise ValueError("lstm_fused needs the LSTM cell")
        h0 = torch.zeros(1, x.shape[1], self.hidden_size, dtype=x.dtype, device=x.device)
        params = [self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh]
        return torch.lstm(x, (h0, h0), params, True, 1, 0.0, self.training, False, False)[0]

    def forward(self, x: Tensor, s0: Tensor | None = None) -> Tensor:
        """Hidden outputs h_1..h_T (T, B, H) for inputs x (T, B, I); native kernels when s_0 = 0 (BPTT uses them)."""
        if s0 is None:
            return self.run_fused(x)[1:] if self.cell == "gru" else self.lstm_fused(x)
        return self.output(self.run(self.input_proj(x), s0)[1:])


def rnn_backward(
    rnn: HighwayRNN,
    xp: Tensor,
    states: Tensor,
    e: Tensor,
    k: int,
    algo: str = "hbp",
    parallel: bool | None = None,
    closed_form: bool = True,
) -> Tensor:
    """Highway-BP (or FPI) through time: returns w^k (T+1, B, S) and accumulates parameter `.grad`s.

    xp: (T, B, G·H) projected inputs with their graph; states: (T+1, B, S) forward states (values);
    e: (T+1, B, S) loss gradients at the states. `parallel`: Hillis–Steele scan (default on GPU) or the
    sequential one (default on CPU, where log-depth buys nothing and costs O(T log T) work).
    `closed_form`: GRU only, use `HighwayRNN.gru_block_vjp` for the iterations instead of autograd (same values).
    """
    if parallel is None:
        parallel = xp.is_cuda
    if algo not in ("hbp", "fpi"):
        raise ValueError(f"algo must be 'hbp' or 'fpi' here, got {algo!r}")
    prev = states[:-1].detach().requires_grad_(True)  # s_0..s_{T−1}: every cell's input   # (T, B, S)
    z = rnn.parts(prev, xp)  # all T·B cells in one batch   # (P, T, B, H)
    zd, pd = z.detach(), prev.detach()
    if algo == "hbp":
        mode, K = "diag", rnn.k_diag(pd, zd)  # K_t = diag(u_t) (GRU) / diag([f_t, 0]) (LSTM)
        out = z

        def cot(w_next: Tensor) -> Tensor:
            return rnn.drdz(w_next, pd, zd)

    else:  # FPI: K = 0, J = the full cell Jacobian
        mode, K = "zero", None
        out = rnn.combine(prev, z)

        def cot(w_next: Tensor) -> Tensor:
            return w_next

    def vjp(w_next: Tensor) -> Tensor:
        return torch.autograd.grad(out, prev, cot(w_next), retain_graph=True)[0]  # Eq. 8, one batched call

    if closed_form and rnn.cell == "gru" and k > 0:
        vjp = rnn.gru_block_vjp(pd, xp.detach(), fpi=(algo == "fpi"))

    w = highway_iterate(e, K, vjp, k, mode, parallel=parallel)
    out.backward(cot(w[1:]))  # parameter gradients with w^k, summed over cells (§4.2)
    return w


def rnn_step(
    rnn: HighwayRNN,
    x: Tensor,
    loss_fn: Callable[[Tensor], Tensor],
    k: int = 0,
    algo: str = "hbp",
) -> Tensor:
    """Forward + backward of `loss_fn(h_1..h_T)` with BPTT, Highway-BP(k) or FPI(k); accumulates `.grad`.

    BPTT uses PyTorch's native GRU/LSTM kernels; the forward pass of Highway-BP uses the native GRU kernel for GRU
    cells (the LSTM's needs every cell state c_t, which the native kernel does not return).
    x: (T, B, I) inputs with their graph (e.g. from an embedding, which then receives its gradient too).
    `loss_fn` maps the hidden outputs (T, B, H) to a scalar (it may use only the last step). Returns the loss.
    """
    if algo not in RNN_ALGOS:
        raise ValueError(f"algo must be one of {', '.join(RNN_ALGOS)}; got {algo!r}")
    if algo == "bptt":
        loss = loss_fn(rnn(x))
        loss.backward()
        return loss.detach()
    xp = rnn.input_proj(x)  # (T, B, G·H)
    with torch.no_grad():
        states = rnn.run_fused(x) if rnn.cell == "gru" else rnn.run(xp)  # (T+1, B, S)
    leaf = states[1:].clone().requires_grad_(True)
    loss = loss_fn(rnn.output(leaf))
    loss.backward()  # exact head gradient and e_t = ∂𝓛_t/∂s_t
    e = torch.cat([torch.zeros_like(states[:1]), leaf.grad])  # e_0 = 0
    rnn_backward(rnn, xp, states, e, k, algo=algo)
    return loss.detach()
