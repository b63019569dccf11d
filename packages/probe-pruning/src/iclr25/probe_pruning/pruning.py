"""Probe Pruning (Le et al., ICLR 2025, arXiv 2502.15618): online, batch-wise structured pruning of attention heads
and MLP channels, decided per batch from a small probe of the batch's own hidden states fused with history.

Steps per pruned block (paper §3 / Algorithm 1; defaults from the official code, research spec §3):
1. probe selection from the residual norms (seq rank first, then batch rank on the chosen positions);
2. probing: the probe runs through the block's first stage (q/k/v + attention among probe tokens; gate/up);
3. importance-scaled fusion of probe and history statistics, PPsp scores of heads / channels;
4. full inference on the kept units only (real matrix slicing), then the EMA history update on kept channels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from iclr25.probe_pruning.model import DecoderBlock, DecoderLM, head_channels

KINDS = ("attn", "mlp")


# ------------------------------------------------------------------------------------------------ ratios
def adjusted_ratio(ratio: float, n_layers: int, skip: int | tuple[int, ...] | list[int] | set[int]) -> float:
    """r' = round(L / (L - |skip|) * r, 2): the per-layer ratio that prunes r of all units (official code)."""
    n_skip = skip if isinstance(skip, int) else len(set(skip))
    if n_skip >= n_layers:
        raise ValueError(f"every one of the {n_layers} layers is skipped")
    return min(round(n_layers / (n_layers - n_skip) * ratio, 2), 1.0)


def keep_count(n: int, ratio: float, multiple: int = 1) -> int:
    """Units kept: n - int(ratio * n), raised to a multiple of `multiple` (at most n, at least 1)."""
    kept = n - int(ratio * n)
    kept = -(-kept // multiple) * multiple
    return max(1, min(n, kept))


def heads_kept(n_heads: int, ratio: float) -> int:
    """Heads kept: H - int(r' * H) (at least 1)."""
    return max(1, n_heads - int(ratio * n_heads))


# ------------------------------------------------------------------------------------------------ step 1: probe
def select_probe(
    x_norm: Tensor,
    residual: Tensor,
    seq_ratio: float = 0.5,
    bsz_ratio: float = 0.05,
    order: tuple[str, str] = ("seq", "bsz"),
    mode: str = "residual",
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """(probe, b_idx, s_idx): the probe X̂[b_idx][:, s_idx] of shape (n_b, n_s, d) with n_s = max(ceil(0.5 S), 2)
    and n_b = ceil(0.05 B). Ranking uses the residual norms n(b, s) = ||R[b, s]||_2: positions by the L2 norm of
    n(:, s) over the batch, then samples by the L2 norm of n(b, s_sel) over the chosen positions (`order`
    reverses it); indices sorted; when n_s <= 10 the smallest position is replaced by 0 (first token kept).
    `mode`: "residual" (the paper), or the ablations "random" and "first" (the first n_b samples / n_s tokens)."""
    B, S, _ = residual.shape
    n_s = min(S, max(math.ceil(seq_ratio * S), 2))
    n_b = min(B, max(math.ceil(bsz_ratio * B), 1))
    dev = residual.device
    if mode == "random":  # drawn on the generator's device (CPU by default), then moved: same draws on every device
        g_dev = generator.device if generator is not None else torch.device("cpu")
        s_idx = _first_token(torch.randperm(S, generator=generator, device=g_dev)[:n_s].sort().values.to(dev), S)
        b_idx = torch.randperm(B, generator=generator, device=g_dev)[:n_b].sort().values.to(dev)
    elif mode == "first":
        s_idx, b_idx = torch.arange(n_s, device=dev), torch.arange(n_b, device=dev)
    elif mode == "residual":
        norms = residual.float().norm(dim=-1)  # (B, S)
        if order == ("seq", "bsz"):
            s_idx = _first_token(_topk_sorted(norms.norm(dim=0), n_s), S)
            b_idx = _topk_sorted(norms[:, s_idx].norm(dim=1), n_b)
        elif order == ("bsz", "seq"):
            b_idx = _topk_sorted(norms.norm(dim=1), n_b)
            s_idx = _first_token(_topk_sorted(norms[b_idx].norm(dim=0), n_s), S)
        else:
            raise ValueError(f"order must be ('seq', 'bsz') or ('bsz', 'seq'), got {order!r}")
    else:
        raise ValueError(f"probe selection mode must be residual, random or first, got {mode!r}")
    return x_norm[b_idx][:, s_idx], b_idx, s_idx


def _first_token(s_idx: Tensor, S: int) -> Tensor:
    """Official rule: with n_s <= 10 selected positions, the smallest is replaced by 0 (the first token)."""
    if s_idx.numel() <= 10 and s_idx.numel() < S and s_idx[0] != 0:
        s_idx = s_idx.clone()
        s_idx[0] = 0
    return s_idx


def _topk_sorted(values: Tensor, k: int) -> Tensor:
    return values.topk(k).indices.sort().values


# ------------------------------------------------------------------------------------------------ step 3: scores
def importance_scaled_fusion(P: Tensor, H: Tensor, eps: float = 1e-6, rho: float | None = None) -> Tensor:
    """F = (1 - ρ) H + ρ P with ρ = P / (P + H + eps) per (position, channel) (paper eq. 4); a fixed `rho` gives
    the official `probefixratio` ablation."""
    if rho is None:
        rho_t = P / (P + H + eps)
        return (1 - rho_t) * H + rho_t * P
    return (1 - rho) * H + rho * P


def ppsp_mlp_scores(C: Tensor, W: Tensor) -> Tensor:
    """PPsp per MLP channel c: ||C_c * W[:, c]^2||_2 = C_c sqrt(sum_i W_ic^4) (paper eq. 5, W = down_proj (d, C))."""
    return C * W.float().pow(4).sum(0).sqrt()


def ppsp_head_scores(C: Tensor, W: Tensor, n_heads: int) -> Tensor:
    """PPsp per head h: sqrt(sum_i sum_{c in h} (C_c W_ic^2)^2) (W = o_proj (d, H*hd))."""
    per_channel = (C[None, :] * W.float().pow(2)).pow(2).sum(0)  # (H*hd,)
    return per_channel.view(n_heads, -1).sum(1).sqrt()


# ------------------------------------------------------------------------------------------------ statistics
class Stats:
    """Per-position sums of x and x^2 over samples for the input of an output projection (calibration)."""

    def __init__(self) -> None:
        self.sq: Tensor | None = None  # (S, C) sum_b x^2
        self.sum: Tensor | None = None  # (S, C) sum_b x
        self.n = 0

    def add(self, z: Tensor) -> None:
        """Accumulate a (B, S, C) batch."""
        z = z.detach().float()
        sq, s = z.pow(2).sum(0), z.sum(0)
        if self.sq is None:
            self.sq, self.sum = sq, s
        else:
            if sq.shape != self.sq.shape:
                raise ValueError("calibration batches must share one sequence length")
            self.sq += sq
            self.sum += s
        self.n += z.shape[0]

    @property
    def mean_sq(self) -> Tensor:
        """Hist[s, c]: mean over samples of x^2."""
        return self.sq / self.n

    @property
    def mean(self) -> Tensor:
        """Mean over samples of x, per position."""
        return self.sum / self.n

    @property
    def variance(self) -> Tensor:
        """Sample variance over samples, per position (FLAP's fluctuation)."""
        return (self.sq - self.n * self.mean.pow(2)).clamp_min(0) / max(self.n - 1, 1)


# ------------------------------------------------------------------------------------------------ the runner
class LayerwiseRunner:
    """Runs a `DecoderLM` block by block, asking `keep(layer, kind, R, X)` for the kept units of each pruned block
    (None: dense) and passing the output projection's input to `observe`; subclasses are the pruners."""

    def __init__(self, model: DecoderLM, skip_layers: tuple[int, ...] = (), targets: tuple[str, ...] = KINDS) -> None:
        self.model = model
        self.cfg = model.cfg
        self.skip_layers = tuple(sorted(set(skip_layers)))
        self.targets = tuple(targets)
        self.last_kept: dict[tuple[int, str], Tensor] = {}

    def pruned(self, layer: int, kind: str) -> bool:
        """Whether block (layer, kind) is pruned."""
        return layer not in self.skip_layers and kind in self.targets

    def keep(self, layer: int, kind: str, block: DecoderBlock, R: Tensor, X: Tensor, pos: Tensor) -> Tensor | None:
        """Kept heads / channels (sorted) for this batch; None keeps all."""
        return None

    def observe(self, layer: int, kind: str, kept: Tensor | None, z: Tensor) -> None:
        """Called with the output projection's input z (only the kept channels) after the block ran."""

    def compensate(self, layer: int, kind: str, kept: Tensor | None) -> Tensor | float:
        """A bias added to the block output (FLAP); 0 otherwise."""
        return 0.0

    def after_batch(self) -> None:
        """Hook after a full forward."""

    @torch.no_grad()
    def forward(self, input_ids: Tensor) -> Tensor:
        """Logits (B, S, V) of the pruned model on one batch."""
        model = self.model
        input_ids = model.to_embed(input_ids)
        h = model.embed(input_ids)
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        for i, block in enumerate(model.layers):
            h, pos = model.to_layer(i, h, pos)  # a split model: the next device at a block boundary
            for kind in KINDS:
                x = block.attn_norm(h) if kind == "attn" else block.mlp_norm(h)
                kept = self.keep(i, kind, block, h, x, pos) if self.pruned(i, kind) else None
                if kind == "attn":
                    z = block.attn_inner(x, pos, kept)
                    y = block.attn_outer(z, kept)
                else:
                    z = block.mlp_inner(x, kept)
                    y = block.mlp_outer(z, kept)
                if kept is not None:
                    self.last_kept[(i, kind)] = kept
                self.observe(i, kind, kept, z)
                h = h + (y + self.compensate(i, kind, kept) if kept is not None else y)
        self.after_batch()
        return model.head(model.to_head(h))

    __call__ = forward

    def channels(self, kind: str, kept: Tensor | None, n: int) -> Tensor:
        """Channel indices of kept units (heads -> their head_dim channels)."""
        if kept is None:
            return torch.arange(n)
        return head_channels(kept, self.cfg.head_dim) if kind == "attn" else kept

    def n_units(self, kind: str) -> int:
        """Heads (attn) or MLP channels."""
        return self.cfg.num_attention_heads if kind == "attn" else self.cfg.intermediate_size


class StatsCollector(LayerwiseRunner):
    """Dense forward that accumulates `Stats` of every output projection's input (calibration pass)."""

    def __init__(self, model: DecoderLM, layers: tuple[int, ...] | None = None) -> None:
        super().__init__(model, skip_layers=tuple(range(model.cfg.num_hidden_layers)))
        wanted = range(model.cfg.num_hidden_layers) if layers is None else layers
        self.stats: dict[tuple[int, str], Stats] = {(i, k): Stats() for i in wanted for k in KINDS}

    def observe(self, layer: int, kind: str, kept: Tensor | None, z: Tensor) -> None:
        if (layer, kind) in self.stats:
            self.stats[(layer, kind)].add(z)


def collect_stats(model: DecoderLM, batches: Any, layers: tuple[int, ...] | None = None) -> dict:
    """Calibration statistics {(layer, kind): Stats} from dense passes over `batches` of token ids."""
    collector = StatsCollector(model, layers)
    for ids in batches:
        collector.forward(ids)
    return collector.stats


# ------------------------------------------------------------------------------------------------ PP
@dataclass(frozen=True)
class PPConfig:
    """Probe Pruning settings (official defaults; spec §3). `control`: None, "random" (seeded random units, same
    kept counts) or "inverted" (keep the lowest PPsp scores), the two controls of the reproduction."""

    ratio: float = 0.4
    probe_seq: float = 0.5
    probe_bsz: float = 0.05
    order: tuple[str, str] = ("seq", "bsz")
    ema: float = 0.99
    skip_layers: tuple[int, ...] = (0, 1, 2)
    round_multiple: int = 64
    fusion: str = "scaled"  # "scaled" | "fixed:<rho>" | "probe_only" | "history_only"
    targets: tuple[str, ...] = KINDS
    probe_select: str = "residual"  # "residual" | "random" | "first"
    control: str | None = None
    seed: int = 0
    eps: float = 1e-6
    log_probes: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.ratio < 1:
            raise ValueError(f"ratio must lie in [0, 1), got {self.ratio}")
        if not (0 < self.probe_seq <= 1 and 0 < self.probe_bsz <= 1):
            raise ValueError("probe_seq and probe_bsz must lie in (0, 1]")
        if not 0 <= self.ema <= 1:
            raise ValueError(f"ema must lie in [0, 1], got {self.ema}")
        if self.control not in (None, "random", "inverted"):
            raise ValueError(f"control must be None, 'random' or 'inverted', got {self.control!r}")
        if not set(self.targets) <= set(KINDS):
            raise ValueError(f"targets must be a subset of {KINDS}, got {self.targets}")
        _fusion_rho(self.fusion)


def _fusion_rho(fusion: str) -> float | None:
    if fusion in ("scaled", "probe_only", "history_only"):
        return None
    head, _, tail = fusion.partition(":")
    if head == "fixed" and 0 <= float(tail) <= 1:
        return float(tail)
    raise ValueError(f"fusion must be scaled, probe_only, history_only or fixed:<rho>, got {fusion!r}")


@dataclass
class Decision:
    """What PP decided for one block of one batch (logged for reproducibility)."""

    kept: Tensor
    b_idx: Tensor | None = None
    s_idx: Tensor | None = None
    scores: Tensor | None = None


class ProbePruner(LayerwiseRunner):
    """`ProbePruner(model, PPConfig).calibrate(batches)`, then `pruner(input_ids)` gives the pruned logits.

    Each call prunes every non-skipped block for that batch (steps 1-4), then updates the history with an EMA on the
    kept channels only (after the decision, so a batch never uses its own full-batch statistics)."""

    def __init__(self, model: DecoderLM, config: PPConfig | None = None) -> None:
        config = config or PPConfig()
        super().__init__(model, config.skip_layers, config.targets)
        self.config = config
        cfg = model.cfg
        self.r_adj = adjusted_ratio(config.ratio, cfg.num_hidden_layers, self.skip_layers)
        self.kept_counts = {
            "attn": heads_kept(cfg.num_attention_heads, self.r_adj),
            "mlp": keep_count(cfg.intermediate_size, self.r_adj, config.round_multiple),
        }
        self.history: dict[tuple[int, str], Tensor] = {}
        self.generator = torch.Generator().manual_seed(config.seed)
        self.rho = _fusion_rho(config.fusion)
        self.decisions: dict[tuple[int, str], Decision] = {}
        self.probe_log: list[dict[str, Any]] = []

    # -- calibration: Hist = running mean of x^2 per position (no pruning)
    def calibrate(self, batches: Any) -> ProbePruner:
        """Initialise the per-position history from dense passes over calibration `batches`."""
        layers = tuple(i for i in range(self.cfg.num_hidden_layers) if i not in self.skip_layers)
        stats = collect_stats(self.model, batches, layers)
        self.history = {key: s.mean_sq for key, s in stats.items() if s.n}
        return self

    def set_history(self, stats: dict[tuple[int, str], Stats]) -> ProbePruner:
        """Use precomputed calibration statistics (shared with the static baselines)."""
        self.history = {key: s.mean_sq.clone() for key, s in stats.items() if s.n and self.pruned(*key)}
        return self

    def _hist(self, key: tuple[int, str], S: int) -> Tensor:
        if key not in self.history:
            raise RuntimeError("call calibrate(batches) before pruning")
        hist = self.history[key]
        if hist.shape[0] < S:  # longer than the calibration windows: unseen positions use the mean history
            extra = hist.mean(0, keepdim=True).expand(S - hist.shape[0], -1)
            hist = torch.cat([hist, extra])
            self.history[key] = hist
        return hist

    def keep(self, layer: int, kind: str, block: DecoderBlock, R: Tensor, X: Tensor, pos: Tensor) -> Tensor:
        c = self.config
        n_keep = self.kept_counts[kind]
        n_units = self.n_units(kind)
        key = (layer, kind)
        if c.control == "random":
            draw = torch.randperm(n_units, generator=self.generator, device=self.generator.device)
            kept = draw[:n_keep].sort().values.to(X.device)
            self.decisions[key] = Decision(kept)
            return kept
        hist = self._hist(key, X.shape[1]).to(X.device)
        if c.fusion == "history_only":
            b_idx = s_idx = None
            F = hist[: X.shape[1]]
        else:
            probe, b_idx, s_idx = select_probe(X, R, c.probe_seq, c.probe_bsz, c.order, c.probe_select, self.generator)
            # attention among the probe tokens only, RoPE at their true positions; MLP: act(gate) * up
            z = block.attn_inner(probe, pos[s_idx]) if kind == "attn" else block.mlp_inner(probe)
            P = z.float().pow(2).sum(0) / z.shape[0]  # (n_s, C)
            F = P if c.fusion == "probe_only" else importance_scaled_fusion(P, hist[s_idx], c.eps, self.rho)
        C = F.sum(0)  # sum over the selected positions
        W = block.attn_out_weight if kind == "attn" else block.mlp_out_linear.weight
        scores = ppsp_head_scores(C, W, n_units) if kind == "attn" else ppsp_mlp_scores(C, W)
        if c.control == "inverted":
            scores = -scores
        kept = scores.topk(n_keep).indices.sort().values
        self.decisions[key] = Decision(kept, b_idx, s_idx, scores)
        if c.log_probes and b_idx is not None:
            self.probe_log.append({"layer": layer, "kind": kind, "b_idx": b_idx.tolist(), "s_idx": s_idx.tolist()})
        return kept

    def observe(self, layer: int, kind: str, kept: Tensor | None, z: Tensor) -> None:
        """EMA history update on the kept channels: Hist[:S, keep] <- m Hist + (1 - m) mean_b x^2."""
        key = (layer, kind)
        if kept is None or key not in self.history or self.config.control == "random":
            return
        m = self.config.ema
        if m >= 1:
            return
        channels = self.channels(kind, kept, 0).to(z.device)
        hist = self.history[key]
        S = z.shape[1]
        new = z.float().pow(2).mean(0).to(hist.device)  # (S, n_kept)
        cols = channels.to(hist.device)
        hist[:S, cols] = m * hist[:S, cols] + (1 - m) * new


# ------------------------------------------------------------------------------------------------ evaluation
@torch.no_grad()
def evaluate_ppl(model_or_pruner: Any, batches: Any) -> float:
    """PPL = exp(mean over batches of the batch's mean next-token loss) (official protocol)."""
    from iclr25.probe_pruning.model import DecoderLM, lm_loss

    losses = []
    for ids in batches:
        out = model_or_pruner(ids)
        logits = out.logits if isinstance(model_or_pruner, DecoderLM) else out
        losses.append(float(lm_loss(logits, ids)))
    return math.exp(sum(losses) / len(losses))


def flops_report(
    cfg: Any,
    batch: int,
    seq: int,
    kept: dict[tuple[int, str], int] | None = None,
    probe: tuple[int, int] | None = None,
    skip_layers: tuple[int, ...] = (),
    targets: tuple[str, ...] = KINDS,
) -> dict[str, float]:
    """Analytic forward FLOPs (2 per multiply-add) of one batch: dense, with `kept` units per block, and of the
    probes (n_b samples x n_s tokens through q/k/v + attention and gate/up of every pruned block)."""
    d, H, Hkv, hd, dff, V = (
        cfg.hidden_size,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        cfg.head_dim,
        cfg.intermediate_size,
        cfg.vocab_size,
    )
    n_in = 2 if cfg.arch == "llama" else 1  # gate + up vs fc1

    def attn(tokens: int, s: int, heads: int) -> float:
        kv_heads = Hkv if Hkv != H else heads
        proj = 2 * tokens * d * hd * (2 * heads + 2 * kv_heads)  # q, o and k, v
        return proj + 2 * 2 * (tokens // s) * s * s * heads * hd  # scores + weighted values

    def mlp(tokens: int, ch: int) -> float:
        return 2 * tokens * d * ch * (n_in + 1)

    T = batch * seq
    dense = cfg.num_hidden_layers * (attn(T, seq, H) + mlp(T, dff)) + 2 * T * d * V
    pruned = 2 * T * d * V
    probe_flops = 0.0
    for i in range(cfg.num_hidden_layers):
        ka = (kept or {}).get((i, "attn"), H)
        km = (kept or {}).get((i, "mlp"), dff)
        pruned += attn(T, seq, ka) + mlp(T, km)
        if probe is not None and i not in skip_layers:
            nb, ns = probe
            if "attn" in targets:
                probe_flops += 2 * nb * ns * d * hd * (H + 2 * Hkv) + 2 * 2 * nb * ns * ns * H * hd
            if "mlp" in targets:
                probe_flops += 2 * nb * ns * d * dff * n_in
    return {
        "dense": float(dense),
        "pruned": float(pruned),
        "probe": float(probe_flops),
        "kept_fraction": float(pruned / dense),
        "probe_fraction": float(probe_flops / dense),
    }


__all__ = [
    "Decision",
    "LayerwiseRunner",
    "PPConfig",
    "ProbePruner",
    "Stats",
    "adjusted_ratio",
    "collect_stats",
    "evaluate_ppl",
    "flops_report",
    "heads_kept",
    "importance_scaled_fusion",
    "keep_count",
    "ppsp_head_scores",
    "ppsp_mlp_scores",
    "select_probe",
]
