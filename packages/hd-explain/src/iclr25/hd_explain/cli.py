"""`iclr25-hd-explain`: reproduce HD-Explain's claims, or train, explain, evaluate and debug a classifier on your data.

Paper: "Data-centric Prediction Explanation via Kernelized Stein Discrepancy" (ICLR 2025, arXiv 2403.15576).
Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from iclr25.hd_explain.config import MAX_BATCH, MAX_EPOCHS, MAX_K, MAX_POINTS, MAX_SEEDS, MAX_WIDTH, PRESETS
from iclr25.shared.cli import (
    CliError,
    add_run_args,
    check_verb_flags,
    int_at_least,
    make_parser,
    package_main,
    positive_float,
)
from iclr25.shared.files import write_text
from iclr25.shared.run import DEVICES, open_run_folder
from iclr25.shared.validate import int_in

PROG = "iclr25-hd-explain"
SLUG = "hd-explain"
METHODS = ("hd", "hd*", "if", "tracin", "rps", "sim")  # = baselines.METHODS (a test checks it)
DEBUG_METHODS = ("hd", "hd*", "if", "tracin", "rps")
KERNELS = ("rbf", "imq", "linear")

EPILOG = """data: a .npz (arrays X, y), a .csv (label in the last column), an SVHN .mat, a CIFAR-10 python
folder, an image folder root/<class>/*.png, or a built-in set: rectangular, moons, digits, digits-test.

examples:
  iclr25-hd-explain reproduce --scale quick
  iclr25-hd-explain train --data digits --hidden 64,64 --epochs 30 --lr 0.001 --batch-size 32 --out runs/mlp
  iclr25-hd-explain explain --model runs/mlp/model.pt --train digits --test digits-test --method hd --k 3
  iclr25-hd-explain hitrate --model runs/mlp/model.pt --train digits --method hd if rps --seeds 3
  iclr25-hd-explain debug --model runs/mlp/model.pt --train mine.npz --method hd* --top 20
"""


def _bandwidth(text: str) -> str | float:
    if text in ("dim_x", "dim_d"):
        return text
    try:
        return positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f'bandwidth must be "dim_x", "dim_d" or a positive number, got {text!r}'
        ) from None


def _hidden(text: str) -> tuple[int, ...]:
    try:
        return tuple(int_at_least(1)(t) for t in text.split(",") if t.strip())
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"--hidden must be comma-separated positive integers, got {text!r}") from None


def _common(p: argparse.ArgumentParser, out: bool = True) -> None:
    p.add_argument("--device", choices=DEVICES, default="auto", help="compute device (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    if out:
        p.add_argument("--out", type=Path, help="output folder (default: runs/hd-explain/<verb>-<time>)")
        p.add_argument("--overwrite", action="store_true", help="replace an existing output folder of a run")


def _explainer_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", type=Path, required=True, help="checkpoint written by `iclr25-hd-explain train`")
    p.add_argument("--train", required=True, help="the training pool the explanations come from (see data above)")
    p.add_argument("--kernel", choices=KERNELS, default="rbf", help="Stein base kernel for hd/hd* (default: rbf)")
    p.add_argument(
        "--bandwidth", type=_bandwidth, default="dim_d", help='RBF h: "dim_d" (default), "dim_x" or a number'
    )
    p.add_argument("--temperature", type=positive_float, default=1.0, help="h = temperature x dim (default: 1)")
    p.add_argument("--loss", choices=("ce", "neg_prob"), default="ce", help="IF/TracIn loss (default: ce)")


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, __doc__.splitlines()[0].split(": ", 1)[1])
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True, metavar="{reproduce,train,explain,hitrate,debug}")
    rep = sub.add_parser("reproduce", help="run the quick/full reproduction and print its claims table")
    add_run_args(rep, scales=("quick", "full"), presets=PRESETS, scale_out=True)

    t = sub.add_parser("train", help="train an MLP or ResNet-18 classifier on your data; writes model.pt")
    t.add_argument("--data", required=True, help="training data (see data above)")
    t.add_argument("--arch", choices=("mlp", "resnet18"), default="mlp", help="network (default: %(default)s)")
    t.add_argument("--hidden", type=_hidden, default=(64, 64), help="MLP hidden widths (default: 64,64)")
    t.add_argument("--width", type=int_in(1, MAX_WIDTH), default=64, help="ResNet-18 base width (default: 64)")
    t.add_argument("--epochs", type=int_in(1, MAX_EPOCHS), default=30, help="epochs (default: %(default)s)")
    t.add_argument("--lr", type=positive_float, default=1e-3, help="Adam learning rate (default: %(default)s)")
    t.add_argument("--batch-size", type=int_in(1, MAX_BATCH), default=32, help="mini-batch size (default: %(default)s)")
    t.add_argument("--augment", action="store_true", help="random crop + flip (images)")
    _common(t)

    e = sub.add_parser("explain", help="top-k supporting training points for each test point")
    _explainer_args(e)
    e.add_argument("--test", required=True, help="points to explain (see data above)")
    e.add_argument("--method", choices=METHODS, default="hd", help="explainer (default: %(default)s)")
    e.add_argument("--k", type=int_in(1, MAX_K), default=3, help="explanations per test point (default: 3)")
    _common(e)

    h = sub.add_parser("hitrate", help="the paper's hit rate / coverage of one or more methods on your pool")
    _explainer_args(h)
    h.add_argument("--method", choices=METHODS, nargs="+", default=["hd", "if", "tracin", "rps"], help="methods")
    h.add_argument("--perturbation", choices=("noise", "flip"), default="noise", help="probe perturbation")
    h.add_argument("--probes", type=int_in(1, MAX_POINTS), default=100, help="probes per seed (default: 100)")
    h.add_argument("--seeds", type=int_in(1, MAX_SEEDS), default=1, help="probe seeds (default: 1)")
    h.add_argument("--k", type=int_in(1, MAX_K), default=3, help="top-k (default: 3)")
    _common(h)

    d = sub.add_parser("debug", help="rank training points by mislabel suspicion (self-scores)")
    _explainer_args(d)
    d.add_argument("--method", choices=DEBUG_METHODS, default="hd", help="debug score (default: %(default)s)")
    d.add_argument("--top", type=int_in(1, MAX_POINTS), default=20, help="how many to print (default: 20)")
    d.add_argument("--flipped", type=Path, help="optional .npy/.npz boolean mask of known flips: prints recall@k")
    _common(d)
    return parser


# ------------------------------------------------------------------------------------------------ helpers
def _options(args: argparse.Namespace, method: str) -> dict[str, Any]:
    if method in ("hd", "hd*"):
        return {"kernel": args.kernel, "bandwidth": args.bandwidth, "temperature": args.temperature}
    if method in ("if", "tracin"):
        return {"loss": args.loss}
    return {}


def _setup(args: argparse.Namespace) -> tuple[Any, int, Any, Any]:
    """The model of `--model` and the pool of `--train`, checked against each other (and against `--k`)."""
    from iclr25.hd_explain.data import load_named
    from iclr25.hd_explain.models import check_input
    from iclr25.hd_explain.training import load_model
    from iclr25.shared.device import pick_device

    model, n_classes = load_model(args.model, pick_device(args.device))
    X, y = load_named(args.train)
    check_input(model, X, f"--train {args.train}")
    if int(y.max()) >= n_classes or int(y.min()) < 0:
        raise CliError(f"--train {args.train} has labels outside 0..{n_classes - 1} (the model's classes)")
    if getattr(args, "k", 0) > len(X):
        raise CliError(f"--k {args.k} exceeds the {len(X)} training points")
    return model, n_classes, X, y


# ------------------------------------------------------------------------------------------------ verbs
def _train(args: argparse.Namespace) -> int:
    out = check_verb_flags(args, SLUG, "train", "run")
    import json

    from iclr25.hd_explain.data import load_named
    from iclr25.hd_explain.training import save_model, train_new_classifier
    from iclr25.shared.device import pick_device

    X, y = load_named(args.data)
    n_classes = int(y.max()) + 1
    if n_classes < 2 or int(y.min()) < 0:
        raise CliError(f"--data {args.data} needs labels 0..C-1 with C >= 2")
    train = {"epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "augment": args.augment}
    shape = {"hidden": args.hidden, "width": args.width}
    device = pick_device(args.device)
    model, stats = train_new_classifier(args.arch, X, y, n_classes, args.seed, **shape, **train, device=device)
    with open_run_folder(out, args.overwrite, paper=SLUG, command="train") as folder:
        save_model(model, folder / "model.pt")
        write_text(folder / "train.json", json.dumps({"data": args.data, **model.arch, **stats}, indent=2) + "\n")
    print(f"train accuracy {stats['train_acc']:.4f} ({stats['train_samples_per_s']:.0f} samples/s)")
    print(f"model written to {out / 'model.pt'}")
    return 0


def _explain(args: argparse.Namespace) -> int:
    out = check_verb_flags(args, SLUG, "explain", "run")
    from iclr25.hd_explain.baselines import make_explainer
    from iclr25.hd_explain.data import load_named
    from iclr25.hd_explain.models import check_input

    model, n_classes, X, y = _setup(args)
    Xt, _ = load_named(args.test)
    check_input(model, Xt, f"--test {args.test}")
    ex = make_explainer(args.method, model, n_classes, **_options(args, args.method)).fit(X, y)
    idx, scores = ex.explain(Xt, k=args.k)
    with open_run_folder(out, args.overwrite, paper=SLUG, command="explain") as folder:
        rows = ["test_index,rank,train_index,train_label,score"]
        for i in range(len(idx)):
            for r, j in enumerate(idx[i]):
                rows.append(f"{i},{r + 1},{j},{int(y[j])},{scores[i, j]:.10g}")
        write_text(folder / "explanations.csv", "\n".join(rows) + "\n")
    for i in range(min(len(idx), 5)):
        print(f"test {i}: " + ", ".join(f"#{j} (y={int(y[j])}, {scores[i, j]:.4g})" for j in idx[i]))
    print(f"{len(idx)} explanations ({args.method}) written to {out / 'explanations.csv'}")
    return 0


def _hitrate(args: argparse.Namespace) -> int:
    out = check_verb_flags(args, SLUG, "hitrate", "run")
    import json

    import numpy as np

    from iclr25.hd_explain.evaluation import evaluate_explainers, probe_sets

    model, n_classes, X, y = _setup(args)
    if args.perturbation == "flip" and X.ndim < 3:
        raise CliError("--perturbation flip needs images; use noise for vector data")
    probes = probe_sets(X, args.probes, range(args.seed, args.seed + args.seeds), args.perturbation)
    methods = {method: (method, _options(args, method)) for method in args.method}
    results = {}
    for method, rows in evaluate_explainers(model, X, y, n_classes, methods, probes, args.k).items():
        a = np.asarray(rows)
        results[method] = {"hit": float(a[:, 0].mean()), "coverage": float(a[:, 1].mean())}
        print(f"{method:>7}: hit rate {results[method]['hit']:.3f}, coverage {results[method]['coverage']:.3f}")
    with open_run_folder(out, args.overwrite, paper=SLUG, command="hitrate") as folder:
        info = {"train": args.train, "perturbation": args.perturbation, "k": args.k, "seeds": args.seeds, **results}
        write_text(folder / "hitrate.json", json.dumps(info, indent=2) + "\n")
    print(f"results written to {out / 'hitrate.json'}")
    return 0


def _debug(args: argparse.Namespace) -> int:
    out = check_verb_flags(args, SLUG, "debug", "run")
    import numpy as np

    from iclr25.hd_explain.data import load_mask
    from iclr25.hd_explain.evaluation import mislabel_detection, suspicion_scores

    model, n_classes, X, y = _setup(args)
    flipped = None if args.flipped is None else load_mask(args.flipped, len(X))
    scores = suspicion_scores(args.method, model, n_classes, X, y, **_options(args, args.method))
    order = np.argsort(-scores, kind="stable")
    with open_run_folder(out, args.overwrite, paper=SLUG, command="debug") as folder:
        rows = ["rank,train_index,label,score"] + [
            f"{r + 1},{i},{int(y[i])},{scores[i]:.10g}" for r, i in enumerate(order)
        ]
        write_text(folder / "debug.csv", "\n".join(rows) + "\n")
    for r, i in enumerate(order[: args.top]):
        print(f"{r + 1:>4}. #{i} (label {int(y[i])}): {scores[i]:.5g}")
    if flipped is not None and flipped.any():
        n = int(flipped.sum())
        rec = mislabel_detection(scores, flipped, [n])["recall"][0]
        print(f"recall@{n} of the known flips: {rec:.3f}")
    print(f"ranking written to {out / 'debug.csv'}")
    return 0


main = package_main(PROG, _parser, {"train": _train, "explain": _explain, "hitrate": _hitrate, "debug": _debug})


if __name__ == "__main__":
    sys.exit(main())
