"""`iclr25-ensemble-homogeneity`: reproduce the paper's claims, train homogeneous ensembles, analyse any ensemble.

Paper: "Agree to Disagree: Demystifying Homogeneous Deep Ensembles through Distributional Equivalence" (ICLR 2025).
Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import sys
from pathlib import Path

from iclr25.ensemble_homogeneity.config import MAX_BATCH, MAX_EPOCHS, MAX_MEMBERS, MAX_WIDTH, PRESETS
from iclr25.shared.cli import CliError, add_run_args, make_parser, package_main
from iclr25.shared.run import DEVICES
from iclr25.shared.validate import int_at_most

PROG = "iclr25-ensemble-homogeneity"
SLUG = "ensemble-homogeneity"
TRAIN_DATASETS = ("digits", "synthetic", "wine", "breast_cancer", "cifar10", "cifar100", "tinyimagenet", "image")
MODELS = ("mlp", "cnn", "resnet18")
CURVE_LOSSES = ("brier_true", "brier_multiclass")

EPILOG = """examples:
  iclr25-ensemble-homogeneity reproduce --scale quick
  iclr25-ensemble-homogeneity train --dataset digits --model mlp --width 64 --members 32 --out preds.npz
  iclr25-ensemble-homogeneity analyze --preds preds.npz --sizes 1,2,4,8,16,32 --out runs/analysis
  iclr25-ensemble-homogeneity estimate --preds preds.npz --pair 0,1 --sizes 1,2,4,8,16,32
A .npz of your own ensemble needs `probs` (or `logits`) float [M, N, C] and `labels` int [N].
"""


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CliError(f"{what} must be comma-separated integers, got {text!r}") from None
    if not values:
        raise CliError(f"{what} must list at least one integer")
    return values


def _parser():
    parser = make_parser(PROG, __doc__.splitlines()[0].split(": ", 1)[1])
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True, metavar="{reproduce,train,analyze,estimate}")
    rep = sub.add_parser("reproduce", help="run a preset (ci, quick, full) and print its claims table")
    add_run_args(rep, scales=("ci", "quick", "full"), presets=PRESETS, scale_out=True)
    tr = sub.add_parser("train", help="train a homogeneous ensemble and save its test probabilities (.npz)")
    tr.add_argument("--dataset", choices=TRAIN_DATASETS, default="digits", help="(default: %(default)s)")
    tr.add_argument(
        "--data-dir", type=Path, help="folder holding cifar-10-batches-py, cifar-100-python or tiny-imagenet-200"
    )
    tr.add_argument("--model", choices=MODELS, default="mlp", help="(default: %(default)s)")
    tr.add_argument("--width", type=int_at_most(MAX_WIDTH), default=64, help="width k (default: %(default)s)")
    tr.add_argument(
        "--members", type=int_at_most(MAX_MEMBERS), default=32, help="ensemble size M (default: %(default)s)"
    )
    tr.add_argument("--lr", type=float, default=0.1, help="SGD learning rate (default: %(default)s)")
    tr.add_argument("--batch-size", type=int_at_most(MAX_BATCH), default=64, help="(default: %(default)s)")
    tr.add_argument(
        "--max-epochs", type=int_at_most(MAX_EPOCHS), default=300, help="stop here if not interpolating (default: 300)"
    )
    tr.add_argument("--identical", action="store_true", help="one shared seed for all members (negative control)")
    tr.add_argument("--seed", type=int, default=0, help="base seed (default: %(default)s)")
    tr.add_argument("--device", choices=DEVICES, default="auto", help="(default: %(default)s)")
    tr.add_argument("--out", type=Path, required=True, help="output .npz (probs, labels, member_meta)")
    tr.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    an = sub.add_parser("analyze", help="DE tests, Jensen table, exact curves and two-model estimates of a .npz")
    an.add_argument("--preds", type=Path, required=True, help=".npz with probs (or logits) [M,N,C] and labels [N]")
    an.add_argument("--sizes", help="ensemble sizes, e.g. 1,2,4,8 (default: powers of 2 up to M, and M)")
    an.add_argument("--out", type=Path, help="folder for analysis.json and figures (default: print only)")
    an.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")
    es = sub.add_parser("estimate", help="predict the M-ensemble's Brier from two members and compare")
    es.add_argument("--preds", type=Path, required=True, help=".npz with probs (or logits) [M,N,C] and labels [N]")
    es.add_argument("--pair", default="0,1", help="the two members i,j (default: %(default)s)")
    es.add_argument("--sizes", help="ensemble sizes, e.g. 1,2,4,8 (default: powers of 2 up to M, and M)")
    es.add_argument("--loss", choices=CURVE_LOSSES, default="brier_true", help="(default: %(default)s)")
    es.add_argument("--collapse", action="store_true", help="read the two members as one-hot argmax predictions")
    return parser


def _train(args) -> int:
    from iclr25.ensemble_homogeneity.config import parse_run

    for name in ("width", "members", "batch_size", "max_epochs"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.members < 2:
        raise CliError(f"--members must be >= 2 for an ensemble, got {args.members}")
    if not args.lr > 0:
        raise CliError(f"--lr must be > 0, got {args.lr}")
    if args.out.suffix != ".npz":
        raise CliError(f"--out must be a .npz file, got {args.out}")
    if args.out.exists() and not args.overwrite:
        raise CliError(f"{args.out} exists; pass --overwrite to replace it")
    if args.dataset in ("cifar10", "cifar100", "tinyimagenet") and args.data_dir is None:
        raise CliError(f"--dataset {args.dataset} needs --data-dir (nothing is downloaded)")
    parse_run(f"{args.dataset}:{args.model}:{args.width}:{args.members}")

    from iclr25.ensemble_homogeneity import data
    from iclr25.ensemble_homogeneity.training import TrainSettings, train_homogeneous
    from iclr25.shared.device import pick_device

    if args.dataset in data.SKLEARN_TASKS:
        ds = data.load_sklearn(args.dataset)
    elif args.dataset == "image":
        ds = data.standardise_images(data.make_image_task(seed=args.seed))
    else:
        ds = data.load_image_dataset(args.dataset, args.data_dir)
    device = pick_device(args.device)
    settings = TrainSettings(args.lr, args.batch_size, args.max_epochs, True)
    probs, info = train_homogeneous(
        ds, args.model, args.width, args.members, args.seed, settings, device, args.identical
    )
    meta = {
        "dataset": args.dataset,
        "model": args.model,
        "width": args.width,
        "seed": args.seed,
        "identical": args.identical,
        "epochs": info["epochs"],
        "interpolated": info["interpolated"],
        "lr": args.lr,
        "batch_size": args.batch_size,
    }
    data.EnsemblePredictions(probs, ds.y_test, meta).to_npz(args.out)
    print(
        f"trained {args.members} x {args.model} k={args.width} on {args.dataset}: {info['epochs']} epochs, "
        f"min train accuracy {info['train_acc'].min():.4f}, {info['member_samples_per_s']:.0f} member-samples/s"
    )
    print(f"predictions written to {args.out}")
    return 0


def _load(path: Path, sizes_text: str | None):
    from iclr25.ensemble_homogeneity.data import EnsemblePredictions

    if sizes_text is not None:
        sizes = _ints(sizes_text, "--sizes")
    preds = EnsemblePredictions.from_npz(path)
    M = preds.n_members
    if M < 2:
        raise CliError(f"{path} holds {M} member(s); the analysis needs at least 2")
    if sizes_text is None:
        sizes = [2**i for i in range(M.bit_length()) if 2**i < M] + [M]
    bad = [s for s in sizes if not 1 <= s <= M]
    if bad:
        raise CliError(f"--sizes {bad} outside [1, {M}] (the file holds {M} members)")
    if sizes != sorted(set(sizes)):
        raise CliError(f"--sizes must be increasing, got {sizes}")
    return preds, sizes


def _analyze(args) -> int:
    from iclr25.shared.run import check_run_folder

    if args.out is not None:
        check_run_folder(args.out, args.overwrite)
    preds, sizes = _load(args.preds, args.sizes)
    import numpy as np

    from iclr25.ensemble_homogeneity import analysis as A

    p, y = preds.probs, preds.labels
    de = A.distributional_equivalence(p, y)
    res = {
        "members": preds.n_members,
        "points": len(y),
        "de": {k: v for k, v in de.items() if not isinstance(v, list | np.ndarray)},
        "jensen": {},
        "sizes": sizes,
    }
    print(f"{preds.n_members} members, {len(y)} points, {p.shape[2]} classes")
    print(
        f"DE: median pairwise KS p {de['median_ks_p']:.3f} ({100 * de['frac_ks_p_below_alpha']:.0f}% of pairs < 0.05), "
        f"median W1 {de['median_w1']:.4f}; point-wise |Δ| {de['mean_pointwise']:.4f}, "
        f"prediction disagreement {100 * de['mean_disagreement']:.2f}%"
    )
    print("loss              ensemble  best member  mean member  worst member")
    for loss in ("brier_true", "brier_multiclass", "nll", "error"):
        j = A.jensen_gap(p, y, loss)
        res["jensen"][loss] = {k: v for k, v in j.items() if k != "members"}
        print(
            f"{loss:<16}  {j['ensemble']:.5f}   {j['best_member']:.5f}      {j['mean_member']:.5f}      "
            f"{j['worst_member']:.5f}"
        )
    for loss in CURVE_LOSSES:
        exact = A.subset_mean_curve(p, y, sizes, loss)
        est = A.estimate_from_pairs(p, y, sizes, loss=loss)
        res[loss] = {"exact": exact, "all_pairs_estimate": est["curve"], "B_inf": est["B_inf"], "V": est["V"]}
        print(f"{loss}: B∞ {est['B_inf']:.5f}, V {est['V']:.5f}")
        print("  M      exact subset mean   B∞ + V/M (all pairs)")
        for m, a, b in zip(sizes, exact, est["curve"], strict=True):
            print(f"  {m:<5}  {a:.5f}             {b:.5f}")
    if args.out is not None:
        _write_analysis(args, res, sizes, p, y)
    return 0


def _write_analysis(args, res, sizes, p, y) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.ensemble_homogeneity.metrics import true_class_scores
    from iclr25.shared.results import atomic_write_json, save_figure
    from iclr25.shared.run import open_run_folder

    with open_run_folder(args.out, args.overwrite, paper=SLUG, command="analyze") as folder:
        atomic_write_json(folder / "analysis.json", res)
        s = true_class_scores(p, y)
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
        for m in range(min(4, len(s))):
            a1.hist(s[m], bins=20, range=(0, 1), histtype="step", log=True, label=f"member {m}")
        a1.set(xlabel="true-class score", ylabel="count")
        a1.legend(fontsize=6)
        a2.plot(sizes, res["brier_true"]["exact"], "o-", label="exact subset mean")
        a2.plot(sizes, res["brier_true"]["all_pairs_estimate"], "--", label="B∞ + V/M")
        a2.set(xscale="log", xlabel="M", ylabel="true-class Brier")
        a2.legend(fontsize=6)
        save_figure(fig, folder / "analysis.png", dpi=80)
    print(f"analysis written to {args.out}")


def _estimate(args) -> int:
    preds, sizes = _load(args.preds, args.sizes)
    pair = _ints(args.pair, "--pair")
    M = preds.n_members
    if len(pair) != 2 or pair[0] == pair[1] or not all(0 <= i < M for i in pair):
        raise CliError(f"--pair must be two different member ids in [0, {M}), got {args.pair!r}")
    from iclr25.ensemble_homogeneity import analysis as A

    p, y = preds.probs, preds.labels
    est = A.estimate_from_two(p[pair[0]], p[pair[1]], y, sizes, args.loss, collapse=args.collapse)
    exact = A.subset_mean_curve(p, y, sizes, args.loss)
    print(f"two-model estimate from members {pair[0]},{pair[1]}: B∞ {est['B_inf']:.5f}, V {est['V']:.5f}")
    print(f"  M      estimate   measured (exact subset mean of {M})   relative error")
    for m, a, b in zip(sizes, est["curve"], exact, strict=True):
        print(f"  {m:<5}  {a:.5f}    {b:.5f}                          {100 * (a - b) / b:+.2f}%")
    return 0


main = package_main(PROG, _parser, {"train": _train, "analyze": _analyze, "estimate": _estimate})


if __name__ == "__main__":
    sys.exit(main())
