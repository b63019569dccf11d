"""Non-learned reference predictors (spec §4): in-context least squares, oracle, zero and last-value for LDS;
the true-HMM query predictor and the slot-aware Bayes-ICL predictor (our construction, not in the paper) for GINC.

LDS predictors take sequences (..., T, d) and return predictions (..., T-1, d): entry t predicts x_{t+1} after
observing x_0..x_t (t = number of observed states - 1)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from iclr25.icl_emergence.ginc import GINC, PromptBatch, forward


def lds_least_squares_predictor(seq: Tensor, lam: float = 1e-3) -> Tensor:
    """In-context least squares: W_t = (sum_{s<t} x_{s+1} x_s^T)(sum_{s<t} x_s x_s^T + lam*n I)^{-1}, prediction
    W_t x_t, with n = t + 1 observed states (spec §3.3 A: lambda = 1e-3 * t); no pairs yet -> 0."""
    x = seq.double()
    d, T = x.shape[-1], x.shape[-2]
    outer_xy = torch.einsum("...ti,...tj->...tij", x[..., 1:, :], x[..., :-1, :])  # pairs (x_s, x_{s+1})
    outer_xx = torch.einsum("...ti,...tj->...tij", x[..., :-1, :], x[..., :-1, :])
    zero = torch.zeros_like(outer_xy[..., :1, :, :])
    A = torch.cat([zero, outer_xy[..., :-1, :, :]], -3).cumsum(-3)  # pairs with s < t, for t = 0..T-2
    B = torch.cat([zero, outer_xx[..., :-1, :, :]], -3).cumsum(-3)
    n_obs = torch.arange(1, T, dtype=x.dtype)[:, None, None]
    B = B + lam * n_obs * torch.eye(d, dtype=x.dtype)
    W = torch.linalg.solve(B, A, left=False)  # A B^{-1}
    return torch.einsum("...tij,...tj->...ti", W, x[..., :-1, :]).to(seq.dtype)


def oracle_predictor(seq: Tensor, W: Tensor) -> Tensor:
    """The true topic's mean prediction W x_t (error floor d sigma^2); W broadcasts against seq's batch dims."""
    return torch.einsum("...ij,...tj->...ti", W.to(seq.dtype), seq[..., :-1, :])


def zero_predictor(seq: Tensor) -> Tensor:
    """Predicts 0 (the topic-average prediction for rotation/orthogonal priors)."""
    return torch.zeros_like(seq[..., 1:, :])


def last_value_predictor(seq: Tensor) -> Tensor:
    """Predicts x_{t+1} = x_t."""
    return seq[..., :-1, :].clone()


def per_position_mse(pred: Tensor, seq: Tensor) -> Tensor:
    """Squared Euclidean error per prediction index t, averaged over all leading dims: (T-1,)."""
    err = ((pred - seq[..., 1:, :]) ** 2).sum(-1)
    return err.reshape(-1, err.shape[-1]).mean(0)


# ------------------------------------------------------------------------------------------------ GINC
def true_hmm_query_probs(ginc: GINC, batch: PromptBatch, hmm_ids: np.ndarray, start_slots: np.ndarray) -> np.ndarray:
    """Next-token distribution of the true ID HMM for the query x alone, started uniformly over the values at the
    prompt's start slot (reproduces the labels by construction): (P, V)."""
    trans = np.stack([h.transmat for h in ginc.id_hmms])[hmm_ids]
    start = np.stack([ginc.slot_start(s) for s in start_slots])
    _, post = forward(trans, ginc.emission, start, batch.query)
    return np.einsum("pi,pij,jv->pv", post, trans, ginc.emission)


def bayes_icl_probs(ginc: GINC, batch: PromptBatch) -> np.ndarray:
    """Slot-aware Bayes-ICL predictor (our construction, spec §4): joint posterior over (ID HMM c, start slot s),
    w(c, s) ∝ prod_i p(ex_i | c, s) * p(x | c, s), each example and the query an independent HMM run started
    uniformly over the values at slot s; predictive sum_{c,s} w(c,s) p(y | x, c, s): (P, V)."""
    start = np.stack([ginc.slot_start(s) for s in range(1, ginc.cfg.n_slots)])  # (S', H)
    n, k = batch.examples.shape[1], batch.examples.shape[-1]
    # examples repeat a lot (few distinct k-token strings): score each distinct one once
    uniq, inverse = np.unique(batch.examples.reshape(-1, k), axis=0, return_inverse=True) if n else (None, None)
    logw, nxt = [], []
    for hmm in ginc.id_hmms:  # one transition matrix at a time: the forward steps are plain GEMMs
        ll = 0.0
        if n:
            ll_u, _ = forward(hmm.transmat, ginc.emission, start, uniq[:, None, :])  # (U, S')
            ll = ll_u[inverse.reshape(-1)].reshape(-1, n, start.shape[0]).sum(1)  # (P, S')
        ll_q, post = forward(hmm.transmat, ginc.emission, start, batch.query[:, None, :])  # (P, S'), (P, S', H)
        logw.append(ll + ll_q)
        nxt.append(post @ hmm.transmat @ ginc.emission)  # (P, S', V)
    logw_all, nxt_all = np.stack(logw, 1), np.stack(nxt, 1)  # (P, C, S'), (P, C, S', V)
    m = logw_all.max((1, 2), keepdims=True)
    w = np.exp(logw_all - np.where(np.isfinite(m), m, 0.0))
    w = w / np.maximum(w.sum((1, 2), keepdims=True), 1e-300)
    return np.einsum("pcs,pcsv->pv", w, nxt_all)


def accuracy(probs: np.ndarray, labels: np.ndarray) -> float:
    """Argmax accuracy."""
    return float((np.argmax(probs, -1) == labels).mean())
