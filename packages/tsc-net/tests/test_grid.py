"""Spec §9.1: the goal and step grids."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr25.tsc_net import GridSpec


def test_goal_grid_centres_and_worked_example():
    g = GridSpec(1200, 15)
    assert np.allclose(g.centers_1d(), np.arange(-560, 561, 80))
    idx, off = g.encode((123.4, -250.0))
    assert int(idx) == 69
    assert torch.allclose(off, torch.tensor([-36.6, -10.0], dtype=off.dtype), atol=1e-9)


def test_step_grid_worked_example():
    idx, off = GridSpec(60, 3).encode((25.0, -7.0))
    assert int(idx) == 5
    assert torch.allclose(off, torch.tensor([5.0, -7.0], dtype=off.dtype))


@pytest.mark.parametrize(("window", "n"), [(1200, 15), (60, 3), (140, 7), (15, 3)])
def test_decode_inverts_encode_inside_the_window(window, n):
    g = GridSpec(window, n)
    xy = (torch.rand(500, 2, dtype=torch.float64) - 0.5) * window * 0.999
    idx, off = g.encode(xy)
    assert torch.allclose(g.decode(idx, off), xy)
    assert (off.abs() <= g.cell / 2 + 1e-9).all()


def test_points_beyond_the_window_clip_to_border_cells():
    g = GridSpec(60, 3)
    idx, off = g.encode(torch.tensor([[100.0, -100.0], [-31.0, 0.0]]))
    assert idx.tolist() == [2, 3]  # (col 2, row 0) and (col 0, row 1)
    assert off[0, 0] == 80.0  # unclamped offset in the border cell


def test_neighbourhood_mask_is_clipped_to_the_grid():
    g = GridSpec(60, 3)
    assert g.neighbourhood(torch.tensor(4)).sum() == 9
    corner = g.neighbourhood(torch.tensor(0)).view(3, 3)
    assert corner.sum() == 4 and corner[:2, :2].all()
