"""The multi-target game sampler of CtD (arXiv 2601.10169; spec section 3.2). Numpy only, vectorised over games.

A game G(p) for phrase p (a set of FVPs with distinct attributes): `n_targets` inputs that satisfy p and
`n_distractors` that do not. The Sender sees the targets; the Receiver sees all candidates, shuffled, and labels each
"target or not". Distractors are either `uniform` (any non-satisfying combination) or `hard` (each violates exactly
one FVP of p, chosen uniformly, and agrees with the rest) -- the spec's fix for the weak per-candidate metric in
Compose (section 6a). Decompose uses |p| = 1 on training combinations; Compose uses |p| in {2, m}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from iclr25.compose_decompose.data import ConceptData

Split = Literal["train", "heldout", "all"]


@dataclass
class Games:
    """A batch of games: inputs, labels and the phrase of each game (global FVP indices)."""

    targets: np.ndarray  # (B, n_t, *input_shape)
    candidates: np.ndarray  # (B, n_t + n_d, *input_shape), shuffled
    labels: np.ndarray  # (B, n_t + n_d) float32, 1 = target
    phrases: np.ndarray  # (B, |p|) global FVP indices, sorted by attribute
    target_combos: np.ndarray  # (B, n_t) combo indices
    candidate_combos: np.ndarray  # (B, n_t + n_d) combo indices


def _sample_rows(mask: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """For each row of a boolean (R, P) mask, n column indices drawn uniformly (with replacement) among its Trues."""
    counts = mask.sum(axis=-1)
    if (counts == 0).any():
        raise ValueError("no combination fits the game's constraints; widen the split or the distractor pool")
    cdf = np.cumsum(mask, axis=-1) / counts[:, None]  # (R, P)
    u = rng.random((mask.shape[0], n))
    return (u[:, :, None] >= cdf[:, None, :]).sum(-1)  # (R, n)


class GameSampler:
    """Samples batches of multi-target games from a `ConceptData` (spec 3.2)."""

    def __init__(
        self,
        data: ConceptData,
        n_targets: int = 3,
        n_distractors: int = 3,
        phrase_size: int = 1,
        split: Split = "train",
        distractors: Literal["uniform", "hard"] = "uniform",
        distractor_split: Split | None = None,
        seed: int | np.random.Generator = 0,
    ) -> None:
        m = data.space.n_attributes
        if not 1 <= phrase_size <= m:
            raise ValueError(f"phrase_size must be in 1..{m}, got {phrase_size}")
        if n_targets < 1 or n_distractors < 1:
            raise ValueError(f"need n_targets >= 1 and n_distractors >= 1, got {n_targets}, {n_distractors}")
        if distractors not in ("uniform", "hard"):
            raise ValueError(f"distractors must be 'uniform' or 'hard', got {distractors!r}")
        self.data, self.n_targets, self.n_distractors = data, n_targets, n_distractors
        self.phrase_size, self.distractors = phrase_size, distractors
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.target_pool = self._pool(split)
        # held-out targets: distractors may come from every combination (a Latin-square hold-out leaves no held-out
        # combination that differs from a held-out target in exactly one of three attributes)
        self.distractor_pool = self._pool(distractor_split or ("all" if split == "heldout" else split))
        if len(self.target_pool) == 0:
            raise ValueError(f"split {split!r} holds no combinations")
        self.fvps = data.space.fvps_of(data.combos)  # (C, m)

    def _pool(self, split: str) -> np.ndarray:
        if split == "train":
            return self.data.train_index
        if split == "heldout":
            return self.data.heldout_index
        if split == "all":
            return np.arange(len(self.data.combos))
        raise ValueError(f"split must be train, heldout or all, got {split!r}")

    def sample_phrases(self, batch: int) -> np.ndarray:
        """(B, m) phrase templates: the FVP index per attribute in p, -1 elsewhere.

        A random target-pool combination and a random set of |p| attributes: with a balanced pool, single-FVP
        phrases are uniform over FVPs.
        """
        m = self.data.space.n_attributes
        base = self.fvps[self.rng.choice(self.target_pool, batch)]  # (B, m)
        keys = self.rng.random((batch, m))
        chosen = np.argsort(keys, axis=1)[:, : self.phrase_size]
        template = np.full((batch, m), -1, dtype=np.int64)
        rows = np.arange(batch)[:, None]
        template[rows, chosen] = base[rows, chosen]
        return template

    def sample(self, batch: int) -> Games:
        """A batch of `batch` games."""
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        rng, n_t, n_d = self.rng, self.n_targets, self.n_distractors
        template = self.sample_phrases(batch)  # (B, m)
        in_p = template >= 0
        tp, dp = self.fvps[self.target_pool], self.fvps[self.distractor_pool]  # (P, m)
        agree_t = (tp[None] == template[:, None]) | ~in_p[:, None]  # (B, P, m)
        t_idx = self.target_pool[_sample_rows(agree_t.all(-1), n_t, rng)]  # (B, n_t)
        agree_d = (dp[None] == template[:, None]) | ~in_p[:, None]  # (B, Q, m)
        if self.distractors == "uniform":
            d_idx = self.distractor_pool[_sample_rows(~agree_d.all(-1), n_d, rng)]
        else:
            # hard: violate exactly the attribute a (uniform over p's attributes), agree on the rest of p
            keys = np.where(in_p[:, None], rng.random((batch, n_d, in_p.shape[1])), -1.0)  # (B, n_d, m)
            a = keys.argmax(-1)  # (B, n_d)
            viol = np.eye(in_p.shape[1], dtype=bool)[a]  # (B, n_d, m)
            ok = np.where(viol[:, :, None], ~agree_d[:, None], agree_d[:, None]).all(-1)  # (B, n_d, Q)
            d_idx = self.distractor_pool[_sample_rows(ok.reshape(batch * n_d, -1), 1, rng).reshape(batch, n_d)]
        n_per = self.data.inputs.shape[1]
        t_r = rng.integers(n_per, size=(batch, n_t))
        d_r = rng.integers(n_per, size=(batch, n_d))
        cand_combo = np.concatenate([t_idx, d_idx], axis=1)
        cand_r = np.concatenate([t_r, d_r], axis=1)
        labels = np.concatenate([np.ones((batch, n_t)), np.zeros((batch, n_d))], axis=1).astype(np.float32)
        perm = np.argsort(rng.random((batch, n_t + n_d)), axis=1)  # shuffle the candidates
        rows = np.arange(batch)[:, None]
        cand_combo, cand_r, labels = cand_combo[rows, perm], cand_r[rows, perm], labels[rows, perm]
        phrases = np.sort(np.where(in_p, template, np.iinfo(np.int64).max), axis=1)[:, : self.phrase_size]
        return Games(
            targets=self.data.inputs[t_idx, t_r],
            candidates=self.data.inputs[cand_combo, cand_r],
            labels=labels,
            phrases=phrases,
            target_combos=t_idx,
            candidate_combos=cand_combo,
        )
