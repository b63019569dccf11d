"""Baselines of Table 3 of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through Negative
Eigenvalues" (ICLR 2025, arXiv 2411.12537), and `build_model`, which builds any model by name.

- `LSTMModel`: a non-linear RNN reference (the paper uses sLSTM; `torch.nn.LSTM` is our stand-in, spec §4).
- `TransformerModel`: a causal Transformer with learned absolute positions (the official repository has no
  Transformer config; this recipe is a project choice, spec §4).
- The key ablation, the same LRNN with the [0, 1] range, is `models.LRNNForSequenceTasks(eig_range="[0,1]")`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from iclr25.lrnn_state_tracking.models import MIXERS, Figure1Model, LRNNForSequenceTasks


class LSTMModel(nn.Module):
    """Embedding → multi-layer LSTM → linear head."""

    def __init__(self, vocab_size: int, d_model: int = 128, n_layers: int = 2) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.lstm = nn.LSTM(d_model, d_model, num_layers=n_layers, batch_first=True)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: Tensor) -> Tensor:
        """(B, T) token ids -> logits (B, T, V)."""
        return self.head(self.lstm(self.embedding(tokens))[0])


class TransformerModel(nn.Module):
    """Causal pre-norm Transformer with learned positions up to `max_len`."""

    def __init__(
        self, vocab_size: int, d_model: int = 128, n_layers: int = 2, n_heads: int = 4, max_len: int = 256
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, n_heads, 4 * d_model, dropout=0.0, batch_first=True, norm_first=True, activation="gelu"
        )
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.max_len = max_len

    def forward(self, tokens: Tensor) -> Tensor:
        """(B, T) token ids -> logits (B, T, V); T must be <= max_len."""
        T = tokens.shape[1]
        if self.max_len < T:
            raise ValueError(f"sequence length {T} exceeds the Transformer's max_len {self.max_len}")
        x = self.embedding(tokens) + self.pos(torch.arange(T, device=tokens.device))
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=tokens.device)
        return self.head(self.norm(self.encoder(x, mask=mask, is_causal=True)))


ALL_MODELS = ("figure1", *MIXERS, "lstm", "transformer")


def build_model(
    name: str,
    vocab_size: int,
    d_model: int = 128,
    n_layers: int = 2,
    n_heads: int = 4,
    eig_range: str = "[-1,1]",
    **kwargs: object,
) -> nn.Module:
    """Any model of this package by name: figure1, deltanet, mamba, diagonal, fullmatrix, lstm, transformer."""
    if name == "figure1":
        return Figure1Model(vocab_size, d_model, eig_range)
    if name == "fullmatrix":  # the official one-block `simple_recurrent` model with the `full_matrix` layer
        return Figure1Model(vocab_size, d_model, eig_range, layer="fullmatrix")
    if name in MIXERS:
        return LRNNForSequenceTasks(vocab_size, d_model, n_layers, name, eig_range, n_heads, **kwargs)
    if name == "lstm":
        return LSTMModel(vocab_size, d_model, n_layers)
    if name == "transformer":
        return TransformerModel(vocab_size, d_model, n_layers, n_heads)
    raise ValueError(f"model must be one of {', '.join(ALL_MODELS)}; got {name!r}")
