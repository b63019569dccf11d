"""Baselines of Tables 1-2 (spec §4): the same embedding, backbone, promoter pooling and MLP as Seq2Exp's predictor,
without a learned mask. Each forward returns (y_hat, aux) like `Seq2Exp`, with a zero KL, so one loop trains all.

- `BaselineSeqOnly`: sequence only (Caduceus-style, Table 1);
- `BaselineSeqSignal`: e_seq + e_sig, no mask ("Caduceus w/ signals", the key no-selection ablation);
- `MaskedPredictor`: a fixed mask given with the batch (MACS3 peaks, Table 2; or Seq2Exp-retrain's top 10%).
"""

from __future__ import annotations

import torch
from torch import nn

from iclr25.seq2exp.backbones import make_backbone
from iclr25.seq2exp.config import Seq2ExpConfig
from iclr25.seq2exp.seq2exp import PromoterHead, center_slice, one_hot


class _Predictor(nn.Module):
    def __init__(self, config: Seq2ExpConfig | None = None, use_signals: bool = True) -> None:
        super().__init__()
        cfg = self.config = config or Seq2ExpConfig()
        self.use_signals = use_signals
        self.embed_seq = nn.Linear(4, cfg.d)
        self.embed_sig = nn.Linear(cfg.n_signals, cfg.d) if use_signals else None
        self.predictor = make_backbone(cfg.backbone, cfg.d, cfg.n_layers, cfg.chunk)
        self.head = PromoterHead(cfg.d, cfg.n_rna)

    def _run(
        self, seq: torch.Tensor, signals: torch.Tensor, rna_feat: torch.Tensor | None, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        dtype = self.embed_seq.weight.dtype  # float32, or the precision a Fabric set the model to
        x = (one_hot(seq) if seq.dim() == 2 else seq).to(dtype)
        emb = self.embed_seq(x)
        if self.embed_sig is not None:
            emb = emb + self.embed_sig(signals.to(dtype))
        center = center_slice(x.shape[1], self.config.center_len)
        if mask is not None:
            mask = mask.to(emb.dtype).clone()
            mask[:, center] = 1.0  # the promoter window stays in, as in Seq2Exp
            emb = emb * mask[..., None]
        pooled = self.predictor(emb)[:, center].mean(1)
        rna = rna_feat if rna_feat is not None else pooled.new_zeros(pooled.shape[0], self.config.n_rna)
        y_hat = self.head(pooled, rna)
        aux = {"kl": y_hat.new_zeros(())}
        if mask is not None:
            aux["mask"] = mask
        return y_hat, aux


class BaselineSeqOnly(_Predictor):
    """Sequence-only predictor: backbone on e_seq, promoter pooling + r -> MLP."""

    def __init__(self, config: Seq2ExpConfig | None = None) -> None:
        super().__init__(config, use_signals=False)

    def forward(
        self,
        seq: torch.Tensor,
        signals: torch.Tensor,
        rna_feat: torch.Tensor | None = None,
        blacklist: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(y_hat, aux{kl=0}); signals and blacklist are ignored."""
        return self._run(seq, signals, rna_feat, None)


class BaselineSeqSignal(_Predictor):
    """Sequence + signal predictor with no mask (input e_seq + e_sig)."""

    def forward(
        self,
        seq: torch.Tensor,
        signals: torch.Tensor,
        rna_feat: torch.Tensor | None = None,
        blacklist: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(y_hat, aux{kl=0}); the blacklist is ignored."""
        return self._run(seq, signals, rna_feat, None)


class MaskedPredictor(_Predictor):
    """Predictor on (e_seq + e_sig) * m for a fixed 0/1 mask m (MACS-style peaks or Seq2Exp-retrain's top 10%)."""

    def forward(
        self,
        seq: torch.Tensor,
        signals: torch.Tensor,
        rna_feat: torch.Tensor | None = None,
        blacklist: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(y_hat, aux{kl=0, mask}); blacklisted bases are masked out too."""
        if mask is None:
            raise ValueError("MaskedPredictor needs a mask (B, L)")
        if blacklist is not None:
            mask = mask.float() * (~blacklist.bool()).float()
        return self._run(seq, signals, rna_feat, mask)
