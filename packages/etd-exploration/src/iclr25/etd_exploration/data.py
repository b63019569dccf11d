"""Data for ETD (arXiv 2501.15418): the spiral-maze distance demo (Sec. 4, Fig. 2) and loaders for real formats.

- `SpiralMaze`: a 17x17 maze whose 127 free cells form one 1-cell-wide spiral corridor, rendered as an RGB image
  (walls black, floor white, agent red; optional per-observation random wall colours, as in the official demo).
- `random_walk_dataset`: random-walk episodes with random starts (4 moves, a blocked move keeps the cell).
- `save_trajectories` / `load_trajectories`: `.npz` files with `obs [E, T, ...]`, `dones [E, T]` (+ optional keys).
- `read_logs`: the official / DEIR `rollout.csv` logs (every line ends with a trailing comma).
"""

from __future__ import annotations

import csv
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iclr25.shared.files import save_arrays

MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # up, down, left, right
WALL_PALETTE = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]], dtype=np.float32)  # noisy-wall colours


def spiral_layout(size: int = 17) -> np.ndarray:
    """Boolean (size, size) free-cell mask of a 1-wide corridor spiralling in from (1, 1); size must be 4k+1."""
    if size < 5 or (size - 1) % 4:
        raise ValueError(f"spiral size must be 4k+1 and >= 5, got {size}")
    free = np.zeros((size, size), dtype=bool)
    r, c = 1, 1
    free[r, c] = True
    k = 0
    # Ring k: right to column size-2-2k, down to row size-2-2k, left to column 1+2k, up to row 3+2k; consecutive
    # rings are two cells apart, so one wall separates them and the corridor is a single path.
    while True:
        moved = 0
        for dr, dc, stop in (
            (0, 1, size - 2 - 2 * k),
            (1, 0, size - 2 - 2 * k),
            (0, -1, 1 + 2 * k),
            (-1, 0, 3 + 2 * k),
        ):
            sign = dr + dc
            while sign * (stop - (c if dc else r)) > 0:
                r, c = r + dr, c + dc
                free[r, c] = True
                moved += 1
        if moved == 0:
            break
        k += 1
    return free


def bfs_distances(free: np.ndarray, source: tuple[int, int]) -> np.ndarray:
    """Shortest-path step counts from `source` over 4-connected free cells (-1 where unreachable)."""
    dist = np.full(free.shape, -1, dtype=np.int64)
    if not free[source]:
        raise ValueError(f"source {source} is not a free cell")
    dist[source] = 0
    queue = deque([source])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES:
            nr, nc = r + dr, c + dc
            if 0 <= nr < free.shape[0] and 0 <= nc < free.shape[1] and free[nr, nc] and dist[nr, nc] < 0:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


@dataclass
class SpiralMaze:
    """The spiral corridor maze of the distance demo, with image observations of the agent's cell."""

    size: int = 17
    noise: bool = False  # random wall colours at every observation
    free: np.ndarray = field(init=False, repr=False)
    cells: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.free = spiral_layout(self.size)
        self.cells = np.argwhere(self.free)  # (C, 2), row-major order
        self._index = {tuple(rc): i for i, rc in enumerate(self.cells.tolist())}

    @property
    def n_cells(self) -> int:
        """Number of free cells."""
        return len(self.cells)

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        """(H, W, 3) image shape."""
        return (self.size, self.size, 3)

    def cell_index(self, cell: tuple[int, int]) -> int:
        """Index of a free cell in `cells`."""
        return self._index[tuple(cell)]

    def render(self, cells: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Images (B, H, W, 3) float32 of the agent at each of `cells` (B, 2)."""
        cells = np.asarray(cells).reshape(-1, 2)
        img = np.zeros((len(cells), self.size, self.size, 3), dtype=np.float32)
        img[:, self.free] = 1.0
        if self.noise:
            rng = rng or np.random.default_rng()
            walls = ~self.free
            img[:, walls] = WALL_PALETTE[rng.integers(0, len(WALL_PALETTE), size=(len(cells), int(walls.sum())))]
        img[np.arange(len(cells)), cells[:, 0], cells[:, 1]] = (1.0, 0.0, 0.0)
        return img

    def step(self, cells: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Next cells (B, 2); a move into a wall keeps the cell."""
        nxt = cells + MOVES[actions]
        ok = self.free[nxt[:, 0], nxt[:, 1]]
        return np.where(ok[:, None], nxt, cells)

    def distance_matrix(self) -> np.ndarray:
        """All-pairs BFS distances (C, C) between free cells, in `cells` order."""
        out = np.empty((self.n_cells, self.n_cells), dtype=np.int64)
        for i, rc in enumerate(self.cells):
            out[i] = bfs_distances(self.free, tuple(rc))[self.free]
        return out

    def transition_matrix(self) -> np.ndarray:
        """Random-walk transition matrix (C, C) over free cells (4 moves, blocked moves stay)."""
        P = np.zeros((self.n_cells, self.n_cells))
        for a in range(4):
            nxt = self.step(self.cells, np.full(self.n_cells, a))
            for i, rc in enumerate(nxt):
                P[i, self.cell_index(tuple(rc))] += 0.25
        return P


def random_walk_dataset(
    maze: SpiralMaze, n_steps: int, episode_len: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Random-walk episodes with uniform random starts: `cells [E, T, 2]` and `dones [E, T]` (last step True)."""
    if n_steps < episode_len or episode_len < 2:
        raise ValueError(f"need n_steps >= episode_len >= 2, got {n_steps} and {episode_len}")
    n_ep = n_steps // episode_len
    cells = np.empty((n_ep, episode_len, 2), dtype=np.int64)
    cells[:, 0] = maze.cells[rng.integers(0, maze.n_cells, n_ep)]
    for t in range(1, episode_len):
        cells[:, t] = maze.step(cells[:, t - 1], rng.integers(0, 4, n_ep))
    dones = np.zeros((n_ep, episode_len), dtype=bool)
    dones[:, -1] = True
    return {"cells": cells, "dones": dones}


# --------------------------------------------------------------------------------------------------
# Loaders for real formats


def save_trajectories(path: str | Path, obs: np.ndarray, dones: np.ndarray, **extra: np.ndarray) -> Path:
    """Write a trajectory file: `obs [E, T, ...]`, `dones [E, T]` and optional arrays (actions, positions)."""
    path = Path(path)
    path = path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")  # the name np.savez gives it
    return save_arrays(path, {"obs": obs, "dones": dones, **extra}, compressed=True)


def load_trajectories(path: str | Path) -> dict[str, np.ndarray]:
    """Read a trajectory `.npz`; checks that `obs` and `dones` exist and agree on (E, T)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"trajectory file {path} does not exist")
    from iclr25.shared.safeload import load_npz

    data = load_npz(path)  # allow_pickle=False: nothing in the file runs
    for key in ("obs", "dones"):
        if key not in data:
            raise ValueError(
                f"{path} has no {key!r} array; a trajectory file needs 'obs' [E, T, ...] and 'dones' [E, T]"
            )
    if data["dones"].ndim != 2 or data["obs"].shape[:2] != data["dones"].shape:
        raise ValueError(
            f"{path}: obs {data['obs'].shape} and dones {data['dones'].shape} must share leading dims (E, T)"
        )
    data["dones"] = data["dones"].astype(bool)
    return data


def read_logs(path: str | Path) -> dict[str, np.ndarray]:
    """Read an official/DEIR `rollout.csv` (or `train.csv`) into {column: float array}; drops the empty column."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"log file {path} does not exist")
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"log file {path} is empty")
    header = rows[0]
    keep = [i for i, name in enumerate(header) if name.strip()]
    out: dict[str, list[float]] = {header[i].strip(): [] for i in keep}
    for line_no, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        for i in keep:
            cell = row[i].strip() if i < len(row) else ""
            try:
                out[header[i].strip()].append(float(cell) if cell else float("nan"))
            except ValueError:
                raise ValueError(f"{path}:{line_no}: column {header[i]!r} holds a non-number {cell!r}") from None
    return {k: np.asarray(v) for k, v in out.items()}
