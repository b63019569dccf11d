"""Pseudo-labels (spec 9.3): KDE density, batch counts, the official-bug parity flag and the fixes."""

from __future__ import annotations

import numpy as np
import pytest

from iclr25.dist_loss.labels import batch_label_counts, kde_label_density, label_grid, pseudo_labels


@pytest.mark.parametrize(
    ("batch", "lo", "hi", "mean"),
    [(64, 12, 69, 40.21875), (256, 6, 75, 39.984375), (512, 4, 78, 39.99609375)],
    ids=["B64", "B256", "B512"],
)
def test_acceptance_values(normal_ages: np.ndarray, batch: int, lo: float, hi: float, mean: float) -> None:
    density = kde_label_density(normal_ages, bw=0.5, min_label=0, max_label=120, step=1)
    q = pseudo_labels(density, batch, min_label=0, step=1)
    assert q.shape == (batch,)
    assert np.all(np.diff(q) >= 0)
    assert (q.min(), q.max()) == (lo, hi)
    assert q.mean() == pytest.approx(mean, abs=1e-12)
    np.testing.assert_array_equal(q, np.round(q))  # on the integer grid
    # These take the non-buggy path: the fixed and the official schemes agree.
    np.testing.assert_array_equal(q, pseudo_labels(density, batch, 0, 1, official_bugs=True))


def test_density_is_normalised_on_grid() -> None:
    rng = np.random.default_rng(1)
    labels = rng.uniform(0.3, 0.9, 400)
    d = kde_label_density(labels, bw=0.3, min_label=0.0, max_label=1.2, step=0.1)
    assert d.shape == (13,)  # no float-arange extra element
    assert d.sum() == pytest.approx(1.0)
    assert label_grid(0.0, 1.2, 0.1).shape == (13,)


def test_boundary_fix_uniform_density() -> None:
    uniform = np.ones(41) / 41
    official = pseudo_labels(uniform, 32, official_bugs=True)
    np.testing.assert_array_equal(official, [1, 1, *range(2, 32)])  # the top quarter is lost
    assert batch_label_counts(uniform, 32, official_bugs=True).sum() == 41
    counts = batch_label_counts(uniform, 32)
    assert counts.sum() == 32 and counts.min() >= 0
    q = pseudo_labels(uniform, 32)
    assert q.shape == (32,) and np.all(np.diff(q) >= 0) and q.max() >= 39


def test_large_negative_residual_removes_counts() -> None:
    # Many bins with expected count just above 0.5 round up; the residual is far below -W.
    density = np.ones(40) / 40
    counts = batch_label_counts(density, 24, region_adjustment=0.1)
    assert counts.sum() == 24 and counts.min() >= 0
    official = batch_label_counts(density, 24, region_adjustment=0.1, official_bugs=True)
    assert official.sum() > 24  # the official sign bug adds instead of removing


@pytest.mark.parametrize("batch", [1, 2, 7, 100, 1000], ids=lambda b: f"B{b}")
@pytest.mark.parametrize("seed", [0, 1, 2], ids=lambda s: f"seed{s}")
def test_counts_always_sum_to_batch(batch: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    density = rng.gamma(0.3, size=60)
    counts = batch_label_counts(density, batch)
    assert counts.sum() == batch and counts.min() >= 0


def test_paper_figure2_example() -> None:
    # counts [1, 2, 3, 1] on labels [1, 3, 4, 6] -> [1, 3, 3, 4, 4, 4, 6] (paper Fig. 2 caption)
    grid_counts = np.zeros(6, dtype=int)
    grid_counts[[0, 2, 3, 5]] = [1, 2, 3, 1]
    density = grid_counts / grid_counts.sum()
    np.testing.assert_array_equal(pseudo_labels(density, 7, min_label=1, step=1), [1, 3, 3, 4, 4, 4, 6])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"density": np.array([0.5, -0.1, 0.6]), "batch_size": 4}, "non-negative"),
        ({"density": np.ones(5), "batch_size": 0}, "batch_size"),
        ({"density": np.ones(5), "batch_size": 4, "region_adjustment": 0.0}, "region_adjustment"),
    ],
    ids=["negative-density", "zero-batch", "bad-region"],
)
def test_bad_inputs(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        batch_label_counts(**kwargs)


def test_bad_kde_inputs() -> None:
    with pytest.raises(ValueError, match="distinct labels"):
        kde_label_density(np.array([200.0, 300.0]))
    with pytest.raises(ValueError, match="bw"):
        kde_label_density(np.arange(10.0), bw=-1)
    with pytest.raises(ValueError, match="step"):
        kde_label_density(np.arange(10.0), step=0)
