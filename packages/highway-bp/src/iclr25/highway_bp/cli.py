"""`iclr25-highway-bp`: reproduce, train and check Highway backpropagation (ICLR 2025, arXiv 2501.17086).

Standard library only at module level, so that `--help` answers instantly; torch loads inside the commands.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from iclr25.highway_bp.config import (
    BACKWARDS,
    LM_CELLS,
    MAX_BATCH,
    MAX_DEPTH,
    MAX_LENGTH,
    MAX_THREADS,
    MAX_WIDTH,
    MODELS,
    PRESETS,
    TrainConfig,
)
from iclr25.shared.cli import (
    CliError,
    add_config_args,
    add_run_args,
    add_verb_args,
    check_verb_flags,
    config_from_args,
    make_parser,
    package_main,
    scale_out_from_args,
)
from iclr25.shared.files import check_writable, write_text
from iclr25.shared.run import DEVICES, open_run_folder

PROG = "iclr25-highway-bp"
SLUG = "highway-bp"
SCALES = ("ci", "quick", "full")
MAX_VOCAB = 65536  # `speed`'s vocabulary (the paper's char-level LM: 210 characters + unk)
MAX_TIMED_STEPS = 1000  # `speed`'s timed (and warm-up) steps per entry


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, "Highway backpropagation (Fagnou et al., ICLR 2025): reproduce, train, check.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run a reproduction preset and print its claims table")
    add_run_args(rep, scales=SCALES, scale_out=True, presets=PRESETS)
    tr = sub.add_parser(
        "train",
        help="train a model on digits with BP/BPTT, Highway-BP(k) or FPI(k)",
        description="--k: Highway-BP / FPI iterations; --depth: residual blocks of resmlp; --hidden: width (resmlp) "
        "or hidden size (RNN); --lr: Adam learning rate (default: 1e-3 for resmlp, 3e-3 for the RNNs).",
    )
    tr.add_argument("--model", choices=MODELS, default="resmlp")
    tr.add_argument("--backward", choices=BACKWARDS, default="hbp", help="bp = exact (BPTT for RNNs)")
    # --k (Highway-BP / FPI iterations), --depth (resmlp blocks), --hidden, --epochs, --lr (None: 1e-3 resmlp,
    # 3e-3 RNN), --batch-size: one flag per TrainConfig field, defaults from TrainConfig
    add_config_args(tr, TrainConfig(), exclude=("model", "backward"))
    add_verb_args(tr, scale_out=True)
    sp = sub.add_parser(
        "speed",
        help="time BP/BPTT, FPI(k) and Highway-BP(k) per step over sequence lengths (a table like Table 3)",
        description="Char-level GRU/LSTM language models with a loss at every step: ms per training step (forward, "
        "backward, Adam) for BPTT, FPI(k) and Highway-BP(k), and the speed-up of HBP(k) over BPTT.",
    )
    sp.add_argument("--cells", nargs="+", choices=LM_CELLS, default=["gru", "lstm"])
    sp.add_argument("--lengths", nargs="+", type=int_in(1, MAX_LENGTH), default=[64, 256], help="sequence lengths L")
    sp.add_argument("--hidden", type=int_in(1, MAX_WIDTH), default=128)
    sp.add_argument("--batch-size", type=int_in(1, MAX_BATCH), default=32)
    sp.add_argument("--vocab", type=int_in(2, MAX_VOCAB), default=128)
    sp.add_argument("--hbp-ks", nargs="+", type=int_in(0, MAX_LENGTH), default=[0, 1, 2, 5, 10])
    sp.add_argument("--fpi-ks", nargs="+", type=int_in(0, MAX_LENGTH), default=[0, 5, 10])
    sp.add_argument("--steps", type=int_in(1, MAX_TIMED_STEPS), default=5, help="timed steps per entry (median shown)")
    sp.add_argument("--warmup", type=int_in(0, MAX_TIMED_STEPS), default=2, help="untimed steps first")
    sp.add_argument("--threads", type=int_in(0, MAX_THREADS), default=1, help="torch CPU threads (0: torch's default)")
    sp.add_argument("--device", choices=DEVICES, default="auto", help="compute device (default: %(default)s)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--out", type=Path, help="also write the tables to OUT.md and the timings to OUT.json (new files)")
    sp.add_argument("--overwrite", action="store_true", help="replace OUT.md/OUT.json an earlier `speed` wrote")
    ch = sub.add_parser("check", help="run the exactness checks (Theorem 2) on a model of your size")
    ch.add_argument("--model", choices=["resmlp", "gru", "lstm"], default="resmlp")
    ch.add_argument("--depth", type=int, default=8, help="L: residual blocks (resmlp) or time steps (RNN)")
    ch.add_argument("--width", type=int, default=16)
    ch.add_argument("--batch-size", type=int, default=4)
    ch.add_argument("--seed", type=int, default=0)
    return parser


def _positive(**values: float) -> None:
    for name, value in values.items():
        if value is None or value <= 0:
            raise CliError(f"--{name.replace('_', '-')} must be > 0, got {value}")


def int_in(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse `type`: an integer in [minimum, maximum] (argparse turns the refusal into one error line)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer in [{minimum}, {maximum}], got {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"expected an integer in [{minimum}, {maximum}], got {value}")
        return value

    return parse


def _at_most(**values: tuple[int, int]) -> None:
    for name, (value, maximum) in values.items():
        if value > maximum:
            raise CliError(f"--{name.replace('_', '-')} must be in [1, {maximum}], got {value}")


def _train(args: argparse.Namespace) -> int:
    # values, wandb and the run folder first: nothing heavy is imported before they pass
    cfg = config_from_args(args, TrainConfig(model=args.model, backward=args.backward))
    scale_out = scale_out_from_args(args)
    if scale_out.precision is not None:  # its loops average gradients themselves and never autocast
        raise ValueError("--precision: highway-bp's training loops apply no precision setting; leave it out")
    out = check_verb_flags(args, SLUG, "train", f"{cfg.model}-{cfg.backward}")
    import dataclasses

    import torch

    from iclr25.highway_bp.data import load_digits_split, pixel_sequences
    from iclr25.highway_bp.models import SeqClassifier, resmlp, seeded
    from iclr25.highway_bp.train import train_classifier
    from iclr25.shared.device import pick_device
    from iclr25.shared.fabric import Checkpointer
    from iclr25.shared.logging import MetricsLogger, NullLogger
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import is_follower, launch_fabric

    torch.set_num_threads(min(2, torch.get_num_threads()))
    device = pick_device(args.device)
    Xtr, ytr, Xte, yte = load_digits_split()
    if cfg.model == "resmlp":
        data = (Xtr, ytr, Xte, yte)
        model = seeded(lambda: resmlp(64, cfg.hidden, 2 * cfg.hidden, cfg.depth, 10), args.seed)
    else:
        data = (pixel_sequences(Xtr), ytr, pixel_sequences(Xte), yte)
        model = seeded(lambda: SeqClassifier(1, cfg.hidden, 10, cfg.model), args.seed)
    algo = "bptt" if (cfg.backward == "bp" and cfg.model != "resmlp") else cfg.backward
    config = {**dataclasses.asdict(cfg), "lr": cfg.learning_rate, "seed": args.seed, "device": device}
    resume = scale_out.resume == "auto"
    with open_run_folder(out, args.overwrite, paper=SLUG, command="train", resume=resume) as folder:
        fabric = launch_fabric(folder, args.device, scale_out) if scale_out.distributed else None
        steps = cfg.epochs * -(-len(ytr) // cfg.batch_size)
        every = scale_out.checkpoint_every or max(1, steps // 10)
        wanted = scale_out.checkpoint_every or scale_out.resume
        checkpointer = Checkpointer(folder / "checkpoints", every) if wanted else None
        name = f"{SLUG}-train-{cfg.model}-{algo}"
        logged = NullLogger() if is_follower() else MetricsLogger(folder, wandb=args.wandb, name=name, config=config)
        with logged as log:
            res = train_classifier(
                model,
                data,
                algo=algo,
                k=cfg.k,
                epochs=cfg.epochs,
                batch_size=cfg.batch_size,
                lr=cfg.learning_rate,
                seed=args.seed,
                device=device,
                log=log.log,
                desc=f"train {cfg.model} {algo}",
                fabric=fabric,
                checkpointer=checkpointer,
                resume=scale_out.resume,
            )
        if is_follower():  # rank 0 writes the result
            return 0
        result = {
            "model": cfg.model,
            "backward": algo,
            "k": cfg.k,
            "test_acc": round(res.test_acc, 4),
            "final_train_loss": round(res.train_loss[-1], 4),
            "steps": res.steps,
            "ms_per_step": round(1000 * res.step_time_s, 2),
        }
        atomic_write_json(folder / "result.json", {**result, "config": config})
    print(json.dumps(result))
    print(f"results written to {out}", file=sys.stderr)
    return 0


def _speed(args: argparse.Namespace) -> int:
    """Time the backward passes (`iclr25.highway_bp.speed`) and print Table-3-like tables (wall and CPU ms)."""
    outputs = [] if args.out is None else [args.out.with_suffix(".md"), args.out.with_suffix(".json")]
    for path in outputs:  # before the timing work: new files, or ones an earlier `speed` wrote (--overwrite)
        check_writable(path, args.overwrite)
    import dataclasses

    import torch

    from iclr25.highway_bp.speed import format_speed_table, speed_table
    from iclr25.shared.device import pick_device

    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    rows = speed_table(
        args.cells,
        args.lengths,
        hidden=args.hidden,
        batch=args.batch_size,
        vocab=args.vocab,
        hbp_ks=args.hbp_ks,
        fpi_ks=args.fpi_ks,
        steps=args.steps,
        warmup=args.warmup,
        device=device,
        seed=args.seed,
    )
    where = f"{device}, {torch.get_num_threads()} threads" if device == "cpu" else torch.cuda.get_device_name()
    setting = f"hidden {args.hidden}, batch {args.batch_size}, vocab {args.vocab}, loss at every step"
    text = (
        f"Wall-clock ms per training step (median of {args.steps}; {where}; {setting}):\n\n"
        f"{format_speed_table(rows)}\n\nProcess CPU ms per step (user + system, mean):\n\n"
        f"{format_speed_table(rows, cpu=True)}\n"
    )
    print(text)
    if outputs:
        write_text(outputs[0], text, overwrite=args.overwrite)
        data = {"device": where, "rows": [dataclasses.asdict(r) for r in rows]}
        write_text(outputs[1], json.dumps(data, indent=1), overwrite=args.overwrite)
    return 0


def _check(args: argparse.Namespace) -> int:
    import torch

    from iclr25.highway_bp.checks import exactness_checks

    _positive(depth=args.depth, width=args.width, batch_size=args.batch_size)
    max_depth = MAX_DEPTH if args.model == "resmlp" else MAX_LENGTH  # blocks, or time steps of an RNN
    _at_most(depth=(args.depth, max_depth), width=(args.width, MAX_WIDTH), batch_size=(args.batch_size, MAX_BATCH))
    torch.set_num_threads(1)
    report = exactness_checks(args.model, args.depth, args.width, args.batch_size, args.seed)
    for name, (value, ok) in report.items():
        print(f"{'ok  ' if ok else 'FAIL'}  {name}: {value:.3g}")
    return 0 if all(ok for _, ok in report.values()) else 1


main = package_main(PROG, _parser, {"train": _train, "check": _check, "speed": _speed})


if __name__ == "__main__":
    sys.exit(main())
