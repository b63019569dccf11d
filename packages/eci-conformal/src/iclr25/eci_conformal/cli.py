"""`iclr25-eci-conformal`: reproduce the ECI paper's claims, or run online conformal intervals on your own series.

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818).
Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import sys
from pathlib import Path

from iclr25.eci_conformal.config import MAX_POINTS, PRESETS
from iclr25.shared.cli import (
    CliError,
    add_run_args,
    add_verb_args,
    check_verb_flags,
    make_parser,
    package_main,
)
from iclr25.shared.run import open_run_folder
from iclr25.shared.validate import check_int_at_least, check_nonnegative, check_probability, int_at_most

PROG = "iclr25-eci-conformal"
SLUG = "eci-conformal"
METHOD_NAMES = (  # kept in sync with intervals.METHODS (a test checks it); listed here to keep --help light
    "eci",
    "eci_cutoff",
    "eci_integral",
    "eci_smoothed",
    "smoothed_ogd",
    "eci_accumulate",
    "conformal_p",
    "conformal_pi",
    "conformal_pid",
    "ogd",
    "sf_ogd",
    "decay_ogd",
    "aci",
    "aci_clipped",
    "trail",
    "dtaci",
)
FORECASTERS = ("ar3", "naive")

EPILOG = """examples:
  iclr25-eci-conformal reproduce --scale quick
  iclr25-eci-conformal run --data series.csv --column y --method eci --alpha 0.1 --lr 0.1 --out runs/mine
  iclr25-eci-conformal run --data series.csv --column y --yhat-column forecast --method aci --lr 0.005
  iclr25-eci-conformal run --data all_stocks.csv --ticker AMZN --column Open --method eci_cutoff --lr 0.1
  iclr25-eci-conformal tables --data-dir FOLDER --out runs/tables      # the paper's tables on its files
  iclr25-eci-conformal tables --forecasters ar --no-scorecaster         # on generated look-alike series
"""
TABLE_FORECASTERS = ("ar", "theta", "prophet")  # kept in sync with forecast.FORECASTERS (a test checks it)
TABLE_DATASETS = ("AMZN", "GOOGL", "elec2", "daily-climate", "changepoint")  # = tables.DATASETS


def _parser():
    parser = make_parser(PROG, __doc__.splitlines()[0].split(": ", 1)[1])
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True, metavar="{reproduce,run,tables}")
    rep = sub.add_parser("reproduce", help="run the quick/full reproduction and print its claims table")
    add_run_args(rep, scales=("quick", "full"), presets=PRESETS)
    r = sub.add_parser("run", help="online conformal intervals for one column of your CSV")
    r.add_argument("--data", type=Path, required=True, help="CSV file with a header row")
    r.add_argument("--column", required=True, help="column holding the series y")
    r.add_argument("--ticker", help="DJIA-30 format (Date,...,Name): keep this Name, sorted by Date")
    r.add_argument("--yhat-column", help="column holding your point forecasts (default: our --forecaster)")
    r.add_argument("--forecaster", choices=FORECASTERS, default="ar3", help="point forecaster (default: %(default)s)")
    r.add_argument("--method", choices=METHOD_NAMES, default="eci", help="online method (default: %(default)s)")
    r.add_argument("--alpha", type=float, default=0.1, help="target miscoverage (default: %(default)s)")
    r.add_argument("--lr", type=float, help="learning rate (required except for trail, dtaci)")
    r.add_argument("--score", choices=("signed", "abs"), default="signed", help="score (default: %(default)s)")
    r.add_argument(
        "--burn-in",
        type=int_at_most(MAX_POINTS),
        default=100,
        help="T_burnin: lr window, metrics after it (default: 100)",
    )
    r.add_argument(
        "--normaliser", choices=("true", "official"), default="true", help="SF-OGD's normaliser (default: %(default)s)"
    )
    add_verb_args(r)
    t = sub.add_parser(
        "tables", help="the paper's real-data tables (Tables 1-5 layout): every method, lr grid, forecaster"
    )
    t.add_argument("--data-dir", type=Path, help="folder with the paper's files (default: generated look-alike series)")
    t.add_argument("--forecasters", default="ar,theta,prophet", help="comma list of ar, theta, prophet (default: all)")
    t.add_argument("--datasets", help=f"comma list of {', '.join(TABLE_DATASETS)} (default: every one found)")
    t.add_argument("--sf-ogd-normaliser", choices=("true", "official"), default="true", help="(default: %(default)s)")
    t.add_argument("--no-scorecaster", action="store_true", help="skip Conformal PID and ECI + scorecaster")
    t.add_argument(
        "--scorecaster-refit",
        type=int_at_most(MAX_POINTS),
        default=1,
        help="refit the Theta scorecaster every k steps (1)",
    )
    add_verb_args(t)
    return parser


def _names(flag: str, text: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in names if x not in allowed]
    if not names or bad:
        raise CliError(f"{flag} takes a comma list of {', '.join(allowed)}; got {text!r}")
    return names


def _tables(args) -> int:
    forecasters = _names("--forecasters", args.forecasters, TABLE_FORECASTERS)
    datasets = _names("--datasets", args.datasets, TABLE_DATASETS) if args.datasets else None
    check_int_at_least("--scorecaster-refit", args.scorecaster_refit, 1)
    if args.data_dir is not None and not args.data_dir.is_dir():
        raise CliError(f"--data-dir {args.data_dir} is not a folder")
    out = check_verb_flags(args, SLUG, "tables", "paper")

    from iclr25.eci_conformal.config import Config
    from iclr25.eci_conformal.tables import run_tables

    info = run_tables(
        out,
        data_dir=args.data_dir,
        seed=args.seed,
        forecasters=forecasters,
        scorecaster=not args.no_scorecaster,
        scorecaster_refit=args.scorecaster_refit,
        datasets=datasets,
        config=Config(sf_ogd_normaliser=args.sf_ogd_normaliser),
        overwrite=args.overwrite,
    )
    print((out / "tables.md").read_text())
    print(f"tables written to {out} ({info['cpu_s']:.0f} s of CPU)")
    return 0


def _run(args) -> int:
    # flags and the run folder first: nothing heavy is imported and no data is read before they pass
    check_probability("--alpha", args.alpha)
    if args.lr is None and args.method not in ("trail", "dtaci"):
        raise CliError(f"--lr is required for method {args.method}")
    if args.lr is not None:
        check_nonnegative("--lr", args.lr)
    check_int_at_least("--burn-in", args.burn_in, 1)
    if args.ticker and args.yhat_column:
        raise CliError("--ticker and --yhat-column cannot be combined")
    out = check_verb_flags(args, SLUG, "run", args.method)

    from iclr25.eci_conformal.data import load_column, load_djia, naive_forecast, rolling_ar
    from iclr25.eci_conformal.intervals import interval_from_scores
    from iclr25.eci_conformal.metrics import summarize

    y = load_djia(args.data, args.ticker, args.column) if args.ticker else load_column(args.data, args.column)
    if len(y) <= args.burn_in + 1:
        raise CliError(f"the series has {len(y)} points; need more than --burn-in + 1 = {args.burn_in + 1}")
    if args.yhat_column:
        yhat = load_column(args.data, args.yhat_column)
    else:
        yhat = rolling_ar(y, 3, window=args.burn_in) if args.forecaster == "ar3" else naive_forecast(y)
    kw = {"normaliser": args.normaliser} if args.method == "sf_ogd" else {}
    lo, hi = interval_from_scores(
        args.method, y, yhat, args.alpha, lr=args.lr, score=args.score, window=args.burn_in, **kw
    )
    m = summarize(lo, hi, y, args.burn_in)
    with open_run_folder(out, args.overwrite, paper=SLUG, command="run") as folder:
        _write_run(args, folder, y, yhat, lo, hi, m)
    print(
        f"{args.method}: coverage {m['coverage']:.4f} (target {1 - args.alpha:g}), avg width {m['avg_width']:.4g}, "
        f"median width {m['median_width']:.4g}, longest miss run {int(m['longest_miss_run'])}"
    )
    print(f"results written to {out}")
    return 0


def _write_run(args, out: Path, y, yhat, lo, hi, m: dict) -> None:
    """metrics.json, intervals.csv and intervals.png of a `run` (and the summary to wandb when asked)."""
    import numpy as np

    from iclr25.eci_conformal.metrics import covered, rolling_coverage
    from iclr25.shared.results import atomic_write_json, atomic_write_text, save_figure

    info = {
        "data": str(args.data),
        "column": args.column,
        "ticker": args.ticker,
        "forecast": args.yhat_column or args.forecaster,
        "method": args.method,
        "alpha": args.alpha,
        "lr": args.lr,
        "score": args.score,
        "burn_in": args.burn_in,
        "n": len(y),
        **m,
    }
    atomic_write_json(out / "metrics.json", info)
    rows = ["t,y,yhat,lo,hi"] + [
        f"{t},{a:.10g},{b:.10g},{c:.10g},{d:.10g}" for t, (a, b, c, d) in enumerate(zip(y, yhat, lo, hi, strict=True))
    ]
    atomic_write_text(out / "intervals.csv", "\n".join(rows) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
    t = np.arange(len(y))
    a1.plot(t, y, "k.", ms=2, label=args.column)
    finite = np.isfinite(lo) & np.isfinite(hi)
    a1.fill_between(t, np.where(finite, lo, np.nan), np.where(finite, hi, np.nan), alpha=0.3, label=args.method)
    a1.legend(fontsize=7)
    a2.plot(t, rolling_coverage(covered(lo, hi, y), 50), lw=1)
    a2.axhline(1 - args.alpha, color="k", ls="--", lw=0.8)
    a2.set(xlabel="t", ylabel="rolling coverage (50)")
    save_figure(fig, out / "intervals.png")
    if args.wandb != "off":
        from iclr25.shared.logging import MetricsLogger

        with MetricsLogger(out, wandb=args.wandb, name=f"{SLUG}-run-{args.method}", config=info) as logger:
            logger.log({k: float(v) for k, v in m.items()}, step=0)


main = package_main(PROG, _parser, {"run": _run, "tables": _tables})


if __name__ == "__main__":
    sys.exit(main())
