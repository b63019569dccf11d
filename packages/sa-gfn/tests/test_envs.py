"""HyperGrid and bit-sequence environments (spec §9.1)."""

from __future__ import annotations

import pytest
import torch

from iclr25.sa_gfn.envs import BitSequence, HyperGrid


def test_standard_reward_mode_layout_h16():
    env = HyperGrid(2, 16, "standard", R0=0.1, R1=0.5, R2=2.0)
    X = env.all_states()
    modes = {tuple(x) for x in X[env.mode_mask(X)].tolist()}
    assert modes == {(a, b) for a in (2, 13) for b in (2, 13)}
    assert env.n_modes == 4
    assert len(set(env.mode_region(X[env.mode_mask(X)]).tolist())) == 4


@pytest.mark.parametrize("ndim", [2, 3])
def test_sparse_targets(ndim):
    H = 8
    env = HyperGrid(ndim, H, "sparse", eps=1e-6)
    X = env.all_states()
    targets = {tuple(x) for x in X[env.mode_mask(X)].tolist()}
    import itertools

    expected = set(itertools.product((1, H - 2), repeat=ndim)) - {(1,) * ndim}
    assert targets == expected and len(targets) == 2**ndim - 1 == env.n_modes
    r = env.reward(X)
    assert torch.allclose(r[env.mode_mask(X)], torch.ones(len(targets)))
    assert torch.allclose(r[~env.mode_mask(X)], torch.full(((~env.mode_mask(X)).sum(),), 1e-6))


def test_partition_function_h8():
    env = HyperGrid(2, 8, "standard", R0=0.1)
    assert env.log_partition == pytest.approx(3.1091, abs=1e-4)  # log 22.4, spec §9.3
    assert float(env.true_distribution().sum()) == pytest.approx(1.0)


def test_hypergrid_dynamics_and_index():
    env = HyperGrid(3, 4)
    x = torch.tensor([[0, 3, 1], [3, 3, 3]])
    assert env.forward_mask(x).tolist() == [[True, False, True, True], [False, False, False, True]]
    assert env.backward_mask(x).tolist() == [[False, True, True], [True, True, True]]
    assert env.step(x[:1], torch.tensor([0])).tolist() == [[1, 3, 1]]
    X = env.all_states()
    assert torch.equal(env.to_index(X), torch.arange(64))
    assert env.encode(x).shape == (2, 12)


def test_hypergrid_bad_input():
    with pytest.raises(ValueError, match="reward must be"):
        HyperGrid(2, 8, "dense")
    with pytest.raises(ValueError, match="height"):
        HyperGrid(2, 2)


def test_bitsequence():
    modes = torch.zeros(2, 8, dtype=torch.long)
    modes[1] = 1
    env = BitSequence(length=8, word_size=4, modes=modes)
    x = env.s0(2)
    assert env.forward_mask(x)[:, -1].tolist() == [False, False]
    x = env.step(x, torch.tensor([0, 15]))
    x = env.step(x, torch.tensor([1, 15]))
    assert env.forward_mask(x)[:, :-1].any().item() is False and env.forward_mask(x)[:, -1].all()
    assert env.to_bits(x).tolist() == [[0, 0, 0, 0, 0, 0, 0, 1], [1] * 8]
    assert env.log_reward(x).tolist() == [-1.0, 0.0]
    assert env.modes_found(x, threshold=0) == 1
    assert env.backward_mask(x).sum(-1).tolist() == [1, 1]
    with pytest.raises(ValueError, match="multiple"):
        BitSequence(length=10, word_size=4)
