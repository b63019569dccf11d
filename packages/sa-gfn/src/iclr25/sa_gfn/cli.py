"""Command line of the SA-GFN package (Madan et al., ICLR 2025): `iclr25-sa-gfn {reproduce,train,bench,eval}`.

Standard-library imports only at module level, so that `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from iclr25.sa_gfn.config import (
    MAX_ITERS,
    MAX_NDIM,
    MAX_SEEDS,
    MAX_WIDTH,
    MAX_WORKERS,
    PAPER_GRIDS,
    PRESETS,
    SWEEP_METHODS,
)
from iclr25.shared.cli import CliError, add_run_args, add_verb_args, int_at_least, make_parser, package_main
from iclr25.shared.progress import set_quiet
from iclr25.shared.run import check_run_folder
from iclr25.shared.validate import int_in

PROG = "iclr25-sa-gfn"
OBJECTIVES = ("tb", "db", "subtb")
SIBLING_REWARDS = ("terminal_logsumexp", "gafn_terminal", "gafn_edge")
NORMALIZATIONS = ("none", "std", "mean")
METHODS = ("tb", "db", "subtb", "tb-rnd", "gafn", "sagfn")
SCALES = ("ci", "quick", "full")


def build_parser() -> argparse.ArgumentParser:
    """The `iclr25-sa-gfn` argument parser."""
    parser = make_parser(PROG, "Sibling Augmented GFlowNets (ICLR 2025): reproduce the claims, train, evaluate.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the ci/quick/full reproduction and print the claims table")
    add_run_args(rep, scales=SCALES, presets=PRESETS)
    tr = sub.add_parser("train", help="train one method on a HyperGrid and report exact metrics")
    tr.add_argument("--env", choices=["hypergrid"], default="hypergrid", help="environment (default: %(default)s)")
    tr.add_argument(
        "--H", "--height", dest="height", type=int_at_least(1), default=16, help="grid height (default: 16)"
    )
    tr.add_argument("--ndim", type=int_in(1, MAX_NDIM), default=2, help="grid dimensions (default: 2)")
    tr.add_argument("--reward", choices=["standard", "sparse"], default="sparse", help="reward (default: sparse)")
    tr.add_argument("--R0", type=float, default=1e-3, help="standard reward R0 (default: 1e-3)")
    tr.add_argument("--method", choices=METHODS, default="sagfn", help="method (default: %(default)s)")
    tr.add_argument("--iters", type=int_in(1, MAX_ITERS), default=800, help="training iterations (default: 800)")
    tr.add_argument("--hidden", type=int_in(1, MAX_WIDTH), default=128, help="MLP width (default: 128)")
    tr.add_argument(
        "--eval-every", type=int_in(1, MAX_ITERS), default=100, help="exact evaluation period (default: 100)"
    )
    tr.add_argument("--objective", choices=OBJECTIVES, default="tb", help="SA-GFN's objective (default: tb)")
    tr.add_argument("--intrinsic-scale", type=float, help="novelty constant c (sagfn, tb-rnd, gafn; default: method's)")
    tr.add_argument("--rnd-normalize", choices=NORMALIZATIONS, help="novelty normalisation (default: method's)")
    tr.add_argument(
        "--sibling-reward", choices=SIBLING_REWARDS, default=SIBLING_REWARDS[0], help="SA-GFN's sibling reward form"
    )
    add_verb_args(tr)
    be = sub.add_parser("bench", help="the paper's HyperGrid settings: exact L1 and modes-found curves per method")
    be.add_argument("--grids", default=",".join(PAPER_GRIDS), help="comma-separated DxH:reward:R0 (default: paper's)")
    be.add_argument("--methods", default=",".join(SWEEP_METHODS), help="comma-separated methods (default: all)")
    be.add_argument("--iters", type=int_in(1, MAX_ITERS), default=20000, help="iterations per run (default: 20000)")
    be.add_argument("--seeds", type=int_in(1, MAX_SEEDS), default=1, help="seeds per grid and method (default: 1)")
    be.add_argument(
        "--eval-every", type=int_in(1, MAX_ITERS), default=1000, help="exact evaluation period (default: 1000)"
    )
    be.add_argument("--hidden", type=int_in(1, MAX_WIDTH), default=256, help="MLP width (default: 256)")
    be.add_argument("--workers", type=int_in(1, MAX_WORKERS), default=2, help="worker processes (default: 2)")
    add_verb_args(be)
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
        objective=args.objective,
        intrinsic_scale=args.intrinsic_scale,
        sibling_reward=args.sibling_reward,
        rnd_normalize=args.rnd_normalize,
        out=args.out,
        seed=args.seed,
        device=args.device,
        wandb=args.wandb,
        overwrite=args.overwrite,
    )
    print(json.dumps(summary, indent=1))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from iclr25.sa_gfn.config import _parse_grid

    grids = tuple(g for g in args.grids.split(",") if g)
    methods = tuple(m for m in args.methods.split(",") if m)
    for g in grids:
        d, h, _, _ = _parse_grid(g)
        if h < 3 or h**d > 2_000_000:
            raise CliError(f"grid {g!r} must have H >= 3 and at most 2e6 states (exact evaluation)")
    bad = [m for m in methods if m not in SWEEP_METHODS]
    if bad or not methods or not grids:
        raise CliError(f"--methods got {bad or 'nothing'}; allowed: {', '.join(SWEEP_METHODS)}")
    if args.out is not None:
        check_run_folder(args.out, args.overwrite)
    set_quiet(args.quiet)
    from iclr25.sa_gfn.bench import bench
    from iclr25.shared.device import pick_device
    from iclr25.shared.run import default_run_dir

    out = args.out or default_run_dir("sa-gfn", "bench", "paper-grids")
    device = pick_device(args.device)
    result = bench(grids, methods, args.iters, args.seeds, args.eval_every, args.hidden, args.workers, device, out)
    for name, r in result["runs"].items():
        f = r["final"]
        print(
            f"{name}: l1_mean {f['l1_mean']:.3g}, modes found {f['modes_found_sampler']}, {r['seconds_per_iter']:.4f} s/it"
        )
    print(f"wrote {out}")
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


main = package_main(PROG, build_parser, {"train": _train, "bench": _bench, "eval": _eval})


if __name__ == "__main__":
    sys.exit(main())
