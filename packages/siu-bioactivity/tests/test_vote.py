"""Spec §9.5: the 2-of-3 vote; the batched vote equals the reference; the docking-noise convention."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from iclr25.siu_bioactivity.vote import SimulatedDocking, majority_vote, random_rotations, rmsd, vote_batch


def _pose(seed=0, n=20):
    return np.random.default_rng(seed).normal(scale=2.0, size=(n, 3))


def _shift(x, dist):
    """x moved rigidly by `dist` A (so RMSD(x, moved) == dist)."""
    return x + np.array([dist, 0.0, 0.0])


def test_three_identical():
    x = _pose()
    res = majority_vote({"vina": x, "glide": x.copy(), "gold": x.copy()})
    assert res.accepted and res.agreeing == ("glide", "gold", "vina") and len(res.poses) == 3
    assert np.allclose(res.consensus, x)


def test_two_close_one_far():
    x = _pose()
    res = majority_vote({"glide": x, "gold": _shift(x, 1.5), "vina": _shift(x, 5.0)})
    assert res.accepted and res.agreeing == ("glide", "gold")
    assert res.pairwise_rmsd[0, 1] == pytest.approx(1.5) and res.pairwise_rmsd[0, 2] == pytest.approx(5.0)


def test_all_far_rejected_and_none_is_a_failure():
    x = _pose()
    res = majority_vote({"glide": x, "gold": _shift(x, 2.5), "vina": _shift(x, 5.5)})
    assert not res.accepted and res.consensus is None
    res = majority_vote({"glide": x, "gold": None, "vina": _shift(x, 3.0)})
    assert not res.accepted


def test_order_invariance_and_ties():
    x = _pose(1)
    poses = {"a": x, "b": _shift(x, 1.0), "c": _shift(x, 2.0)}  # a-b 1.0, b-c 1.0, a-c 2.0: a clique of 3
    results = [majority_vote(dict(p)) for p in itertools.permutations(poses.items())]
    assert all(r.agreeing == ("a", "b", "c") for r in results)
    poses = {"c": x, "a": _shift(x, 1.9), "b": _shift(x, -1.9)}  # pairs a-c, b-c at 1.9; a-b at 3.8
    assert majority_vote(poses).agreeing == ("a", "c")  # tie on mean RMSD -> alphabetical


def test_symmetric_rmsd_callable():
    x = _pose(2)
    y = x[::-1].copy()  # same pose, atoms renumbered
    plain = majority_vote({"a": x, "b": y, "c": _shift(x, 9)})
    sym = majority_vote(
        {"a": x, "b": y, "c": _shift(x, 9)},
        symmetric_rmsd=lambda p, q: 0.0 if np.allclose(np.sort(p, 0), np.sort(q, 0)) else rmsd(p, q),
    )
    assert not plain.accepted and sym.accepted


def test_vote_batch_equals_reference():
    rng = np.random.default_rng(0)
    B, P, n = 300, 4, 12
    true = rng.normal(scale=2, size=(B, n, 3))
    sizes = rng.integers(6, n + 1, size=B)
    mask = np.arange(n)[None] < sizes[:, None]
    poses = true[:, None] + rng.normal(scale=rng.uniform(0.2, 2.0, size=(B, P, 1, 1)), size=(B, P, n, 3))
    poses *= mask[:, None, :, None]
    ok = rng.random((B, P)) > 0.15
    acc, agree = vote_batch(poses, mask, ok, 2.0, 2)
    names = [f"p{k}" for k in range(P)]
    for b in range(B):
        res = majority_vote({names[k]: poses[b, k, : sizes[b]] if ok[b, k] else None for k in range(P)})
        assert res.accepted == acc[b]
        if res.accepted:
            assert res.agreeing == tuple(names[k] for k in np.flatnonzero(agree[b]))


def test_sigma_is_the_expected_rmsd():
    rng = np.random.default_rng(0)
    true = rng.normal(scale=3, size=(4000, 20, 3))
    prog = SimulatedDocking("x", sigma=0.7, p_fail=0.2)
    poses, failed = prog.dock_batch(true, None, rng)
    err = np.sqrt(((poses - true) ** 2).sum(-1).mean(-1))
    assert abs(err[~failed].mean() - 0.7) < 0.02
    assert abs(failed.mean() - 0.2) < 0.03 and err[failed].mean() > 2.0
    one = SimulatedDocking("y", sigma=0.5, p_fail=0.0, seed=1).dock(None, true[0])
    assert one.shape == (20, 3)


def test_rotations_are_rotations():
    R = random_rotations(50, np.random.default_rng(0))
    assert np.allclose(R @ R.transpose(0, 2, 1), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(R), 1.0)


def test_rmsd_shape_check():
    with pytest.raises(ValueError, match="n_atoms"):
        rmsd(np.zeros((3, 3)), np.zeros((4, 3)))
