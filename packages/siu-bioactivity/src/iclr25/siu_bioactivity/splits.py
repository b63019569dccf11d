"""Protein-level non-homology splits and molecule de-duplication (spec §3.2).

SIU's "0.6"/"0.9" splits: every test protein has sequence identity below the threshold to every training protein.
The paper does not say how identity is computed; the default here is a global-alignment identity (identical aligned
positions of an optimal alignment, match 1 / mismatch 0 / free gaps, over the longer sequence), and any callable
can replace it. Whole proteins, hence whole pockets, go to one side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from iclr25.siu_bioactivity.formats import parse_source


def sequence_identity(a: str, b: str) -> float:
    """Global-alignment identity = LCS(a, b) / max(len a, len b) (optimal alignment with match 1, mismatch 0, no
    gap cost), computed row by row with a vectorised running maximum."""
    if not a or not b:
        return 0.0
    x = np.frombuffer(a.encode(), dtype=np.uint8)
    y = np.frombuffer(b.encode(), dtype=np.uint8)
    prev = np.zeros(len(y) + 1, dtype=np.int64)
    for c in x:
        diag = prev[:-1] + (y == c)
        cur = np.maximum(prev[1:], diag)  # up or diagonal
        cur = np.maximum.accumulate(np.r_[0, cur])  # left moves are free: a running maximum along the row
        prev = cur
    return float(prev[-1]) / max(len(a), len(b))


def split_by_protein_identity(
    records: Sequence[Mapping[str, Any]],
    seq_of: Mapping[str, str] | Callable[[str], str],
    threshold: float = 0.6,
    *,
    test_fraction: float = 0.1,
    valid_fraction: float = 0.1,
    seed: int = 0,
    identity: Callable[[str, str], float] = sequence_identity,
) -> tuple[list[int], list[int], list[int]]:
    """(train, valid, test) record indices. Proteins (UniProt of `source_data`) linked by identity >= `threshold`
    form clusters (single linkage); whole clusters are assigned, in random order, to test, then valid, then train,
    so no test (or valid) protein reaches `threshold` identity with any training protein and every pocket's
    molecules stay on one side."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
    get = seq_of if callable(seq_of) else seq_of.__getitem__
    proteins = sorted({parse_source(r["source_data"])[0] for r in records})
    seqs = [get(p) for p in proteins]
    parent = list(range(len(proteins)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(proteins)):
        for j in range(i + 1, len(proteins)):
            if find(i) != find(j) and identity(seqs[i], seqs[j]) >= threshold:
                parent[find(i)] = find(j)
    clusters: dict[int, list[str]] = {}
    for i, p in enumerate(proteins):
        clusters.setdefault(find(i), []).append(p)
    groups = list(clusters.values())
    np.random.default_rng(seed).shuffle(groups)
    counts: dict[str, int] = {}
    for r in records:
        u = parse_source(r["source_data"])[0]
        counts[u] = counts.get(u, 0) + 1
    total = len(records)
    side: dict[str, str] = {}
    n_test = n_valid = 0
    for g in groups:
        size = sum(counts[p] for p in g)
        if n_test < test_fraction * total:
            where, n_test = "test", n_test + size
        elif n_valid < valid_fraction * total:
            where, n_valid = "valid", n_valid + size
        else:
            where = "train"
        for p in g:
            side[p] = where
    out: dict[str, list[int]] = {"train": [], "valid": [], "test": []}
    for i, r in enumerate(records):
        out[side[parse_source(r["source_data"])[0]]].append(i)
    return out["train"], out["valid"], out["test"]


def tanimoto(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Tanimoto similarity matrix of binary fingerprints a (n, bits), b (m, bits)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    inter = a @ b.T
    union = a.sum(1)[:, None] + b.sum(1)[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / union, 1.0)


def dedup_by_tanimoto(fps: np.ndarray, threshold: float = 0.8) -> np.ndarray:
    """Indices kept by greedy de-duplication: a molecule is dropped when its Tanimoto similarity to an already kept
    one is >= `threshold` (SIU applies this, ECFP-based, to targets with > 2,146 molecules; secondary source).
    Fingerprints are binary arrays (e.g. RDKit Morgan bits, optional)."""
    fps = np.asarray(fps).astype(bool)
    kept: list[int] = []
    for i in range(len(fps)):
        if not kept or tanimoto(fps[i : i + 1], fps[kept]).max() < threshold:
            kept.append(i)
    return np.asarray(kept, dtype=int)
