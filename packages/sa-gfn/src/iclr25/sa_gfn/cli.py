"""Command line of the SA-GFN package (Madan et al., ICLR 2025): `iclr25-sa-gfn {reproduce,train,eval}`.

Standard-library imports only at module level, so that `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from iclr25.shared.cli import CliError, add_run_args, add_verb_args, int_at_least, make_parser, package_main
from iclr25.shared.progress import set_quiet
from iclr25.shared.run import check_run_folder

PROG = "iclr25-sa-gfn"
METHODS = ("tb", "db", "subtb", "tb-rnd", "gafn", "sagfn")
SCALES = ("ci", "quick", "full")


def build_parser() -> argparse.ArgumentParser:
    """The `iclr25-sa-gfn` argument parser."""
    parser = make_parser(PROG, "Sibling Augmented GFlowNets (ICLR 2025): reproduce the claims, train, evaluate.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the ci/quick/full reproduction and print the claims table")
    add_run_args(rep, scales=SCALES)
    tr = sub.add_parser("train", help="train one method on a HyperGrid and report exact metrics")
    tr.add_argument("--env", choices=["hypergrid"], default="hypergrid", help="environment (default: %(default)s)")
    tr.add_argument(
        "--H", "--height", dest="height", type=int_at_least(1), default=16, help="grid height (default: 16)"
    )
    tr.add_argument("--ndim", type=int_at_least(1), default=2, help="grid dimensions (default: 2)")
    tr.add_argument("--reward", choices=["standard", "sparse"], default="sparse", help="reward (default: sparse)")
    tr.add_argument("--R0", type=float, default=1e-3, help="standard reward R0 (default: 1e-3)")
    tr.add_argument("--method", choices=METHODS, default="sagfn", help="method (default: %(default)s)")
    tr.add_argument("--iters", type=int_at_least(1), default=800, help="training iterations (default: 800)")
    tr.add_argument("--hidden", type=int_at_least(1), default=128, help="MLP width (default: 128)")
    tr.add_argument("--eval-every", type=int_at_least(1), default=100, help="exact evaluation period (default: 100)")
    add_verb_args(tr)
    ev = sub.add_parser("eval", help="print the claims of a finished run folder (results.json)")
    ev.add_argument("run_dir", type=Path, help="a run folder holding results.json")
    return parser


def _train(args: argparse.Namespace) -> int:
    if args.ndim * args.height > 4096 or args.height**args.ndim > 2_000_000:
        raise CliError(f"grid {args.ndim}x{args.height} is too large for exact evaluation (at most 2e6 states)")
    if args.height < 3:
        raise CliError(f"--H must be >= 3, got {args.height}")
    if not math.isfinite(args.R0) or args.R0 <= 0:
        raise CliError(f"--R0 must be a finite number > 0, got {args.R0}")
    if args.out is not None:
        check_run_folder(args.out, args.overwrite)
    set_quiet(args.quiet)
    from iclr25.sa_gfn.training import train

    summary = train(
        method=args.method,
        ndim=args.ndim,
        height=args.height,
        reward=args.reward,
        R0=args.R0,
        iters=args.iters,
        hidden=args.hidden,
        eval_every=args.eval_every,
        out=args.out,
        seed=args.seed,
        device=args.device,
        wandb=args.wandb,
        overwrite=args.overwrite,
    )
    print(json.dumps(summary, indent=1))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from iclr25.shared.results import Report, claims_table
    from iclr25.shared.safeload import reading_file

    if not (args.run_dir / "results.json").is_file():
        raise CliError(f"{args.run_dir} holds no results.json")
    with reading_file(args.run_dir / "results.json", "results.json of a run"):  # JSON: nothing in it runs
        report = Report.read(args.run_dir)
    print(claims_table(report.claims))
    return 1 if report.failed_gated else 0


main = package_main(PROG, build_parser, {"train": _train, "eval": _eval})


if __name__ == "__main__":
    sys.exit(main())
