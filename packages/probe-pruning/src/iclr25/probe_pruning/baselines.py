"""Static structured-pruning baselines of the paper (Table 2): Wanda-sp and FLAP, plus the dense model.

Both decide one mask from the calibration statistics and use it for every batch (research spec §4):
- Wanda-sp: score_c = sum_i |W_ic| * sqrt(sum_s Hist[s, c]); a head scores the sum of its channels; the uniform
  per-layer ratio r'; no bias compensation.
- FLAP (An et al., AAAI 2024): fluctuation score_c = (sum_s V[s, c]) * sum_i W_ic^2 with V the per-position sample
  variance over calibration samples; scores standardised within each block, a head scored by the mean of its
  channels' z-scores; one global threshold over all blocks with a head costing m MLP channels (adaptive
  structure); bias compensation y += W[:, pruned] mu[pruned], mu the calibration mean over samples and positions.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from iclr25.probe_pruning.model import DecoderBlock, DecoderLM
from iclr25.probe_pruning.pruning import (
    KINDS,
    LayerwiseRunner,
    Stats,
    adjusted_ratio,
    collect_stats,
    heads_kept,
    keep_count,
)


def wanda_sp_scores(calib_sqnorm: Tensor, W: Tensor, n_heads: int | None = None) -> Tensor:
    """Wanda-sp: sum_i |W_ic| * ||X_c|| with ||X_c||^2 = sum_s Hist[s, c] (`calib_sqnorm` (S, C) or (C,));
    with `n_heads`, heads are scored by the sum over their channels."""
    sq = calib_sqnorm.sum(0) if calib_sqnorm.dim() == 2 else calib_sqnorm
    scores = W.float().abs().sum(0) * sq.float().sqrt()
    return scores.view(n_heads, -1).sum(1) if n_heads is not None else scores


def flap_scores(fluct: Tensor, W: Tensor) -> Tensor:
    """FLAP fluctuation metric per input channel: (sum_s V[s, c]) * sum_i W_ic^2 (`fluct` (S, C) or (C,))."""
    v = fluct.sum(0) if fluct.dim() == 2 else fluct
    return v.float() * W.float().pow(2).sum(0)


def flap_head_cost(cfg: Any, seq: int) -> float:
    """Cost of one head in MLP-channel units: (S d hd 4 + 2 S^2 hd) / (S d 3) (LLaMA; OPT / (S d 2); GQA: hd 2)."""
    d, hd = cfg.hidden_size, cfg.head_dim
    proj = 2 if cfg.num_key_value_heads != cfg.num_attention_heads else 4
    denom = 3 if cfg.arch == "llama" else 2
    return (seq * d * hd * proj + 2 * seq * seq * hd) / (seq * d * denom)


def flap_global_ratios(
    scores: dict[tuple[int, str], Tensor], n_heads: int, head_cost: float, ratio: float
) -> dict[tuple[int, str], Tensor]:
    """Global adaptive structure: z-score each block's channel scores, score heads by the mean z of their channels,
    rank every unit of every block together and keep the best until the kept cost reaches (1 - ratio) of the
    total (a head costs `head_cost`, a channel 1). Returns the sorted kept indices per block (at least one), on the
    device of the first block's scores: the blocks of a model split over several GPUs are ranked together there."""
    units, costs, owners, index = [], [], [], []
    device = next(iter(scores.values())).device
    for key, s in scores.items():
        s = s.to(device)
        z = (s - s.mean()) / (s.std() + 1e-12)
        if key[1] == "attn":
            z = z.view(n_heads, -1).mean(1)
        units.append(z)
        costs.append(torch.full_like(z, head_cost if key[1] == "attn" else 1.0))
        owners += [key] * z.numel()
        index.append(torch.arange(z.numel(), device=z.device))  # on the scores' device, as the mask below
    all_scores, all_costs, all_index = torch.cat(units), torch.cat(costs), torch.cat(index)
    order = all_scores.argsort(descending=True)
    budget = (1 - ratio) * float(all_costs.sum())
    keep_mask = torch.zeros_like(all_scores, dtype=torch.bool)
    keep_mask[order[all_costs[order].cumsum(0) <= budget + 1e-9]] = True
    kept: dict[tuple[int, str], Tensor] = {}
    start = 0
    for key, z in zip(scores, units, strict=True):
        mask = keep_mask[start : start + z.numel()]
        idx = all_index[start : start + z.numel()][mask]
        if idx.numel() == 0:  # never empty a block
            idx = z.argmax().view(1)
        kept[key] = idx.sort().values
        start += z.numel()
    return kept


class StaticPruner(LayerwiseRunner):
    """One calibration-time mask for every batch: `StaticPruner(model, "wanda_sp" | "flap", ratio, skip).calibrate(b)`."""

    def __init__(
        self,
        model: DecoderLM,
        method: str = "wanda_sp",
        ratio: float = 0.4,
        skip_layers: tuple[int, ...] = (0, 1, 2),
        round_multiple: int = 64,
        targets: tuple[str, ...] = KINDS,
    ) -> None:
        method = method.replace("-", "_")
        if method not in ("wanda_sp", "flap"):
            raise ValueError(f"method must be wanda_sp or flap, got {method!r}")
        super().__init__(model, skip_layers, targets)
        self.method, self.ratio, self.round_multiple = method, ratio, round_multiple
        self.r_adj = adjusted_ratio(ratio, model.cfg.num_hidden_layers, self.skip_layers)
        self.kept: dict[tuple[int, str], Tensor] = {}
        self.bias: dict[tuple[int, str], Tensor] = {}

    def calibrate(self, batches: Any) -> StaticPruner:
        """Collect calibration statistics and fix the masks."""
        layers = tuple(i for i in range(self.cfg.num_hidden_layers) if i not in self.skip_layers)
        return self.set_stats(collect_stats(self.model, batches, layers))

    def set_stats(self, stats: dict[tuple[int, str], Stats]) -> StaticPruner:
        """Fix the masks from precomputed calibration statistics."""
        cfg, H = self.cfg, self.cfg.num_attention_heads
        blocks = {key: s for key, s in stats.items() if self.pruned(*key) and s.n}
        weights = {key: self._out_weight(key) for key in blocks}
        if self.method == "wanda_sp":
            for (i, kind), s in blocks.items():
                W = weights[(i, kind)]
                if kind == "attn":
                    sc, n = wanda_sp_scores(s.mean_sq, W, H), heads_kept(H, self.r_adj)
                else:
                    sc, n = (
                        wanda_sp_scores(s.mean_sq, W),
                        keep_count(cfg.intermediate_size, self.r_adj, self.round_multiple),
                    )
                self.kept[(i, kind)] = sc.topk(n).indices.sort().values
            return self
        scores = {key: flap_scores(s.variance, weights[key]) for key, s in blocks.items()}
        seq = next(iter(blocks.values())).sq.shape[0]
        self.kept = flap_global_ratios(scores, H, flap_head_cost(cfg, seq), self.r_adj)
        for key, s in blocks.items():  # bias compensation: mean over samples and positions
            mu = s.mean.mean(0)
            channels = self.channels(key[1], self.kept[key], 0)
            W = weights[key].float()
            pruned = torch.ones(mu.numel(), dtype=torch.bool, device=W.device)
            pruned[channels.to(W.device)] = False
            self.bias[key] = (W[:, pruned] @ mu.to(W.device)[pruned]).to(W.dtype)
        return self

    def _out_weight(self, key: tuple[int, str]) -> Tensor:
        block: DecoderBlock = self.model.layers[key[0]]
        return block.attn_out_weight if key[1] == "attn" else block.mlp_out_linear.weight

    def keep(self, layer: int, kind: str, block: DecoderBlock, R: Tensor, X: Tensor, pos: Tensor) -> Tensor:
        if (layer, kind) not in self.kept:
            raise RuntimeError("call calibrate(batches) before pruning")
        return self.kept[(layer, kind)].to(X.device)

    def compensate(self, layer: int, kind: str, kept: Tensor | None) -> Tensor | float:
        bias = self.bias.get((layer, kind))
        return 0.0 if bias is None else bias

    def kept_counts(self) -> dict[str, list[int]]:
        """Kept units per pruned block."""
        return {f"{i}.{k}": int(v.numel()) for (i, k), v in sorted(self.kept.items())}
