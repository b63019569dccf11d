"""Measurements (spec §3.1): training loss, seen-topic new-sequence loss, unseen-topic loss, G_seq, G_top and the
ICL curve R_ICL(t) (loss at prediction index t = number of observed states - 1), and GINC ICL accuracy."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from iclr25.icl_emergence.baselines import per_position_mse


@torch.no_grad()
def predict(model: nn.Module, seqs: Tensor, chunk: int = 1024, device: str = "cpu") -> Tensor:
    """Model predictions for every next state of (..., T, d) sequences: (..., T-1, d) float64. Inputs take the
    model's floating dtype (float32 unless a `--precision` such as 64-true converted it)."""
    model.eval()
    flat = seqs.reshape(-1, *seqs.shape[-2:])
    dtype = next(model.parameters()).dtype
    outs = [model(flat[i : i + chunk, :-1].to(device, dtype)).double().cpu() for i in range(0, len(flat), chunk)]
    return torch.cat(outs).reshape(*seqs.shape[:-2], seqs.shape[-2] - 1, seqs.shape[-1])


def late_start(T: int) -> int:
    """First "late" prediction index: floor((T - 1) / 2) (issue: late = mean over t >= floor((T-1)/2))."""
    return (T - 1) // 2


def loss_curve(model: nn.Module, seqs: Tensor, device: str = "cpu") -> Tensor:
    """Mean squared error per prediction index t: (T-1,)."""
    return per_position_mse(predict(model, seqs, device=device), seqs.double())


def generalization_report(
    model: nn.Module, train: Tensor, seen: Tensor, unseen: Tensor, device: str = "cpu"
) -> dict[str, Any]:
    """train_loss, seen_new_seq_loss, unseen_topic_loss (means over all T-1 positions, spec §3.1), their late
    versions, G_seq = L_seq - L_hat, G_top = L - L_seq (both also late) and the ICL curve on unseen topics."""
    curves = {name: loss_curve(model, x, device) for name, x in (("train", train), ("seen", seen), ("unseen", unseen))}
    late = late_start(unseen.shape[-2])
    out: dict[str, Any] = {}
    for name, c in curves.items():
        out[f"{name}_loss"] = float(c.mean())
        out[f"{name}_late"] = float(c[late:].mean())
    out["G_seq"] = out["seen_loss"] - out["train_loss"]
    out["G_top"] = out["unseen_loss"] - out["seen_loss"]
    out["G_seq_late"] = out["seen_late"] - out["train_late"]
    out["G_top_late"] = out["unseen_late"] - out["seen_late"]
    out["icl_curve"] = curves["unseen"].tolist()
    out["seen_curve"] = curves["seen"].tolist()
    return out


@torch.no_grad()
def next_token_logits(model: nn.Module, prompts: list[list[int]], device: str = "cpu") -> np.ndarray:
    """Logits of the token after each prompt (prompts of any lengths, run one length-group at a time): (P, V)."""
    model.eval()
    out = np.zeros((len(prompts), model.vocab_size))
    by_len: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        by_len.setdefault(len(p), []).append(i)
    for _length, idx in by_len.items():
        x = torch.tensor([prompts[i][-model.max_len :] for i in idx], dtype=torch.long, device=device)
        out[idx] = model(x)[:, -1].double().cpu().numpy()
    return out


def icl_accuracy(model: nn.Module, prompts: list[list[int]], labels: Any, device: str = "cpu") -> float:
    """Argmax next-token accuracy of `model` on token prompts against the Bayes-argmax labels."""
    logits = next_token_logits(model, prompts, device)
    return float((logits.argmax(-1) == np.asarray(labels)).mean())
