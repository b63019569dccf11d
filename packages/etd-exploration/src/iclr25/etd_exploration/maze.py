"""The temporal-distance demo of ETD (arXiv 2501.15418, Fig. 2): learn d on random walks in the spiral maze.

A `TemporalDistanceCritic` (MLP encoder on the flattened 17x17x3 image) is trained with the symmetric InfoNCE
objective on (anchor, discounted-future positive) pairs drawn inside random-walk episodes; the learned distance
is then compared with shortest-path (BFS) distances by rank correlation.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from iclr25.etd_exploration.analysis import goal_spearman, pairwise_spearman, spearman
from iclr25.etd_exploration.config import MazeConfig
from iclr25.etd_exploration.data import SpiralMaze, random_walk_dataset
from iclr25.etd_exploration.etd import (
    TemporalDistanceCritic,
    contrastive_loss,
    pair_distance,
    sample_future_indices,
)
from iclr25.shared.progress import progress


@contextmanager
def full_float32() -> Iterator[None]:
    """Full-precision float32 matmuls on CUDA (TF32 off) for the block, as on a CPU; the flags are restored after.

    The run layer turns TF32 on for CUDA runs; its 10-bit mantissa breaks the MRN L2 part, which goes through
    ||x||^2 + ||y||^2 - 2 x.y: for nearby cells the cancellation leaves errors of ~1e-3 ||u||^2, which reorders
    exactly the short distances the maze claims rank."""
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


def train_maze_critic(cfg: MazeConfig, seed: int = 0, device: str = "cpu"):
    """Train a critic on random walks; returns (critic, maze, stats dict with the loss curve and timings).

    Every random draw comes from NumPy and the weights are initialised on the CPU before they move to `device`, so
    the data and the start are the same on every device; matmuls run in full float32 (`full_float32`)."""
    with full_float32():
        return _train_maze_critic(cfg, seed, device)


def _train_maze_critic(cfg: MazeConfig, seed: int, device: str):
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    maze = SpiralMaze(noise=cfg.noise)
    data = random_walk_dataset(maze, cfg.data_steps, cfg.episode_len, rng)
    cells, dones = data["cells"], data["dones"]  # (E, T, 2), (E, T)
    E, T = dones.shape
    critic = TemporalDistanceCritic(
        (maze.size, maze.size, 3),
        feature_dim=cfg.hidden_dim,
        emb_dim=cfg.emb_dim,
        latent_dim=cfg.hidden_dim,
        energy=cfg.energy,
        encoder="mlp",
    ).to(device)
    opt = torch.optim.Adam(critic.parameters(), lr=cfg.lr)
    losses, accs = [], []
    start = time.perf_counter()
    walls = "noisy" if cfg.noise else "clean"
    for _ in progress(range(cfg.steps), desc=f"maze critic ({walls} walls)", unit="step"):
        e = rng.integers(0, E, cfg.batch_size)
        t = rng.integers(0, T, cfg.batch_size)
        pos_t, _ = sample_future_indices(dones[e].T, cfg.gamma, rng)  # time is the first axis: (T, B)
        tp = pos_t[t, np.arange(cfg.batch_size)]
        x = torch.as_tensor(maze.render(cells[e, t], rng), device=device)
        y = torch.as_tensor(maze.render(cells[e, tp], rng), device=device)
        loss, stats = contrastive_loss(critic.logits(x, y), cfg.loss)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(stats["loss"])
        accs.append(stats["acc"])
    seconds = time.perf_counter() - start
    return critic, maze, {"loss": losses, "acc": accs, "train_s": seconds, "steps_per_s": cfg.steps / seconds}


@torch.no_grad()
def cell_distance_matrix(critic: TemporalDistanceCritic, maze: SpiralMaze, rng: np.random.Generator) -> np.ndarray:
    """Learned d(x, y) between all free cells (C, C), one rendered observation per cell.

    Evaluated on a float64 CPU copy of the critic with the direct difference form of every distance (no
    ||x||^2 + ||y||^2 - 2 x.y cancellation), so that the same weights give the same matrix on every device."""
    exact = copy.deepcopy(critic).to("cpu", torch.float64)
    obs = torch.as_tensor(maze.render(maze.cells, rng))
    z = exact.embed(exact.features(obs.double()))  # (C, D), float64
    return pair_distance(z[:, None, :], z[None, :, :], exact.energy, exact.eps).numpy()


def pixel_distance_matrix(maze: SpiralMaze, rng: np.random.Generator) -> np.ndarray:
    """Raw-pixel L2 distances between the cells' observations (C, C): the baseline without learning."""
    obs = maze.render(maze.cells, rng).reshape(maze.n_cells, -1).astype(np.float64)
    sq = (obs**2).sum(1)
    return np.sqrt(np.clip(sq[:, None] + sq[None, :] - 2 * obs @ obs.T, 0.0, None))


def evaluate_maze(critic: TemporalDistanceCritic, maze: SpiralMaze, cfg: MazeConfig, seed: int = 0) -> dict:
    """rho_pairs / rho_goal20 / rho_global for the learned distance and for raw-pixel L2."""
    rng = np.random.default_rng(seed + 1000)
    bfs = maze.distance_matrix()
    goal = maze.cell_index(cfg.goal)
    learned = cell_distance_matrix(critic, maze, rng)
    pixels = pixel_distance_matrix(maze, rng)
    out = {}
    for name, D in (("learned", learned), ("pixel", pixels)):
        out[name] = {
            "rho_pairs": pairwise_spearman(D, bfs, cfg.max_pair_bfs),
            "rho_goal20": goal_spearman(D[:, goal], bfs[:, goal], cfg.goal_radius),
            "rho_global": goal_spearman(D[:, goal], bfs[:, goal], None),
            "rho_all_pairs": spearman(D[~np.eye(len(D), dtype=bool)], bfs[~np.eye(len(D), dtype=bool)]),
        }
    out["d_to_goal"] = learned[:, goal].tolist()
    out["bfs_to_goal"] = bfs[:, goal].tolist()
    return out


def run_maze(cfg: MazeConfig, seed: int = 0, device: str = "cpu") -> dict:
    """Train and evaluate; returns metrics, the loss curve and throughput."""
    critic, maze, stats = train_maze_critic(cfg, seed, device)
    metrics = evaluate_maze(critic, maze, cfg, seed)
    metrics.update(
        loss_curve=stats["loss"],
        final_loss=float(np.mean(stats["loss"][-50:])),
        final_acc=float(np.mean(stats["acc"][-50:])),
        train_s=stats["train_s"],
        steps_per_s=stats["steps_per_s"],
    )
    return metrics
