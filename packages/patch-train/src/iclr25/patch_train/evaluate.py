"""Evaluation of arXiv 2407.12665 (Section 3.1): token-level perplexity and zero-shot multiple choice.

Evaluation is always token-level (K=1): the patch stage's own loss is not comparable with it.
The multiple-choice scorer follows lm-evaluation-harness, which the paper uses: each choice is scored
by the summed log-likelihood of its continuation given the context; `acc` takes the argmax of that sum,
`acc_norm` (the paper's "normalised accuracy") divides it by the continuation's length in bytes.
Task files in their released formats: HellaSwag jsonl (`activity_label`, `ctx_a`/`ctx_b` or `ctx`,
`endings`, `label`; with the harness's context template and markup cleaning), PIQA (`goal`, `sol1`,
`sol2`, `label`) and ARC jsonl (`question.stem`, `question.choices`, `answerKey`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from iclr25.patch_train.patch import patch_forward
from iclr25.shared.safeload import read_jsonl


@torch.no_grad()
def evaluate_nll(
    model: Any, ids: np.ndarray, T: int, n_windows: int | None = None, seed: int = 0, batch_size: int = 0
) -> tuple[float, float]:
    """Token-level NLL (nats/token) and perplexity on non-overlapping T-token windows of `ids`.

    With `n_windows`, a fixed seeded subset of the windows is used. Each window's first token is context
    only, so T-1 predictions per window.
    """
    if T < 2:
        raise ValueError(f"T must be at least 2, got {T}")
    ids = np.asarray(ids, dtype=np.int64)
    n = len(ids) // T
    if n == 0:
        raise ValueError(f"need at least {T} tokens to evaluate, got {len(ids)}")
    windows = ids[: n * T].reshape(n, T)
    if n_windows is not None and n_windows < n:
        windows = windows[np.sort(np.random.default_rng(seed).choice(n, n_windows, replace=False))]
    batch_size = batch_size or max(1, 65_536 // T)  # bounds the (B, T, V) logits
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for start in range(0, len(windows), batch_size):
        batch = torch.from_numpy(windows[start : start + batch_size]).to(device)
        _, loss = patch_forward(model, batch, K=1, labels=batch)
        total += float(loss) * batch.shape[0] * (T - 1)
        count += batch.shape[0] * (T - 1)
    model.train(was_training)
    nll = total / count
    return nll, math.exp(min(nll, 700.0))


@dataclass(frozen=True)
class MCItem:
    """One multiple-choice question: a context, its candidate continuations, the gold index."""

    context: str
    choices: tuple[str, ...]
    label: int


def load_mc_task(path: str | Path, fmt: str = "auto") -> list[MCItem]:
    """Read a multiple-choice task file: "hellaswag", "piqa" or "arc" jsonl ("auto" guesses from the keys)."""
    items = []
    for where, rec in read_jsonl(path, "task file (JSON lines)"):
        kind = fmt if fmt != "auto" else _guess_format(rec)
        try:
            items.append(_mc_item(rec, kind))
        except KeyError as e:
            raise ValueError(f"{where}: {kind} record lacks the field {e.args[0]!r}") from None
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        if not 0 <= items[-1].label < len(items[-1].choices):
            raise ValueError(f"{where}: label {items[-1].label} out of range for {len(items[-1].choices)} choices")
    return items


def _mc_item(rec: dict[str, Any], kind: str) -> MCItem:
    """One task record in its released format as an `MCItem` (KeyError if a field is missing)."""
    if not isinstance(rec, dict):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    if kind == "hellaswag":  # lm-evaluation-harness: "<activity label>: <ctx_a> <Ctx_b>", cleaned
        ctx = rec["ctx_a"] + " " + rec["ctx_b"].capitalize() if "ctx_a" in rec else rec["ctx"]
        if rec.get("activity_label"):
            ctx = rec["activity_label"] + ": " + ctx
        return MCItem(
            _clean_hellaswag(ctx), tuple(" " + _clean_hellaswag(e) for e in rec["endings"]), int(rec["label"])
        )
    if kind == "piqa":
        return MCItem(f"Question: {rec['goal']}\nAnswer:", (" " + rec["sol1"], " " + rec["sol2"]), int(rec["label"]))
    if kind == "arc":
        q = rec["question"]
        labels = [c["label"] for c in q["choices"]]
        if rec["answerKey"] not in labels:
            raise ValueError(f"answerKey {rec['answerKey']!r} is not one of {labels}")
        return MCItem(
            f"Question: {q['stem']}\nAnswer:",
            tuple(" " + c["text"] for c in q["choices"]),
            labels.index(rec["answerKey"]),
        )
    raise ValueError(f"unknown task format {kind!r}; allowed: hellaswag, piqa, arc")


def _clean_hellaswag(text: str) -> str:
    """HellaSwag's WikiHow markup removed as lm-evaluation-harness does: " [title]" -> ". ", no [tags]."""
    text = text.strip().replace(" [title]", ". ")
    return re.sub(r"\[.*?\]", "", text).replace("  ", " ")


def _guess_format(rec: Any) -> str:
    if not isinstance(rec, dict):
        return "unknown"
    if "endings" in rec:
        return "hellaswag"
    if "sol1" in rec:
        return "piqa"
    if "question" in rec and "answerKey" in rec:
        return "arc"
    return "unknown"


@torch.no_grad()
def continuation_logprob(model: Any, tokenizer: Any, context: str, continuation: str, max_len: int) -> float:
    """Summed log-probability of `continuation`'s tokens after `context` (separator token first), K=1."""
    ctx = [tokenizer.bos_id, *tokenizer.encode(context)]
    cont = tokenizer.encode(continuation)
    if not cont:
        raise ValueError("empty continuation")
    ids = (ctx + cont)[-max_len:]
    n_cont = min(len(cont), len(ids) - 1)
    device = next(model.parameters()).device
    x = torch.tensor([ids], device=device)
    logits, _ = patch_forward(model, x, K=1)
    logp = F.log_softmax(logits[0, :-1].float(), dim=-1)  # (L-1, V)
    targets = x[0, 1:]
    return float(logp[-n_cont:].gather(1, targets[-n_cont:, None]).sum())


def score_multiple_choice(model: Any, tokenizer: Any, items: list[MCItem], max_len: int = 2048) -> dict[str, float]:
    """Zero-shot accuracy (`acc`) and byte-length-normalised accuracy (`acc_norm`) as lm-eval-harness."""
    if not items:
        raise ValueError("no multiple-choice items to score")
    was_training = model.training
    model.eval()
    acc = acc_norm = 0
    for item in items:
        scores = [continuation_logprob(model, tokenizer, item.context, c, max_len) for c in item.choices]
        norm = [s / len(c.encode("utf-8")) for s, c in zip(scores, item.choices, strict=True)]
        acc += int(np.argmax(scores)) == item.label
        acc_norm += int(np.argmax(norm)) == item.label
    model.train(was_training)
    return {"acc": acc / len(items), "acc_norm": acc_norm / len(items), "n": float(len(items))}
