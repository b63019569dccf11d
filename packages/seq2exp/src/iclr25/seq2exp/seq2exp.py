"""Seq2Exp (Su, Yu, Zhi, Ji, ICLR 2025): a learned Beta mask over bases selects regulatory elements (spec §3).

The equations follow the official code (divelab/AIRS OpenBio/Seq2Exp), which the paper's equations are known
through: the sequence Beta and the signal Beta are combined by adding their parameters (no "-1" of a density
product), Beta(z (a1 + a2), z (b1 + b2)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from iclr25.seq2exp.backbones import make_backbone
from iclr25.seq2exp.config import Seq2ExpConfig


def beta_kl(a1: torch.Tensor, b1: torch.Tensor, a2: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    """Closed-form KL(Beta(a1, b1) || Beta(a2, b2)), elementwise (spec §3):
    lnB(a2,b2) - lnB(a1,b1) + (a1-a2) psi(a1) + (b1-b2) psi(b1) + (a2-a1+b2-b1) psi(a1+b1)."""
    a2, b2 = (
        torch.as_tensor(a2, dtype=a1.dtype, device=a1.device),
        torch.as_tensor(b2, dtype=a1.dtype, device=a1.device),
    )
    lnb2 = torch.lgamma(a2) + torch.lgamma(b2) - torch.lgamma(a2 + b2)
    lnb1 = torch.lgamma(a1) + torch.lgamma(b1) - torch.lgamma(a1 + b1)
    return (
        lnb2
        - lnb1
        + (a1 - a2) * torch.digamma(a1)
        + (b1 - b2) * torch.digamma(b1)
        + (a2 - a1 + b2 - b1) * torch.digamma(a1 + b1)
    )


class SignalBeta(nn.Module):
    """Fixed signal Beta (no learned parameters, `dist_param_grad=False`): per signal i,
    alpha2_i = c (s_i + beta_min), beta2_i = c (b_i + beta_min); parameters averaged with weights w_i (spec §3)."""

    def __init__(
        self,
        prior_scale: float = 10.0,
        beta_min: float = 1.0,
        b: tuple[float, ...] = (1.5, 0.2, 1.0),
        w: tuple[float, ...] = (0.4, 0.4, 0.2),
    ) -> None:
        super().__init__()
        self.register_buffer("c", torch.tensor(float(prior_scale)))
        self.register_buffer("beta_min", torch.tensor(float(beta_min)))
        self.register_buffer("b", torch.tensor(b, dtype=torch.float32))
        self.register_buffer("w", torch.tensor(w, dtype=torch.float32))

    def forward(self, signals: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """signals (B, L, S), raw (unnormalised) -> (alpha2, beta2), each (B, L)."""
        signals = signals.to(self.w.dtype)  # float32, or the precision a Fabric set the model to
        alpha = self.c * (signals + self.beta_min)  # alpha2_i = c (s_i + beta_min)
        beta = (self.c * (self.b + self.beta_min)).expand_as(signals)  # beta2_i = c (b_i + beta_min)
        return alpha @ self.w, beta @ self.w  # parameter averaging, not a mixture


class BetaMaskGenerator(nn.Module):
    """Sequence Beta from a bidirectional backbone: (l0, l1) = head(f(e)); alpha1 = softplus(l1) + beta_min,
    beta1 = softplus(l0) + beta_min (spec §3)."""

    def __init__(self, backbone: nn.Module | None, d: int, beta_min: float = 1.0) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(d, 2)
        self.beta_min = beta_min

    def logits(self, emb: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (B, L, 2) logits (l0, l1)."""
        h = self.backbone(emb) if self.backbone is not None else emb
        return self.head(h)

    def forward(self, emb: torch.Tensor, off: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """(alpha1, beta1), each (B, L); `off`: logits fixed at 0 (the generator-off ablation)."""
        logits = self.logits(emb) if not off else emb.new_zeros(*emb.shape[:2], 2)
        return F.softplus(logits[..., 1]) + self.beta_min, F.softplus(logits[..., 0]) + self.beta_min


class PromoterHead(nn.Module):
    """Mean-pool the promoter hidden states, concat r, MLP [d + n_rna -> d -> d -> 1] with ReLU (spec §3)."""

    def __init__(self, d: int, n_rna: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d + n_rna, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, pooled: torch.Tensor, rna: torch.Tensor) -> torch.Tensor:
        """(B, d), (B, n_rna) -> (B,)."""
        return self.mlp(torch.cat([pooled, rna.to(pooled.dtype)], -1)).squeeze(-1)


def one_hot(seq: torch.Tensor) -> torch.Tensor:
    """Integer bases (B, L) in {0: A, 1: C, 2: G, 3: T, 4: N} -> one-hot (B, L, 4) float; N is all zero."""
    return F.one_hot(seq.long().clamp(0, 4), 5)[..., :4].float()


def center_slice(length: int, center_len: int) -> slice:
    """The central `center_len` positions of a window of `length` (the promoter, around the TSS)."""
    c0 = (length - center_len) // 2
    return slice(c0, c0 + center_len)


def _seeded_rsample(alpha: torch.Tensor, beta: torch.Tensor, seed: int) -> torch.Tensor:
    """Beta(alpha, beta).rsample() from the torch generator seeded with `seed`; the global RNG state is left as it
    was (CUDA's of the tensors' device included)."""
    devices = [alpha.device.index or 0] if alpha.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        return torch.distributions.Beta(alpha, beta).rsample()


@dataclass
class MaskOutput:
    """What the mask step returns: the mask used, the Beta parameters, and E[m] (before forcing)."""

    mask: torch.Tensor
    alpha: torch.Tensor
    beta: torch.Tensor
    mean: torch.Tensor


class Seq2Exp(nn.Module):
    """The full model: forward(seq, signals, rna_feat, blacklist) -> (y_hat, aux{kl, mask, alpha, beta, mean}).

    seq (B, L) integer bases or (B, L, 4) one-hot; signals (B, L, S) raw tracks; rna_feat (B, n_rna);
    blacklist (B, L) bool or None.
    """

    def __init__(self, config: Seq2ExpConfig | None = None) -> None:
        super().__init__()
        cfg = self.config = config or Seq2ExpConfig()
        d = cfg.d
        self.embed_seq = nn.Linear(4, d)  # e_seq = Linear(4 -> d)
        self.embed_sig = nn.Linear(cfg.n_signals, d)  # e_sig = Linear(3 -> d)
        self.hard = cfg.mode == "hard"
        predictor = make_backbone(cfg.backbone, d, cfg.n_layers, cfg.chunk)
        # hard: pos_enc + enc_prd_ps (generator and predictor share one backbone); soft: separate backbones
        gen_backbone = predictor if self.hard else make_backbone(cfg.backbone, d, cfg.n_layers, cfg.chunk)
        self.generator = BetaMaskGenerator(gen_backbone, d, cfg.beta_min)
        self.predictor = predictor
        self.pos = nn.Embedding(cfg.max_len, d) if self.hard else None
        if self.pos is not None:
            nn.init.zeros_(self.pos.weight)  # official `pos_emb` starts at zero (not nn.Embedding's N(0, 1))
        self.signal_beta = SignalBeta(cfg.prior_scale, cfg.beta_min, cfg.signal_b, cfg.signal_w)
        self.head = PromoterHead(d, cfg.n_rna)
        self.register_buffer("alpha3", torch.tensor(cfg.marginal_scale))  # alpha3 = s
        self.register_buffer("beta3", torch.tensor(cfg.marginal_scale * (1 - cfg.mu) / cfg.mu))  # s (1-mu)/mu
        # one seed per batch row (set by a training loop split over processes): each row's mask is drawn from its
        # own seed, so a row's draw does not depend on which process, or which other rows, share its batch
        self.row_seeds: list[int] | None = None
        # hard mode: maps this batch's longest kept row to the length its packed batch is padded to (set by a training
        # loop split over processes to the longest over the whole global batch, so the padding does not depend on it)
        self.pack_length: Callable[[torch.Tensor], torch.Tensor] | None = None

    def mask_distribution(
        self, e_seq: torch.Tensor, e_sig: torch.Tensor, signals: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Beta(z (alpha1 + alpha2), z (beta1 + beta2)) parameters (spec §3, `decouple_x=True`)."""
        cfg = self.config
        gen_in = e_seq + e_sig if self.hard else e_seq  # soft: the generator reads the sequence only
        a1, b1 = self.generator(gen_in, off=cfg.generator_off)
        if cfg.use_signal_prior:
            a2, b2 = self.signal_beta(signals)
            a1, b1 = a1 + a2, b1 + b2
        return cfg.z_scale * a1, cfg.z_scale * b1

    def sample_mask(
        self, alpha: torch.Tensor, beta: torch.Tensor, blacklist: torch.Tensor | None, center: slice
    ) -> MaskOutput:
        """rsample in training, E[m] at evaluation; hard: straight-through 1[m >= t]; then blacklist -> 0 and the
        promoter window -> 1 (after sampling, so the KL still covers it)."""
        mean = alpha / (alpha + beta)
        # training: reparameterised sample (implicit gradients); evaluation: the mean
        if not self.training:
            m = mean
        elif self.row_seeds is None:
            m = torch.distributions.Beta(alpha, beta).rsample()
        else:
            if len(self.row_seeds) != alpha.shape[0]:
                raise ValueError(f"row_seeds has {len(self.row_seeds)} seeds for a batch of {alpha.shape[0]} rows")
            m = torch.cat([_seeded_rsample(alpha[i : i + 1], beta[i : i + 1], s) for i, s in enumerate(self.row_seeds)])
        if self.hard:
            m_hard = (m >= self.config.threshold).to(m.dtype)
            m = m_hard + (m - m.detach())  # forward value exactly m_hard, gradient of the soft m
        keep = torch.ones_like(m)
        if blacklist is not None:
            keep = keep * (~blacklist.bool()).to(m.dtype)
        force = torch.zeros_like(m)
        force[:, center] = 1.0
        m = m * keep * (1 - force) + force  # blacklist -> 0, promoter window -> 1
        return MaskOutput(m, alpha, beta, mean)

    def encode(self, seq: torch.Tensor, signals: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(e_seq, e_sig); hard mode adds the learned position embedding to e_seq (`pos_enc=True`)."""
        dtype = self.embed_seq.weight.dtype  # float32, or the precision a Fabric set the model to
        x = (one_hot(seq) if seq.dim() == 2 else seq).to(dtype)
        e_seq = self.embed_seq(x)
        if self.pos is not None:
            L = x.shape[1]
            if self.pos.num_embeddings < L:
                raise ValueError(f"sequence length {L} exceeds max_len={self.pos.num_embeddings}")
            e_seq = e_seq + self.pos.weight[:L]
        return e_seq, self.embed_sig(signals.to(dtype))

    def predict(self, masked: torch.Tensor, mask: torch.Tensor, center: slice) -> torch.Tensor:
        """Predictor hidden states pooled over the promoter: soft runs on the full masked sequence; hard compacts the
        masked-in positions into a shorter sequence (zero-padded to the batch max, or to `pack_length` of it) and pools
        the promoter states at their shifted indices."""
        if not self.hard:
            return self.predictor(masked)[:, center].mean(1)
        keep = mask.detach() > 0.5
        counts = keep.sum(1)
        longest = counts.max()
        n = int(longest if self.pack_length is None else self.pack_length(longest))
        if not int(longest) <= n <= mask.shape[1]:
            raise ValueError(
                f"pack_length gave {n}: it must lie between the longest kept row ({int(longest)}) and the window "
                f"length ({mask.shape[1]})"
            )
        order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)[:, :n]  # kept positions first, in order
        packed = torch.gather(masked, 1, order[..., None].expand(-1, -1, masked.shape[-1]))
        valid = torch.arange(n, device=mask.device)[None, :] < counts[:, None]
        packed = packed * valid[..., None].to(packed.dtype)
        h = self.predictor(packed)
        start = keep[:, : center.start].sum(1)  # promoter's shifted start (the window is forced to 1)
        width = center.stop - center.start
        idx = start[:, None] + torch.arange(width, device=mask.device)[None, :]
        return torch.gather(h, 1, idx[..., None].expand(-1, -1, h.shape[-1])).mean(1)

    def forward(
        self,
        seq: torch.Tensor,
        signals: torch.Tensor,
        rna_feat: torch.Tensor | None = None,
        blacklist: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(y_hat (B,), aux{kl (scalar, mean over batch and positions), mask, alpha, beta, mean})."""
        L = seq.shape[1]
        center = center_slice(L, self.config.center_len)
        e_seq, e_sig = self.encode(seq, signals)
        alpha, beta = self.mask_distribution(e_seq, e_sig, signals)
        out = self.sample_mask(alpha, beta, blacklist, center)
        emb = e_seq + e_sig
        # soft: the mask multiplies the summed embedding; official hard mode: the kept positions of e_seq + e_sig are
        # packed as they are (the mask is never multiplied in, so the prediction loss does not reach the generator
        # through the mask)
        pack_only = self.hard and not self.config.hard_mask_multiply
        masked = emb if pack_only else emb * out.mask[..., None]
        pooled = self.predict(masked, out.mask, center)
        rna = rna_feat if rna_feat is not None else pooled.new_zeros(pooled.shape[0], self.config.n_rna)
        y_hat = self.head(pooled, rna)
        kl = beta_kl(alpha, beta, self.alpha3, self.beta3).mean()  # averaged over positions, incl. the promoter
        aux = {"kl": kl, "mask": out.mask, "alpha": alpha, "beta": beta, "mean": out.mean}
        if self.config.continuity:
            aux["continuity"] = (out.mask[:, 1:] - out.mask[:, :-1]).abs().mean()
        return y_hat, aux


def seq2exp_loss(
    y_hat: torch.Tensor, y: torch.Tensor, aux: dict[str, torch.Tensor], lam: float = 0.01, continuity: float = 0.0
) -> torch.Tensor:
    """SmoothL1(y_hat, y) + lambda * mean KL(p(m|X) || Beta(alpha3, beta3)) (+ continuity weight, 0 by default)."""
    loss = F.smooth_l1_loss(y_hat, y.to(y_hat.dtype)) + lam * aux["kl"]
    if continuity and "continuity" in aux:
        loss = loss + continuity * aux["continuity"]
    return loss
