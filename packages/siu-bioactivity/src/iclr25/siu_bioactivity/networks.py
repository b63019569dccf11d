"""From-scratch stand-ins of the paper's networks for the `full` preset (spec §3.5; pretrained Uni-Mol/ProFSA
weights are not available): a small Uni-Mol-like dual encoder and an Atom3D-style GCN, each with 5 heads.

- `DualEncoder`: one transformer per side (molecule, pocket) over atom-type tokens with a per-head attention bias
  from Gaussian kernels of pair distances (Uni-Mol's SE(3)-invariant design); the CLS embeddings are
  L2-normalised, concatenated and fed to an MLP whose widths halve (Uni-Mol head 1024-1024-512-256-128, scaled).
  `detach_encoders=True` reproduces the official code's `.detach()` (frozen encoders): meaningful only with
  pretrained encoders, so it is off by default here. `pocket_only=True` drops the molecule side (the ablation).
  Its encoder layers are `nn.TransformerEncoderLayer`s (pre-norm); `for_global_batch` has them computed explicitly
  from the same parameters, so that the attention probabilities' dropout becomes a module of its own.
- `DenseGCN`: the Atom3D LBA GNN on a dense adjacency: one graph over pocket + ligand atoms, node features =
  [one-hot protein element (18) | one-hot ligand element (43)], edges within 4.5 A weighted 1/(d + 1e-5),
  GCN layers 64-128-256-256-512 with ReLU + BatchNorm, global add-pool, ReLU, FC 512->256, ReLU, dropout 0.25,
  linear -> 5 heads. `pocket_only=True` keeps only the pocket nodes.
- `for_global_batch(model)`: for training on shares of a global batch over several processes, the batch norms see
  the whole batch's statistics and every dropout (the attention probabilities' too) draws the whole batch's mask.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn

from iclr25.shared.global_batch import to_global_batch_dropout, to_global_batch_norm

N_HEADS_OUT = 5
PROTEIN_ELEMENTS = ("C", "H", "O", "N", "S", "P", "ZN", "NA", "FE", "CA", "MN", "NI", "CO", "MG", "CU", "CL", "SE", "X")
LIGAND_ELEMENTS = (
    "C",
    "H",
    "O",
    "N",
    "S",
    "P",
    "F",
    "CL",
    "BR",
    "I",
    "B",
    "SI",
    "SE",
    "FE",
    "ZN",
    "CU",
    "CO",
    "NI",
    "MN",
    "MG",
    "CA",
    "NA",
    "K",
    "LI",
    "AL",
    "AS",
    "HG",
    "PT",
    "RU",
    "RH",
    "IR",
    "PD",
    "AU",
    "AG",
    "SN",
    "SB",
    "TE",
    "V",
    "CR",
    "GA",
    "GE",
    "W",
    "X",
)  # 43 entries; an unknown element maps to the last one (official rule)


class GaussianKernel(nn.Module):
    """K Gaussian basis functions of a distance with learned means and widths (Uni-Mol's pair encoding)."""

    def __init__(self, k: int = 32, max_dist: float = 20.0) -> None:
        super().__init__()
        self.means = nn.Parameter(torch.linspace(0, max_dist, k))
        self.log_std = nn.Parameter(torch.zeros(k))

    def forward(self, d: torch.Tensor) -> torch.Tensor:
        """(..., ) distances -> (..., K) features."""
        std = self.log_std.exp() + 0.1
        return torch.exp(-0.5 * ((d[..., None] - self.means) / std) ** 2) / (math.sqrt(2 * math.pi) * std)


class BiasedEncoder(nn.Module):
    """Transformer over atom tokens with a distance-derived attention bias per head; returns the CLS embedding.
    `explicit_attention` (False: torch's layers) computes every layer from its own parameters instead (see
    `explicit_layer`), its attention probabilities dropped by the module `attention_dropout`."""

    explicit_attention = False

    def __init__(
        self, vocab: int, dim: int = 128, layers: int = 4, heads: int = 8, kernels: int = 32, dropout: float = 0.1
    ) -> None:
        super().__init__()
        self.heads, self.layers = heads, layers
        self.embed = nn.Embedding(vocab + 1, dim, padding_idx=0)  # 0 = padding, vocab = CLS
        self.gauss = GaussianKernel(kernels)
        self.bias = nn.Sequential(nn.Linear(kernels, kernels), nn.GELU(), nn.Linear(kernels, heads * layers))
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=dropout, batch_first=True, norm_first=True)
            for _ in range(layers)
        )
        self.attention_dropout = nn.Dropout(dropout)  # the layers' own (p = dropout) on the explicit path
        self.norm = nn.LayerNorm(dim)
        self.cls = vocab

    def forward(self, tokens: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        """tokens (B, n) (0 = pad), coords (B, n, 3) -> CLS embedding (B, dim)."""
        B, n = tokens.shape
        cls = torch.full((B, 1), self.cls, dtype=tokens.dtype, device=tokens.device)
        tok = torch.cat([cls, tokens], 1)
        centre = (coords * (tokens > 0)[..., None]).sum(1) / (tokens > 0).sum(1, keepdim=True).clamp(min=1)
        xyz = torch.cat([centre[:, None], coords], 1)  # the CLS sits at the centroid
        d = torch.cdist(xyz, xyz)
        bias = self.bias(self.gauss(d))  # (B, n+1, n+1, H*L)
        pad = tok == 0
        bias = bias.masked_fill(pad[:, None, :, None], float("-inf"))
        h = self.embed(tok)
        if self.explicit_attention:
            for i, block in enumerate(self.blocks):
                b = bias[..., i * self.heads : (i + 1) * self.heads].permute(0, 3, 1, 2)
                h = explicit_layer(block, h, b, self.attention_dropout)
            return self.norm(h[:, 0])
        # torch's fused inference kernel for encoder layers (taken in eval mode without gradients) returns NaN with
        # this per-head float mask holding -inf at padded keys; the layer's own path (the one training takes) is used
        fast = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            for i, block in enumerate(self.blocks):
                b = (
                    bias[..., i * self.heads : (i + 1) * self.heads]
                    .permute(0, 3, 1, 2)
                    .reshape(B * self.heads, n + 1, n + 1)
                )
                h = block(h, src_mask=b)
        finally:
            torch.backends.mha.set_fastpath_enabled(fast)
        return self.norm(h[:, 0])


def explicit_layer(
    block: nn.TransformerEncoderLayer, h: torch.Tensor, bias: torch.Tensor, attention_dropout: nn.Module
) -> torch.Tensor:
    """`block(h, src_mask=bias)` of a pre-norm, batch-first layer computed from its parameters, with the attention
    probabilities dropped by `attention_dropout` (torch drops them inside its fused attention): h (B, n, dim), bias
    (B, heads, n, n) added to the scaled scores."""
    attn = block.self_attn
    if not (block.norm_first and attn.batch_first and attn.in_proj_weight is not None):
        raise ValueError("explicit_layer computes pre-norm (norm_first), batch-first layers with packed q/k/v only")
    B, n, dim = h.shape
    heads = attn.num_heads
    x = block.norm1(h)
    q, k, v = nn.functional.linear(x, attn.in_proj_weight, attn.in_proj_bias).view(B, n, 3, heads, -1).unbind(2)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, heads, n, dim / heads)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias
    probs = attention_dropout(scores.softmax(-1))
    out = (probs @ v).transpose(1, 2).reshape(B, n, dim)
    h = h + block.dropout1(attn.out_proj(out))
    return h + block.dropout2(block.linear2(block.dropout(block.activation(block.linear1(block.norm2(h))))))


def for_global_batch(model: nn.Module) -> nn.Module:
    """Prepare `model` (in place) to train on one share of a global batch per process: BatchNorm1d -> global batch
    norm, nn.Dropout -> global-batch dropout (`iclr25.shared.global_batch`) and every `BiasedEncoder` on its explicit
    layers, so that with `set_batch_rows` every dropout draws the whole batch's mask."""
    for mod in model.modules():
        if isinstance(mod, BiasedEncoder):
            mod.explicit_attention = True
    return to_global_batch_dropout(to_global_batch_norm(model))


class DualEncoder(nn.Module):
    """Uni-Mol-like molecule + pocket encoders, L2-normalised CLS concat, MLP head with `n_out` outputs."""

    def __init__(
        self,
        mol_vocab: int,
        pocket_vocab: int,
        dim: int = 128,
        layers: int = 4,
        heads: int = 8,
        n_out: int = N_HEADS_OUT,
        detach_encoders: bool = False,
        pocket_only: bool = False,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.pocket_only, self.detach_encoders = pocket_only, detach_encoders
        self.mol = None if pocket_only else BiasedEncoder(mol_vocab, dim, layers, heads, dropout=dropout)
        self.pocket = BiasedEncoder(pocket_vocab, dim, layers, heads, dropout=dropout)
        width = dim if pocket_only else 2 * dim
        sizes = [width, width, width // 2, width // 4, width // 8]
        mods: list[nn.Module] = []
        for a, b in itertools.pairwise(sizes):
            mods += [nn.Linear(a, b), nn.ReLU()]
        self.head = nn.Sequential(*mods, nn.Linear(sizes[-1], n_out))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """batch: mol_tokens/mol_coords, pocket_tokens/pocket_coords -> (B, n_out)."""
        p = nn.functional.normalize(self.pocket(batch["pocket_tokens"], batch["pocket_coords"]), dim=-1)
        if self.detach_encoders:
            p = p.detach()
        if self.pocket_only:
            return self.head(p)
        m = nn.functional.normalize(self.mol(batch["mol_tokens"], batch["mol_coords"]), dim=-1)
        if self.detach_encoders:
            m = m.detach()
        return self.head(torch.cat([m, p], -1))


class DenseGCN(nn.Module):
    """The Atom3D LBA GCN (dense form): GCN 64-128-256-256-512 + BatchNorm, add-pool, FC 512-256, dropout, heads."""

    def __init__(self, n_out: int = N_HEADS_OUT, cutoff: float = 4.5, pocket_only: bool = False) -> None:
        super().__init__()
        self.cutoff, self.pocket_only = cutoff, pocket_only
        widths = [len(PROTEIN_ELEMENTS) + len(LIGAND_ELEMENTS), 64, 128, 256, 256, 512]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(widths))
        self.norms = nn.ModuleList(nn.BatchNorm1d(b) for b in widths[1:])
        self.fc1 = nn.Linear(512, 256)
        self.drop = nn.Dropout(0.25)
        self.out = nn.Linear(256, n_out)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """batch: features (B, n, 61), coords (B, n, 3), mask (B, n) (pocket-only: ligand nodes masked out)."""
        x, xyz, mask = batch["features"], batch["coords"], batch["mask"].to(batch["features"].dtype)
        if self.pocket_only:
            mask = mask * batch["is_pocket"].to(mask.dtype)
        d = torch.cdist(xyz, xyz)
        eye = torch.eye(d.shape[1], device=d.device, dtype=d.dtype)
        w = torch.where(d < self.cutoff, 1.0 / (d + 1e-5), torch.zeros_like(d)) * (1 - eye)
        w = w * mask[:, :, None] * mask[:, None, :]
        a = w + eye * mask[:, :, None]  # self-loops (weight 1, as GCNConv's add_self_loops)
        deg = a.sum(-1).clamp(min=1e-12)
        norm = deg.rsqrt()
        a = norm[:, :, None] * a * norm[:, None, :]
        h = x * mask[..., None]
        for lin, bn in zip(self.lins, self.norms, strict=True):
            h = torch.relu(a @ lin(h))
            flat = h[mask > 0]
            h = h.clone()
            h[mask > 0] = bn(flat)
            h = h * mask[..., None]
        g = torch.relu(h.sum(1))
        g = self.drop(torch.relu(self.fc1(g)))
        return self.out(g)
