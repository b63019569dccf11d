"""Command line of the TSC-Net package: `iclr25-tsc-net {reproduce,simulate,train,predict,eval}`.

Standard-library imports only at module level, so that `--help` answers instantly and bad input is refused before
torch loads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iclr25.shared.cli import (
    CliError,
    add_config_args,
    add_run_args,
    add_verb_args,
    build_config,
    check_verb_flags,
    config_from_args,
    make_parser,
    package_main,
    reproduce_command,
    scale_out_from_args,
)
from iclr25.shared.run import open_run_folder
from iclr25.shared.validate import int_at_most
from iclr25.tsc_net.config import MAX_CLIPS, MAX_SAMPLES, MAX_SCENES, PRESETS, WORKERS_AND_SCALE_OUT

PROG = "iclr25-tsc-net"
SLUG = "tsc-net"
SCALES = ("ci", "quick", "benchmark", "bench", "full")
CONFIG_FLAGS = ("train_scenes", "test_scenes", "arch", "goal_cells", "goal_cell_px", "step_cell_px", "d_model",
                "heads", "layers", "latent", "train_steps", "lr", "augment", "threads")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The `iclr25-tsc-net` argument parser."""

    parser = make_parser(PROG, "TSC-Net (ICLR 2025): reproduce the claims, simulate scenes, train, predict, evaluate.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser(
        "reproduce", help="run the ci/quick/benchmark/bench/full reproduction and print the claims table"
    )
    add_run_args(rep, scales=SCALES, presets=PRESETS, scale_out=True)
    sim = sub.add_parser("simulate", help="write simulated scenes as Y-Net pickles + mask PNGs (+ exits.json)")
    sim.add_argument("--train-scenes", type=int_at_most(MAX_SCENES), default=40)
    sim.add_argument("--test-scenes", type=int_at_most(MAX_SCENES), default=10)
    add_verb_args(sim)
    tr = sub.add_parser("train", help="train TSC-Net (or a learned baseline) on a Y-Net folder or on simulated data")
    tr.add_argument("--data", required=True, help="'sim' (simulate now) or a folder holding train.pkl + masks")
    tr.add_argument("--model", choices=("tsc", "blind", "goalreg"), default="tsc", help="variant (default: tsc)")
    tr.add_argument("--scale", choices=("quick", "full"), default="quick", help="preset for the defaults")
    add_verb_args(tr)
    add_config_args(tr, PRESETS["quick"], exclude=[f for f in PRESETS["quick"].__dataclass_fields__ if f not in CONFIG_FLAGS])  # fmt: skip
    for name, helptext in (("predict", "sample K trajectories per pedestrian and plot them over the scene"),
                           ("eval", "minADE/minFDE/goal-FDE/violations of a trained model, per subset")):  # fmt: skip
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--model", required=True, type=Path, help="model.pt written by `train`")
        p.add_argument("--data", required=True, type=Path, help="folder holding <split>.pkl + masks")
        p.add_argument("--split", default="test", help="pickle name inside --data (default: test)")
        p.add_argument(
            "--k", type=int_at_most(MAX_SAMPLES), default=20, help="samples: 5 CVAE draws x k/5 cells (default: 20)"
        )
        p.add_argument(
            "--max-peds",
            type=int_at_most(MAX_CLIPS),
            default=240,
            help="evaluate the first whole clips up to this many",
        )
        add_verb_args(p)
    return parser


def _reproduce(args: argparse.Namespace) -> int:
    """The shared `reproduce` verb, refusing first what this package's loops do not do: sharded parameters
    (`--strategy fsdp`), and checkpoints or `--resume` on the simulated presets (only the real-data training is
    checkpointed). Several processes (`--devices`, `--num-nodes`) and `--precision` apply to every preset, but not
    with `workers` > 1 (training runs in worker processes)."""
    scale_out = scale_out_from_args(args)  # bad --devices/--num-nodes/--strategy/--precision values, before any work
    if args.strategy == "fsdp":
        raise CliError("--strategy fsdp: TSC-Net checkpoints one full state dict from rank 0; use ddp (or auto)")
    if scale_out.wants_fabric and build_config(PRESETS[args.scale], args.config, args.overrides).workers > 1:
        raise CliError(WORKERS_AND_SCALE_OUT)
    if args.resume not in (None, "auto"):  # a checkpoint file is checked first, whatever the preset
        from iclr25.shared.fabric import check_checkpoint

        check_checkpoint(args.resume)
    if args.resume is not None or args.checkpoint_every:
        if args.checkpoint_every < 0:
            raise CliError(f"--checkpoint-every must be an integer >= 0, got {args.checkpoint_every}")
        if build_config(PRESETS[args.scale], args.config, args.overrides).dataset == "sim":
            raise CliError("--resume and --checkpoint-every apply to the real-data run (dataset=sdd, --scale full)")
    return reproduce_command(SLUG, args, "iclr25.tsc_net.reproduce:run", PRESETS)


def _simulate(args: argparse.Namespace) -> int:
    for name in ("train_scenes", "test_scenes"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    out = check_verb_flags(args, SLUG, "simulate", "sim")
    from iclr25.tsc_net.data import simulate_scenes, write_ynet

    with open_run_folder(out, args.overwrite, paper=SLUG, command="simulate") as folder:
        for name, n, seed in (("train", args.train_scenes, args.seed), ("test", args.test_scenes, args.seed + 10_000)):
            df, masks, exits = simulate_scenes(n, seed, prefix=name)
            write_ynet(folder, name, df, masks, exits)
            print(f"{name}: {df['metaId'].nunique()} trajectories in {n} scenes")
    print(f"written to {out}")
    return 0


def _check_k(k: int) -> None:
    if k < 5 or k % 5:
        raise CliError(f"--k must be a positive multiple of 5 (5 CVAE draws x k/5 cells), got {k}")


def _train(args: argparse.Namespace) -> int:

    cfg = config_from_args(args, PRESETS[args.scale])
    data = None if args.data == "sim" else Path(args.data)
    if data is not None and not (data / "train.pkl").is_file():
        raise CliError(f"{data} holds no train.pkl (a Y-Net folder, or pass --data sim)")
    out = check_verb_flags(args, SLUG, "train", args.model)
    from iclr25.tsc_net.workflows import train_command

    with open_run_folder(out, args.overwrite, paper=SLUG, command="train") as folder:
        summary = train_command(cfg, args.model, data, folder, args.seed, args.device)
    print(json.dumps(summary, indent=1))
    print(f"model written to {out / 'model.pt'}")
    return 0


def _load_inputs(args: argparse.Namespace):
    _check_k(args.k)
    if args.max_peds < 1:
        raise CliError(f"--max-peds must be >= 1, got {args.max_peds}")
    from iclr25.tsc_net.workflows import load_model

    model = load_model(args.model)
    if not (args.data / f"{args.split}.pkl").is_file():
        raise CliError(f"{args.data} holds no {args.split}.pkl")
    return model


def _predict(args: argparse.Namespace) -> int:
    out = check_verb_flags(args, SLUG, "predict", args.split)
    model = _load_inputs(args)
    from iclr25.tsc_net.workflows import predict_command

    with open_run_folder(out, args.overwrite, paper=SLUG, command="predict") as folder:
        summary = predict_command(model, args.data, args.split, args.k, args.max_peds, args.seed, folder)
    print(json.dumps(summary, indent=1))
    print(f"predictions written to {out}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_verb_flags(args, SLUG, "eval", args.split)
    model = _load_inputs(args)
    from iclr25.tsc_net.workflows import eval_command

    result = eval_command(model, args.data, args.split, args.k, args.max_peds, args.seed)
    if args.out is not None:
        from iclr25.shared.results import atomic_write_json

        with open_run_folder(args.out, args.overwrite, paper=SLUG, command="eval") as folder:
            atomic_write_json(folder / "metrics.json", result)
    for subset, row in result.items():
        print(
            f"{subset:10s} " + "  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
        )
    return 0


main = package_main(
    PROG,
    build_parser,
    {"reproduce": _reproduce, "simulate": _simulate, "train": _train, "predict": _predict, "eval": _eval},
)


if __name__ == "__main__":
    sys.exit(main())
