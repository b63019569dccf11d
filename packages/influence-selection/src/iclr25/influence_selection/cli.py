"""`iclr25-influence-selection`: reproduce the FI paper's claims, or trim / actively label your own tabular data.

Paper: "Enhancing Prediction Performance through Influence Measure" (ICLR 2025).
Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import sys
from pathlib import Path

from iclr25.influence_selection.config import MAX_POINTS, MAX_ROUNDS, PRESETS
from iclr25.shared.cli import CliError, add_run_args, make_parser, package_main
from iclr25.shared.validate import int_at_most

PROG = "iclr25-influence-selection"
SLUG = "influence-selection"
TRIM_METHODS = ("fi", "iv", "random")
AL_STRATEGIES = ("fi", "iv", "bald", "entropy", "random", "fi_subsample")

EPILOG = """examples:
  iclr25-influence-selection reproduce --scale quick
  iclr25-influence-selection trim --data adult/meta.json --method fi --budget 20
  iclr25-influence-selection active --data digits --strategy fi --rounds 10 --acquire 30
  iclr25-influence-selection active --data features/ --strategy iv --rounds 5 --acquire 50 --init 100

--data is an InfDataSel meta.json (+ its headerless CSVs), a folder with X_train.npy, y_train.npy, X_test.npy,
y_test.npy (validation split off train), or the built-in 'digits' / 'gaussians'.
"""


def _parser():
    parser = make_parser(PROG, __doc__.splitlines()[0].split(": ", 1)[1])
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True, metavar="{reproduce,trim,active}")
    rep = sub.add_parser("reproduce", help="run a preset and print its claims table")
    add_run_args(rep, scales=("ci", "quick", "full"), presets=PRESETS, scale_out=True)
    for name, helptext in (("trim", "remove the b most harmful training points and retrain"), ("active", "")):
        p = sub.add_parser(name, help=helptext or "pool-based active learning on your data")
        p.add_argument("--data", required=True, help="meta.json, a folder of .npy arrays, 'digits' or 'gaussians'")
        p.add_argument(
            "--l2", type=float, help="L2 weight on the mean loss (default: meta.json's l2_reg / n, else 0.01)"
        )
        p.add_argument("--val-fraction", type=float, default=0.25, help="validation split of train (default: 0.25)")
        p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
        p.add_argument("--out", type=Path, help="output folder (default: runs/influence-selection/<verb>-<time>)")
        p.add_argument("--overwrite", action="store_true", help="replace a folder an earlier run made")
        if name == "trim":
            p.add_argument("--method", choices=TRIM_METHODS, default="fi", help="score (default: %(default)s)")
            p.add_argument(
                "--budget", type=int_at_most(MAX_POINTS), default=20, help="points to remove b (default: %(default)s)"
            )
        else:
            p.add_argument("--strategy", choices=AL_STRATEGIES, default="fi", help="acquisition (default: fi)")
            p.add_argument("--rounds", type=int_at_most(MAX_ROUNDS), default=10, help="rounds (default: %(default)s)")
            p.add_argument(
                "--acquire",
                type=int_at_most(MAX_POINTS),
                default=30,
                help="points queried per round (default: %(default)s)",
            )
            p.add_argument(
                "--init",
                type=int_at_most(MAX_POINTS),
                default=60,
                help="initial labelled points (default: %(default)s)",
            )
            p.add_argument(
                "--sub",
                type=int_at_most(MAX_POINTS),
                default=120,
                help="labelled points FI aggregates over (default: 120)",
            )
    return parser


def _load(args):
    """(X_train, y_train, X_val, y_val, X_test, y_test) from --data."""
    import numpy as np

    from iclr25.influence_selection import data as D

    if not 0 < args.val_fraction < 1:
        raise CliError(f"--val-fraction must lie in (0, 1), got {args.val_fraction}")
    if args.data == "digits":
        s = D.digits_split(args.seed, n_init=0, n_pool=1097)
        return s.X_pool, s.y_pool, s.X_val, s.y_val, s.X_test, s.y_test
    if args.data == "gaussians":
        s = D.two_gaussians(args.seed)
        return s.X_train, s.y_train, s.X_val, s.y_val, s.X_test, s.y_test
    path = Path(args.data)
    if path.is_dir():
        arrs = D.load_npy_features(path)
        for key in ("X_train", "y_train", "X_test", "y_test"):
            if key not in arrs:
                raise CliError(f"{path} lacks {key}.npy (has {', '.join(sorted(arrs))})")
        X, y = arrs["X_train"].astype(float), arrs["y_train"].astype(int)
        perm = np.random.default_rng(args.seed).permutation(len(X))
        nv = round(args.val_fraction * len(X))
        va, tr = perm[:nv], perm[nv:]
        return X[tr], y[tr], X[va], y[va], arrs["X_test"].astype(float), arrs["y_test"].astype(int)
    if path.suffix != ".json":
        raise CliError(f"--data must be a meta.json, a folder of .npy arrays, 'digits' or 'gaussians'; got {path}")
    s = D.load_tabular_meta(path, val_p=args.val_fraction, seed=args.seed)
    if args.l2 is None:
        import json

        l2_sum = json.loads(path.read_text()).get("l2_reg")
        if l2_sum is not None:  # InfDataSel's l2_reg weighs the summed loss; ours weighs the mean
            args.l2 = float(l2_sum) / len(s.y_train)
    return s.X_train, s.y_train, s.X_val, s.y_val, s.X_test, s.y_test


def _check_common(args) -> None:
    if args.l2 is not None and not args.l2 > 0:
        raise CliError(f"--l2 must be > 0, got {args.l2}")
    if args.out is not None:
        from iclr25.shared.run import check_run_folder

        check_run_folder(args.out, args.overwrite)


def _trim(args) -> int:
    _check_common(args)
    if args.budget < 1:
        raise CliError(f"--budget must be >= 1, got {args.budget}")
    import numpy as np

    from iclr25.influence_selection.baselines import iv_scores
    from iclr25.influence_selection.fi import fi_util
    from iclr25.influence_selection.models import LogisticModel
    from iclr25.influence_selection.selection import trim_dataset
    from iclr25.influence_selection.threads import one_thread
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import default_run_dir, open_run_folder

    Xtr, ytr, Xv, yv, Xte, yte = _load(args)
    args.l2 = 1e-2 if args.l2 is None else args.l2
    if args.budget >= len(ytr):
        raise CliError(f"--budget {args.budget} must be smaller than the {len(ytr)} training points")
    K = int(max(ytr.max(), yv.max(), yte.max())) + 1

    def fit(X, y):
        return LogisticModel(l2=args.l2, n_classes=max(K, 2)).fit(X, y)

    with one_thread():  # the same numbers with any BLAS thread count
        m = fit(Xtr, ytr)
        if args.method == "fi":
            scores, mode = fi_util(m, Xtr, ytr, Xv, yv), "top"
        elif args.method == "iv":
            scores, mode = iv_scores(m, Xtr, ytr, Xv, yv), "bottom"
        else:
            scores, mode = np.random.default_rng(args.seed).random(len(ytr)), "top"
        keep = trim_dataset(scores, args.budget, mode)
        m2 = fit(Xtr[keep], ytr[keep])
    before = float(np.mean(m.predict(Xte) == yte))
    after = float(np.mean(m2.predict(Xte) == yte))
    removed = np.setdiff1d(np.arange(len(ytr)), keep)
    with open_run_folder(args.out or default_run_dir(SLUG, "trim", args.method), args.overwrite, paper=SLUG) as out:
        atomic_write_json(
            out / "trim.json",
            {
                "data": str(args.data),
                "method": args.method,
                "budget": args.budget,
                "l2": args.l2,
                "test_acc_before": before,
                "test_acc_after": after,
                "removed": removed.tolist(),
                "scores": scores.tolist(),
            },
        )
    print(f"{args.method}: removed {args.budget} of {len(ytr)} points; test accuracy {before:.4f} -> {after:.4f}")
    print(f"results written to {out}")
    return 0


def _active(args) -> int:
    _check_common(args)
    for name in ("rounds", "acquire", "init", "sub"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name} must be >= 1, got {getattr(args, name)}")
    import numpy as np

    from iclr25.influence_selection.models import LogisticModel
    from iclr25.influence_selection.selection import active_learning_loop, make_strategy
    from iclr25.influence_selection.threads import one_thread
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import default_run_dir, open_run_folder

    Xtr, ytr, Xv, yv, Xte, yte = _load(args)
    args.l2 = 1e-2 if args.l2 is None else args.l2
    if args.init + args.rounds * args.acquire > len(ytr):
        raise CliError(f"--init + --rounds x --acquire exceeds the {len(ytr)} training points")
    K = max(int(max(ytr.max(), yv.max(), yte.max())) + 1, 2)
    perm = np.random.default_rng(args.seed).permutation(len(ytr))
    ini, pool = perm[: args.init], perm[args.init :]
    with one_thread():  # the same numbers with any BLAS thread count
        res = active_learning_loop(
            make_strategy(args.strategy, X_val=Xv, y_val=yv, sub=args.sub),
            Xtr[ini],
            ytr[ini],
            Xtr[pool],
            ytr[pool],
            args.rounds,
            args.acquire,
            lambda X, y: LogisticModel(l2=args.l2, n_classes=K, tol=1e-8).fit(X, y),
            lambda m: float(np.mean(m.predict(Xte) == yte)),
            rng=np.random.default_rng(args.seed),
        )
    folder = args.out or default_run_dir(SLUG, "active", args.strategy)
    with open_run_folder(folder, args.overwrite, paper=SLUG) as out:
        atomic_write_json(
            out / "active.json",
            {
                "data": str(args.data),
                "strategy": args.strategy,
                "l2": args.l2,
                "curve": res.curve,
                "sizes": res.sizes,
                "auc": res.auc,
                "queried": [[int(pool[i]) for i in q] for q in res.queried],
            },
        )
    print(f"{args.strategy}: accuracy " + " ".join(f"{a:.3f}" for a in res.curve) + f"  (AUC {res.auc:.4f})")
    print(f"results written to {out}")
    return 0


main = package_main(PROG, _parser, {"trim": _trim, "active": _active})


if __name__ == "__main__":
    sys.exit(main())
