"""`iclr25-highway-bp`: reproduce, train and check Highway backpropagation (ICLR 2025, arXiv 2501.17086).

Standard library only at module level, so that `--help` answers instantly; torch loads inside the commands.
"""

from __future__ import annotations

import argparse
import json
import sys

from iclr25.shared.cli import CliError, add_run_args, guarded, make_parser, reproduce_command

PROG = "iclr25-highway-bp"
SCALES = ("ci", "quick", "full")


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, "Highway backpropagation (Fagnou et al., ICLR 2025): reproduce, train, check.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run a reproduction preset and print its claims table")
    add_run_args(rep, scales=SCALES)
    tr = sub.add_parser("train", help="train a model on digits with BP/BPTT, Highway-BP(k) or FPI(k)")
    tr.add_argument("--model", choices=["resmlp", "gru", "lstm"], default="resmlp")
    tr.add_argument("--backward", choices=["bp", "hbp", "fpi"], default="hbp", help="bp = exact (BPTT for RNNs)")
    tr.add_argument("--k", type=int, default=4, help="Highway-BP / FPI iterations (default: %(default)s)")
    tr.add_argument("--depth", type=int, default=16, help="residual blocks of resmlp (default: %(default)s)")
    tr.add_argument("--hidden", type=int, default=64, help="width (resmlp) or hidden size (RNN)")
    tr.add_argument("--epochs", type=int, default=10)
    tr.add_argument("--lr", type=float, default=None, help="Adam lr (default: 1e-3 resmlp, 3e-3 RNN)")
    tr.add_argument("--batch-size", type=int, default=64)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    tr.add_argument("--out", help="folder for metrics.csv / metrics.jsonl (optional)")
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


def _train(args: argparse.Namespace) -> int:
    import torch

    from iclr25.highway_bp.data import load_digits_split, pixel_sequences
    from iclr25.highway_bp.models import SeqClassifier, resmlp, seeded
    from iclr25.highway_bp.train import train_classifier
    from iclr25.shared.device import pick_device
    from iclr25.shared.logging import MetricsLogger

    _positive(epochs=args.epochs, batch_size=args.batch_size, depth=args.depth, hidden=args.hidden)
    if args.k < 0:
        raise CliError(f"--k must be >= 0, got {args.k}")
    torch.set_num_threads(min(2, torch.get_num_threads()))
    device = pick_device(args.device)
    Xtr, ytr, Xte, yte = load_digits_split()
    if args.model == "resmlp":
        data = (Xtr, ytr, Xte, yte)
        model = seeded(lambda: resmlp(64, args.hidden, 2 * args.hidden, args.depth, 10), args.seed)
        lr = args.lr or 1e-3
    else:
        data = (pixel_sequences(Xtr), ytr, pixel_sequences(Xte), yte)
        model = seeded(lambda: SeqClassifier(1, args.hidden, 10, args.model), args.seed)
        lr = args.lr or 3e-3
    _positive(lr=lr)
    algo = "bptt" if (args.backward == "bp" and args.model != "resmlp") else args.backward
    logger = MetricsLogger(args.out, wandb="off") if args.out else None
    try:
        res = train_classifier(
            model,
            data,
            algo=algo,
            k=args.k,
            epochs=args.epochs,
            batch_size=args.batch_size,
            lr=lr,
            seed=args.seed,
            device=device,
            log=(logger.log if logger else None),
        )
    finally:
        if logger:
            logger.close()
    print(
        json.dumps(
            {
                "model": args.model,
                "backward": algo,
                "k": args.k,
                "test_acc": round(res.test_acc, 4),
                "final_train_loss": round(res.train_loss[-1], 4),
                "steps": res.steps,
                "ms_per_step": round(1000 * res.step_time_s, 2),
            }
        )
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    import torch

    from iclr25.highway_bp.checks import exactness_checks

    _positive(depth=args.depth, width=args.width, batch_size=args.batch_size)
    torch.set_num_threads(1)
    report = exactness_checks(args.model, args.depth, args.width, args.batch_size, args.seed)
    for name, (value, ok) in report.items():
        print(f"{'ok  ' if ok else 'FAIL'}  {name}: {value:.3g}")
    return 0 if all(ok for _, ok in report.values()) else 1


@guarded(PROG)
def main(argv: list[str] | None = None) -> int:
    """Entry point of `iclr25-highway-bp`."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "reproduce":
        from iclr25.highway_bp.reproduce import PRESETS, SLUG, run

        return reproduce_command(SLUG, args, run, PRESETS)
    if args.command == "train":
        return _train(args)
    return _check(args)


if __name__ == "__main__":
    sys.exit(main())
