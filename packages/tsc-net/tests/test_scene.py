"""Spec §9.2: crops with an outside channel and the scene CNN's shapes."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from iclr25.tsc_net import SceneCNN, SceneCrop, crop_and_pad


def test_fast_crop_equals_reference_and_marks_outside():
    rng = np.random.default_rng(0)
    m = rng.integers(0, 6, (40, 30))
    bank = SceneCrop([m], 6, scale=0.5)
    onehot = F.one_hot(torch.tensor(m), 6).permute(2, 0, 1).float()
    for centre in [(10.0, 20.0), (0.0, 0.0), (59.0, 79.0), (-20.3, 33.7)]:
        fast = bank.crop(torch.tensor([0]), torch.tensor([centre]), 15)[0]
        ref = crop_and_pad(onehot, centre, 15, resize=0.5)
        assert torch.equal(fast, ref)
    out = bank.crop(torch.tensor([0]), torch.tensor([[0.0, 0.0]]), 15)[0]
    assert out[6, 0, 0] == 1 and out[:6, 0, 0].sum() == 0  # outside: channel 7 only
    assert out.sum(0).eq(1).all()


def test_official_cnn_shapes():
    cnn = SceneCNN(7, 128, "official")
    with torch.no_grad():
        assert cnn(torch.zeros(1, 7, 300, 300), pool=True).shape == (1, 128, 15, 15)
        steps = torch.zeros(2, 3, 7, 45, 45)  # (P, F, 7, 45, 45)
        cells, point = cnn.step_cells(steps.flatten(0, 1))
    assert cells.view(2, 3, 3, 3, 128).shape == (2, 3, 3, 3, 128)  # (P, F, 3, 3, 128) centre cells
    assert point.view(2, 3, 128).shape == (2, 3, 128)


def test_stride_first_cnn_matches_the_lite_grids():
    cnn = SceneCNN(7, 32, "stride_first")
    with torch.no_grad():
        assert cnn(torch.zeros(2, 7, 140, 140), pool=True).shape == (2, 32, 7, 7)  # 7 x 7 goal cells of 20 px
        cells, point = cnn.step_cells(torch.zeros(4, 7, 45, 45))
    assert cells.shape == (4, 9, 32) and point.shape == (4, 32)  # 3 x 3 step cells of 5 px
