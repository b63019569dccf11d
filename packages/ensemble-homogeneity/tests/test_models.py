"""Batched ensembles equal their members run one by one (outputs and gradients); training behaves as specified."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.ensemble_homogeneity.data import Dataset
from iclr25.ensemble_homogeneity.models import (
    BatchedCNNEnsemble,
    BatchedMLPEnsemble,
    BatchedResNet18Ensemble,
    make_ensemble,
    member_seeds,
)
from iclr25.ensemble_homogeneity.training import TrainSettings, train_ensemble, train_homogeneous


def _check_members(net, x, atol):
    """Batched forward and gradients == each member's plain model on its own input slice."""
    out = net(x)  # (M, B, C)
    w = torch.randn_like(out)
    (out * w).sum().backward()
    for m in range(net.n_members):
        single = net.member(m).double()
        single.train(net.training)
        ref = single(x[m])
        torch.testing.assert_close(out[m], ref, atol=atol, rtol=1e-6)
        (ref * w[m]).sum().backward()
        first_b = next(p for p in net.parameters())
        first_s = next(p for p in single.parameters())
        n = first_s.shape[0]
        gb = first_b.grad[m] if isinstance(net, BatchedMLPEnsemble) else first_b.grad[m * n : (m + 1) * n]
        gs = first_s.grad.T if isinstance(net, BatchedMLPEnsemble) else first_s.grad
        torch.testing.assert_close(gb.reshape(gs.shape), gs, atol=atol, rtol=1e-6)


@pytest.mark.parametrize("depth", [1, 2])
def test_batched_mlp_equals_members(depth):
    torch.manual_seed(0)
    net = BatchedMLPEnsemble(7, 5, 3, 4, depth=depth, seeds=[1, 2, 3, 4]).double()
    _check_members(net, torch.randn(4, 9, 7, dtype=torch.float64), 1e-10)
    shared = net(torch.randn(9, 7, dtype=torch.float64))  # (B, in) is broadcast to every member
    assert shared.shape == (4, 9, 3)


@pytest.mark.parametrize("train", [True, False], ids=["train-bn", "eval-bn"])
@pytest.mark.parametrize("cls", [BatchedCNNEnsemble, BatchedResNet18Ensemble], ids=["cnn", "resnet18"])
def test_batched_convnets_equal_members(cls, train):
    torch.manual_seed(0)
    net = cls(2, 3, 3, in_channels=3, seeds=[5, 6, 7]).double()
    for mod in net.modules():  # non-trivial BN statistics and affine parameters
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.2, 0.2)
    net.train(train)
    _check_members(net, torch.randn(3, 4, 3, 8, 8, dtype=torch.float64), 1e-9)


def test_member_init_is_pytorch_default_and_seeded():
    net = BatchedMLPEnsemble(64, 16, 10, 3, seeds=[11, 11, 12])
    w = net.layers[0].weight.detach()
    assert torch.equal(w[0], w[1]) and not torch.equal(w[0], w[2])  # a shared seed gives identical members
    bound = 1 / np.sqrt(64)
    assert w.abs().max() <= bound and w.abs().max() > 0.95 * bound  # U(±1/sqrt(fan_in))
    again = BatchedMLPEnsemble(64, 16, 10, 1, seeds=[12])  # a member's init depends on its seed only
    assert torch.equal(again.layers[0].weight[0], w[2])
    assert member_seeds(0, 3) != member_seeds(1, 3)
    assert len(set(member_seeds(0, 5))) == 5 and len(set(member_seeds(0, 5, identical=True))) == 1


def test_make_ensemble_checks_inputs():
    assert isinstance(make_ensemble("cnn", 2, 10, 2, (1, 8, 8)), BatchedCNNEnsemble)
    with pytest.raises(ValueError, match="model must be one of"):
        make_ensemble("vit", 2, 10, 2, (3, 8, 8))
    with pytest.raises(ValueError, match="needs flat inputs"):
        make_ensemble("mlp", 2, 10, 2, (3, 8, 8))


def _blobs(n=120, seed=0) -> Dataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = (rng.normal(size=(n, 5)) + 4 * np.eye(3, 5)[y]).astype(np.float32)
    return Dataset("blobs", x[:80], y[:80], x[80:], y[80:], 3)


def test_training_interpolates_and_stops():
    ds = _blobs()
    probs, info = train_homogeneous(ds, "mlp", 32, 3, seed=0, settings=TrainSettings(lr=0.1, batch_size=16))
    assert info["interpolated"] and info["epochs"] < 300 and info["train_acc"].min() == 1.0
    assert probs.shape == (3, 40, 3)
    np.testing.assert_allclose(probs.sum(-1), 1.0)
    assert info["history"][-1]["min_train_acc"] == 1.0
    assert all(h["min_train_acc"] < 1.0 for h in info["history"][:-1])  # stopped at the first epoch all fit


def test_members_differ_only_by_seed_and_identical_control():
    ds = _blobs()
    s = TrainSettings(lr=0.1, batch_size=16, max_epochs=5, until_interpolation=False)
    p, _ = train_homogeneous(ds, "mlp", 8, 3, seed=0, settings=s)
    assert np.abs(p[0] - p[1]).max() > 1e-3
    same, _ = train_homogeneous(ds, "mlp", 8, 3, seed=0, settings=s, identical=True)
    assert np.abs(same - same[:1]).max() < 1e-5
    # independent shuffles: each member trained alone with its seeds gives the batched member's result
    seeds = member_seeds(0, 3)
    shuffles = member_seeds(10_000, 3)
    single = BatchedMLPEnsemble(5, 8, 3, 1, seeds=[seeds[1]])
    x, y = torch.as_tensor(ds.x_train), torch.as_tensor(ds.y_train)
    train_ensemble(single, x, y, s, [shuffles[1]])
    from iclr25.ensemble_homogeneity.training import predict_probs

    np.testing.assert_allclose(predict_probs(single, torch.as_tensor(ds.x_test))[0], p[1], atol=1e-5)


def test_lr_schedule_and_settings_checks():
    s = TrainSettings(lr=0.1, lr_schedule="inverse_sqrt")
    assert s.lr_at(0) == pytest.approx(0.1) and s.lr_at(512 * 3) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="lr_schedule"):
        TrainSettings(lr_schedule="cosine")
    with pytest.raises(ValueError, match="lr must be > 0"):
        TrainSettings(lr=0)
