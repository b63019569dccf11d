"""Data: the synthetic settings (spec §6a) and loaders for the real-data formats of the PCP repository
(Wang et al. 2023), which the paper's experiments reuse (Sec. 4.2-4.3). Loaders read local files only.

Files a user gives are data: CSV through the `csv` module, ARFF through `scipy.io.arff`; nothing is unpickled.
"""

from __future__ import annotations

import csv
import math
from datetime import datetime
from pathlib import Path

import numpy as np

from .estimators import OracleMixtureSampler

# --------------------------------------------------------------------------------------------------
# Synthetic settings.


def bimodal_sd(x: np.ndarray) -> np.ndarray:
    """σ(x) = 0.1 + 0.5·|x|/4·(1 + 1{x > 0}) (spec §6a)."""
    x = np.asarray(x, dtype=float)
    return 0.1 + 0.5 * np.abs(x) / 4 * (1 + (x > 0))


def bimodal_hetero_law(sd_scale: float = 1.0) -> OracleMixtureSampler:
    """Y | X = x: ½ N(sin x, σ(x)²) + ½ N(sin x + 2 + 0.5x, σ(x)²); `sd_scale` ≠ 1 gives a misspecified Π."""

    def means(x: np.ndarray) -> np.ndarray:
        x0 = x[:, 0]
        return np.stack([np.sin(x0), np.sin(x0) + 2 + 0.5 * x0], axis=1)  # [n, 2]

    def sds(x: np.ndarray) -> np.ndarray:
        s = bimodal_sd(x[:, 0])
        return np.stack([s, s], axis=1)  # [n, 2]

    law = OracleMixtureSampler(means, sds, name="bimodal_hetero")
    return law if sd_scale == 1.0 else law.scaled(sd_scale)


def bimodal_hetero(n: int, rng: np.random.Generator | int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X [n, 1] ~ U[−4, 4], Y [n, 1]) from the bimodal heteroscedastic law (spec §6a)."""
    rng = np.random.default_rng(rng)
    x = rng.uniform(-4, 4, size=(n, 1))
    return x, bimodal_hetero_law().sample(x, 1, rng)[:, 0, :]


def ring2d_law(sd_scale: float = 1.0) -> OracleMixtureSampler:
    """A 2-D output toy: Y | x is ½ N(r(x)u(x), s(x)²I) + ½ N(−r(x)u(x), s(x)²I), u(x) = (cos x, sin x),
    r(x) = 1 + 0.25x, s(x) = 0.1 + 0.1|x| (bimodal and heteroscedastic; x ∈ [−2, 2])."""

    def means(x: np.ndarray) -> np.ndarray:
        x0 = x[:, 0]
        c = (1 + 0.25 * x0)[:, None] * np.stack([np.cos(x0), np.sin(x0)], axis=1)  # [n, 2]
        return np.stack([c, -c], axis=1)  # [n, 2 comps, 2]

    def sds(x: np.ndarray) -> np.ndarray:
        s = 0.1 + 0.1 * np.abs(x[:, 0])
        return np.stack([s, s], axis=1)

    law = OracleMixtureSampler(means, sds, name="ring2d")
    return law if sd_scale == 1.0 else law.scaled(sd_scale)


def ring2d(n: int, rng: np.random.Generator | int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X [n, 1] ~ U[−2, 2], Y [n, 2]) from `ring2d_law`."""
    rng = np.random.default_rng(rng)
    x = rng.uniform(-2, 2, size=(n, 1))
    return x, ring2d_law().sample(x, 1, rng)[:, 0, :]


def rosenbrock(x: np.ndarray) -> np.ndarray:
    """Σ_i 100(x_{i+1} − x_i²)² + (1 − x_i)² over the rows of x [n, d]."""
    x = np.asarray(x, dtype=float)
    return (100 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1 - x[:, :-1]) ** 2).sum(1)


def rosenbrock10d(
    n: int = 10_000, dim: int = 10, noise: float = 0.1, rng: np.random.Generator | int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """App. B.5.1: X ~ N(0, Σ), Σ a random full-rank covariance (AᵀA/d + 0.1 I, A standard normal), and
    Y = log(1 + Rosenbrock(X)) + N(0, noise²). The log and the noise are ours (the spec gives neither): they make
    Y | X a proper, unimodal law on a scale an MDN can fit."""
    rng = np.random.default_rng(rng)
    a = rng.standard_normal((dim, dim))
    cov = a.T @ a / dim + 0.1 * np.eye(dim)
    x = rng.multivariate_normal(np.zeros(dim), cov, size=n)
    y = np.log1p(rosenbrock(x)) + noise * rng.standard_normal(n)
    return x, y[:, None]


def gaussian_slab_hits(
    n: int, case: str, rng: np.random.Generator | int | None = None, level: float = 0.9
) -> tuple[np.ndarray, np.ndarray]:
    """The WSC check (spec §9.7): x ~ N(0, I_5); case 'half_bad': covered = 1 if x₁ > 0 else Bernoulli(0.5);
    case 'iid': covered ~ Bernoulli(level)."""
    rng = np.random.default_rng(rng)
    x = rng.standard_normal((n, 5))
    if case == "half_bad":
        hit = np.where(x[:, 0] > 0, True, rng.random(n) < 0.5)
    elif case == "iid":
        hit = rng.random(n) < level
    else:
        raise ValueError(f"case must be 'half_bad' or 'iid', got {case!r}")
    return x, hit


# --------------------------------------------------------------------------------------------------
# Real-data loaders (formats of the PCP repository's data folder).

REAL_1D = ("bike", "bio", "blog", "fb1", "fb2", "meps19", "meps20", "meps21", "temp")
MULTI_OUTPUT = {"rf1": 8, "rf2": 8, "scm1d": 16, "scm20d": 16, "sgemm": 4}
FILES = {
    "bike": "bike_train.csv",
    "bio": "CASP.csv",
    "blog": "blogData_train.csv",
    "fb1": "facebook_1.csv",
    "fb2": "facebook_2.csv",
    "meps19": "meps_19_reg.csv",
    "meps20": "meps_20_reg.csv",
    "meps21": "meps_21_reg.csv",
    "temp": "Bias_correction_ucl.csv",
    "rf1": "rf1.arff",
    "rf2": "rf2.arff",
    "scm1d": "scm1d.arff",
    "scm20d": "scm20d.arff",
    "sgemm": "dataset.arff",
}

# MEPS: 4 numeric columns, the person weight, the one-hot levels of each categorical variable, then RACE.
_MEPS_LEVELS = {
    "REGION": (1, 2, 3, 4),
    "SEX": (1, 2),
    "MARRY": tuple(range(1, 11)),
    "FTSTU": (-1, 1, 2, 3),
    "ACTDTY": (1, 2, 3, 4),
    "HONRDC": (1, 2, 3, 4),
    "RTHLTH": (-1, 1, 2, 3, 4, 5),
    "MNHLTH": (-1, 1, 2, 3, 4, 5),
    **{
        k: (-1, 1, 2)
        for k in (
            [
                "HIBPDX",
                "CHDDX",
                "ANGIDX",
                "MIDX",
                "OHRTDX",
                "STRKDX",
                "EMPHDX",
                "CHBRON",
                "CHOLDX",
                "CANCERDX",
                "DIABDX",
                "JTPAIN",
                "ARTHDX",
            ]
        )
    },
    "ARTHTYPE": (-1, 1, 2, 3),
    "ASTHDX": (1, 2),
    **{
        k: (-1, 1, 2)
        for k in ["ADHDADDX", "PREGNT", "WLKLIM", "ACTLIM", "SOCLIM", "COGLIM", "DFHEAR42", "DFSEE42", "ADSMOK42"]
    },
    "PHQ242": (-1, 0, 1, 2, 3, 4, 5, 6),
    "EMPST": (-1, 1, 2, 3, 4),
    "POVCAT": (1, 2, 3, 4, 5),
    "INSCOV": (1, 2, 3),
}


def meps_columns(year: int) -> list[str]:
    """The 139 feature columns of meps_{19,20,21}_reg.csv used by CQR/PCP (PERWT15F for 19/20, PERWT16F for 21)."""
    weight = "PERWT16F" if year == 21 else "PERWT15F"
    cols = ["AGE", "PCS42", "MCS42", "K6SUM42", weight]
    for name, levels in _MEPS_LEVELS.items():
        cols += [f"{name}={v}" for v in levels]
    return [*cols, "RACE"]


def _read_csv(path: Path, header: bool = True) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    if not rows:
        raise ValueError(f"{path} is empty")
    return (rows[0], rows[1:]) if header else ([str(i) for i in range(len(rows[0]))], rows)


def _floats(rows: list[list[str]], path: Path) -> np.ndarray:
    try:
        return np.array(
            [[float(v) if v.strip() not in ("", "NA", "nan", "NaN") else math.nan for v in r] for r in rows]
        )
    except ValueError as e:
        raise ValueError(f"{path}: non-numeric value ({e})") from None


def _columns(header: list[str], rows: list[list[str]], names: list[str], path: Path) -> np.ndarray:
    missing = [c for c in names if c not in header]
    if missing:
        raise ValueError(f"{path} lacks columns {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    idx = [header.index(c) for c in names]
    return _floats([[r[i] for i in idx] for r in rows], path)


def load_bike(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Kaggle bike sharing: one-hot season and weather, hour/day-of-week/month/year from datetime, drop
    casual/registered; target `count`."""
    header, rows = _read_csv(path)
    need = ["datetime", "season", "holiday", "workingday", "weather", "temp", "atemp", "humidity", "windspeed"]
    numeric = _columns(header, rows, [*need[1:], "count"], path)
    season, weather = numeric[:, 0], numeric[:, 3]
    times = [datetime.strptime(r[header.index("datetime")], "%Y-%m-%d %H:%M:%S") for r in rows]
    parts = [
        numeric[:, [1, 2, 4, 5, 6, 7]],  # holiday, workingday, temp, atemp, humidity, windspeed
        (season[:, None] == np.array([1, 2, 3, 4])).astype(float),
        (weather[:, None] == np.array([1, 2, 3, 4])).astype(float),
        np.array([[t.hour, t.weekday(), t.month, t.year - 2011] for t in times], dtype=float),
    ]
    return np.concatenate(parts, axis=1), numeric[:, -1:]


def load_real(name: str, data_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Load dataset `name` (see FILES) from `data_dir`: (X [n, d], Y [n, q]); rows with missing values are
    dropped (1-D sets) or mean-imputed in X (rf1, rf2, sgemm); sgemm is subsampled to 10 000 rows (seed 0)."""
    if name not in FILES:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(FILES)}")
    path = Path(data_dir) / FILES[name]
    if not path.is_file():
        raise FileNotFoundError(f"{name}: no such file {path}")
    if name == "bike":
        X, Y = load_bike(path)
    elif name == "bio":  # target = column 0 (RMSD)
        header, rows = _read_csv(path)
        a = _floats(rows, path)
        X, Y = a[:, 1:], a[:, :1]
    elif name == "blog":  # no header; 280 features, target = last column
        _, rows = _read_csv(path, header=False)
        a = _floats(rows, path)
        X, Y = a[:, :280], a[:, -1:]
    elif name in ("fb1", "fb2"):  # features = columns 0-52, target = column 53
        _, rows = _read_csv(path)
        a = _floats(rows, path)
        X, Y = a[:, :53], a[:, 53:54]
    elif name.startswith("meps"):
        header, rows = _read_csv(path)
        X = _columns(header, rows, meps_columns(int(name[-2:])), path)
        Y = _columns(header, rows, ["UTILIZATION_reg"], path)
    elif name == "temp":  # drop station, Date, Next_Tmax; target = last column (Next_Tmin)
        header, rows = _read_csv(path)
        keep = [c for c in header if c not in ("station", "Date", "Next_Tmax")]
        a = _columns(header, rows, keep, path)
        X, Y = a[:, :-1], a[:, -1:]
    else:
        from scipy.io import arff

        raw, _ = arff.loadarff(str(path))
        a = np.column_stack([np.asarray(raw[f], dtype=float) for f in raw.dtype.names])
        q = MULTI_OUTPUT[name]
        X, Y = a[:, :-q], a[:, -q:]
        if name in ("scm1d", "scm20d"):
            ok = ~np.isnan(a).any(1)
            X, Y = X[ok], Y[ok]
        else:
            X = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
        if name == "sgemm" and len(X) > 10_000:
            idx = np.random.default_rng(0).choice(len(X), 10_000, replace=False)
            X, Y = X[idx], Y[idx]
        return X, Y
    ok = ~(np.isnan(X).any(1) | np.isnan(Y).any(1))
    return X[ok], Y[ok]


def split_indices(perm: np.ndarray, n_cal: int, n_test: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calibration, test and training rows of a shuffled order `perm`: the first n_cal, the next n_test, the rest."""
    return perm[:n_cal], perm[n_cal : n_cal + n_test], perm[n_cal + n_test :]


def standardize(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Standardise arrays with the mean and sd of `train` (constant columns left centred)."""
    mu, sd = train.mean(0), train.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return [(a - mu) / sd for a in (train, *others)]
