"""Sequence backbones (B, L, d) -> (B, L, d): a config field of Seq2Exp (spec §3, §8).

- `BiMamba`: a pure-torch bidirectional selective scan (Caduceus-style: one weight-tied mixer run forwards and on the
  reversed sequence, outputs added, `bidirectional_strategy=add`), chunked so it is parallel within a chunk. It
  stands in for Caduceus/`mamba-ssm`, whose kernels are CUDA-only (spec §8). When `mamba_ssm` is installed its
  `Mamba` mixer can be used instead (`use_mamba_ssm=True`).
- `DilatedCNN` (quick): residual dilated convolutions (local motif features) followed by a bidirectional long-decay
  mixing layer (a linear time-invariant diagonal state-space layer, computed by FFT) so the pooled promoter window
  sees the whole window, as Caduceus's hidden states do.
- `BiGRU`: a bidirectional GRU.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def selective_scan(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    chunk: int = 64,
    max_elems: int = 2**25,
) -> torch.Tensor:
    """y_t = C_t . h_t with h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t, per channel (Mamba-2 form, scalar decay).

    x, dt: (b, L, c); A: (c,) negative; B, C: (b, L, n). Chunked: exact quadratic form within a chunk, the state
    carried across chunks. Equals `reference.selective_scan_reference`.
    """
    b, L, c = x.shape
    n = B.shape[-1]
    pad = (-L) % chunk
    if pad:
        x, dt = F.pad(x, (0, 0, 0, pad)), F.pad(dt, (0, 0, 0, pad))
        B, C = F.pad(B, (0, 0, 0, pad)), F.pad(C, (0, 0, 0, pad))
    T = chunk
    k = x.shape[1] // T
    loga = (dt * A).view(b, k, T, c)  # log decay per step (<= 0)
    u = (dt * x).view(b, k, T, c)
    Bc, Cc = B.view(b, k, T, n), C.view(b, k, T, n)
    s = loga.cumsum(2)  # (b, k, T, c)
    causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    G = torch.einsum("bktn,bkun->bktu", Cc, Bc)  # C_t . B_u
    # intra-chunk term, a few chunks at a time so the (b, chunks, T, T, c) decay tensor stays within max_elems
    group = max(1, max_elems // max(b * T * T * c, 1))
    parts = []
    for g0 in range(0, k, group):
        sg = s[:, g0 : g0 + group]
        diff = sg.unsqueeze(3) - sg.unsqueeze(2)  # (b, g, T(t), T(u), c): s_t - s_u
        decay = torch.where(causal[None, None, :, :, None], diff, torch.full_like(diff, -math.inf)).exp()
        parts.append(torch.einsum("bktuc,bktu,bkuc->bktc", decay, G[:, g0 : g0 + group], u[:, g0 : g0 + group]))
    y_intra = torch.cat(parts, 1)
    # state at the end of each chunk from its own inputs: sum_u exp(s_T - s_u) B_u u_u
    tail = (s[:, :, -1:, :] - s).exp()  # (b, k, T, c)
    states = torch.einsum("bkun,bkuc->bknc", Bc, tail * u)
    total = s[:, :, -1, :].exp()  # (b, k, c): decay over a whole chunk
    h = x.new_zeros(b, n, c)
    carried = []
    for j in range(k):  # sequential over chunks only
        carried.append(h)
        h = total[:, j, None, :] * h + states[:, j]
    H = torch.stack(carried, 1)  # (b, k, n, c): state entering chunk j
    y_inter = torch.einsum("bktn,bknc,bktc->bktc", Cc, H, s.exp())
    y = (y_intra + y_inter).reshape(b, k * T, c)
    return y[:, :L]


class MambaMixer(nn.Module):
    """One selective-scan mixer (in_proj, causal depthwise conv, selective scan, gate, out_proj)."""

    def __init__(self, d: int, d_state: int = 16, expand: int = 2, d_conv: int = 4, chunk: int = 64) -> None:
        super().__init__()
        inner = expand * d
        self.inner, self.d_state, self.chunk = inner, d_state, chunk
        self.in_proj = nn.Linear(d, 2 * inner)
        self.conv = nn.Conv1d(inner, inner, d_conv, groups=inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(inner, 1 + 2 * d_state)
        self.dt_proj = nn.Linear(1, inner)
        self.A_log = nn.Parameter(torch.log(torch.linspace(1.0, 16.0, inner)))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d)
        with torch.no_grad():  # dt initialised in [1e-3, 1e-1] as in Mamba
            dt = torch.exp(torch.rand(inner) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (B, L, d), causal."""
        L = x.shape[1]
        u, z = self.in_proj(x).chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :L].transpose(1, 2))
        proj = self.x_proj(u)
        dt = F.softplus(self.dt_proj(proj[..., :1]))
        B, C = proj[..., 1 : 1 + self.d_state], proj[..., 1 + self.d_state :]
        y = selective_scan(u, dt, -torch.exp(self.A_log), B, C, self.chunk) + self.D * u
        return self.out_proj(y * F.silu(z))


class BiMamba(nn.Module):
    """Bidirectional Mamba stack: per layer, a weight-tied mixer on x and on reversed x, added (Caduceus `add`)."""

    def __init__(self, d: int, n_layers: int = 4, chunk: int = 64, use_mamba_ssm: bool = False) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(n_layers))
        if use_mamba_ssm:
            try:
                from mamba_ssm import Mamba  # optional CUDA kernels
            except ImportError:
                raise ModuleNotFoundError(
                    "use_mamba_ssm=True needs the optional mamba-ssm kernels (CUDA): pip install mamba-ssm",
                    name="mamba_ssm",
                ) from None
        mixers = [Mamba(d_model=d) if use_mamba_ssm else MambaMixer(d, chunk=chunk) for _ in range(n_layers)]
        self.mixers = nn.ModuleList(mixers)
        self.final = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (B, L, d)."""
        for norm, mixer in zip(self.norms, self.mixers, strict=True):
            h = norm(x)
            x = x + mixer(h) + mixer(h.flip(1)).flip(1)
        return self.final(x)


class LongDecayMix(nn.Module):
    """Bidirectional per-channel exponential-decay mixing over the whole sequence (an LTI diagonal state-space layer
    run forwards and backwards), on `bin`-bp averages (a dense decay matrix per channel), broadcast back per base."""

    def __init__(self, d: int, bin: int = 16, min_len: float = 32.0, max_len: float = 4096.0) -> None:
        super().__init__()
        self.bin = bin
        self.log_len = nn.Parameter(torch.linspace(math.log(min_len), math.log(max_len), d))
        self.mix = nn.Linear(2 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (B, L, d): [causal decay sum, anti-causal decay sum] mixed back to d channels."""
        b, L, d = x.shape
        pad = (-L) % self.bin
        xp = F.pad(x, (0, 0, 0, pad)) if pad else x
        n = xp.shape[1] // self.bin
        pooled = xp.view(b, n, self.bin, d).mean(2)  # (b, n, d)
        t = torch.arange(n, device=x.device, dtype=x.dtype)
        lag = t[:, None] - t[None, :]  # i - j
        rate = self.bin / self.log_len.exp()  # per-channel decay per bin
        kern = torch.exp(-lag.abs()[None] * rate[:, None, None])  # (d, n, n)
        causal = (lag >= 0).to(x.dtype)
        fwd_k = kern * causal
        bwd_k = kern * causal.T
        fwd_k = fwd_k / fwd_k.sum(-1, keepdim=True)
        bwd_k = bwd_k / bwd_k.sum(-1, keepdim=True)
        fwd = torch.einsum("cij,bjc->bic", fwd_k, pooled)
        bwd = torch.einsum("cij,bjc->bic", bwd_k, pooled)
        out = self.mix(torch.cat([fwd, bwd], -1))  # (b, n, d)
        return out.repeat_interleave(self.bin, dim=1)[:, :L]


class ShiftConv(nn.Module):
    """Dilated 1-D convolution on (B, L, d) channels-last, as one Linear over the stacked shifted copies (fast on
    CPU for narrow channels, where Conv1d is not)."""

    def __init__(self, d_in: int, d_out: int, kernel: int = 3, dilation: int = 1) -> None:
        super().__init__()
        self.offsets = [(k - kernel // 2) * dilation for k in range(kernel)]
        self.proj = nn.Linear(kernel * d_in, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d_in) -> (B, L, d_out), zero padding at both ends."""
        L = x.shape[1]
        reach = max(abs(o) for o in self.offsets)
        xp = F.pad(x, (0, 0, reach, reach))
        return self.proj(torch.cat([xp[:, reach + o : reach + o + L] for o in self.offsets], -1))


class DilatedCNN(nn.Module):
    """Residual dilated CNN (kernel 3, dilation 2^i) + a final long-decay mixing layer (quick backbone)."""

    def __init__(self, d: int, n_layers: int = 4, kernel: int = 3, global_mix: bool = True) -> None:
        super().__init__()
        self.convs = nn.ModuleList(ShiftConv(d, d, kernel, 2**i) for i in range(n_layers))
        self.mixer = LongDecayMix(d) if global_mix else None
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (B, L, d)."""
        h = x
        for conv in self.convs:
            h = h + F.gelu(conv(h))
        if self.mixer is not None:
            h = h + F.gelu(self.mixer(h))
        return self.out(h)


class BiGRU(nn.Module):
    """Bidirectional GRU, d/2 units per direction."""

    def __init__(self, d: int, n_layers: int = 2) -> None:
        super().__init__()
        self.gru = nn.GRU(d, d // 2, num_layers=n_layers, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * (d // 2), d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (B, L, d)."""
        return self.out(self.gru(x)[0])


def make_backbone(name: str, d: int, n_layers: int, chunk: int = 64) -> nn.Module:
    """`cnn`, `gru` or `mamba` (the `mamba-ssm` kernels when installed and on CUDA, else the pure-torch scan)."""
    if name == "cnn":
        return DilatedCNN(d, n_layers)
    if name == "gru":
        return BiGRU(d, max(1, n_layers // 2))
    if name == "mamba":
        import importlib.util

        kernels = importlib.util.find_spec("mamba_ssm") is not None and torch.cuda.is_available()
        return BiMamba(d, n_layers, chunk=chunk, use_mamba_ssm=kernels)
    raise ValueError(f"backbone must be one of cnn, gru, mamba; got {name!r}")
