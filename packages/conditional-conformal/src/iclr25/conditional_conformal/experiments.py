"""The experiments (spec §6, §9): each `measure_*` runs one part of the plan and returns plain metrics.

The method's computations live in the method modules (every method on one split and its metrics in
`comparison`, the estimators, the data settings, WSC in `metrics`); here is which of them each part calls, with
which settings and random streams. `reproduce` decides which parts run and `claims` judges what they measured.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.shared.parallel import map_in_processes

from .baselines import QuantileNet, shared_quantile_levels
from .comparison import evaluate_methods, oracle_validity
from .config import MULTI_DATASETS, Config
from .cp2 import cp2_pcp_pair, draw
from .data import (
    FILES,
    bimodal_hetero,
    bimodal_hetero_law,
    gaussian_slab_hits,
    load_real,
    ring2d,
    ring2d_law,
    rosenbrock10d,
    split_indices,
    standardize,
)
from .metrics import wsc

PART_IDS = {p: i for i, p in enumerate(("validity", "synthetic", "qhat", "wsc", "mdn", "toy2d", "rosenbrock", "real"))}


def _rng(seed: int, part: str, *more: int) -> np.random.Generator:
    """One random stream per part (and seed, repetition), so running a part alone measures the same numbers."""
    return np.random.default_rng([seed, PART_IDS[part], *more])


def _evaluate(est: Any, split: tuple, cfg: Config, rng: np.random.Generator, m: int | None = None, **kw: Any):
    """`evaluate_methods` at the configuration's α, M (or `m`), M̃ and number of x-bins."""
    return evaluate_methods(est, split, cfg.alpha, m or cfg.n_samples, cfg.n_samples_tau, rng, n_bins=cfg.n_bins, **kw)


def _strip(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: {kk: vv for kk, vv in v.items() if kk != "hits"} for k, v in rows.items()}


def _mdn(X: np.ndarray, Y: np.ndarray, cfg: Config, components: int, hidden: tuple, epochs: int, seed: int):
    """An MDN fitted on (X, Y) with the configuration's learning rate and batch size."""
    from .estimators import MDN

    mdn = MDN(X.shape[1], Y.shape[1], components, hidden, seed=seed)
    return mdn.fit(X, Y, epochs, cfg.mdn_lr, cfg.mdn_batch, seed=seed)


def _quantile_net(X: np.ndarray, Y: np.ndarray, cfg: Config, seed: int) -> QuantileNet:
    """The CQR/CQR2 quantile regressor (one net for α/2, 1 − α/2 and the CQR2 level grid), fitted on (X, Y)."""
    net = QuantileNet(shared_quantile_levels(cfg.alpha), cfg.cqr_hidden, cfg.cqr_epochs, cfg.cqr_batch, seed=seed)
    return net.fit(X, Y)


def measure_validity(cfg: Config, seed: int = 0, progress=None) -> dict[str, Any]:
    """Spec §9.1: mean coverage of CP²-PCP-L/-D with the oracle sampler over fresh repetitions."""
    law = bimodal_hetero_law()
    out: dict[str, Any] = {}
    for j, (n, n_test, reps) in enumerate(zip(cfg.validity_n, cfg.validity_test, cfg.validity_reps, strict=True)):
        rng = _rng(seed, "validity", j)
        cov = {"linear": [], "difference": []}
        it = range(reps) if progress is None else progress(range(reps), desc=f"validity n={n}", unit="rep")
        for _ in it:
            rep = oracle_validity(law, bimodal_hetero, n, n_test, cfg.alpha, cfg.n_samples, cfg.n_samples_tau, rng)
            for adjust in cov:
                cov[adjust].append(rep[adjust])
        out[f"n{n}"] = {
            "n": n,
            "n_test": n_test,
            "reps": reps,
            **{f"mean_{a}": float(np.mean(v)) for a, v in cov.items()},
            **{f"se_{a}": float(np.std(v) / math.sqrt(len(v))) for a, v in cov.items()},
        }
    return out


def bimodal_seed(s: int, part: str, cfg: Config, seed: int, scales=(), mdn=None, quantiles=None) -> list[dict]:
    """Seed `s` of a bimodal_hetero part: one calibration/test split, every method with each estimator in turn
    (the oracle law with σ×scale for each of `scales`, else `mdn`)."""
    estimators = [bimodal_hetero_law(scale) for scale in scales] if scales else [mdn]
    rng = _rng(seed, part, s)
    split = (*bimodal_hetero(cfg.n_cal, rng), *bimodal_hetero(cfg.n_test, rng))
    grid = (-4.0, 8.0, cfg.hpd_grid_step)
    kw = {"quantiles": quantiles, "length_points": cfg.hpd_length_points, "grid": grid}
    return [_strip(_evaluate(est, split, cfg, rng, **kw)) for est in estimators]


def measure_synthetic(cfg: Config, seed: int = 0, scales: tuple[float, ...] | None = None, quantiles=None):
    """Spec §9.2/9.3/9.6: bimodal_hetero, each seed (in `cfg.workers` processes) and each oracle sampler (σ×scale),
    every method."""
    scales = cfg.sd_scales if scales is None else scales
    t0 = time.perf_counter()
    run = partial(bimodal_seed, part="synthetic", cfg=cfg, seed=seed, scales=scales, quantiles=quantiles)
    rows = map_in_processes(run, range(cfg.seeds), cfg.workers, desc="synthetic", unit="seed")
    out: dict[str, Any] = {f"sd_x{scale:g}": [r[i] for r in rows] for i, scale in enumerate(scales)}
    out["points_per_s"] = cfg.seeds * len(scales) * (cfg.n_cal + cfg.n_test) / (time.perf_counter() - t0)
    return out


def measure_qhat(cfg: Config, seed: int = 0) -> dict[str, Any]:
    """Spec §9.4: with Π = P, Q̂_L ≈ 1 and Q̂_D ≈ 0 at n = qhat_n, each seed (in `cfg.workers` processes)."""
    rows = map_in_processes(partial(_qhat_seed, cfg=cfg, seed=seed), range(cfg.seeds), cfg.workers, desc="qhat")
    return {adjust: [row[i] for row in rows] for i, adjust in enumerate(("linear", "difference"))}


def _qhat_seed(s: int, cfg: Config, seed: int) -> list[float]:
    """Q̂ of CP²-PCP-L and -D with Π = P on seed `s`'s qhat_n points."""
    law, rng = bimodal_hetero_law(), _rng(seed, "qhat", s)
    Xc, Yc = bimodal_hetero(cfg.qhat_n, rng)
    m, m_tau = cfg.n_samples, cfg.n_samples_tau
    pair = cp2_pcp_pair(law, Xc, Yc, cfg.alpha, m, m_tau, draw(law, Xc, m, m_tau, rng))
    return [method.qhat_ for method in pair.values()]


def measure_wsc(cfg: Config, seed: int = 0, evaluate_on: str = "rest") -> dict[str, Any]:
    """Spec §9.7: the WSC metric on x ~ N(0, I_5) with known coverage patterns, `wsc_seeds` seeds (in
    `cfg.workers` processes)."""
    items = [(case, s) for case in ("half_bad", "iid") for s in range(cfg.wsc_seeds)]
    run = partial(_wsc_seed, cfg=cfg, seed=seed, evaluate_on=evaluate_on)
    values = map_in_processes(run, items, cfg.workers, desc="wsc")
    return {case: [v for (c, _), v in zip(items, values, strict=True) if c == case] for case in ("half_bad", "iid")}


def _wsc_seed(item: tuple[str, int], cfg: Config, seed: int, evaluate_on: str) -> float:
    """The WSC metric on seed `s` of coverage pattern `case` (item = (case, s))."""
    case, s = item
    x, hit = gaussian_slab_hits(cfg.wsc_n, case, _rng(seed, "wsc", s, len(case)))
    return wsc(x, hit, 0.1, cfg.wsc_dirs, 0.25, seed=seed + s, evaluate_on=evaluate_on)


def train_quantiles(cfg: Config, seed: int = 0) -> QuantileNet:
    """The CQR/CQR2 quantile regressor (one net for α/2, 1 − α/2 and the CQR2 level grid), on n_train points."""
    return _quantile_net(*bimodal_hetero(cfg.n_train, _rng(seed, "mdn", 999)), cfg, seed)


def measure_mdn(cfg: Config, seed: int = 0, quantiles=None) -> dict[str, Any]:
    """Spec §6a (iii): an MDN fitted on n_train points replaces the oracle; every method, each seed (in
    `cfg.workers` processes)."""
    Xtr, Ytr = bimodal_hetero(cfg.n_train, _rng(seed, "mdn", 998))
    t0 = time.perf_counter()
    mdn = _mdn(Xtr, Ytr, cfg, cfg.mdn_components, cfg.mdn_hidden, cfg.mdn_epochs, seed)
    train_s = time.perf_counter() - t0
    out: dict[str, Any] = {"train_s": train_s, "train_samples_per_s": cfg.n_train * cfg.mdn_epochs / train_s}
    out["final_nll"] = mdn.history[-1]
    run = partial(bimodal_seed, part="mdn", cfg=cfg, seed=seed, mdn=mdn, quantiles=quantiles)
    out["seeds"] = [r[0] for r in map_in_processes(run, range(cfg.seeds), cfg.workers, desc="mdn", unit="seed")]
    return out


def measure_toy2d(cfg: Config, seed: int = 0) -> dict[str, Any]:
    """The 2-D output toy with the oracle sampler: CP²-PCP (Euclidean balls in R², no Bonferroni) vs PCP; the
    seeds in `cfg.workers` processes."""
    return {"seeds": map_in_processes(partial(_toy2d_seed, cfg=cfg, seed=seed), range(cfg.seeds), cfg.workers)}


def _toy2d_seed(s: int, cfg: Config, seed: int) -> dict[str, dict[str, Any]]:
    """Seed `s` of the 2-D toy: one calibration/test split, every method with the oracle law."""
    rng = _rng(seed, "toy2d", s)
    split = (*ring2d(cfg.toy_n_cal, rng), *ring2d(cfg.toy_n_test, rng))
    return _strip(_evaluate(ring2d_law(), split, cfg, rng, bins=(-2.0, 2.0)))


def measure_rosenbrock(cfg: Config, seed: int = 0) -> dict[str, Any]:
    """App. B.5.1-style unimodal sanity case: Rosenbrock-10d, MDN estimator, coverage and WSC."""
    X, Y = rosenbrock10d(cfg.n_train + cfg.n_cal + cfg.toy_n_test, rng=_rng(seed, "rosenbrock", 0))
    n_tr, n_c = cfg.n_train, cfg.n_cal
    Xtr, Xc, Xt = standardize(X[:n_tr], X[n_tr : n_tr + n_c], X[n_tr + n_c :])
    Ytr, Yc, Yt = Y[:n_tr], Y[n_tr : n_tr + n_c], Y[n_tr + n_c :]
    mdn = _mdn(Xtr, Ytr, cfg, cfg.mdn_components, cfg.mdn_hidden, cfg.rosen_epochs, seed)
    grid = (float(Y.min()) - 1, float(Y.max()) + 1, 0.01)
    res = _evaluate(mdn, (Xc, Yc, Xt, Yt), cfg, _rng(seed, "rosenbrock", 1), bins=None, length_points=500, grid=grid)
    sd = float(Yt.std())
    out = {}
    for name, row in res.items():
        out[name] = {
            "coverage": row["coverage"],
            "wsc": wsc(Xt, row["hits"], 0.1, cfg.wsc_dirs, 0.25, seed=seed),
            "size_over_sd": row.get("length", math.nan) / sd,
        }
    return out


def measure_real(cfg: Config, seed: int = 0) -> dict[str, Any]:
    """Sec. 4.2-4.3: each dataset found in data_dir, `splits` random splits (calibration and test sets of
    real_n_cal / real_n_test points, the rest trains the MDN and the quantile regressor), every M in real_ms;
    marginal coverage, WSC (real_wsc_dirs directions shared across methods) and size / sd(Y), averaged over the
    splits. The splits run in `cfg.workers` processes."""
    out: dict[str, Any] = {"missing": []}
    for name in cfg.datasets:
        if not (Path(cfg.data_dir) / FILES[name]).is_file():
            out["missing"].append(name)
            continue
        run = partial(real_split, name=name, cfg=cfg, seed=seed)
        splits = map_in_processes(run, range(cfg.splits), cfg.workers, desc=name, unit="split")
        out[name] = {k: {kk: float(np.nanmean([r[k][kk] for r in splits])) for kk in v} for k, v in splits[0].items()}
    return out


@lru_cache(maxsize=1)
def _load_real(name: str, data_dir: str) -> tuple[np.ndarray, np.ndarray]:
    return load_real(name, Path(data_dir))


def real_split(split: int, name: str, cfg: Config, seed: int) -> dict[str, dict[str, float]]:
    """Split `split` of dataset `name`: its own permutation, MDN, quantile net and WSC directions; coverage, WSC
    and size / sd(Y) of every method@M."""
    X, Y = _load_real(name, cfg.data_dir)
    multi = name in MULTI_DATASETS
    rng = _rng(seed, "real", split)
    n_c, n_t = min(cfg.real_n_cal, len(X) // 4), min(cfg.real_n_test, len(X) // 4)
    ic, it_, itr = split_indices(rng.permutation(len(X)), n_c, n_t)
    Xtr, Xc, Xt = standardize(X[itr], X[ic], X[it_])
    Ytr, Yc, Yt = standardize(Y[itr], Y[ic], Y[it_])
    mdn = _mdn(Xtr, Ytr, cfg, cfg.real_mdn_components, cfg.real_mdn_hidden, cfg.real_mdn_epochs, split)
    quantiles = _quantile_net(Xtr, Ytr, cfg, split) if not multi and cfg.cqr else None
    directions = rng.standard_normal((cfg.real_wsc_dirs, X.shape[1]))
    ms = (cfg.multi_samples,) if multi else cfg.real_ms
    sd = float(Yt.std())
    grid = (float(Yt.min()) - 1, float(Yt.max()) + 1, 0.005)
    res: dict[str, dict[str, float]] = {}
    for m in ms:
        q = quantiles if m == ms[-1] else None
        kw = {"quantiles": q, "bins": None, "length_points": 0 if multi else len(Xt), "grid": grid}
        for method, row in _evaluate(mdn, (Xc, Yc, Xt, Yt), cfg, rng, m, **kw).items():
            r = res[f"{method}@M{m}"] = {"coverage": row["coverage"]}
            r["wsc"] = wsc(Xt, row["hits"], 0.1, directions=directions, seed=split)
            if not multi:
                r["size_over_sd"] = row["length"] / sd
    return res
