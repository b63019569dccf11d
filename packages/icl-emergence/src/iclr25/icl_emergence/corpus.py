"""The two-level pre-training corpus (spec §3.1): K topics x N sequences x length T, and the fixed evaluation sets
(new sequences of the seen topics for G_seq; sequences of unseen topics for G_top and ICL)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from iclr25.icl_emergence.lds import LDSTopicPrior


@dataclass
class TwoLevelCorpus:
    """`data[k, n]` is sequence n of topic k (shape (K, N, T, ...)); `topics[k]` the topic's parameters."""

    data: Tensor
    topics: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.data.dim() < 3:
            raise ValueError(f"data must have shape (K, N, T, ...), got {tuple(self.data.shape)}")

    @property
    def K(self) -> int:
        """Number of topics."""
        return self.data.shape[0]

    @property
    def N(self) -> int:
        """Sequences per topic."""
        return self.data.shape[1]

    @property
    def T(self) -> int:
        """Sequence length."""
        return self.data.shape[2]

    def flat(self) -> Tensor:
        """All K*N sequences, topic-major: (K*N, T, ...)."""
        return self.data.reshape(self.K * self.N, *self.data.shape[2:])

    def sample_batch(self, batch: int, generator: torch.Generator) -> Tensor:
        """`batch` sequences drawn uniformly with replacement from the K*N corpus (spec §6a)."""
        idx = torch.randint(self.K * self.N, (batch,), generator=generator)
        return self.flat()[idx]

    def split_seen_unseen(self, n_seen: int) -> tuple[TwoLevelCorpus, TwoLevelCorpus]:
        """The first `n_seen` topics (pre-training) and the rest (unseen topics for G_top / ICL)."""
        if not 0 < n_seen < self.K:
            raise ValueError(f"n_seen must lie in [1, {self.K - 1}], got {n_seen}")
        t = self.topics
        return (
            TwoLevelCorpus(self.data[:n_seen], None if t is None else t[:n_seen], dict(self.meta)),
            TwoLevelCorpus(self.data[n_seen:], None if t is None else t[n_seen:], dict(self.meta)),
        )

    def held_out(self, n_train: int) -> tuple[TwoLevelCorpus, TwoLevelCorpus]:
        """Per topic, the first `n_train` sequences (training) and the rest (held-out sequences of seen topics)."""
        if not 0 < n_train < self.N:
            raise ValueError(f"n_train must lie in [1, {self.N - 1}], got {n_train}")
        return (
            TwoLevelCorpus(self.data[:, :n_train], self.topics, dict(self.meta)),
            TwoLevelCorpus(self.data[:, n_train:], self.topics, dict(self.meta)),
        )


def lds_corpus(prior: LDSTopicPrior, K: int, N: int, T: int, seed: int) -> TwoLevelCorpus:
    """K topics ~ P_W and N sequences of length T each, from `seed` (float64)."""
    g = torch.Generator().manual_seed(seed)
    W = prior.sample_topics(K, g)
    return TwoLevelCorpus(prior.sample_sequences(W, N, T, g), W, {"prior": prior.kind, "seed": seed})


def seen_topic_eval(corpus: TwoLevelCorpus, prior: LDSTopicPrior, n_seqs: int, seed: int) -> TwoLevelCorpus:
    """`n_seqs` new sequences of the training topics, spread round-robin over the topics: (K, ceil(n/K), T, d)."""
    per = -(-n_seqs // corpus.K)
    g = torch.Generator().manual_seed(seed)
    return TwoLevelCorpus(prior.sample_sequences(corpus.topics, per, corpus.T, g), corpus.topics, {"seen": True})
