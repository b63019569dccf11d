"""`iclr25-dist-loss`: reproduce, synth, train and eval for Dist Loss (ICLR 2025, arXiv 2411.15216).

Standard library only at module level so that `--help` answers instantly; torch is imported inside
the command branches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from iclr25.dist_loss.config import MAX_DATA_SCALE, PRESETS, TrainConfig
from iclr25.dist_loss.names import HEAD_INITS
from iclr25.shared.cli import (
    CliError,
    add_config_args,
    add_run_args,
    add_scale_out_args,
    add_verb_args,
    check_verb_flags,
    config_from_args,
    make_parser,
    package_main,
    scale_out_from_args,
)
from iclr25.shared.files import check_writable
from iclr25.shared.run import open_run_folder

if TYPE_CHECKING:
    from iclr25.dist_loss.data import RegressionData

PROG = "iclr25-dist-loss"
SLUG = "dist-loss"
LOSSES = ("l1", "mse", "focal-l1", "dist", "lds", "lds-fds", "bmc")
REWEIGHTS = ("none", "inverse", "sqrt_inv")
# (--loss, --reweight) -> method name of `iclr25.dist_loss.train.make_loss`
_METHOD = {
    ("l1", "none"): "l1",
    ("mse", "none"): "mse",
    ("focal-l1", "none"): "focal_l1",
    ("dist", "none"): "dist",
    ("l1", "inverse"): "inverse",
    ("dist", "inverse"): "dist_inverse",
    ("lds", "sqrt_inv"): "sqinv_lds",
    ("lds-fds", "sqrt_inv"): "sqinv_lds_fds",
    ("bmc", "none"): "bmc",
}
_DEFAULT_REWEIGHT = {"lds": "sqrt_inv", "lds-fds": "sqrt_inv"}


def method_for(loss: str, reweight: str | None) -> str:
    """The training method for a --loss/--reweight pair; CliError for unsupported pairs."""
    reweight = reweight or _DEFAULT_REWEIGHT.get(loss, "none")
    if (loss, reweight) not in _METHOD:
        allowed = ", ".join(f"{lo}+{rw}" for lo, rw in _METHOD)
        raise CliError(f"--loss {loss} with --reweight {reweight} is not supported; allowed: {allowed}")
    return _METHOD[(loss, reweight)]


def _parser() -> argparse.ArgumentParser:
    from iclr25.dist_loss import PAPER

    parser = make_parser(
        PROG,
        f"{PAPER.title} (arXiv {PAPER.arxiv}).\n\n"
        "examples:\n"
        f"  {PROG} reproduce --scale quick\n"
        f"  {PROG} synth --seed 0 --out data.npz\n"
        f"  {PROG} train --loss dist --stage rrt --data data.npz --out runs/dist\n"
        f"  {PROG} train --data table.csv --target price --min-label 0 --max-label 500 --step 10 --batch-size 64\n"
        f"  {PROG} eval --model runs/dist/model.pt --data data.npz --shots 100,20",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run a preset and check the paper's claims")
    add_run_args(rep, scales=PAPER.scales, scale_out=True, presets=PRESETS)

    syn = sub.add_parser("synth", help="write the AgeDB-DIR-shaped synthetic task as .npz")
    syn.add_argument("--seed", type=int, default=0)
    syn.add_argument(
        "--data-scale", type=int, default=1, help=f"multiply the histograms, 1..{MAX_DATA_SCALE} (default: 1)"
    )
    syn.add_argument("--out", type=Path, required=True, help="output .npz file")
    syn.add_argument(
        "--overwrite", action="store_true", help="replace an --out file an earlier synth wrote (never another file)"
    )

    tr = sub.add_parser(
        "train",
        help="train with one loss (stage 1 + RRT head, or end to end)",
        description="--lam: weight of the distribution term; --eps: soft-sort regularisation strength; --bw: KDE "
        "bandwidth factor; --threads: CPU threads (1 is fastest for these small MLPs); --lr: Adam learning rate.",
    )
    tr.add_argument("--loss", choices=LOSSES, default="dist")
    tr.add_argument("--reweight", choices=REWEIGHTS, help="label re-weighting (default: none; sqrt_inv for lds*)")
    tr.add_argument("--stage", choices=("rrt", "e2e"), default="rrt", help="RRT head on frozen features, or end to end")
    tr.add_argument("--pretrained", type=Path, help="stage-1 checkpoint for --stage rrt (default: train one)")
    tr.add_argument(
        "--head-init",
        choices=HEAD_INITS,
        default="zero",
        help="RRT head init: zero weights (default), random weights with bias at the label mean, or fully "
        "random (official)",
    )
    tr.add_argument("--data", type=Path, help=_DATA_HELP)
    tr.add_argument("--labels", type=Path, help="labels CSV of ECG signals given as a .npy in --data")
    add_config_args(tr, TrainConfig())  # --epochs ... --threads, the label grid, split and shot thresholds
    add_verb_args(tr)
    add_scale_out_args(tr)  # --checkpoint-every counts epochs here

    ev = sub.add_parser("eval", help="per-region (many/median/few-shot) metrics of a trained model")
    ev.add_argument("--model", type=Path, required=True, help="model.pt written by `train`")
    ev.add_argument("--data", type=Path, help=_DATA_HELP)
    ev.add_argument("--labels", type=Path, help="labels CSV of ECG signals given as a .npy in --data")
    ev.add_argument("--seed", type=int, default=0, help="the seed `train` split a file with (default: 0)")
    ev.add_argument("--split", choices=("val", "test"), default="test")
    ev.add_argument("--shots", help="many,few thresholds on training counts per bin (default: the model's, from train)")
    return parser


_DATA_HELP = (
    "a table (.csv with a header and --target column; .npz with x, y), ECG signals (.npy, N x leads x T, with "
    "--labels), or the .npz of `synth` (default: the synthetic task of --seed)"
)


def _load_data(
    path: Path | None, seed: int, labels: Path | None = None, cfg: TrainConfig | None = None
) -> tuple[RegressionData, tuple[float, float]]:
    """The task (`userdata.load_file_task` for a file) and its (many, few) shot thresholds under `cfg`."""
    from iclr25.dist_loss.data import make_tabular
    from iclr25.dist_loss.userdata import load_file_task

    cfg = cfg or TrainConfig()
    if path is None:
        if labels is not None:
            raise CliError("--labels goes with --data (ECG signals in a .npy)")
        return make_tabular(seed), (cfg.many_shot, cfg.few_shot)
    return load_file_task(path, labels, cfg, seed)


def _load_checkpoint(path: Path, device: str = "cpu") -> dict:
    """A checkpoint written by `train` (model.pt or backbone.pt); ValueError for anything else."""
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    from iclr25.shared.safeload import load_checkpoint

    what = f"checkpoint written by `{PROG} train`"  # weights only: nothing in the file runs
    ckpt = load_checkpoint(path, map_location=device, required_keys=("arch", "state_dict"), what=what)
    if not isinstance(ckpt["arch"], dict) or not isinstance(ckpt["state_dict"], dict):
        raise ValueError(f"{path} is not a {what}")
    return ckpt


def _build_model(ckpt: dict, path: Path):
    """The MLP a checkpoint describes, with its weights; ValueError for a foreign or mismatched file."""
    from iclr25.dist_loss.train import MLP

    try:
        model = MLP(**ckpt["arch"])
        model.load_state_dict(ckpt["state_dict"])
    except (TypeError, RuntimeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path} is not a checkpoint written by `{PROG} train` ({first})") from None
    return model


def _parse_shots(text: str) -> tuple[float, float]:
    try:
        many, few = (float(v) for v in text.split(","))
    except ValueError:
        raise CliError(f"--shots must be two numbers 'many,few', got {text!r}") from None
    if not 0 <= few <= many < float("inf"):
        raise CliError(f"--shots needs 0 <= few <= many, got many={many}, few={few}")
    return many, few


def _cmd_synth(args: argparse.Namespace) -> int:
    if not 1 <= args.data_scale <= MAX_DATA_SCALE:
        raise CliError(f"--data-scale must be an integer in [1, {MAX_DATA_SCALE}], got {args.data_scale}")
    check_writable(args.out, args.overwrite)  # before any work: a new file, or one an earlier synth wrote
    from iclr25.dist_loss.data import make_tabular
    from iclr25.shared.files import save_arrays

    d = make_tabular(args.seed, args.data_scale)
    save_arrays(args.out, d.__dict__, overwrite=args.overwrite)
    print(f"wrote {args.out}: {d.y_train.size} train / {d.y_val.size} val / {d.y_test.size} test samples")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    method = method_for(args.loss, args.reweight)
    cfg = config_from_args(args, TrainConfig())  # values checked before anything heavy is imported
    scale_out = scale_out_from_args(args)
    if scale_out.precision is not None:  # its loops train in float32 on any number of processes
        raise ValueError("--precision: dist-loss's training loops apply no precision setting; leave it out")
    out = check_verb_flags(args, SLUG, "train", method)
    data, shots = _load_data(args.data, args.seed, args.labels, cfg)  # inputs checked before the run folder
    ckpt = _load_checkpoint(args.pretrained) if args.stage == "rrt" and args.pretrained is not None else None
    if ckpt is not None and ckpt["arch"].get("in_dim") != data.x_train.shape[1]:
        raise ValueError(f"the checkpoint expects {ckpt['arch'].get('in_dim')} features, the data has "
                         f"{data.x_train.shape[1]}")  # fmt: skip
    resume = scale_out.resume == "auto"
    with open_run_folder(out, args.overwrite, paper=SLUG, command="train", resume=resume) as run_dir:
        metrics = _train(args, cfg, method, data, shots, ckpt, run_dir, scale_out)
    if metrics is None:  # a process besides rank 0 of a multi-process run
        return 0
    print(f"{method} ({args.stage}): test MAE all {metrics['all_mae']:.3f}, many {metrics['many_mae']:.3f}, "
          f"median {metrics['median_mae']:.3f}, few {metrics['few_mae']:.3f}")  # fmt: skip
    print(f"model written to {Path(out) / 'model.pt'}")
    return 0


def _train(
    args: argparse.Namespace,
    cfg: TrainConfig,
    method: str,
    data,
    shots: tuple[float, float],
    ckpt: dict | None,
    run_dir: Path,
    scale_out=None,
) -> dict | None:
    """Train (stage 1 + RRT head, or end to end) into `run_dir`; the test metrics (None in a follower process).

    The label grid of `cfg` sets the pseudo-labels, the re-weighting bins and the balanced validation MAE;
    `shots` (many, few) the test regions. model.pt records both, and how the data were split, for `eval`."""
    import dataclasses

    import numpy as np
    import torch

    from iclr25.dist_loss.names import FABRIC_PRECISION
    from iclr25.dist_loss.train import MLP, evaluate, fit, make_loss, rrt
    from iclr25.shared.device import configure_torch, pick_device
    from iclr25.shared.fabric import Checkpointer, ScaleOut
    from iclr25.shared.files import save_torch
    from iclr25.shared.logging import MetricsLogger
    from iclr25.shared.progress import progress
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import is_follower, launch_fabric
    from iclr25.shared.seed import seed_everything

    scale_out = scale_out or ScaleOut()
    seed_everything(args.seed)
    device = pick_device(args.device)
    configure_torch(device, threads=cfg.threads)
    fabric = None
    if scale_out.distributed:  # float32, as on one process
        fabric = launch_fabric(run_dir, args.device, dataclasses.replace(scale_out, precision=FABRIC_PRECISION))
        device = str(fabric.device)
    gen = torch.Generator().manual_seed(args.seed)
    wanted = scale_out.checkpoint_every or scale_out.resume
    every = scale_out.checkpoint_every or max(1, cfg.epochs // 10)

    def scale(name: str) -> dict:
        ckpts = Checkpointer(run_dir / "checkpoints" / name, every) if wanted else None
        return {"fabric": fabric, "checkpointer": ckpts, "resume": scale_out.resume if wanted else None}

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, dtype=torch.float32, device=device)

    x_tr, x_val, x_te = t(data.x_train), t(data.x_val), t(data.x_test)
    grid = {"min_label": cfg.min_label, "max_label": cfg.max_label, "step": cfg.step}
    kw = {"lam": cfg.lam, "eps": cfg.eps, "bw": cfg.bw, **grid}
    arch = {"in_dim": data.x_train.shape[1], "hidden": 64, "depth": 2}
    fits = 2 if args.stage == "rrt" and ckpt is None else 1
    bar = progress(total=fits, desc="train", unit="model")

    def train_full(m: str, select: str) -> MLP:
        model = MLP(**arch, bias_init=float(data.y_train.mean())).to(device)
        setup = make_loss(m, data.y_train, cfg.batch_size, device=device, **kw)
        fit(model, list(model.parameters()), x_tr, t(data.y_train), setup, x_val, data.y_val, cfg.epochs,
            cfg.batch_size, cfg.lr, select, gen, min_label=cfg.min_label, step=cfg.step,
            **scale(f"stage1-{m}"))  # fmt: skip
        bar.update()
        return model

    if args.stage == "e2e":
        model = train_full(method, "plain")
    else:
        if ckpt is not None:
            backbone = _build_model(ckpt, args.pretrained).to(device)
        else:
            backbone = train_full("l1", "plain")
            if not is_follower():
                save_torch(run_dir / "backbone.pt", {"arch": arch, "state_dict": backbone.state_dict()})
        model, _ = rrt(backbone, method, x_tr, data.y_train, x_val, data.y_val, cfg.epochs, cfg.batch_size,
                       cfg.lr, gen, head_init=args.head_init, **scale(f"rrt-{method}"), **kw)  # fmt: skip
        bar.update()
    bar.close()
    if is_follower():  # rank 0 writes the model and the metrics
        return None
    many, few = shots
    split = {"target": cfg.target, "val_fraction": cfg.val_fraction, "test_fraction": cfg.test_fraction}
    record = {"grid": grid, "shots": {"many": float(many), "few": float(few)}, "split": split}
    save_torch(run_dir / "model.pt", {"arch": arch, "state_dict": model.state_dict(), "method": method, **record})
    metrics = evaluate(model, x_te, data.y_test, x_tr, data.y_train, many, few, cfg.min_label, cfg.step)
    summary = {"method": method, "stage": args.stage, "test": metrics, "grid": grid, "shots": record["shots"]}
    atomic_write_json(run_dir / "metrics.json", summary)
    config = {"method": method, "stage": args.stage, "seed": args.seed, **dataclasses.asdict(cfg)}
    with MetricsLogger(run_dir, wandb=args.wandb, name=f"{SLUG}-train-{method}", config=config) as logger:
        logger.log({f"test/{k}": v for k, v in metrics.items()}, step=0)
    return metrics


def _cmd_eval(args: argparse.Namespace) -> int:
    shots = _parse_shots(args.shots) if args.shots is not None else None
    ckpt = _load_checkpoint(args.model)
    import torch

    from iclr25.dist_loss.metrics import REGIONS, shot_metrics
    from iclr25.dist_loss.train import predict

    model = _build_model(ckpt, args.model)
    grid, split = (ckpt.get(k) if isinstance(ckpt.get(k), dict) else {} for k in ("grid", "split"))  # from train
    try:
        cfg = TrainConfig(**grid, **split, batch_size=2)
    except TypeError:
        raise ValueError(f"{args.model} records a label grid or split this version does not know") from None
    data, data_shots = _load_data(args.data, args.seed, args.labels, cfg)
    if shots is None:
        saved = ckpt.get("shots")
        shots = (saved["many"], saved["few"]) if isinstance(saved, dict) else data_shots
    x, y = (data.x_val, data.y_val) if args.split == "val" else (data.x_test, data.y_test)
    if x.shape[1] != ckpt["arch"]["in_dim"]:
        raise ValueError(f"the model expects {ckpt['arch']['in_dim']} features, the data has {x.shape[1]}")
    pred = predict(model, torch.as_tensor(x))
    result = shot_metrics(pred, y, data.y_train, *shots, cfg.min_label, cfg.step)
    print(f"label grid {cfg.min_label:g}..{cfg.max_label:g} step {cfg.step:g}; many-shot: more than {shots[0]:g} "
          f"training samples per bin, few-shot: fewer than {shots[1]:g}")  # fmt: skip
    print("| region | n | MAE | MSE | GM |\n|---|---|---|---|---|")
    for region in REGIONS:
        r = result[region]
        print(f"| {region} | {r['n']} | {r['mae']:.3f} | {r['mse']:.3f} | {r['gm']:.3f} |")
    return 0


main = package_main(PROG, _parser, {"synth": _cmd_synth, "train": _cmd_train, "eval": _cmd_eval})


if __name__ == "__main__":
    sys.exit(main())
