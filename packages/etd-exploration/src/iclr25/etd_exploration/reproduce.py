"""Reproduction of ETD (arXiv 2501.15418): the plan. The spiral-maze temporal distance (Fig. 2) and PPO on MiniGrid
(Sec. 5), measured by `experiments.measure` and judged by `claims.declared`.

Claims (spec §6a, §9.6, §9.8):
- the learned temporal distance ranks cell pairs up to 15 steps apart like BFS (Spearman >= 0.90 clean walls,
  >= 0.80 noisy walls) and cells within 20 steps of the corner cell likewise (>= 0.90 / >= 0.75), while raw-pixel L2
  does not (<= 0.3); the all-cell correlation is reported only;
- reward-free PPO on a small MiniGrid task: ETD visits >= 1.2x the cells per episode of PPO without a bonus (reported);
- the intrinsic reward costs <= 30% of the PPO loop's time (reported);
- full preset: the paper's MiniGrid suite, ETD vs baselines, success rates and learning curves (reported).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from iclr25.etd_exploration.claims import declared
from iclr25.etd_exploration.config import PRESETS, Config
from iclr25.etd_exploration.experiments import measure
from iclr25.shared.claims import evaluate
from iclr25.shared.results import Report, save_figure
from iclr25.shared.run import Run, reproduction

SLUG = "etd-exploration"


def _figures(run_dir: Path, maze: dict | None, ppo: dict[str, dict]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.etd_exploration.data import SpiralMaze

    names = []
    if maze is not None:
        sm = SpiralMaze()
        fig, axes = plt.subplots(1, 3, figsize=(12, 4))
        panels = [("BFS distance to (1,1)", maze["clean"]["bfs_to_goal"])]
        panels += [(f"learned d(s, goal), {k} walls", maze[k]["d_to_goal"]) for k in ("clean", "noisy")]
        for ax, (title, values) in zip(axes, panels, strict=True):
            img = np.full(sm.free.shape, np.nan)
            img[sm.free] = values
            im = ax.imshow(img, cmap="viridis")
            ax.set_title(title, fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            fig.colorbar(im, ax=ax, fraction=0.046)
        names.append(save_figure(fig, run_dir / "maze_distance.png").name)
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for k in ("clean", "noisy"):
            ax.plot(np.convolve(maze[k]["loss_curve"], np.ones(20) / 20, mode="valid"), label=f"{k} walls")
        ax.set_xlabel("gradient step")
        ax.set_ylabel("symmetric InfoNCE loss")
        ax.legend()
        names.append(save_figure(fig, run_dir / "maze_loss.png").name)
    for tag, runs in ppo.items():
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
        for method, rs in runs.items():
            frames = [row["frames"] for row in rs[0]["curve"]]
            for ax, key in zip(axes, ("unique_cells", "return"), strict=True):
                vals = np.nanmean([[row[key] for row in r["curve"]] for r in rs], axis=0)
                ax.plot(frames, vals, label=method)
                ax.set_xlabel("frames")
                ax.set_ylabel(key.replace("_", " ") + " per episode")
        axes[0].legend()
        fig.suptitle(tag, fontsize=9)
        names.append(save_figure(fig, run_dir / f"curves_{tag}.png").name)
        fig, axes = plt.subplots(1, len(runs), figsize=(3.2 * len(runs), 3.2))
        for ax, (method, rs) in zip(np.atleast_1d(axes), runs.items(), strict=True):
            ax.imshow(np.log1p(np.sum([r["visits"] for r in rs], axis=0)), cmap="magma")
            ax.set_title(f"{method}: log(1 + visits)", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        names.append(save_figure(fig, run_dir / f"visits_{tag}.png").name)
    return names


@reproduction(SLUG, PRESETS)
def run(run: Run) -> Report:
    """Run a preset and return its Report (results.json, report.md and figures written to `out`)."""
    metrics, throughput, maze, ppo_all = measure(run)
    figures = _figures(run.dir, maze, ppo_all)
    notes = (
        "The paper reports learning curves and a distance heat-map, not numbers; 'paper' cells name the claim's "
        "source. Thresholds are the spec's acceptance checks. The maze correlation over all cells is reported "
        f"only: pairs more than ~20 corridor cells apart never share a 50-step random-walk episode. device={run.device}."
    )
    claims = evaluate(declared(run.config), metrics, run.config)
    return run.report(claims, metrics, throughput=throughput, figures=figures, notes=notes)


__all__ = ["PRESETS", "Config", "replace", "run"]
