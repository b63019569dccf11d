"""Models of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues" (ICLR 2025,
arXiv 2411.12537), with the paper's eigenvalue-range switch.

- `DiagonalLRNN` / `Figure1Model`: the diagonal LRNN of the paper's Figure 1, A(x) = Diag(sigmoid(10(W_a x + b_a)))
  on [0, 1] or Diag(tanh(10(W_a x + b_a))) on [-1, 1]; B(x) = Diag(W_b x + b_b) x (eq. 1).
- `MambaLayer`: Mamba-1 mixer, Ā = exp(ΔA) on [0, 1] or 2·exp(ΔA) - 1 on [-1, 1] (§4, "Mamba"); nothing else changes.
- `DeltaNetLayer`: DeltaNet mixer, A = I - β k kᵀ with β = σ(w_βᵀx) on [0, 1] or 2σ(w_βᵀx) on [-1, 1] (§4, "DeltaNet");
  the same β scales the write term β k vᵀ. Keys are L2-normalised so the eigenvalue 1 - β‖k‖² stays in (-1, 1].
- `FullMatrixLRNN`: dense, unconstrained A(x) and B(x) = reshape(W x)/√d (the "full matrix" reference of §5, App. E).
- `LRNNForSequenceTasks`: embedding → pre-norm residual blocks (mixer + SwiGLU MLP for DeltaNet) → head.

Block layout, norms and inits follow the official configs (spec §3.2, §3.3, §3.6); deliberate differences are listed in
the package README.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr25.lrnn_state_tracking.ops import DELTA_MODES, delta_rule, diagonal_scan, parse_eig_range, selective_scan


def _state_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


class ShortConv(nn.Module):
    """Causal depthwise 1-D convolution over time on (B, T, D) inputs."""

    def __init__(self, dim: int, kernel_size: int = 4, bias: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.conv = nn.Conv1d(dim, dim, kernel_size, groups=dim, padding=kernel_size - 1, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D), position t sees inputs t-k+1..t only."""
        return self.conv(x.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)


class DiagonalLRNN(nn.Module):
    """Figure-1 diagonal LRNN: h_t = Diag(act(10(W_a x_t + b_a))) h_{t-1} + (W_b x_t + b_b) ⊙ x_t (eq. 1), h_{-1} = 0."""

    def __init__(self, dim: int, eig_range: str = "[-1,1]", scan: str = "auto") -> None:
        super().__init__()
        self.eig_range = parse_eig_range(eig_range)
        self.scan = scan
        self.w_a = nn.Linear(dim, dim)
        self.w_b = nn.Linear(dim, dim)
        with torch.no_grad():  # official init: PyTorch's default Linear weights divided by sqrt(dim), biases kept
            self.w_a.weight.div_(math.sqrt(dim))
            self.w_b.weight.div_(math.sqrt(dim))

    def transition(self, x: Tensor) -> Tensor:
        """Diagonal of A(x): sigmoid(10·z) ∈ [0, 1] or tanh(10·z) ∈ [-1, 1] with z = W_a x + b_a."""
        z = 10 * self.w_a(x)
        return torch.tanh(z) if self.eig_range == "[-1,1]" else torch.sigmoid(z)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> hidden states (B, T, D)."""
        a = self.transition(x)  # A(x_t), (B, T, D)
        b = self.w_b(x) * x  # B(x_t) = Diag(W_b x_t + b_b) x_t
        return diagonal_scan(a, b, method=self.scan)  # eq. (1); h_0 = B(x_0) since h_{-1} = 0


class Figure1Model(nn.Module):
    """The paper's Figure-1 parity model: embedding → LayerNorm → LRNN → LayerNorm → linear head (no residual).

    layer: "diagonal" (`DiagonalLRNN`, Figure 1) or "fullmatrix" (`FullMatrixLRNN`, the official configs' one-block
    `full_matrix` model, which has no eigenvalue range).
    """

    def __init__(
        self, vocab_size: int, dim: int = 10, eig_range: str = "[-1,1]", scan: str = "auto", layer: str = "diagonal"
    ) -> None:
        super().__init__()
        if layer not in ("diagonal", "fullmatrix"):
            raise ValueError(f"layer must be 'diagonal' or 'fullmatrix', got {layer!r}")
        self.embedding = nn.Embedding(vocab_size, dim)
        self.norm_in = nn.LayerNorm(dim, eps=1e-5, bias=False)
        self.lrnn = DiagonalLRNN(dim, eig_range, scan) if layer == "diagonal" else FullMatrixLRNN(dim)
        self.norm_out = nn.LayerNorm(dim, eps=1e-5, bias=False)
        self.head = nn.Linear(dim, vocab_size, bias=False)
        std = math.sqrt(2 / (5 * dim))  # official init of embedding and head
        nn.init.normal_(self.embedding.weight, std=std)
        nn.init.normal_(self.head.weight, std=std)

    def forward(self, tokens: Tensor) -> Tensor:
        """(B, T) token ids -> logits (B, T, V)."""
        return self.head(self.norm_out(self.lrnn(self.norm_in(self.embedding(tokens)))))


class DeltaNetLayer(nn.Module):
    """DeltaNet token mixer (FLA semantics) with the paper's eigenvalue range: β = scale·σ(w_βᵀx), scale 1 or 2."""

    def __init__(
        self,
        d_model: int,
        n_heads: int = 4,
        eig_range: str = "[-1,1]",
        use_short_conv: bool = True,
        conv_size: int = 4,
        mode: str = "chunk",
        chunk_size: int = 64,
        norm_eps: float = 1e-6,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.eig_range = parse_eig_range(eig_range)
        self.beta_scale = 2.0 if self.eig_range == "[-1,1]" else 1.0  # §4: β ∈ [0, 2] gives eigenvalues in [-1, 1]
        if mode not in DELTA_MODES:
            raise ValueError(f"mode must be one of {', '.join(DELTA_MODES)}; got {mode!r}")
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.mode, self.chunk_size = mode, chunk_size  # "fla": FLA's Triton kernel (optional, CUDA only)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.b_proj = nn.Linear(d_model, n_heads, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.use_short_conv = use_short_conv
        if use_short_conv:
            self.q_conv, self.k_conv, self.v_conv = (ShortConv(d_model, conv_size) for _ in range(3))
        self.o_norm = nn.RMSNorm(self.head_dim, eps=norm_eps)
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.b_proj, self.o_proj):
            nn.init.xavier_uniform_(lin.weight, gain=2**-2.5)  # FLA init of the attention Linears

    def betas(self, x: Tensor) -> Tensor:
        """β_t per head, (B, T, H): σ(w_βᵀ x_t) on [0, 1], 2σ(w_βᵀ x_t) on [-1, 1]."""
        return self.beta_scale * torch.sigmoid(self.b_proj(x))

    def qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Projected, convolved, activated and (q, k) L2-normalised heads, each (B, H, T, Dh)."""
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.use_short_conv:
            q, k, v = self.q_conv(q), self.k_conv(k), self.v_conv(v)
            q, k = F.silu(q), F.silu(k)
        v = F.silu(v)
        B, T, _ = x.shape
        q, k, v = (t.view(B, T, self.n_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)  # L2 norm with eps inside the root
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)  # eigenvalue along k: 1 - β‖k‖² ∈ (-1, 1]
        return q, k, v

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D)."""
        q, k, v = self.qkv(x)
        beta = self.betas(x).transpose(1, 2)  # (B, H, T)
        dt = _state_dtype(q.dtype)  # keep the recurrence state in at least fp32 (spec §3.7.7)
        o, _ = delta_rule(q.to(dt), k.to(dt), v.to(dt), beta.to(dt), self.mode, self.chunk_size)
        o = self.o_norm(o.to(q.dtype))  # per-head RMSNorm, (B, H, T, Dh)
        return self.o_proj(o.transpose(1, 2).reshape(x.shape))


class MambaLayer(nn.Module):
    """Mamba-1 mixer with the paper's eigenvalue range: Ā = exp(ΔA) ([0,1]) or 2·exp(ΔA) - 1 ([-1,1])."""

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        expand: int = 2,
        d_conv: int = 1,
        eig_range: str = "[-1,1]",
        scan: str = "auto",
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
    ) -> None:
        super().__init__()
        self.eig_range = parse_eig_range(eig_range)
        self.scan = scan
        E = expand * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.in_proj = nn.Linear(d_model, 2 * E, bias=False)
        self.conv = ShortConv(E, d_conv, bias=True)  # official config: d_conv = 1, conv bias kept
        self.x_proj = nn.Linear(E, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, E)
        self.out_proj = nn.Linear(E, d_model, bias=False)
        with torch.no_grad():
            std = self.dt_rank**-0.5
            nn.init.uniform_(self.dt_proj.weight, -std, std)
            dt = torch.exp(torch.rand(E) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)).clamp(min=1e-4)
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus of dt ~ logU[1e-3, 1e-1]
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(E, 1))  # (E, N)
        self.D = nn.Parameter(torch.ones(E))
        self.A_log._no_weight_decay = True  # type: ignore[attr-defined]
        self.D._no_weight_decay = True  # type: ignore[attr-defined]
        self.d_state = d_state

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D)."""
        xz = self.in_proj(x)
        xs, z = xz.chunk(2, dim=-1)  # (B, T, E) each
        xs = F.silu(self.conv(xs))
        dbc = self.x_proj(xs)
        dt, Bm, Cm = dbc.split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(dt))  # Δ_t, (B, T, E)
        dt_ = _state_dtype(xs.dtype)  # fp32 (or fp64) state
        A = -torch.exp(self.A_log.to(dt_))  # (E, N)
        y = selective_scan(
            xs.to(dt_), delta.to(dt_), A, Bm.to(dt_), Cm.to(dt_), self.D.to(dt_), self.eig_range, self.scan
        )
        return self.out_proj(y.to(x.dtype) * F.silu(z))


class FullMatrixLRNN(nn.Module):
    """Dense LRNN h_t = A(x_t) h_{t-1} + B(x_t) x_t (eq. 1), the "full matrix" reference of §5.1 and App. E.

    A(x) = reshape(W_A x + b_A)/√d and B(x) = reshape(W_B x + b_B)/√d, both dense d×d and unconstrained (no eigenvalue
    control), with PyTorch's default Linear inits, as in the official `full_matrix.py`; h_0 = B(x_0) x_0.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.w_a = nn.Linear(dim, dim * dim)
        self.w_b = nn.Linear(dim, dim * dim)

    def matrices(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """A(x_t) and B(x_t), each (B, T, D, D)."""
        B, T, D = x.shape
        scale = math.sqrt(D)
        return self.w_a(x).view(B, T, D, D) / scale, self.w_b(x).view(B, T, D, D) / scale

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> hidden states (B, T, D) (a loop over time: no parallel form for dense A)."""
        A, Bm = self.matrices(x)  # (B, T, D, D) each
        b = (Bm @ x[..., None])[..., 0]  # B(x_t) x_t, (B, T, D)
        h, out = b[:, 0], [b[:, 0]]  # h_0 = B(x_0) x_0 (A is not applied at t = 0)
        for t in range(1, x.shape[1]):
            h = (A[:, t] @ h[..., None])[..., 0] + b[:, t]
            out.append(h)
        return torch.stack(out, dim=1)


class SwiGLU(nn.Module):
    """down(silu(gate(x)) ⊙ up(x)), intermediate = 256·ceil(int(8D/3)/256) as in FLA."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        hidden = 256 * math.ceil(int(d_model * 4 * 2 / 3) / 256)
        self.gate = nn.Linear(d_model, hidden, bias=False)
        self.up = nn.Linear(d_model, hidden, bias=False)
        self.down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D)."""
        return self.down(F.silu(self.gate(x)) * self.up(x))


MIXERS = ("deltanet", "mamba", "diagonal", "fullmatrix")


class Block(nn.Module):
    """Pre-norm residual block: x + mixer(norm(x)), then x + MLP(norm(x)) for DeltaNet (FLA layout)."""

    def __init__(self, mixer: str, d_model: int, eig_range: str, n_heads: int, **kw: object) -> None:
        super().__init__()
        eps = 1e-6 if mixer == "deltanet" else 1e-5
        self.norm1 = nn.RMSNorm(d_model, eps=eps)
        if mixer == "deltanet":
            self.mixer: nn.Module = DeltaNetLayer(d_model, n_heads, eig_range, **kw)  # type: ignore[arg-type]
        elif mixer == "mamba":
            self.mixer = MambaLayer(d_model, eig_range=eig_range, **kw)  # type: ignore[arg-type]
        elif mixer == "diagonal":
            self.mixer = DiagonalLRNN(d_model, eig_range)
        elif mixer == "fullmatrix":
            self.mixer = FullMatrixLRNN(d_model)
        else:
            raise ValueError(f"mixer must be one of {', '.join(MIXERS)}; got {mixer!r}")
        self.mlp = SwiGLU(d_model) if mixer == "deltanet" else None
        self.norm2 = nn.RMSNorm(d_model, eps=eps) if self.mlp is not None else None

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D)."""
        x = x + self.mixer(self.norm1(x))
        if self.mlp is not None and self.norm2 is not None:
            x = x + self.mlp(self.norm2(x))
        return x


class LRNNForSequenceTasks(nn.Module):
    """Embedding → n_layers blocks → (final RMSNorm for DeltaNet) → untied linear head; returns logits (B, T, V)."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 128,
        n_layers: int = 2,
        mixer: str = "deltanet",
        eig_range: str = "[-1,1]",
        n_heads: int = 4,
        **mixer_kwargs: object,
    ) -> None:
        super().__init__()
        self.mixer, self.eig_range = mixer, parse_eig_range(eig_range)
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(mixer, d_model, eig_range, n_heads, **mixer_kwargs) for _ in range(n_layers))
        self.norm = nn.RMSNorm(d_model, eps=1e-6) if mixer == "deltanet" else nn.Identity()  # Mamba LM: no final norm
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        if mixer == "deltanet":  # FLA init: embedding, MLP and head N(0, 0.02); down_proj / sqrt(2·n_layers)
            for module in [self.embedding, self.head, *(m for b in self.blocks for m in (b.mlp.gate, b.mlp.up))]:
                nn.init.normal_(module.weight, std=0.02)
            for b in self.blocks:
                nn.init.normal_(b.mlp.down.weight, std=0.02 / math.sqrt(2 * n_layers))

    def forward(self, tokens: Tensor) -> Tensor:
        """(B, T) token ids -> logits (B, T, V)."""
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))
