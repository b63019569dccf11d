"""ResNet on CIFAR-10 with the App. G downsampling: D∘U = id, exactness at k = L, one full-preset training step."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr25.highway_bp.config import Config
from iclr25.highway_bp.highway import flat_grad, highway_step
from iclr25.highway_bp.reproduce import run
from iclr25.highway_bp.resnet import downsample, resnet_cifar, resnet_data, train_resnet, upsample

CE = nn.functional.cross_entropy


def test_downsample_upsample():
    x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float64).reshape(2, 3, 4, 4)
    d = downsample(x, 2)
    assert d.shape == (2, 6, 2, 2)
    # channel c·2 + j of cell (0, 0) is the mean over the cell's height of column j
    assert torch.allclose(d[0, 1, 0, 0], (x[0, 0, 0, 1] + x[0, 0, 1, 1]) / 2)
    y = torch.randn(2, 12, 2, 2, dtype=torch.float64)
    assert upsample(y, 2).shape == (2, 6, 4, 4)
    assert torch.equal(downsample(upsample(y, 2), 2), y)  # D_s(U_s(y)) = y
    # block sizes compose (s1 then s2 = s1·s2), up to the order of the channels
    two, four = downsample(downsample(x, 2), 2), downsample(x, 4)
    assert two.shape == four.shape == (2, 12, 1, 1)
    assert torch.equal(two.sort(1).values, four.sort(1).values)
    with pytest.raises(ValueError, match="divisible"):
        downsample(torch.zeros(1, 1, 3, 3), 2)


@pytest.mark.parametrize("preact", [True, False])
def test_hbp_exact_at_L_across_downsampling(cifar_writer, tmp_path, preact):
    cifar_writer(tmp_path)
    Xtr, ytr, _, _ = resnet_data(tmp_path)
    assert Xtr.shape == (20, 3, 32, 32) and Xtr.dtype == np.float32
    x, y = torch.as_tensor(Xtr[:3]).double(), torch.as_tensor(ytr[:3])
    torch.manual_seed(0)
    model = resnet_cifar(1, width=2, preact=preact).double()  # 3 blocks at block sizes 1, 2, 4
    L = model.depth
    assert L == 3
    model.zero_grad()
    CE(model(x), y).backward()
    exact = flat_grad(model).clone()
    for k, close in ((0, False), (L, True)):
        model.zero_grad(set_to_none=True)
        highway_step(model, CE, x, y, k)
        rel = float((flat_grad(model) - exact).norm() / exact.norm())
        assert (rel < 1e-8) if close else (rel > 1e-6), (k, rel)


def test_full_resnet_step_and_skip(cifar_writer, tmp_path, capsys):
    cifar_writer(tmp_path)
    cfg = Config(resnet_width=2, resnet_blocks=(1,), resnet_epochs=1, resnet_batch=4, resnet_steps=1)
    data = resnet_data(tmp_path)
    for algo, k in (("bp", 0), ("hbp", 2)):
        r = train_resnet(cfg, data, 1, algo, k, seed=0, device="cpu")
        assert 0.0 <= r["acc"] <= 1.0 and np.isfinite(r["final_loss"])
    off = dict(fidelity=False, mlp=False, gru=False, lm=False, figures=False, resnet=True)
    report = run(config=Config(**off), out=tmp_path / "run", overwrite=True)
    assert "skipped" in report.metrics["resnet"] and "cifar_dir" in capsys.readouterr().err
