"""`iclr25-dynamical-diffusion`: reproduce, train, sample, eval and simulate for Dynamical Diffusion (arXiv 2503.00951).

Standard library only at module level, so `--help` answers instantly; torch loads inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from iclr25.dynamical_diffusion.config import (
    DATASETS,
    MAX_CASES,
    MAX_FRAMES,
    MAX_SAMPLES,
    MAX_STEPS,
    MAX_T,
    MAX_TS_WINDOW,
    MAX_WIDTH,
    PRESETS,
)
from iclr25.shared.cli import (
    CliError,
    add_run_args,
    build_config,
    check_verb_flags,
    int_at_least,
    make_parser,
    package_main,
    positive_float,
    scale_out_from_args,
)
from iclr25.shared.files import check_writable
from iclr25.shared.run import DEVICES
from iclr25.shared.validate import int_at_most, int_in

PROG = "iclr25-dynamical-diffusion"
SLUG = "dynamical-diffusion"
SCALES = tuple(PRESETS)
SIMULATED = (*DATASETS, "ts")  # the training data sets and the multivariate series of `ts-bench`
# `simulate` bounds, refused before any work: the paper's grids are at most 128 cells a side
MAX_SIMULATE_N, MAX_SIMULATE_SIZE, MAX_SIMULATE_VALUES = 1_000_000, 256, 2**30

EPILOG = """examples:
  iclr25-dynamical-diffusion reproduce --scale quick
  iclr25-dynamical-diffusion train --dataset pde1d --r 0.5 steps=500 --out runs/dd
  iclr25-dynamical-diffusion sample --checkpoint runs/dd/model.pt --out runs/dd-samples
  iclr25-dynamical-diffusion eval --run runs/dd-samples
  iclr25-dynamical-diffusion paired --runs results/quick results/ablation --out results/paired
  iclr25-dynamical-diffusion eval-turbulence --checkpoint runs/dd/model.pt --data turbulence/test.npz.npy
  iclr25-dynamical-diffusion ts-bench --data electricity_nips --steps 20000 --device cuda
  iclr25-dynamical-diffusion simulate pde1d --n 100 --out pde1d.npy
"""


def _parser():
    parser = make_parser(PROG, "Dynamical Diffusion (ICLR 2025): temporally-aware diffusion for forecasting.")
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="exact checks + DyDiff vs DPM benchmark; writes results.json")
    add_run_args(rep, scales=SCALES, scale_out=True, presets=PRESETS)
    tr = sub.add_parser("train", help="train one model (r = 0 is DPM) on generated data; saves model.pt")
    add_run_args(tr, scales=SCALES, scale_out=True)
    tr.add_argument("--dataset", choices=DATASETS, default=None, help="data set (default: the preset's)")
    tr.add_argument("--r", type=float, default=None, help="gamma ratio r in [0, 1] (default: the preset's, 0.5)")
    sa = sub.add_parser("sample", help="sample forecasts of the test set from a trained model.pt")
    sa.add_argument("--checkpoint", type=Path, required=True)
    sa.add_argument("--out", type=Path, required=True, help="run folder for samples.npy, truth.npy and meta.json")
    sa.add_argument("--n-samples", type=int_in(1, MAX_SAMPLES), default=None)
    sa.add_argument("--ddim-steps", type=int_in(1, MAX_T), default=None, help="at most the model's T")
    sa.add_argument("--clip-x0", type=positive_float, default=None)
    sa.add_argument("--seed", type=int, default=0)
    sa.add_argument("--device", choices=DEVICES, default="auto")
    sa.add_argument("--overwrite", action="store_true", help="replace a run folder an earlier run made")
    sa.add_argument("--quiet", action="store_true", help="no progress output")
    ev = sub.add_parser("eval", help="CRPS, ensemble MSE and the official RMSE of a sample folder")
    ev.add_argument("--run", type=Path, required=True, help="folder with samples.npy and truth.npy")
    ev.add_argument(
        "--n-context", type=int_at_most(MAX_FRAMES), default=None, help="context frames (default: from meta.json)"
    )
    pa = sub.add_parser("paired", help="merge runs' per-seed CRPS; test variants against DPM, ablations against DyDiff")
    pa.add_argument("--runs", type=Path, nargs="+", required=True, help="run folders of one setting (results.json)")
    pa.add_argument("--out", type=Path, required=True, help="folder for paired.json and paired.md")
    pa.add_argument("--models", default=None, help="comma-separated variants to compare (default: all)")
    pa.add_argument(
        "--overwrite", action="store_true", help="replace the paired.json/paired.md an earlier `paired` wrote"
    )
    tu = sub.add_parser("eval-turbulence", help="the official Turbulence test protocol on a test.npz.npy")
    tu.add_argument("--checkpoint", type=Path, required=True, help="model.pt written by `train` (4 of 15 frames)")
    tu.add_argument("--data", type=Path, required=True, help="official Turbulence test file (N, L, 2, H, W)")
    tu.add_argument("--n-cases", type=int_in(1, MAX_CASES), default=20, help="first test sequences (default: 20)")
    tu.add_argument("--n-samples", type=int_in(2, MAX_SAMPLES), default=8, help="forecasts per case (default: 8)")
    tu.add_argument("--ddim-steps", type=int_in(1, MAX_T), default=50, help="DDIM steps (default: 50)")
    tu.add_argument("--seed", type=int_at_least(0), default=0)
    tu.add_argument("--device", choices=DEVICES, default="auto")
    ts = sub.add_parser("ts-bench", help="DPM vs DyDiff CRPS_sum on a GluonTS folder or wide CSV")
    ts.add_argument("--data", type=Path, required=True, help="GluonTS-style folder or wide .csv")
    ts.add_argument("--context", type=int_in(1, MAX_TS_WINDOW), default=48)
    ts.add_argument(
        "--horizon", type=int_in(1, MAX_TS_WINDOW), default=None, help="default: the data's prediction length"
    )
    ts.add_argument("--n-windows", type=int_in(1, MAX_CASES), default=7, help="last test windows scored (default: 7)")
    ts.add_argument("--steps", type=int_in(1, MAX_STEPS), default=2000)
    ts.add_argument("--width", type=int_in(8, MAX_WIDTH), default=64)
    ts.add_argument("--n-samples", type=int_in(2, MAX_SAMPLES), default=100)
    ts.add_argument("--ddim-steps", type=int_in(1, MAX_T), default=20)
    ts.add_argument("--seed", type=int_at_least(0), default=0)
    ts.add_argument("--device", choices=DEVICES, default="auto")
    si = sub.add_parser("simulate", help="write a generated data set as .npy")
    si.add_argument("dataset", choices=SIMULATED)
    si.add_argument(
        "--n",
        type=int_in(1, MAX_SIMULATE_N),
        default=100,
        help=f"sequences (or time steps for ts), 1..{MAX_SIMULATE_N}",
    )
    si.add_argument(
        "--size", type=int_in(8, MAX_SIMULATE_SIZE), default=32, help=f"cells per axis, 8..{MAX_SIMULATE_SIZE}"
    )
    si.add_argument("--seed", type=int, default=0)
    si.add_argument("--out", type=Path, required=True, help="the .npy file to write")
    si.add_argument("--overwrite", action="store_true", help="replace a file an earlier simulate wrote (never another)")
    return parser


def _train(args) -> int:
    overrides = list(args.overrides)
    if args.dataset is not None:
        overrides.append(f"dataset={args.dataset}")
    if args.r is not None:
        overrides.append(f"gamma_ratio={args.r}")
    config = build_config(PRESETS[args.scale], args.config, overrides)  # values checked before torch loads
    scale_out = scale_out_from_args(args)
    target = check_verb_flags(args, SLUG, "train", args.scale)

    from dataclasses import asdict

    import torch

    from iclr25.dynamical_diffusion.training import make_data, make_model, save_model, train
    from iclr25.shared.device import configure_torch, pick_device
    from iclr25.shared.fabric import Checkpointer
    from iclr25.shared.logging import MetricsLogger, NullLogger
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import is_follower, launch_fabric, open_run_folder
    from iclr25.shared.seed import seed_everything

    dev = pick_device(args.device)
    resume = scale_out.resume == "auto"
    with open_run_folder(target, args.overwrite, paper=SLUG, command="train", resume=resume) as out:
        configure_torch(dev, threads=config.threads)
        fabric = launch_fabric(out, args.device, scale_out) if scale_out.wants_fabric else None
        if fabric is not None:
            dev = fabric.device
        seed_everything(args.seed)
        train_np, _ = make_data(config, args.seed, dev)
        model = make_model(config, config.gamma_ratio).to(dev)
        every = scale_out.checkpoint_every or config.checkpoint_every or max(1, config.steps // 10)
        wanted = scale_out.checkpoint_every or config.checkpoint_every or scale_out.resume
        checkpointer = Checkpointer(out / "checkpoints", every) if wanted else None
        logged = (
            NullLogger()
            if is_follower()
            else MetricsLogger(out, wandb=args.wandb, name=f"{SLUG}-train", config=asdict(config))
        )
        with logged as logger:
            stats = train(
                model,
                torch.from_numpy(train_np).to(dev),
                config.steps,
                config.batch_size,
                config.lr,
                config.weight_decay,
                seed=args.seed,
                logger=logger,
                fabric=fabric,
                checkpointer=checkpointer,
                resume=scale_out.resume,
            )
        if is_follower():  # rank 0 writes the model and the summary
            return 0
        save_model(model, config, args.seed, out / "model.pt")
        atomic_write_json(out / "train.json", {"final_loss": stats.final_loss, "steps_per_s": stats.steps_per_s})
    print(
        f"trained r={config.gamma_ratio} on {config.dataset}: final loss {stats.final_loss:.4f}, "
        f"{stats.steps_per_s:.1f} steps/s; model written to {target / 'model.pt'}"
    )
    return 0


def _sample(args) -> int:
    check_verb_flags(args, SLUG, "sample", "")  # the seed, then the run folder --out names
    if not args.checkpoint.is_file():
        raise CliError(f"checkpoint {args.checkpoint} does not exist")
    import numpy as np
    import torch

    from iclr25.dynamical_diffusion.training import load_model, make_data, sample_batched
    from iclr25.shared.device import pick_device
    from iclr25.shared.files import write_with
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    model, config, seed = load_model(args.checkpoint)
    n_samples = args.n_samples or config.n_samples
    ddim = args.ddim_steps or config.ddim_steps
    if ddim > config.T:
        raise CliError(f"--ddim-steps must be in [1, {config.T}], got {ddim}")
    dev = pick_device(args.device)
    model = model.to(dev).eval()
    with open_run_folder(args.out, args.overwrite, paper=SLUG, command="sample") as out:
        _, test_np = make_data(config, seed, dev)
        test = torch.from_numpy(test_np).to(dev)
        samples, secs = sample_batched(
            model, test[:, : config.n_context], test.shape[1], n_samples, ddim, seed=args.seed, clip_x0=args.clip_x0
        )
        write_with(out / "samples.npy", lambda f: np.save(f, samples.cpu().numpy()))
        write_with(out / "truth.npy", lambda f: np.save(f, test_np))
        atomic_write_json(out / "meta.json", {"n_context": config.n_context, "seconds": secs})
    print(f"wrote {tuple(samples.shape)} samples to {args.out / 'samples.npy'} in {secs:.1f} s")
    return 0


def _eval(args) -> int:
    import torch

    from iclr25.dynamical_diffusion.training import evaluate
    from iclr25.shared.safeload import load_npy, reading_file

    for name in ("samples.npy", "truth.npy"):
        if not (args.run / name).is_file():
            raise CliError(f"{args.run / name} does not exist (run `sample` first)")
    n_ctx = args.n_context
    if n_ctx is None:
        meta = args.run / "meta.json"
        if not meta.is_file():
            raise CliError("give --n-context (no meta.json in the run folder)")
        with reading_file(meta, "meta.json written by `sample`"):
            n_ctx = int(json.loads(meta.read_text())["n_context"])
    samples = torch.from_numpy(load_npy(args.run / "samples.npy"))  # allow_pickle=False: nothing in them runs
    truth = torch.from_numpy(load_npy(args.run / "truth.npy"))
    if samples.shape[1:] != truth.shape or not 1 <= n_ctx < truth.shape[1]:
        raise CliError(f"samples {tuple(samples.shape)} do not fit truth {tuple(truth.shape)} / n_context {n_ctx}")
    metrics = evaluate(samples, truth, n_ctx)
    metrics.pop("max_abs_sample")
    print(json.dumps(metrics, indent=2))
    return 0


def _paired(args) -> int:
    models = [m for m in args.models.split(",") if m] if args.models else None
    for name in ("paired.json", "paired.md"):  # new files, or ones an earlier `paired` wrote (--overwrite)
        check_writable(args.out / name, args.overwrite)
    from iclr25.dynamical_diffusion.stats import write_paired

    write_paired(args.runs, args.out, models=models, overwrite=args.overwrite)
    print((args.out / "paired.md").read_text(), end="")
    return 0


def _eval_turbulence(args) -> int:
    for path, what in ((args.checkpoint, "checkpoint"), (args.data, "data file")):
        if not path.is_file():
            raise CliError(f"{what} {path} does not exist")
    from iclr25.dynamical_diffusion.protocols import evaluate_turbulence
    from iclr25.dynamical_diffusion.training import load_model
    from iclr25.shared.device import pick_device

    dev = pick_device(args.device)
    model, _, _ = load_model(args.checkpoint)
    metrics = evaluate_turbulence(
        model.to(dev).eval(),
        args.data,
        n_cases=args.n_cases,
        n_samples=args.n_samples,
        ddim_steps=args.ddim_steps,
        seed=args.seed,
        device=dev,
    )
    print(json.dumps(metrics, indent=2))
    return 0


def _ts_bench(args) -> int:
    if not args.data.exists():
        raise CliError(f"data {args.data} does not exist (a GluonTS-style folder or a wide .csv)")
    from iclr25.dynamical_diffusion.protocols import ts_crps_sum_benchmark
    from iclr25.shared.device import pick_device

    out = ts_crps_sum_benchmark(
        args.data,
        context=args.context,
        horizon=args.horizon,
        n_windows=args.n_windows,
        steps=args.steps,
        width=args.width,
        n_samples=args.n_samples,
        ddim_steps=args.ddim_steps,
        seed=args.seed,
        device=pick_device(args.device),
    )
    print(json.dumps(out, indent=2))
    return 0


def _simulate(args) -> int:
    per_item = {"pde1d": 8 * args.size, "pde2d": 15 * args.size**2, "heat": 15 * args.size**2}
    values = args.n * {**per_item, "ns2d": 30 * args.size**2, "ts": 8}[args.dataset]
    if values > MAX_SIMULATE_VALUES:
        raise CliError(
            f"{args.dataset} with --n {args.n} --size {args.size} would hold {values:,} values; at most "
            f"{MAX_SIMULATE_VALUES:,} (4 GiB of float32) are allowed: lower --n or --size"
        )
    if args.out.suffix != ".npy":
        raise CliError(f"--out must name a .npy file, got {args.out}")
    check_writable(args.out, args.overwrite)  # before the simulation: a new file, or one `simulate` wrote
    import numpy as np

    from iclr25.dynamical_diffusion import data
    from iclr25.shared.files import write_with

    if args.dataset == "ts":
        arr = data.synthetic_multivariate_ts(args.n, seed=args.seed)
    else:
        arr = data.GRID_SIMULATORS[args.dataset](args.n, size=args.size, seed=args.seed)
    write_with(args.out, lambda f: np.save(f, arr), overwrite=args.overwrite)
    print(f"wrote {args.dataset} {arr.shape} to {args.out}")
    return 0


main = package_main(
    PROG,
    _parser,
    {
        "train": _train,
        "sample": _sample,
        "eval": _eval,
        "paired": _paired,
        "eval-turbulence": _eval_turbulence,
        "ts-bench": _ts_bench,
        "simulate": _simulate,
    },
)


if __name__ == "__main__":
    sys.exit(main())
