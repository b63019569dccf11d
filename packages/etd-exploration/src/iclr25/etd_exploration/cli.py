"""`iclr25-etd-exploration`: reproduce, train, eval and distance-map for ETD (arXiv 2501.15418).

Standard library only at module level, so `--help` answers instantly; torch is imported inside the commands.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from iclr25.etd_exploration.config import ENERGIES, INTRINSICS, MAX_EVAL_EPISODES, PRESETS
from iclr25.shared.cli import (
    CliError,
    add_run_args,
    add_verb_args,
    check_verb_flags,
    make_parser,
    package_main,
)
from iclr25.shared.files import check_writable, save_torch
from iclr25.shared.validate import int_at_most

PROG = "iclr25-etd-exploration"
SLUG = "etd-exploration"


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, "Episodic Novelty Through Temporal Distance (ICLR 2025): reproduce, train, evaluate.")
    verbs = "{reproduce,train,eval,distance-map,overhead,profile}"
    sub = parser.add_subparsers(dest="command", required=True, metavar=verbs)
    rep = sub.add_parser("reproduce", help="run a preset and print its claims table")
    add_run_args(rep, scales=tuple(PRESETS), presets=PRESETS)

    tr = sub.add_parser("train", help="PPO with an intrinsic reward on a MiniGrid task")
    tr.add_argument("--env", default="MiniGrid-DoorKey-8x8-v0", help="MiniGrid id (default: %(default)s)")
    tr.add_argument("--intrinsic", choices=INTRINSICS, default="etd", help="intrinsic reward (default: %(default)s)")
    tr.add_argument("--frames", type=float, default=1e5, help="environment frames (default: %(default)g)")
    add_verb_args(tr)
    tr.add_argument(
        "--eval-episodes",
        type=int_at_most(MAX_EVAL_EPISODES),
        default=5,
        help="evaluation episodes after training (default: 5)",
    )
    tr.add_argument("overrides", nargs="*", metavar="key=value", help="PPOConfig overrides, e.g. n_envs=8")

    ev = sub.add_parser("eval", help="evaluate a policy saved by `train`")
    ev.add_argument("run", type=Path, help="run folder written by `train` (holds policy.pt)")
    ev.add_argument("--episodes", type=int_at_most(MAX_EVAL_EPISODES), default=10)
    ev.add_argument("--env", help="evaluate on another MiniGrid id (default: the training env)")
    ev.add_argument("--seed", type=int, default=12345)

    dm = sub.add_parser("distance-map", help="learn the temporal distance on the spiral maze and plot d(s, goal)")
    dm.add_argument("--noise", action="store_true", help="random wall colours at every observation")
    dm.add_argument("--steps", type=int, default=800)
    dm.add_argument("--energy", choices=ENERGIES, default="mrn_pot")
    add_verb_args(dm)

    ov = sub.add_parser("overhead", help="ETD's reward cost as a fraction of a PPO iteration at episode lengths")
    ov.add_argument("out", type=Path, help="JSON file to write (its folder must exist)")

    pr = sub.add_parser("profile", help="CPU time by part of the full preset's loop and a one-GPU estimate")
    pr.add_argument("out", type=Path, help="JSON file to write (its folder must exist)")
    return parser


def _train(args: argparse.Namespace) -> int:
    if not math.isfinite(args.frames) or args.frames < 1:
        raise CliError(f"--frames must be positive, got {args.frames:g}")
    if args.eval_episodes < 1:
        raise CliError(f"--eval-episodes must be >= 1, got {args.eval_episodes}")
    from iclr25.etd_exploration.config import PPOConfig
    from iclr25.shared.cli import apply_overrides, parse_overrides

    cfg = PPOConfig(env_id=args.env, intrinsic=args.intrinsic, total_frames=int(args.frames), seed=args.seed)
    cfg = apply_overrides(cfg, parse_overrides(args.overrides))
    target = check_verb_flags(args, SLUG, "train", args.intrinsic)

    from iclr25.etd_exploration.envs import make_env
    from iclr25.etd_exploration.ppo import evaluate_policy, late_mean, train
    from iclr25.shared.device import pick_device
    from iclr25.shared.logging import MetricsLogger
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    make_env(cfg.env_id).close()  # fail fast on an unknown id
    device = pick_device(args.device)
    with open_run_folder(target, args.overwrite, paper=SLUG, command="train") as run_dir:
        with MetricsLogger(run_dir, wandb=args.wandb, name=f"{SLUG}-train", config=cfg.__dict__) as log:
            res = train(cfg, device=device, log=log)
        save_torch(run_dir / "policy.pt", {"config": res["config"], "policy": res["policy"].state_dict()})
        summary = {
            "frames": res["frames"],
            "fps": res["fps"],
            "intrinsic_fraction": res["intrinsic_fraction"],
            "late_return": late_mean(res["episodes"], "return", res["frames"]),
            "late_success": late_mean(res["episodes"], "success", res["frames"]),
            "late_unique_cells": late_mean(res["episodes"], "unique_cells", res["frames"]),
            "eval": evaluate_policy(
                res["policy"], cfg.env_id, args.eval_episodes, noise_scale=cfg.noise_scale, device=device
            ),
        }
        atomic_write_json(run_dir / "summary.json", summary)
    print(json.dumps(summary, indent=2))
    print(f"run written to {target}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    if args.episodes < 1:
        raise CliError(f"--episodes must be >= 1, got {args.episodes}")
    path = args.run / "policy.pt" if args.run.is_dir() else args.run
    if not path.is_file():
        raise CliError(f"{path} does not exist; pass a run folder written by `train`")
    from iclr25.etd_exploration.envs import VecEnv
    from iclr25.etd_exploration.ppo import evaluate_policy, make_policy
    from iclr25.shared.safeload import load_checkpoint

    what = f"policy.pt written by `{PROG} train`"  # weights only: nothing in the file runs
    ckpt = load_checkpoint(path, required_keys=("config", "policy"), what=what)
    config = ckpt["config"]
    if not isinstance(config, dict) or "env_id" not in config or "features_dim" not in config:
        raise ValueError(f"{path} is not a {what}: its config lacks env_id or features_dim")
    env_id = args.env or config["env_id"]
    probe = VecEnv(env_id, 1)
    policy = make_policy(probe.obs_shape, probe.n_actions, config)
    try:
        policy.load_state_dict(ckpt["policy"])
    except (TypeError, RuntimeError) as e:
        raise ValueError(f"{path} does not fit the policy of {env_id} ({str(e).strip().splitlines()[0]})") from None
    stats = evaluate_policy(policy, env_id, args.episodes, args.seed, config.get("noise_scale", 0.0))
    print(json.dumps({"env": env_id, "episodes": args.episodes, **stats}, indent=2))
    return 0


def _distance_map(args: argparse.Namespace) -> int:
    if args.steps < 1:
        raise CliError(f"--steps must be >= 1, got {args.steps}")
    from iclr25.etd_exploration.config import MazeConfig

    cfg = MazeConfig(noise=args.noise, steps=args.steps, energy=args.energy)
    target = check_verb_flags(args, SLUG, "distance-map", "noisy" if args.noise else "clean")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from iclr25.etd_exploration.maze import evaluate_maze, train_maze_critic
    from iclr25.shared.device import pick_device
    from iclr25.shared.logging import MetricsLogger
    from iclr25.shared.results import atomic_write_json, save_figure
    from iclr25.shared.run import open_run_folder

    device = pick_device(args.device)
    walls = "noisy" if args.noise else "clean"
    with open_run_folder(target, args.overwrite, paper=SLUG, command="distance-map") as run_dir:
        critic, maze, stats = train_maze_critic(cfg, args.seed, device)
        metrics = evaluate_maze(critic, maze, cfg, args.seed)
        config = {**cfg.__dict__, "seed": args.seed}
        with MetricsLogger(run_dir, wandb=args.wandb, name=f"{SLUG}-distance-map", config=config) as log:
            for step, (loss, acc) in enumerate(zip(stats["loss"], stats["acc"], strict=True), 1):
                log.log({"loss": loss, "acc": acc}, step=step)
        img = np.full(maze.free.shape, np.nan)
        img[maze.free] = metrics["d_to_goal"]
        fig, ax = plt.subplots(figsize=(4.5, 4))
        im = ax.imshow(img, cmap="viridis")
        fig.colorbar(im, ax=ax)
        ax.set_title(f"learned d(s, (1,1)), {walls} walls", fontsize=9)
        save_figure(fig, run_dir / "distance_map.png")
        summary = {"config": config, "learned": metrics["learned"], "pixel": metrics["pixel"]}
        summary |= {"train_s": stats["train_s"], "d_to_goal": metrics["d_to_goal"]}
        atomic_write_json(run_dir / "summary.json", summary)
    print(json.dumps(metrics["learned"], indent=2))
    print(f"figure written to {target / 'distance_map.png'}")
    return 0


def _overhead(args: argparse.Namespace) -> int:
    if args.out.suffix != ".json" or not args.out.parent.is_dir():
        raise CliError(f"{args.command} writes a .json file into an existing folder, got {args.out}")
    check_writable(args.out)  # a new file: an existing one (a user's) is refused before the measurement
    from iclr25.etd_exploration.bench import main as bench_main

    return bench_main([str(args.out)], what=args.command)


main = package_main(
    PROG,
    _parser,
    {"train": _train, "eval": _eval, "distance-map": _distance_map, "overhead": _overhead, "profile": _overhead},
)


if __name__ == "__main__":
    sys.exit(main())
