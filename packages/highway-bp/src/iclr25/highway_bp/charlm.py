"""Character-level RNN language model with a loss at every step (Fagnou et al., ICLR 2025, arXiv 2501.17086, §5.3,
Table 2 "LSTM×1 / GRU×1 char-level on WikiText-103", Table 5, Fig. 4).

The paper's RNN language models have intermediate losses: 𝓛 = (1/T) Σ_t CE(head(h_t), c_{t+1}), so every
state s_t receives a direct gradient e_t and the Highway-BP iteration (Theorem 2) starts from all of them.
Text comes through the WikiText-103 raw loader (`wiki.{train,valid}.raw`, the 210 most frequent characters plus
unk): point `text_dir` at WikiText-103, or leave it empty to use a corpus that ships with every Python
interpreter (the English documentation topics of `pydoc_data`, ≈ 465k characters), written to a temporary
folder in the loader's format. Bits per character: mean cross-entropy / ln 2 on non-overlapping validation
windows of the training length, each started from s_0 = 0.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from iclr25.highway_bp.data import load_wikitext_chars
from iclr25.highway_bp.rnn import RNN_ALGOS, HighwayRNN, rnn_step
from iclr25.highway_bp.train import lr_factor

LN2 = math.log(2.0)


def shipped_corpus() -> str:
    """The Python documentation topics shipped with the interpreter (`pydoc_data.topics`), in a fixed order."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def write_wikitext_files(text: str, root: str | Path, valid_fraction: float = 0.1) -> Path:
    """Write `text` as `wiki.train.raw` / `wiki.valid.raw` (the last `valid_fraction` of it) under `root`, as new
    files (a file already there is never replaced)."""
    if not 0.0 < valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in (0, 1), got {valid_fraction}")
    from iclr25.shared.files import write_text

    root = Path(root)
    cut = int(len(text) * (1.0 - valid_fraction))
    write_text(root / "wiki.train.raw", text[:cut])
    write_text(root / "wiki.valid.raw", text[cut:])
    return root


def load_char_corpus(text_dir: str = "", vocab_size: int = 210) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(train ids, valid ids, vocabulary) through the WikiText-103 loader; empty `text_dir`: the shipped corpus."""
    if text_dir:
        train, vocab = load_wikitext_chars(text_dir, "train", size=vocab_size)
        valid, _ = load_wikitext_chars(text_dir, "valid", vocab=vocab)
        return train, valid, vocab
    with tempfile.TemporaryDirectory() as tmp:
        root = write_wikitext_files(shipped_corpus(), tmp)
        train, vocab = load_wikitext_chars(root, "train", size=vocab_size)
        valid, _ = load_wikitext_chars(root, "valid", vocab=vocab)
    return train, valid, vocab


class CharLM(nn.Module):
    """Embedding → `HighwayRNN` (GRU or LSTM) → Linear to the vocabulary at every step."""

    def __init__(self, vocab: int, hidden: int = 128, cell: str = "gru", embed: int | None = None) -> None:
        super().__init__()
        if vocab < 2 or hidden < 1:
            raise ValueError(f"vocab must be >= 2 and hidden >= 1, got {vocab}, {hidden}")
        embed = embed or hidden
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = HighwayRNN(embed, hidden, cell)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids: Tensor) -> Tensor:
        """Logits (T, B, V) for character ids (T, B)."""
        return self.head(self.rnn(self.embed(ids)))

    def step(self, ids: Tensor, targets: Tensor, k: int = 0, algo: str = "hbp") -> Tensor:
        """Forward + backward (BPTT, Highway-BP(k) or FPI(k)) of the mean per-step cross-entropy; returns it."""
        if algo not in RNN_ALGOS:
            raise ValueError(f"algo must be one of {', '.join(RNN_ALGOS)}; got {algo!r}")

        def loss_fn(hs: Tensor) -> Tensor:  # hs: (T, B, H); a loss at every step (intermediate losses)
            logits = self.head(hs)
            return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

        return rnn_step(self.rnn, self.embed(ids), loss_fn, k=k, algo=algo)


def random_windows(ids: Tensor, length: int, batch: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """`batch` random windows: inputs (T, B) and next-character targets (T, B)."""
    if len(ids) < length + 2:
        raise ValueError(f"the text ({len(ids)} characters) is shorter than one window of {length + 1}")
    starts = torch.randint(0, len(ids) - length - 1, (batch,), generator=gen)
    rows = ids[starts[:, None] + torch.arange(length + 1)]  # (B, T + 1)
    return rows[:, :-1].T.contiguous(), rows[:, 1:].T.contiguous()


@torch.no_grad()
def bits_per_char(model: CharLM, ids: Tensor, length: int, batch: int = 256, max_windows: int = 0) -> float:
    """Mean cross-entropy in bits per character over non-overlapping windows of `length` (s_0 = 0 in each)."""
    n = (len(ids) - 1) // length
    if max_windows:
        n = min(n, max_windows)
    if n < 1:
        raise ValueError(f"the text ({len(ids)} characters) is shorter than one window of {length + 1}")
    x = ids[: n * length].view(n, length)
    y = ids[1 : n * length + 1].view(n, length)
    model.eval()
    total = 0.0
    for i in range(0, n, batch):
        logits = model(x[i : i + batch].T)
        total += float(
            nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y[i : i + batch].T.reshape(-1), reduction="sum"
            )
        )
    model.train()
    return total / (n * length) / LN2


@dataclass
class LMResult:
    """Outcome of one language-model run."""

    valid_bpc: float
    train_bpc: float  # mean training loss of the last 10% of steps, in bits per character
    step_ms: float  # mean wall time of one step (forward + backward + Adam)
    steps: int


def train_char_lm(
    train_ids: np.ndarray,
    valid_ids: np.ndarray,
    vocab: int,
    *,
    cell: str = "gru",
    algo: str = "bptt",
    k: int = 0,
    hidden: int = 128,
    length: int = 64,
    batch: int = 32,
    steps: int = 300,
    lr: float = 1e-3,
    warmup: int = 0,
    seed: int = 0,
    device: str = "cpu",
    valid_windows: int = 0,
    desc: str = "lm",
) -> LMResult:
    """Train a `CharLM` with Adam (Table 5: lr 1e-3, warmup then cosine decay to 0.1×); return bits per character."""
    from iclr25.highway_bp.models import seeded
    from iclr25.shared.device import Throughput
    from iclr25.shared.progress import progress

    if min(hidden, length, batch, steps) < 1 or lr <= 0:
        raise ValueError("hidden, length, batch and steps must be >= 1 and lr > 0")
    model = seeded(lambda: CharLM(vocab, hidden, cell), seed).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    tr = torch.as_tensor(train_ids)
    meter = Throughput(device=device)
    losses = []
    for step in progress(range(steps), desc=desc, unit="step"):
        x, y = random_windows(tr, length, batch, gen)
        x, y = x.to(device), y.to(device)
        for group in opt.param_groups:
            group["lr"] = lr * lr_factor(step, steps, warmup, "cosine")
        with meter.measure(1):
            opt.zero_grad(set_to_none=True)
            loss = model.step(x, y, k=k, algo=algo)
            opt.step()
        losses.append(float(loss))
    tail = losses[-max(1, steps // 10) :]
    valid = bits_per_char(model, torch.as_tensor(valid_ids).to(device), length, max_windows=valid_windows)
    return LMResult(valid, float(np.mean(tail)) / LN2, 1000 * meter.seconds / max(1, meter.items), steps)
