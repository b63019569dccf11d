"""`iclr25-conditional-conformal`: reproduce the CP² paper's claims, or fit-and-predict conformal sets on a CSV.

Paper: "Probabilistic Conformal Prediction with Approximate Conditional Validity" (ICLR 2025, arXiv 2407.01794).
Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from iclr25.conditional_conformal.config import PRESETS
from iclr25.shared.cli import CliError, add_run_args, make_parser, package_main
from iclr25.shared.files import write_json
from iclr25.shared.progress import set_quiet
from iclr25.shared.run import DEVICES, check_run_folder, default_run_dir, open_run_folder
from iclr25.shared.validate import check_in_range, check_int_at_least, check_probability

PROG = "iclr25-conditional-conformal"
SLUG = "conditional-conformal"
METHODS = ("cp2-pcp-l", "cp2-pcp-d", "cp2-hpd", "pcp", "cp", "cqr", "pi")
SCALES = ("ci", "quick", "full")
# fit-predict sizes (the paper: M = 50, M_tau = 100, 10 components, ~100 epochs); each limit leaves room above
FIT_PREDICT_MAX = {"--M": 5000, "--M-tau": 5000, "--components": 256, "--epochs": 10_000}

EPILOG = """examples:
  iclr25-conditional-conformal reproduce --scale quick
  iclr25-conditional-conformal reproduce --scale full data_dir=/data/pcp
  iclr25-conditional-conformal fit-predict --data file.csv --target y --method cp2-pcp-l --alpha 0.1 --M 50
"""


def _parser():
    parser = make_parser(PROG, __doc__.splitlines()[0].split(": ", 1)[1])
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True, metavar="{reproduce,fit-predict}")
    rep = sub.add_parser("reproduce", help="run the ci/quick/full reproduction and print its claims table")
    add_run_args(rep, scales=SCALES, presets=PRESETS)
    f = sub.add_parser("fit-predict", help="train an MDN on your CSV, calibrate, and write sets for held-out rows")
    f.add_argument("--data", type=Path, required=True, help="CSV file with a header row, numeric columns")
    f.add_argument("--target", required=True, help="target column(s), comma-separated for several outputs")
    f.add_argument("--features", help="feature columns, comma-separated (default: every other column)")
    f.add_argument("--method", choices=METHODS, default="cp2-pcp-l", help="method (default: %(default)s)")
    f.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (default: %(default)s)")
    f.add_argument("--M", type=int, default=50, dest="m", help="ball centres per point (default: %(default)s)")
    f.add_argument("--M-tau", type=int, default=100, dest="m_tau", help="draws for τ_x (default: %(default)s)")
    f.add_argument("--cal-frac", type=float, default=0.25, help="fraction of rows to calibrate on (default: 0.25)")
    f.add_argument("--test-frac", type=float, default=0.25, help="fraction of rows to predict (default: 0.25)")
    f.add_argument("--components", type=int, default=10, help="MDN mixture components (default: %(default)s)")
    f.add_argument("--epochs", type=int, default=100, help="MDN training epochs (default: %(default)s)")
    f.add_argument("--out", type=Path, help="run folder (default: runs/conditional-conformal/fit-predict-<time>)")
    f.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    f.add_argument("--device", choices=DEVICES, default="auto", help="accepted; the MDN is small and runs on CPU")
    f.add_argument("--overwrite", action="store_true", help="replace a run folder an earlier run made")
    f.add_argument("--quiet", action="store_true", help="no progress output")
    return parser


def _read_table(path: Path, target: str, features: str | None) -> tuple[list[str], list[str], list[list[float]]]:
    """Header check and numeric rows, before numpy/torch load."""
    if not path.is_file():
        raise CliError(f"--data: no such file {path}")
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.reader(fh) if r]
    except (UnicodeDecodeError, csv.Error) as e:
        raise CliError(
            f"--data {path} is not a text CSV file ({type(e).__name__}); give a comma-separated table"
        ) from None
    if len(rows) < 2:
        raise CliError(f"--data {path} has no data rows")
    header = [h.strip() for h in rows[0]]
    targets = [t.strip() for t in target.split(",") if t.strip()]
    missing = [t for t in targets if t not in header]
    if missing:
        raise CliError(f"--target: column {missing[0]!r} not in {path.name} (columns: {', '.join(header[:12])})")
    feats = [c.strip() for c in features.split(",")] if features else [h for h in header if h not in targets]
    missing = [c for c in feats if c not in header]
    if missing:
        raise CliError(f"--features: column {missing[0]!r} not in {path.name}")
    if not feats:
        raise CliError("no feature columns left: give --features")
    idx = [header.index(c) for c in feats + targets]
    values = []
    for line, r in enumerate(rows[1:], start=2):
        try:
            values.append([float(r[i]) for i in idx])
        except (ValueError, IndexError):
            raise CliError(
                f"--data {path.name} line {line}: non-numeric or missing value in the used columns"
            ) from None
    _check_finite(path, feats + targets, values)
    return feats, targets, values


def _check_finite(path: Path, columns: list[str], values: list[list[float]]) -> None:
    """Refuse NaN/inf in the used columns (they would calibrate to coverage 0 and NaN sizes), naming each column
    and how many rows hold such a value."""
    bad_rows = [i for i, row in enumerate(values) if not all(map(math.isfinite, row))]
    if not bad_rows:
        return
    counts = [sum(not math.isfinite(values[i][j]) for i in bad_rows) for j in range(len(columns))]
    where = ", ".join(f"{c!r} ({k} rows)" for c, k in zip(columns, counts, strict=True) if k)
    raise ValueError(
        f"--data {path.name}: {len(bad_rows)} rows hold NaN or infinite values in the used columns {where} "
        f"(first at line {bad_rows[0] + 2}); only finite numbers are allowed: drop or impute those rows"
    )


def _fit_predict(args) -> int:
    check_probability("--alpha", args.alpha)
    for flag, value in (("--M", args.m), ("--M-tau", args.m_tau), ("--components", args.components),
                        ("--epochs", args.epochs)):  # fmt: skip
        check_int_at_least(flag, value, 1)
        check_in_range(flag, value, 1, FIT_PREDICT_MAX[flag])  # bounded before any work
    check_probability("--cal-frac", args.cal_frac)
    check_probability("--test-frac", args.test_frac)
    if args.cal_frac + args.test_frac >= 1:
        raise CliError("--cal-frac + --test-frac must leave rows to train on (sum < 1)")
    feats, _targets, values = _read_table(args.data, args.target, args.features)
    n = len(values)
    n_cal, n_test = int(args.cal_frac * n), int(args.test_frac * n)
    if min(n_cal, n_test, n - n_cal - n_test) < 10:
        raise CliError(f"--data has {n} rows: need at least 10 each for training, calibration and test")
    out = args.out or default_run_dir(SLUG, "fit-predict", args.method)
    check_run_folder(out, args.overwrite)
    set_quiet(args.quiet)
    from .fitpredict import fit_predict

    with open_run_folder(out, args.overwrite, paper=SLUG, command="fit-predict") as folder:
        summary = fit_predict(values, len(feats), args, folder)
        write_json(folder / "metrics.json", summary)
    print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items()))
    print(f"results written to {out}")
    return 0


main = package_main(PROG, _parser, {"fit-predict": _fit_predict})


if __name__ == "__main__":
    sys.exit(main())
