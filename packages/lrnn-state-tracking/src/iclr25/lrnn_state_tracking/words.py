"""S5 word problems (§5.2, Fig. 4) of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through Negative
Eigenvalues" (ICLR 2025, arXiv 2411.12537): train a model to output the prefix product of a sequence of S5 elements
(every position supervised), then measure sequence accuracy (all positions up to t correct) against length t.

The S5 training code of the paper (Merrill et al.'s `word-problem`) is not in the official repository; the protocol here
follows the paper's description: fixed training length, longer test sequences, cross-entropy on every position.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25.lrnn_state_tracking.baselines import build_model
from iclr25.lrnn_state_tracking.config import WordConfig
from iclr25.lrnn_state_tracking.data import word_problem

S5_ORDER = 120


@dataclass
class WordResult:
    """A trained word-problem model, its loss history and training throughput."""

    model: nn.Module
    config: WordConfig
    history: list[dict[str, float]]
    tokens_per_s: float


def make_word_model(cfg: WordConfig) -> nn.Module:
    """The model a config names, over the 120 S5 elements (input and output vocabulary)."""
    kwargs: dict[str, Any] = {"use_short_conv": cfg.use_short_conv} if cfg.model == "deltanet" else {}
    return build_model(cfg.model, S5_ORDER, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.eig_range, **kwargs)


def _lr(step: int, cfg: WordConfig) -> float:
    if cfg.warmup and step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (1e-3 + (1 - 1e-3) * 0.5 * (1 + math.cos(math.pi * progress)))


def train_words(cfg: WordConfig, device: str = "cpu", log_every: int = 0) -> WordResult:
    """Train on fresh batches of length `train_len`, cross-entropy on every position's prefix product, AdamW."""
    from iclr25.shared.progress import progress

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng([cfg.seed, 3])
    model = make_word_model(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    history: list[dict[str, float]] = []
    start = time.perf_counter()
    model.train()
    for step in progress(range(cfg.steps), desc=f"s5 {cfg.subset} {cfg.model} {cfg.eig_range}", unit="step"):
        for group in opt.param_groups:
            group["lr"] = _lr(step, cfg)
        x, y = word_problem(cfg.batch_size, cfg.train_len, cfg.subset, rng)
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if log_every and (step + 1) % log_every == 0:
            acc = (logits.argmax(-1) == y).float().mean().item()
            history.append({"step": step + 1, "loss": loss.item(), "token_accuracy": acc})
    seconds = time.perf_counter() - start
    return WordResult(model, cfg, history, cfg.steps * cfg.batch_size * cfg.train_len / max(seconds, 1e-9))


@torch.no_grad()
def sequence_accuracy(
    model: nn.Module, subset: str, n: int, length: int, seed: int = 12_345, device: str = "cpu", batch_size: int = 256
) -> np.ndarray:
    """acc[t-1] = fraction of `n` test sequences whose predictions at positions 1..t are all correct (Fig. 4)."""
    rng = np.random.default_rng(seed)
    was_training = model.training
    model.eval()
    prefix_ok = []
    for start in range(0, n, batch_size):
        x, y = word_problem(min(batch_size, n - start), length, subset, rng)
        ok = (model(x.to(device)).argmax(-1) == y.to(device)).cpu()
        prefix_ok.append(torch.cummin(ok.int(), dim=1).values)  # 1 while every position so far is right
    model.train(was_training)
    return torch.cat(prefix_ok).float().mean(0).numpy()


def evaluate_words(result: WordResult, device: str = "cpu") -> dict[str, Any]:
    """Sequence accuracy at the training length, at twice it and at the test length, plus the whole curve."""
    cfg = result.config
    curve = sequence_accuracy(result.model, cfg.subset, cfg.eval_n, cfg.test_len, cfg.eval_seed, device)
    step = 4 if cfg.subset == "4tokens" else 1  # one S5 element is 4 tokens there

    def at(t: int) -> float:
        t = max(step, min(cfg.test_len, t) // step * step)
        return float(curve[t - 1])

    return {
        "seq_acc_train_len": at(cfg.train_len),
        "seq_acc_2x_train_len": at(2 * cfg.train_len),
        "seq_acc_test_len": at(cfg.test_len),
        "curve": curve.tolist(),
    }
