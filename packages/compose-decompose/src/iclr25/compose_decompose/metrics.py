"""Metrics of CtD (arXiv 2601.10169; spec 3.5): accuracy, AMI, Concept-Best-Matching (CBM), PosDis/BosDis, TopSim.

CBM follows Carmeli, Belinkov & Meir 2024 (arXiv 2403.14705) and its reference code (bcarmeli/cbm): count a
(word occurrence, concept) edge for every word of a message and every concept of its phrase; a maximum-weight
bipartite matching (Hungarian, rectangular) between words and concepts; each word occurrence is good (matched to a
concept of its phrase), ambiguous (matched elsewhere) or a paraphrase (unmatched); match = good / sum over samples of
max(#words, #concepts). PosDis/BosDis follow Chaabouni et al. 2020. Numpy/scipy/scikit-learn only.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np


def game_accuracy(predictions: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(game accuracy: every candidate right, per-candidate accuracy) for (N, n_c) predictions and labels."""
    correct = np.asarray(predictions).astype(bool) == np.asarray(labels).astype(bool)
    return float(correct.all(1).mean()), float(correct.mean())


def ami(messages: Sequence[Hashable], phrases: Sequence[Hashable]) -> float:
    """Adjusted mutual information between message strings and phrase strings (scikit-learn)."""
    from sklearn.metrics import adjusted_mutual_info_score

    if len(messages) != len(phrases) or not len(messages):
        raise ValueError("need as many messages as phrases, at least one")
    return float(adjusted_mutual_info_score([str(m) for m in phrases], [str(m) for m in messages]))


def _index(seqs: Sequence[Sequence[Hashable]]) -> tuple[list[Hashable], np.ndarray, np.ndarray]:
    """Codes in order of first appearance: (names, flat codes, sample id of each code)."""
    table: dict[Hashable, int] = {}
    codes, owner = [], []
    for i, seq in enumerate(seqs):
        for item in seq:
            codes.append(table.setdefault(item, len(table)))
            owner.append(i)
    return list(table), np.asarray(codes, dtype=np.int64), np.asarray(owner, dtype=np.int64)


def concept_best_match(
    samples: Sequence[tuple[Sequence[Hashable], Sequence[Hashable]]], words_eos: bool = False
) -> dict[str, Any]:
    """CBM of (message words, phrase concepts) samples; `words_eos` strips each message's last word (reference default).

    Returns match, precision, recall, ambiguous, paraphrase and unmatched-concept scores, edge counts and the
    word -> concept mapping (pairs with zero count dropped).
    """
    from scipy.optimize import linear_sum_assignment

    if not samples:
        raise ValueError("CBM needs at least one sample")
    words = [list(w)[:-1] if words_eos else list(w) for w, _ in samples]
    concepts = [list(c) for _, c in samples]
    if any(not w for w in words) or any(not c for c in concepts):
        raise ValueError("every sample needs at least one word (after EOS removal) and one concept")
    n = len(samples)
    wn, wc, wo = _index(words)
    cn, cc, co = _index(concepts)
    n_w = np.bincount(wo, minlength=n)
    n_c = np.bincount(co, minlength=n)
    # every word occurrence x every concept of its sample: count n(w, c)
    starts_c = np.concatenate([[0], np.cumsum(n_c)[:-1]])
    rep = n_c[wo]  # concepts per word occurrence
    pair_w = np.repeat(wc, rep)
    offs = np.arange(rep.sum()) - np.repeat(np.cumsum(rep) - rep, rep)
    pair_c = cc[np.repeat(starts_c[wo], rep) + offs]
    counts = np.zeros((len(wn), len(cn)), dtype=np.int64)
    np.add.at(counts, (pair_w, pair_c), 1)
    rows, cols = linear_sum_assignment(-counts)
    keep = counts[rows, cols] > 0
    word2cpt = np.full(len(wn), -1, dtype=np.int64)
    word2cpt[rows[keep]] = cols[keep]
    # classify word occurrences: good if the matched concept is in the sample's phrase
    in_phrase = np.zeros((n, len(cn)), dtype=bool)
    in_phrase[co, cc] = True
    matched = word2cpt[wc]
    good = (matched >= 0) & in_phrase[wo, np.maximum(matched, 0)]
    ambiguous = (matched >= 0) & ~good
    total_edges = int(np.maximum(n_w, n_c).sum())
    distinct_good = np.unique(wo[good] * len(wn) + wc[good]) // len(wn) if good.any() else np.zeros(0, np.int64)
    good_per = np.bincount(distinct_good, minlength=n)
    unmatched = ~np.isin(cc, cols)
    return {
        "match": float(good.sum() / total_edges),
        "precision": float(np.mean(good_per / n_w)),
        "recall": float(np.mean(good_per / n_c)),
        "ambiguous": float(ambiguous.sum() / total_edges),
        "paraphrase": float((matched < 0).sum() / total_edges),
        "unmatched_concepts": float(unmatched.mean()),
        "total_edges": total_edges,
        "good_edges": int(good.sum()),
        "unique_words": len(wn),
        "unique_concepts": len(cn),
        "mapping": {wn[r]: cn[c] for r, c, k in zip(rows, cols, keep, strict=True) if k},
    }


def _entropy(x: np.ndarray) -> float:
    _, counts = np.unique(x, return_counts=True, axis=0)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def mutual_info(x: np.ndarray, y: np.ndarray) -> float:
    """I(x; y) in nats for discrete 1-D arrays."""
    return _entropy(x) + _entropy(y) - _entropy(np.stack([x, y], 1))


def _disentanglement(features: np.ndarray, attributes: np.ndarray) -> float:
    scores = []
    for j in range(features.shape[1]):
        h = _entropy(features[:, j])
        if h <= 1e-12:
            continue
        mi = sorted((mutual_info(features[:, j], attributes[:, a]) for a in range(attributes.shape[1])), reverse=True)
        scores.append((mi[0] - (mi[1] if len(mi) > 1 else 0.0)) / h)
    return float(np.mean(scores)) if scores else 0.0


def posdis(messages: np.ndarray, attributes: np.ndarray) -> float:
    """Positional disentanglement: mean over positions j of (I(s_j; a_1) - I(s_j; a_2)) / H(s_j)."""
    return _disentanglement(np.asarray(messages), np.asarray(attributes))


def bosdis(messages: np.ndarray, attributes: np.ndarray, vocab: int | None = None) -> float:
    """Bag-of-symbols disentanglement: the same over symbol counts n_v (order-free)."""
    messages = np.asarray(messages)
    vocab = int(messages.max()) + 1 if vocab is None else vocab
    counts = np.stack([(messages == v).sum(1) for v in range(vocab)], 1)  # (N, V)
    return _disentanglement(counts, np.asarray(attributes))


def _edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def topsim(messages: np.ndarray, attributes: np.ndarray, max_n: int = 200, seed: int = 0) -> float:
    """Topographic similarity: Spearman between message edit distance and meaning Hamming distance (<= max_n rows)."""
    from scipy.stats import spearmanr

    messages, attributes = np.asarray(messages), np.asarray(attributes)
    if len(messages) > max_n:
        keep = np.random.default_rng(seed).choice(len(messages), max_n, replace=False)
        messages, attributes = messages[keep], attributes[keep]
    iu = np.triu_indices(len(messages), 1)
    meaning = (attributes[:, None] != attributes[None]).sum(-1)[iu]
    msg = np.array([_edit_distance(messages[i], messages[j]) for i, j in zip(*iu, strict=True)])
    if np.ptp(msg) == 0 or np.ptp(meaning) == 0:
        return 0.0
    return float(spearmanr(msg, meaning).statistic)


def exact_word_set_rate(words: np.ndarray, phrases: np.ndarray, concept_to_word: dict[int, int]) -> float:
    """Fraction of messages whose word set equals the Decompose codewords of their phrase's FVPs."""
    hits = [
        set(map(int, w)) == {concept_to_word.get(int(c), -1) for c in p}
        for w, p in zip(np.asarray(words), np.asarray(phrases), strict=True)
    ]
    return float(np.mean(hits)) if hits else 0.0
