"""The multi-target game sampler (spec 9.2, 9.7): targets satisfy, distractors violate, hard ones exactly one FVP."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from iclr25.compose_decompose.data import make_thing_dataset, one_hot_combos
from iclr25.compose_decompose.games import GameSampler
from iclr25.compose_decompose.reference import violated_fvps


@pytest.fixture(scope="module")
def data():
    return make_thing_dataset(4, noise=0.0)


def _violations(data, games):
    """Per game and candidate: number of the phrase's FVPs the candidate violates (reference loop)."""
    space = data.space
    out = np.zeros(games.labels.shape, dtype=int)
    for b in range(len(games.labels)):
        phrase = {
            int(space.fvp_attribute(f)): int(f) - space.fvp_index(int(space.fvp_attribute(f)), 0)
            for f in games.phrases[b]
        }
        for j, c in enumerate(games.candidate_combos[b]):
            out[b, j] = violated_fvps(list(data.combos[c]), phrase)
    return out


@pytest.mark.parametrize(
    ("size", "split", "distractors"),
    [
        (1, "train", "uniform"),
        (2, "train", "uniform"),
        (2, "heldout", "hard"),
        (3, "all", "hard"),
        (2, "train", "hard"),
    ],
    ids=["decompose", "compose2-uniform", "compose2-heldout-hard", "compose3-hard", "compose2-train-hard"],
)
def test_targets_satisfy_distractors_violate(data, size, split, distractors):
    games = GameSampler(data, 3, 3, size, split, distractors, seed=1).sample(300)
    assert games.phrases.shape == (300, size)
    assert np.all(np.diff(data.space.fvp_attribute(games.phrases), axis=1) > 0)  # distinct attributes
    v = _violations(data, games)
    assert np.all(v[games.labels == 1] == 0)  # every target satisfies the phrase
    assert np.all(v[games.labels == 0] >= 1)  # every distractor violates >= 1 FVP
    if distractors == "hard":
        assert np.all(v[games.labels == 0] == 1)  # hard: exactly one
    assert games.labels.sum(1).tolist() == [3] * 300
    # inputs are the renders of the recorded combos
    expect = one_hot_combos(data.space, data.combos[games.candidate_combos.ravel()])
    assert np.array_equal(games.candidates, expect.reshape(games.candidates.shape))
    if split == "heldout":
        assert data.heldout[games.target_combos].all()
    if split == "train":
        assert not data.heldout[games.candidate_combos].any()


def test_decompose_phrases_are_single_fvps_uniform(data):
    games = GameSampler(data, 3, 3, 1, "train", seed=2).sample(6000)
    counts = np.bincount(games.phrases[:, 0], minlength=12)
    assert counts.min() > 0 and chisquare(counts).pvalue > 0.01


def test_candidates_are_shuffled(data):
    games = GameSampler(data, 3, 3, 1, "train", seed=3).sample(10000)
    counts = games.labels.sum(0)  # targets per position, uniform under shuffling
    assert chisquare(counts).pvalue > 0.01  # spec 9.2


def test_hard_distractors_beat_the_one_fvp_receiver(data):
    """A receiver checking only the first FVP: ~0.9 per candidate with uniform distractors, far less with hard ones."""
    space = data.space
    scores = {}
    for kind in ("uniform", "hard"):
        g = GameSampler(data, 3, 3, 2, "heldout", kind, seed=4).sample(2000)
        first = g.phrases[:, 0]
        attr = space.fvp_attribute(first)
        fv = space.fvps_of(data.combos[g.candidate_combos])  # (B, 6, m)
        have = np.take_along_axis(fv, np.repeat(attr[:, None, None], 6, 1), 2)[..., 0]  # (B, 6)
        pred = have == first[:, None]
        scores[kind] = ((pred == g.labels.astype(bool)).all(1).mean(), (pred == g.labels.astype(bool)).mean())
    assert scores["uniform"][1] > 0.85
    assert abs(scores["hard"][0] - 0.125) < 0.04  # spec 6a: 0.5^3 game accuracy


def test_sampler_rejects_bad_settings(data):
    with pytest.raises(ValueError, match="phrase_size"):
        GameSampler(data, phrase_size=4)
    with pytest.raises(ValueError, match="distractors"):
        GameSampler(data, distractors="easy")
    with pytest.raises(ValueError, match="split"):
        GameSampler(data, split="test")
    with pytest.raises(ValueError, match="no combination fits"):
        GameSampler(data, 3, 3, 3, "heldout", "hard", distractor_split="heldout").sample(4)
