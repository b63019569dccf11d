"""Metrics (spec 9.4, 9.5): CBM against the reference algorithm and fixture, AMI, PosDis/BosDis, TopSim."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.compose_decompose.metrics import (
    ami,
    bosdis,
    concept_best_match,
    exact_word_set_rate,
    game_accuracy,
    mutual_info,
    posdis,
    topsim,
)
from iclr25.compose_decompose.reference import cbm_reference

FIXTURE = [["1.2.0", "a.b"], ["1.3.0", "a.c"], ["4.2.0", "d.b"], ["4.3.0", "d.c"], ["1.1.0", "a"]]


def test_cbm_reference_fixture():
    samples = [(m.split("."), p.split(".")) for m, p in FIXTURE]
    res = concept_best_match(samples, words_eos=True)
    assert round(res["match"], 3) == 1.0 and round(res["precision"], 3) == 0.9 and round(res["recall"], 3) == 1.0
    assert res["total_edges"] == 10 and res["good_edges"] == 10
    assert res["mapping"] == {"1": "a", "2": "b", "3": "c", "4": "d"}
    # without EOS stripping the trailing "0" is an extra (paraphrase) word
    res = concept_best_match(samples, words_eos=False)
    assert res["paraphrase"] > 0 and res["match"] < 1


def _random_samples(rng, n, n_words, n_concepts, k_words, k_concepts, var=False):
    out = []
    for _ in range(n):
        kw = rng.integers(1, k_words + 1) if var else k_words
        kc = rng.integers(1, k_concepts + 1) if var else k_concepts
        out.append((list(rng.integers(n_words, size=kw)), list(rng.choice(n_concepts, kc, replace=False))))
    return out


@pytest.mark.parametrize(
    ("n_words", "k_words", "k_concepts", "var", "eos"),
    [
        (12, 1, 1, False, False),
        (12, 3, 2, False, False),
        (48, 2, 2, False, False),
        (6, 3, 3, True, False),
        (12, 3, 1, False, True),
    ],
    ids=["one-one", "three-two", "k48", "variable", "eos"],
)
def test_cbm_fast_equals_reference(n_words, k_words, k_concepts, var, eos):
    rng = np.random.default_rng(n_words + k_words)
    s = _random_samples(rng, 300, n_words, 12, k_words, k_concepts, var)
    if eos:
        s = [([*w, 99], c) for w, c in s]
    fast, ref = concept_best_match(s, words_eos=eos), cbm_reference(s, words_eos=eos)
    for key in ("match", "precision", "recall", "ambiguous", "paraphrase", "unmatched_concepts"):
        assert fast[key] == pytest.approx(ref[key], abs=1e-12), key
    assert fast["total_edges"] == ref["total_edges"] and fast["mapping"] == ref["mapping"]


def test_cbm_bijection_and_random():
    rng = np.random.default_rng(0)
    concepts = rng.integers(12, size=600)
    perm = rng.permutation(12)
    assert concept_best_match([([perm[c]], [c]) for c in concepts])["match"] == 1.0
    two = [list(rng.choice(12, 2, replace=False)) for _ in range(600)]
    assert concept_best_match([([perm[a], perm[b]], [a, b]) for a, b in two])["match"] == 1.0
    rand = concept_best_match([(list(rng.integers(12, size=3)), [c]) for c in concepts])
    assert rand["match"] < 0.35  # spec 9.4 (about 0.11 for 1-concept phrases)
    rand2 = concept_best_match([(list(rng.integers(12, size=3)), p) for p in two])
    assert rand2["match"] < 0.35
    with pytest.raises(ValueError, match="at least one"):
        concept_best_match([])


def test_ami_bounds():
    rng = np.random.default_rng(0)
    y = rng.integers(12, size=2000)
    assert ami([f"m{(v * 7) % 12}" for v in y], list(y)) == pytest.approx(1.0)
    assert abs(ami(list(rng.integers(12, size=2000)), list(y))) < 0.05  # spec 9.5
    with pytest.raises(ValueError, match="as many"):
        ami([1, 2], [1])


def test_posdis_bosdis_topsim():
    rng = np.random.default_rng(0)
    attrs = np.tile(np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3), (8, 1))  # balanced
    perfect = attrs + np.array([0, 4, 8])  # position j names attribute j with its own symbols
    assert posdis(perfect, attrs) == pytest.approx(1.0)
    assert bosdis(perfect, attrs, vocab=12) == pytest.approx(1.0)
    assert topsim(perfect, attrs) == pytest.approx(1.0)
    noise = rng.integers(12, size=(len(attrs), 3))
    assert posdis(noise, attrs) < 0.1 and bosdis(noise, attrs, vocab=12) < 0.1 and abs(topsim(noise, attrs)) < 0.15
    shuffled = np.sort(perfect, axis=1)[:, ::-1]  # order-free: BosDis unchanged, PosDis not
    assert bosdis(shuffled, attrs, vocab=12) == pytest.approx(1.0)
    assert mutual_info(attrs[:, 0], attrs[:, 0]) == pytest.approx(np.log(4), abs=0.02)


def test_game_accuracy_and_exact_word_set():
    pred = np.array([[1, 0, 1], [1, 1, 0]])
    lab = np.array([[1, 0, 1], [1, 0, 0]])
    assert game_accuracy(pred, lab) == (0.5, pytest.approx(5 / 6))
    words, phrases = np.array([[3, 5], [5, 3], [3, 4]]), np.array([[0, 1], [0, 1], [0, 1]])
    assert exact_word_set_rate(words, phrases, {0: 3, 1: 5}) == pytest.approx(2 / 3)
