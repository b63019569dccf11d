"""GINC (Xie et al. 2021), the official generator's semantics in numpy (spec §3.3 B): a mixture of HMMs
("concepts" = topics) over hidden states h = value * n_slots + slot with a deterministic emission table shared by
all HMMs, transitions kron(value_T, slot_T), ICL prompts (ID_sample / OOD_sample) with Bayes-argmax labels from a
scaled forward algorithm (`hmmlearn` is not used: its MultinomialHMM semantics changed, spec §3.4 item 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice, permutations
from string import ascii_lowercase
from typing import Any

import numpy as np

PROMPT_KINDS = ("ID_sample", "OOD_sample")


def letter_vocab(n_symbols: int) -> list[str]:
    """'/' followed by the first n_symbols - 1 of a..z, ab, ac, ... (distinct-letter permutations by length)."""
    words = ("".join(p) for length in range(1, len(ascii_lowercase)) for p in permutations(ascii_lowercase, length))
    return ["/", *islice(words, n_symbols - 1)]


def softmax(x: np.ndarray, temp: float = 1.0) -> np.ndarray:
    """softmax(x / temp) along the last axis."""
    z = np.asarray(x, dtype=float) / temp
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def permutation_mixture(size: int, temp: float, rs: np.random.RandomState) -> np.ndarray:
    """sum_i softmax((u - 0.5)/temp)_i P_i, u ~ U(0,1)^size, P_i random size x size permutation matrices."""
    weights = softmax(rs.rand(size) - 0.5, temp)
    perms = np.stack([np.eye(size)[rs.permutation(size)] for _ in range(size)])
    return np.einsum("i,ijk->jk", weights, perms)


@dataclass(frozen=True)
class GINCConfig:
    """Generator parameters; defaults are the released GINC dataset's (spec §3.3 B)."""

    n_symbols: int = 50
    n_values: int = 10
    n_slots: int = 10
    n_hmms: int = 10
    transition_temp: float = 0.1
    start_temp: float = 10.0
    value_identity_coeff: float = 0.9
    prior_values: bool = False
    seed: int = 1111

    def __post_init__(self) -> None:
        if self.n_symbols < 2 or self.n_values < 1 or self.n_slots < 2 or self.n_hmms < 2:
            raise ValueError("need n_symbols >= 2, n_values >= 1, n_slots >= 2, n_hmms >= 2")
        if not (self.transition_temp > 0 and self.start_temp > 0 and 0 <= self.value_identity_coeff <= 1):
            raise ValueError("need transition_temp > 0, start_temp > 0, value_identity_coeff in [0, 1]")


@dataclass
class HMM:
    """One HMM (a GINC concept): start distribution (H,), transitions (H, H), emission (H, V)."""

    startprob: np.ndarray
    transmat: np.ndarray
    emission: np.ndarray
    slot_T: np.ndarray | None = None
    value_T: np.ndarray | None = None


def forward(
    transmat: np.ndarray, emission: np.ndarray, start: np.ndarray, tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled forward algorithm, batched by broadcasting: transmat (..., H, H), emission (H, V), start (..., H),
    tokens (..., L) -> (log p(tokens) (...), p(h_L | tokens) (..., H)). Impossible sequences: -inf, zeros."""
    tokens = np.asarray(tokens)
    e = emission.T  # (V, H)
    alpha = start * e[tokens[..., 0]]
    loglik = np.zeros(alpha.shape[:-1])
    for t in range(tokens.shape[-1]):
        if t > 0:
            step = alpha @ transmat if transmat.ndim == 2 else np.einsum("...i,...ij->...j", alpha, transmat)
            alpha = step * e[tokens[..., t]]
        c = alpha.sum(-1)
        with np.errstate(divide="ignore"):
            loglik = loglik + np.log(c)
        alpha = alpha / np.where(c > 0, c, 1.0)[..., None]
    return loglik, alpha


def hmm_next_token_probs(hmm: HMM, prefix: Any, start_dist: np.ndarray | None = None) -> np.ndarray:
    """p(x_{t+1} = v | x_1..x_t) under `hmm` (start `start_dist`, default the HMM's own); (V,)."""
    start = hmm.startprob if start_dist is None else np.asarray(start_dist, dtype=float)
    prefix = np.asarray(prefix, dtype=int)
    if prefix.size == 0:
        return start @ hmm.emission
    _, post = forward(hmm.transmat, hmm.emission, start, prefix)
    return post @ hmm.transmat @ hmm.emission


def mixture_next_token_probs(hmms: list[HMM], prefix: Any) -> np.ndarray:
    """The official GINC prediction: equal-weight average of each HMM's next-token distribution (own start)."""
    return np.mean([hmm_next_token_probs(h, prefix) for h in hmms], axis=0)


class GINC:
    """The GINC mixture of HMMs: `hmms` (first half ID, second half OOD), shared `all_values` emission table, vocab."""

    def __init__(self, cfg: GINCConfig | None = None) -> None:
        self.cfg = cfg = cfg or GINCConfig()
        rs = np.random.RandomState(cfg.seed)  # the legacy stream the official script seeds globally
        self.vocab = letter_vocab(cfg.n_symbols)
        all_values = rs.randint(1, cfg.n_symbols, size=(cfg.n_values, cfg.n_slots))
        all_values[:, 0] = 0  # slot 0 emits the delimiter "/"
        self.all_values = all_values
        H = cfg.n_values * cfg.n_slots
        emission = np.zeros((H, cfg.n_symbols))
        emission[np.arange(H), all_values.reshape(-1)] = 1.0  # state value*n_slots + slot -> all_values[value, slot]
        self.emission = emission
        self.hmms: list[HMM] = []
        for _ in range(cfg.n_hmms):
            startprob = softmax(rs.rand(H) - 0.5, cfg.start_temp)
            slot_T = permutation_mixture(cfg.n_slots, cfg.transition_temp, rs)
            vrs = rs if cfg.prior_values else np.random.RandomState(cfg.seed + 3)  # shared value_T (fixed seed)
            value_T = permutation_mixture(cfg.n_values, cfg.transition_temp, vrs)
            value_T = (1 - cfg.value_identity_coeff) * value_T + cfg.value_identity_coeff * np.eye(cfg.n_values)
            self.hmms.append(HMM(startprob, np.kron(value_T, slot_T), emission, slot_T, value_T))

    @property
    def n_id(self) -> int:
        """Number of in-distribution HMMs (the first half)."""
        return self.cfg.n_hmms // 2

    @property
    def id_hmms(self) -> list[HMM]:
        """The pre-training (ID) concepts."""
        return self.hmms[: self.n_id]

    @property
    def ood_hmms(self) -> list[HMM]:
        """The held-out (OOD) concepts."""
        return self.hmms[self.n_id :]

    def slot_start(self, slot: int) -> np.ndarray:
        """Start distribution uniform over the values at `slot`."""
        cfg = self.cfg
        start = np.zeros(cfg.n_values * cfg.n_slots)
        start[np.arange(cfg.n_values) * cfg.n_slots + slot] = 1.0 / cfg.n_values
        return start

    @staticmethod
    def _run(
        transmats: np.ndarray, which: np.ndarray, h0: np.ndarray, steps: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Markov chains from states h0 (B,), chain b using transmats[which[b]] ((M, H, H)): (B, steps + 1)."""
        cum = np.cumsum(transmats, -1)
        H = cum.shape[-1]
        h = [h0]
        for _ in range(steps):
            u = rng.random(len(h0))[:, None]
            h.append(np.minimum((u > cum[which, h[-1]]).sum(-1), H - 1))
        return np.stack(h, -1)

    def sample_documents(
        self, hmm_ids: list[int], N: int, T: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """N documents of T tokens from each HMM in `hmm_ids`: (tokens, hiddens), each (len(hmm_ids), N, T)."""
        ids = np.repeat(np.asarray(hmm_ids, dtype=int), N)
        starts = np.stack([self.hmms[i].startprob for i in hmm_ids])
        cum0 = np.cumsum(np.repeat(starts, N, 0), -1)
        h0 = np.minimum((rng.random(len(ids))[:, None] > cum0).sum(-1), cum0.shape[-1] - 1)
        trans = np.stack([h.transmat for h in self.hmms])
        hidden = self._run(trans, ids, h0, T - 1, rng).reshape(len(hmm_ids), N, T)
        return self.all_values.reshape(-1)[hidden], hidden

    def make_prompts(
        self, kind: str, prompt_length: int, n_examples: int, n_prompts: int, rng: np.random.Generator
    ) -> list[dict[str, Any]]:
        """GINC ICL prompts (official `generate_prompts` with random_sample=True): n_examples examples of
        `prompt_length` tokens then the query x (its first k-1 tokens); label y = Bayes argmax of the true HMM."""
        if kind not in PROMPT_KINDS:
            raise ValueError(f"kind must be one of {', '.join(PROMPT_KINDS)}; got {kind!r}")
        cfg, k, n, P = self.cfg, prompt_length, n_examples, n_prompts
        S, V = cfg.n_slots, cfg.n_values
        pool = self.id_hmms if kind == "ID_sample" else self.ood_hmms
        hmm_id = rng.integers(len(pool), size=P)
        if kind == "ID_sample":
            start_slot = rng.integers(1, S, size=P)
            start_value = rng.integers(0, V, size=(P, n + 1))
            h0 = (start_value * S + start_slot[:, None]).reshape(-1)
            trans = np.stack([h.transmat for h in pool])
            hidden = self._run(trans, np.repeat(hmm_id, n + 1), h0, k - 1, rng).reshape(P, n + 1, k)
            slots, values = hidden % S, hidden // S
        else:
            start_slot = np.full(P, -1)
            slots = rng.integers(1, S, size=(P, n + 1, k))
            values = np.repeat(rng.integers(0, V, size=(P, n + 1, 1)), k, -1)
        examples = self.all_values[values, slots]  # (P, n+1, k) token ids
        prompts = []
        for p in range(P):
            x = examples[p, -1, :-1]
            hmm = pool[hmm_id[p]]
            start = self.slot_start(start_slot[p]) if kind == "ID_sample" else np.full(V * S, 1.0 / (V * S))
            y = int(np.argmax(hmm_next_token_probs(hmm, x, start)))
            ids: list[int] = []
            for j in range(n):
                ids += [*examples[p, j].tolist(), 0]
            ids += x.tolist()
            prompts.append(
                {
                    "text": " ".join(self.vocab[i] for i in ids),
                    "label": self.vocab[y],
                    "x": [self.vocab[i] for i in x],
                    "slot_pattern": [*slots[p, -1].tolist(), 0],
                    "test_value": int(values[p, -1, -1]),
                    "hmm_type": kind,
                    "n_examples": n,
                    "hmm_id": int(hmm_id[p]),
                    "ids": ids,
                    "label_id": y,
                    "start_slot": int(start_slot[p]),
                }
            )
        return prompts


@dataclass
class PromptBatch:
    """Prompts of one (k, n_examples) cell as arrays: examples (P, n, k), query (P, k-1), labels (P,)."""

    examples: np.ndarray
    query: np.ndarray
    labels: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


def split_prompts(prompts: list[dict[str, Any]], k: int) -> PromptBatch:
    """Cut prompt token ids (`ids`, delimiter id 0) back into examples and query (same n_examples for all)."""
    ex, qs, ys = [], [], []
    for p in prompts:
        ids, n = p["ids"], p["n_examples"]
        body = np.asarray(ids[: n * (k + 1)], dtype=int).reshape(n, k + 1)[:, :k]
        ex.append(body)
        qs.append(ids[n * (k + 1) :])
        ys.append(p["label_id"])
    return PromptBatch(np.stack(ex), np.asarray(qs, dtype=int), np.asarray(ys, dtype=int))
