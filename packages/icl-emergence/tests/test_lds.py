"""LDS topic priors, sequences, the corpus and the reference predictors (spec §3.3 A, §9.4)."""

from __future__ import annotations

import pytest
import torch

from iclr25.icl_emergence.baselines import (
    last_value_predictor,
    lds_least_squares_predictor,
    oracle_predictor,
    per_position_mse,
    zero_predictor,
)
from iclr25.icl_emergence.corpus import TwoLevelCorpus, lds_corpus, seen_topic_eval
from iclr25.icl_emergence.lds import LDSTopicPrior
from iclr25.icl_emergence.reference import least_squares_loop


def test_priors():
    g = torch.Generator().manual_seed(0)
    Q = LDSTopicPrior("orthogonal", 5, rho=0.9).sample_topics(50, g)
    eye = torch.eye(5, dtype=torch.float64)
    assert torch.allclose(Q.transpose(-1, -2) @ Q, 0.81 * eye, atol=1e-12)
    R = LDSTopicPrior("rotation2d", 2).sample_topics(100, g)
    assert torch.allclose(torch.linalg.det(R), torch.ones(100, dtype=torch.float64))
    assert R[:, 1, 0].abs().mean() > 0.4  # angles spread over [0, 2pi)
    G = LDSTopicPrior("gaussian", 4, rho=0.8).sample_topics(100, g)
    assert (torch.linalg.eigvals(G).abs().amax(-1) <= 0.8 + 1e-9).all()
    with pytest.raises(ValueError, match="d = 2"):
        LDSTopicPrior("rotation2d", 3)
    with pytest.raises(ValueError, match="kind"):
        LDSTopicPrior("circle", 2)


def test_sequences_follow_the_law():
    prior = LDSTopicPrior("orthogonal", 3, sigma=0.1)
    c = lds_corpus(prior, 8, 200, 20, seed=1)
    assert c.data.shape == (8, 200, 20, 3) and (c.K, c.N, c.T) == (8, 200, 20)
    resid = c.data[:, :, 1:] - torch.einsum("kij,kntj->knti", c.topics, c.data[:, :, :-1])
    assert abs(float(resid.var()) - 0.01) < 0.001
    assert abs(float(c.data[:, :, 0].var()) - 1.0) < 0.05
    again = lds_corpus(prior, 8, 200, 20, seed=1)
    assert torch.equal(again.data, c.data)


def test_corpus_splits_and_batches():
    prior = LDSTopicPrior("rotation2d", 2)
    c = lds_corpus(prior, 4, 6, 10, seed=0)
    seen, unseen = c.split_seen_unseen(3)
    assert seen.K == 3 and unseen.K == 1 and torch.equal(unseen.topics, c.topics[3:])
    tr, held = c.held_out(4)
    assert tr.N == 4 and held.N == 2
    b = c.sample_batch(32, torch.Generator().manual_seed(0))
    assert b.shape == (32, 10, 2)
    new = seen_topic_eval(c, prior, 10, seed=5)
    assert new.data.shape == (4, 3, 10, 2) and torch.equal(new.topics, c.topics)
    with pytest.raises(ValueError, match="shape"):
        TwoLevelCorpus(torch.zeros(3, 4))


def test_least_squares_fast_equals_loop():
    c = lds_corpus(LDSTopicPrior("orthogonal", 3, sigma=0.1), 2, 2, 12, seed=3)
    fast = lds_least_squares_predictor(c.data)
    for k in range(2):
        for n in range(2):
            assert torch.allclose(fast[k, n], least_squares_loop(c.data[k, n]), atol=1e-10)


def test_least_squares_reaches_the_floor():
    """Spec §9.4: rotation2d, sigma = 0.05, T = 64, 512 sequences: last-position MSE in [0.8, 1.6] x d sigma^2."""
    prior = LDSTopicPrior("rotation2d", 2, sigma=0.05)
    c = lds_corpus(prior, 512, 1, 64, seed=11)
    curve = per_position_mse(lds_least_squares_predictor(c.data), c.data)
    assert 0.8 * prior.floor <= float(curve[-1]) <= 1.6 * prior.floor
    assert curve[15] < curve[1]
    oracle = per_position_mse(oracle_predictor(c.data, c.topics[:, None]), c.data)
    assert 0.8 * prior.floor <= float(oracle.mean()) <= 1.2 * prior.floor
    assert float(per_position_mse(zero_predictor(c.data), c.data).mean()) > 1.5
    assert float(per_position_mse(last_value_predictor(c.data), c.data).mean()) > 1.5
