"""Slow, obviously-correct forms that the fast code of this package is tested against.

Loop forms of: CBM (spec 3.5, the algorithm of arXiv 2403.14705 written with dicts), the codebook channel's word
choice and losses (spec 3.3), the Receiver's AND rule, and the game constraints (spec 3.2). Imports nothing from
the modules it checks.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import torch
from torch import Tensor


def cbm_reference(
    samples: Sequence[tuple[Sequence[Hashable], Sequence[Hashable]]], words_eos: bool = False
) -> dict[str, Any]:
    """CBM by explicit counting loops and a dict mapping (ties broken by first appearance, as the fast form)."""
    from scipy.optimize import linear_sum_assignment

    data = [(list(w)[:-1] if words_eos else list(w), list(c)) for w, c in samples]
    word_ids: list[Hashable] = []
    cpt_ids: list[Hashable] = []
    counter: dict[tuple[Hashable, Hashable], int] = {}
    for words, concepts in data:
        for w in words:
            for c in concepts:
                if w not in word_ids:
                    word_ids.append(w)
                if c not in cpt_ids:
                    cpt_ids.append(c)
                counter[(w, c)] = counter.get((w, c), 0) + 1
    cost = [[-counter.get((w, c), 0) for c in cpt_ids] for w in word_ids]
    rows, cols = linear_sum_assignment(cost)
    mapping = {word_ids[r]: cpt_ids[c] for r, c in zip(rows, cols, strict=True) if cost[r][c] != 0}
    total = good = ambiguous = paraphrase = unmatched = n_concepts = 0
    precision, recall = [], []
    for words, concepts in data:
        total += max(len(words), len(concepts))
        good_words = set()
        for w in words:
            if w in mapping:
                if mapping[w] in concepts:
                    good += 1
                    good_words.add(w)
                else:
                    ambiguous += 1
            else:
                paraphrase += 1
        precision.append(len(good_words) / len(words))
        recall.append(len(good_words) / len(concepts))
        for c in concepts:
            n_concepts += 1
            if cpt_ids.index(c) not in list(cols):
                unmatched += 1
    return {
        "match": good / total,
        "precision": sum(precision) / len(precision),
        "recall": sum(recall) / len(recall),
        "ambiguous": ambiguous / total,
        "paraphrase": paraphrase / total,
        "unmatched_concepts": unmatched / n_concepts,
        "total_edges": total,
        "good_edges": good,
        "mapping": mapping,
    }


def nearest_codewords_reference(z: Tensor, codebook: Tensor, n_words: int) -> list[list[int]]:
    """Per row of z, the indices of the n_words nearest codebook rows (nearest first), by a Python loop."""
    out = []
    for row in z:
        d = [float(((row - e) ** 2).sum()) for e in codebook]
        out.append(sorted(range(len(d)), key=lambda k: d[k])[:n_words])
    return out


def vq_losses_reference(z: Tensor, codebook: Tensor, words: list[list[int]]) -> tuple[float, float]:
    """(codebook loss, commitment loss) values: mean over rows of sum over words of ||z - e_k||^2 (equal in value)."""
    total = 0.0
    for row, ws in zip(z, words, strict=True):
        total += sum(float(((row - codebook[k]) ** 2).sum()) for k in ws)
    value = total / len(z)
    return value, value


def and_receiver_reference(scores: Tensor) -> Tensor:
    """P_j = prod_w sigma(s_wj) for scores (B, n_words, n_c), by loops."""
    scores = scores.detach()
    b, n, c = scores.shape
    out = torch.empty(b, c, dtype=scores.dtype)
    for i in range(b):
        for j in range(c):
            p = 1.0
            for w in range(n):
                p *= 1.0 / (1.0 + math.exp(-float(scores[i, w, j])))
            out[i, j] = p
    return out


def violated_fvps(combo: Sequence[int], phrase: dict[int, int]) -> int:
    """How many FVPs of a phrase {attribute: value} a combination (value per attribute) violates."""
    return sum(combo[a] != v for a, v in phrase.items())
