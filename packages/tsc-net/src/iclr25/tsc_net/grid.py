"""Cell grids of TSC-Net (spec §3 "Grids"): a square window of n x n cells centred on a reference point.

A point v (relative to the centre) lies in cell (col, row) = trunc((v + W/2) / cell) clipped to [0, n-1] per axis,
flat index row * n + col (row = y), with offset v - centre(cell). Points outside the window go to border cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class GridSpec:
    """A window of `window_px` pixels split into `n_cells` x `n_cells` cells (goal grid 1200/15, step grid 60/3)."""

    window_px: float
    n_cells: int

    @property
    def cell(self) -> float:
        """Cell size in pixels."""
        return self.window_px / self.n_cells

    def centers_1d(self) -> np.ndarray:
        """Cell centres along one axis, e.g. -560, -480, ..., 560 for (1200, 15)."""
        return -self.window_px / 2 + self.cell * (np.arange(self.n_cells) + 0.5)

    def centers(self) -> torch.Tensor:
        """(n*n, 2) centres (x, y) of the cells in flat order (row-major, row = y)."""
        c = torch.tensor(self.centers_1d(), dtype=torch.float32)
        ys, xs = torch.meshgrid(c, c, indexing="ij")
        return torch.stack([xs.reshape(-1), ys.reshape(-1)], -1)

    def encode(self, xy: torch.Tensor | np.ndarray | tuple[float, float]) -> tuple[torch.Tensor, torch.Tensor]:
        """(flat cell index, offset to the cell centre) of points `xy` (..., 2) relative to the window centre."""
        v = torch.as_tensor(np.asarray(xy, dtype=np.float64) if not torch.is_tensor(xy) else xy)
        col_row = torch.trunc((v + self.window_px / 2) / self.cell).clamp(0, self.n_cells - 1).long()
        flat = col_row[..., 1] * self.n_cells + col_row[..., 0]
        c = torch.as_tensor(self.centers_1d(), dtype=v.dtype, device=v.device)
        offset = v - torch.stack([c[col_row[..., 0]], c[col_row[..., 1]]], -1)
        return flat, offset

    def decode(self, idx: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        """Point = centre of cell `idx` + `offset` (inverse of `encode` inside the window)."""
        idx = torch.as_tensor(idx)
        centers = self.centers().to(offset.dtype if torch.is_tensor(offset) else torch.float32)
        return centers.to(torch.as_tensor(offset).device)[idx] + torch.as_tensor(offset)

    def neighbourhood(self, idx: torch.Tensor) -> torch.Tensor:
        """(..., n*n) mask of the cell `idx` and its 8 neighbours, clipped to the grid (step-offset loss mask)."""
        idx = torch.as_tensor(idx)
        row, col = idx // self.n_cells, idx % self.n_cells
        r = torch.arange(self.n_cells, device=idx.device)
        near_r = (r - row[..., None]).abs() <= 1
        near_c = (r - col[..., None]).abs() <= 1
        return (near_r[..., :, None] & near_c[..., None, :]).flatten(-2).float()
