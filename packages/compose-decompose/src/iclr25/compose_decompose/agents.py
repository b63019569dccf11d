"""Sender, Receiver and the multi-target game of CtD (arXiv 2601.10169; spec section 3.3).

The paper's agent architecture is not public; this is the spec's reconstruction, every choice a switch:
- encoders: a small CNN for images, an MLP (in -> 64 tanh -> h) for symbolic inputs; Sender and Receiver have their
  own;
- Sender `single`: mean-pool the target embeddings -> tanh -> Linear -> one vector z (B, d); the channel turns it into
  |p| words (message length = phrase size). Sender `slots`: L = m per-position heads, one word each;
- Receiver: per word w and candidate j, s_wj = <W e_w, c_j> / sqrt(h) + b; `and`: P_j = prod_w sigma(s_wj) (logical
  AND; sigma(s) for one word), `sum`: sigma(sum_w s_wj), `gru`: a GRU message encoder then one score;
- game loss L_game = mean_j BCE(P_j, y_j); total loss L_game + channel loss (spec 3.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from iclr25.compose_decompose.codebook import ChannelOutput

LOG_HALF = math.log(0.5)


class ImageEncoder(nn.Module):
    """Small CNN: conv 4x4 stride 4 -> ReLU -> conv 3x3 stride 2 -> ReLU -> Linear(h) -> ReLU."""

    def __init__(self, input_shape: tuple[int, ...], hidden: int = 64, width: int = 16) -> None:
        super().__init__()
        c, hh, ww = input_shape
        k = 4 if min(hh, ww) >= 16 else 2
        self.conv = nn.Sequential(
            nn.Conv2d(c, width, k, stride=k),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            n = self.conv(torch.zeros(1, *input_shape)).shape[1]
        self.out = nn.Sequential(nn.Linear(n, hidden), nn.ReLU())
        self.hidden = hidden

    def forward(self, x: Tensor) -> Tensor:
        """(..., C, H, W) -> (..., hidden)."""
        lead = x.shape[:-3]
        return self.out(self.conv(x.reshape(-1, *x.shape[-3:]))).reshape(*lead, self.hidden)


class VectorEncoder(nn.Module):
    """MLP for symbolic inputs: Linear(in, 64) -> tanh -> Linear(64, hidden) (the spec's pilot encoder)."""

    def __init__(self, in_dim: int, hidden: int = 64, width: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, width), nn.Tanh(), nn.Linear(width, hidden))
        self.hidden = hidden

    def forward(self, x: Tensor) -> Tensor:
        """(..., in_dim) -> (..., hidden)."""
        return self.net(x)


def make_encoder(input_shape: tuple[int, ...], hidden: int = 64) -> nn.Module:
    """CNN for (C, H, W) inputs, MLP for (D,) inputs."""
    if len(input_shape) == 3:
        return ImageEncoder(input_shape, hidden)
    if len(input_shape) == 1:
        return VectorEncoder(input_shape[0], hidden)
    raise ValueError(f"inputs must be (C, H, W) images or (D,) vectors, got shape {input_shape}")


class Sender(nn.Module):
    """Targets (B, n_t, ...) -> z: (B, d) for kind='single', (B, L, d) for kind='slots'."""

    def __init__(self, encoder: nn.Module, dim: int, kind: str = "single", slots: int = 3) -> None:
        super().__init__()
        if kind not in ("single", "slots"):
            raise ValueError(f"sender kind must be 'single' or 'slots', got {kind!r}")
        self.encoder, self.dim, self.kind, self.slots = encoder, dim, kind, slots
        self.head = nn.Linear(encoder.hidden, dim * (slots if kind == "slots" else 1))

    def forward(self, targets: Tensor) -> Tensor:
        """Mean-pool target embeddings -> tanh -> Linear."""
        pooled = torch.tanh(self.encoder(targets).mean(1))  # (B, h)
        z = self.head(pooled)
        return z.view(-1, self.slots, self.dim) if self.kind == "slots" else z


class Receiver(nn.Module):
    """Scores each candidate against the message words; returns (log P_j, log(1 - P_j)), each (B, n_c)."""

    def __init__(self, encoder: nn.Module, msg_dim: int, combine: str = "and") -> None:
        super().__init__()
        if combine not in ("and", "sum", "gru"):
            raise ValueError(f"combine must be 'and', 'sum' or 'gru', got {combine!r}")
        self.encoder, self.combine = encoder, combine
        h = encoder.hidden
        self.W = nn.Linear(msg_dim if combine != "gru" else h, h, bias=False)
        self.b = nn.Parameter(torch.zeros(()))
        self.gru = nn.GRU(msg_dim, h, batch_first=True) if combine == "gru" else None
        self.scale = 1.0 / math.sqrt(h)

    def word_scores(self, vectors: Tensor, candidates: Tensor) -> Tensor:
        """s_wj = <W e_w, c_j> / sqrt(h) + b, (B, n_words, n_c) (spec 3.3)."""
        c = self.encoder(candidates)  # (B, n_c, h)
        return torch.einsum("bwh,bjh->bwj", self.W(vectors), c) * self.scale + self.b

    def forward(self, vectors: Tensor, candidates: Tensor) -> tuple[Tensor, Tensor]:
        """Message vectors (B, n, msg_dim), candidates (B, n_c, ...) -> (log P, log(1 - P)) per candidate."""
        if self.combine == "gru":
            _, hidden = self.gru(vectors)  # (1, B, h)
            s = self.word_scores(hidden.transpose(0, 1), candidates)[:, 0]  # GRU weights act as W on the summary
            return F.logsigmoid(s), F.logsigmoid(-s)
        s = self.word_scores(vectors, candidates)  # (B, n, n_c)
        if self.combine == "sum":
            s = s.sum(1)
            return F.logsigmoid(s), F.logsigmoid(-s)
        log_p = F.logsigmoid(s).sum(1)  # AND: log prod_w sigma(s_wj)
        return log_p, log1mexp(log_p)


def log1mexp(x: Tensor) -> Tensor:
    """log(1 - exp(x)) for x <= 0, numerically stable (Maechler 2012)."""
    x = x.clamp(max=-1e-7)
    return torch.where(x > -math.log(2), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def bce_from_logs(log_p: Tensor, log_1mp: Tensor, labels: Tensor) -> Tensor:
    """mean_j BCE(P_j, y_j) from log P and log(1 - P)."""
    return -(labels * log_p + (1 - labels) * log_1mp).mean()


@dataclass
class GameOutput:
    """One forward pass of the game."""

    loss: Tensor
    game_loss: Tensor
    channel: ChannelOutput
    z: Tensor
    log_p: Tensor  # (B, n_c)
    predictions: Tensor  # (B, n_c) bool, P_j > 0.5


class MultiTargetGame(nn.Module):
    """Sender -> channel -> Receiver on a batch of multi-target games (spec 3.2-3.4)."""

    def __init__(self, sender: Sender, channel: nn.Module, receiver: Receiver) -> None:
        super().__init__()
        self.sender, self.channel, self.receiver = sender, channel, receiver

    def channel_noise(self, batch: int) -> Tensor | None:
        """The channel's training noise for `batch` games as its forward pass draws it (torch's global RNG), one
        row per game: (batch, rows, vocab) uniforms for the GS channel (rows: the Sender's slots, else 1); None for
        the noise-free channels. Given back to `forward(..., noise=)` (e.g. a slice of a batch that several processes
        share), it replaces the channel's own draw."""
        from iclr25.compose_decompose.baselines import GumbelChannel

        if not isinstance(self.channel, GumbelChannel) or not self.training:
            return None
        rows = self.sender.slots if self.sender.kind == "slots" else 1
        return torch.rand(batch, rows, self.channel.vocab)

    def message(self, targets: Tensor, n_words: int, noise: Tensor | None = None) -> tuple[Tensor, ChannelOutput]:
        """z and the channel's words for the targets (n_words per message; slots: one word per slot)."""
        z = self.sender(targets)
        given = {} if noise is None else {"noise": noise.reshape(-1, noise.shape[-1])}
        if self.sender.kind == "slots":
            b, L, d = z.shape
            out = self.channel(z.reshape(b * L, d), 1, **given)
            words, vecs = out.words.view(b, L), out.vectors.view(b, L, -1)
            return z, ChannelOutput(words, vecs, out.loss * L, out.logs)
        return z, self.channel(z, n_words, **given)

    def forward(
        self,
        targets: Tensor,
        candidates: Tensor,
        labels: Tensor,
        n_words: int = 1,
        zero_message: bool = False,
        noise: Tensor | None = None,
    ) -> GameOutput:
        """Play the games; `zero_message` replaces the message vectors by zeros (the no-communication control);
        `noise`: the channel's training noise (`channel_noise`) instead of its own draw."""
        z, out = self.message(targets, n_words, noise)
        vectors = torch.zeros_like(out.vectors) if zero_message else out.vectors
        log_p, log_1mp = self.receiver(vectors, candidates)
        game_loss = bce_from_logs(log_p, log_1mp, labels)
        return GameOutput(
            loss=game_loss + out.loss,
            game_loss=game_loss,
            channel=out,
            z=z,
            log_p=log_p,
            predictions=log_p > LOG_HALF,
        )
