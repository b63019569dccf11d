"""The paper's real-data tables (Sec. 5, Tables 1-5 layout): each series x each forecaster x every method at
the official configs' lr grids, with Conformal PID (Theta scorecaster), ECI + scorecaster and the c sweep.

Paper: "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818). Protocol of the
official driver (`tests/base_test.py` with `tests/configs/<dataset>_test.yaml`): signed-residual score, two
one-sided streams at alpha/2, ahead = 1, T_burnin / seasonal period / lr grids / PID's KI and Csat per dataset
(`DATASETS`), forecasts refit at every step (stocks and changepoint on the log scale). Coverage and widths
on t > T_burnin. lr per method: the reproduction's rule (`selection.select_lr`, one series: coverage >= 0.89,
then smallest width), an oracle choice like the paper's "best over an lr range".

Inputs: a folder holding the paper's files (`find_series`: a DJIA-30 CSV `*stocks*.csv` or `djia.csv`,
`elec2.csv`, `*climate*.csv`, `changepoint.csv`) and, optionally, the official cached forecasts
`proc/<dataset>_test/<model>.npz` (used as they are: then every method's thresholds are the official
functions', SF-OGD too with `sf_ogd_normaliser="official"`). Missing forecasts are computed (`forecast.py`:
AR(3) in numpy, Theta with statsmodels) and cached in the same layout; Prophet only from a cached file.
Without the real files, `write_generated_files` writes series generated to look like them (same formats,
lengths, scales and seasonal periods) so that the whole path runs; their numbers are not the paper's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.eci_conformal.config import Config

# Official configs (tests/configs/<name>_test.yaml): T_burnin, seasonal period, log scale, PID KI / Csat, lr grids.
_STOCK_GRIDS = {"ogd": (10.0, 5.0, 1.0, 0.5), "sf_ogd": (1000.0, 500.0, 100.0, 50.0)}
DATASETS: dict[str, dict[str, Any]] = {
    "AMZN": {
        "burn": 100,
        "period": 5,
        "log": True,
        "KI": 200.0,
        "Csat": 1.0,
        **_STOCK_GRIDS,
        "decay_ogd": (2000.0, 1000.0, 200.0, 100.0),
    },
    "GOOGL": {
        "burn": 100,
        "period": 5,
        "log": True,
        "KI": 100.0,
        "Csat": 1.0,
        **_STOCK_GRIDS,
        "decay_ogd": (2000.0, 1000.0, 200.0, 100.0),
    },
    "elec2": {
        "burn": 300,
        "period": 48,
        "log": False,
        "KI": 10.0,
        "Csat": 5.0,
        "ogd": (0.1, 0.05, 0.01, 0.005),
        "sf_ogd": (1.0, 0.5, 0.1, 0.05),
        "decay_ogd": (2.0, 1.0, 0.2, 0.1),
    },
    "daily-climate": {
        "burn": 500,
        "period": 365,
        "log": False,
        "KI": 10.0,
        "Csat": 5.0,
        "ogd": (10.0, 5.0, 1.0, 0.5),
        "sf_ogd": (100.0, 50.0, 10.0, 5.0),
        "decay_ogd": (200.0, 100.0, 20.0, 10.0),
    },
    "changepoint": {
        "burn": 100,
        "period": 5,
        "log": True,
        "KI": 200.0,
        "Csat": 1.0,
        **_STOCK_GRIDS,
        "decay_ogd": (100.0, 50.0, 10.0, 5.0),
    },
}
ECI_LRS = (1.0, 0.5, 0.1, 0.05)  # ECI, its variants, ECI + scorecaster and PID (every config)
ACI_LRS = (0.1, 0.05, 0.01, 0.005)
ECI_FAMILY = ("eci", "eci_cutoff", "eci_integral")
BASELINES = ("aci", "ogd", "sf_ogd", "decay_ogd", "conformal_pid")
SCORECAST = ("conformal_pid", "eci_scorecaster")  # methods that need the Theta scorecaster (statsmodels)
LABELS = {
    "eci": "ECI",
    "eci_cutoff": "ECI-cutoff",
    "eci_integral": "ECI-integral",
    "eci_scorecaster": "ECI + scorecaster",
    "conformal_pid": "Conformal PID",
    "ogd": "OGD",
    "sf_ogd": "SF-OGD",
    "decay_ogd": "decay-OGD",
    "aci": "ACI",
}


# ------------------------------------------------------------------------------------------- input files
def find_series(data_dir: str | Path) -> dict[str, np.ndarray]:
    """The paper's series present in `data_dir` (file names matched case-insensitively): a DJIA-30 CSV
    (`*stocks*.csv` or `djia.csv`: AMZN, GOOGL), `elec2.csv` (first 2000 rows), `*climate*.csv` (Delhi
    `meantemp`, e.g. Kaggle's DailyDelhiClimateTrain.csv) and `changepoint.csv` (y)."""
    from iclr25.eci_conformal import data

    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ValueError(f"data_dir {data_dir} is not a folder")
    found: dict[str, np.ndarray] = {}
    csvs = sorted(p for p in data_dir.iterdir() if p.suffix.lower() == ".csv" and p.is_file())

    def named(test: Callable[[str], bool]) -> list[Path]:  # file names matched case-insensitively
        return [p for p in csvs if test(p.name.lower())]

    stocks = named(lambda n: "stocks" in n or n == "djia.csv")
    if stocks:
        tickers = {row.get("Name") for row in data._read_rows(stocks[0])[1]}
        for name in ("AMZN", "GOOGL"):
            if name in tickers:
                found[name] = data.load_djia(stocks[0], name)
    for path in named(lambda n: n == "elec2.csv")[:1]:
        found["elec2"] = data.load_elec2(path)
    for path in named(lambda n: "climate" in n)[:1]:
        found["daily-climate"] = data.load_climate(path)
    for path in named(lambda n: n == "changepoint.csv")[:1]:
        found["changepoint"] = data.load_changepoint_csv(path)[1]
    return found


def write_generated_files(
    folder: str | Path, seed: int = 0, names: tuple[str, ...] = ("AMZN", "elec2", "daily-climate")
) -> Path:
    """Write series generated to look like the paper's in their real formats (never the real data):
    AMZN-like daily Open prices (3020 business days from 2006-01-03, geometric random walk whose volatility
    doubles for a year), Elec2-like half-hourly `nswdemand` in [0, 1] (2000 rows, daily and weekly cycles,
    AR(1) noise) and Delhi-like daily `meantemp` (1575 days from 2013-01-01, yearly cycle, AR(1) noise).
    Only new files are written: a file already in `folder` is never replaced."""
    from iclr25.shared.files import write_text

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    def ar1(n: int, phi: float, sd: float) -> np.ndarray:
        e = rng.normal(0.0, sd, n)
        out = np.empty(n)
        out[0] = e[0]
        for i in range(1, n):
            out[i] = phi * out[i - 1] + e[i]
        return out

    if "AMZN" in names or "GOOGL" in names:
        n = 3020
        days = np.busday_offset("2006-01-03", np.arange(n), roll="forward")
        lines = ["Date,Open,High,Low,Close,Volume,Name"]
        for name, p0 in (("AMZN", 47.0), ("GOOGL", 211.0)):
            vol = np.where((np.arange(n) >= 600) & (np.arange(n) < 850), 0.04, 0.02)
            price = p0 * np.exp(np.cumsum(0.0008 + vol * rng.standard_normal(n)))
            lines += [
                f"{d},{p:.2f},{p * 1.01:.2f},{p * 0.99:.2f},{p:.2f},1000000,{name}"
                for d, p in zip(days, price, strict=True)
            ]
        write_text(folder / "all_stocks_2006-01-01_to_2018-01-01.csv", "\n".join(lines) + "\n")
    if "elec2" in names:
        n = 2000
        t = np.arange(n)
        demand = (
            0.42 + 0.14 * np.sin(2 * np.pi * (t - 14) / 48) + 0.04 * np.sin(2 * np.pi * t / 336) + ar1(n, 0.9, 0.02)
        )
        demand = np.clip(demand, 0.0, 1.0)
        lines = ["date,day,period,nswprice,nswdemand,vicprice,vicdemand,transfer,class"]
        lines += [
            f"0,{(i // 48) % 7 + 1},{(i % 48) / 47:.6f},0.056,{v:.6f},0.003467,0.422915,0.414912,{'UP' if i % 2 else 'DOWN'}"
            for i, v in enumerate(demand)
        ]
        write_text(folder / "elec2.csv", "\n".join(lines) + "\n")
    if "daily-climate" in names:
        n = 1575
        d = np.arange(n)
        temp = 25.0 + 7.5 * np.sin(2 * np.pi * (d - 100) / 365.25) + ar1(n, 0.7, 1.6)
        days = np.datetime64("2013-01-01") + d
        lines = [",date,meantemp,humidity,wind_speed,meanpressure"]
        lines += [f"{i},{day},{v:.6f},60.0,5.0,1010.0" for i, (day, v) in enumerate(zip(days, temp, strict=True))]
        write_text(folder / "daily-climate.csv", "\n".join(lines) + "\n")
    return folder


def get_forecasts(
    data_dir: Path,
    name: str,
    y: np.ndarray,
    model: str,
    cache_dir: Path | None = None,
    progress_desc: str | None = None,
) -> tuple[np.ndarray | None, str]:
    """(forecasts, source) of `model` for series `name`: the official cache `proc/<name>_test/<model>.npz` in
    `data_dir` or `cache_dir` if present, else computed (AR in numpy, Theta with statsmodels) and cached in
    `cache_dir`; (None, reason) for Prophet without a cached file."""
    from iclr25.eci_conformal import data, forecast

    cfg = DATASETS[name]
    for folder in (data_dir, cache_dir):
        if folder is not None and forecast.forecast_file(folder, name, model).is_file():
            yhat = data.load_forecasts_npz(forecast.forecast_file(folder, name, model))
            if len(yhat) < len(y):
                raise ValueError(f"{name}/{model}.npz holds {len(yhat)} forecasts for a series of {len(y)}")
            return data.interpolate_gaps(yhat[: len(y)]), f"cached {model}.npz"
    if model == "ar":
        yhat, source = forecast.ar_forecasts(y, 3, log=cfg["log"]), "AR(3)" + (" on log y" if cfg["log"] else "")
    elif model == "theta":
        yhat = forecast.theta_forecasts(y, cfg["period"], log=cfg["log"], progress_desc=progress_desc)
        source = "Theta" + (" on log y" if cfg["log"] else "")
    elif model == "prophet":
        return None, "Prophet is not offered (needs cmdstan): supply proc/<name>_test/prophet.npz"
    else:
        raise ValueError(f"forecaster must be one of {', '.join(forecast.FORECASTERS)}; got {model!r}")
    if cache_dir is not None:
        forecast.save_forecasts_npz(forecast.forecast_file(cache_dir, name, model), yhat)
    return yhat, source


# --------------------------------------------------------------------------------------------- one table
def method_grid(name: str, scorecaster: bool = True) -> dict[str, tuple[float, ...]]:
    """Every method of a table with its official lr grid."""
    cfg = DATASETS[name]
    grid = {m: ECI_LRS for m in ECI_FAMILY}
    if scorecaster:
        grid["eci_scorecaster"] = ECI_LRS
    grid.update(aci=ACI_LRS, ogd=cfg["ogd"], sf_ogd=cfg["sf_ogd"], decay_ogd=cfg["decay_ogd"])
    if scorecaster:
        grid["conformal_pid"] = ECI_LRS
    return grid


def two_sided(make: Callable[[str], Any], y: np.ndarray, yhat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed-residual intervals from a factory side -> method ("lo": s = yhat - y, "hi": s = y - yhat), with
    the official repair of crossed ends (as `intervals.interval_from_scores`, but each side may differ)."""
    from iclr25.eci_conformal.methods import run_online

    q_lo = run_online(make("lo"), yhat - y)
    q_hi = run_online(make("hi"), y - yhat)
    lo, hi = yhat - q_lo, yhat + q_hi
    return np.minimum(lo, hi), np.maximum(hi, lo)


def table(
    name: str,
    y: np.ndarray,
    yhat: np.ndarray,
    config: Config,
    *,
    scorecaster: bool = True,
    scorecaster_refit: int = 1,
    progress_desc: str | None = None,
) -> dict[str, Any]:
    """One table: every method at every grid lr (coverage, average and median width on t > T_burnin), the
    selected lr per method, the c sweep of ECI, and the best-ECI / best-baseline width ratio."""
    from iclr25.eci_conformal.forecast import ReplayScorecaster, theta_scorecasts
    from iclr25.eci_conformal.intervals import make_method
    from iclr25.eci_conformal.metrics import summarize
    from iclr25.eci_conformal.selection import Grid, select_lr

    cfg = DATASETS[name]
    burn, alpha = cfg["burn"], config.alpha
    if len(y) <= burn + 10:
        raise ValueError(f"{name} has {len(y)} points; need more than T_burnin + 10 = {burn + 10}")
    casts: dict[str, np.ndarray] = {}
    cast_cpu = 0.0
    if scorecaster:  # one Theta scorecast stream per side, shared by every lr (the official code caches it too)
        start = time.process_time()
        for side, s in (("lo", yhat - y), ("hi", y - yhat)):
            desc = f"{progress_desc} ({side})" if progress_desc else None
            casts[side] = theta_scorecasts(s, cfg["period"], burn, refit_every=scorecaster_refit, progress_desc=desc)
        cast_cpu = time.process_time() - start

    def factory(method: str, lr: float, c: float = 1.0) -> Callable[[str], Any]:
        def make(side: str) -> Any:
            a = alpha / 2
            if method == "eci_scorecaster":
                return make_method(
                    "eci", a, lr, window=burn, scorecaster=lambda: ReplayScorecaster(casts[side]), burn_in=burn
                )
            if method == "conformal_pid":
                sc = lambda: ReplayScorecaster(casts[side])  # noqa: E731
                return make_method(method, a, lr, window=burn, KI=cfg["KI"], Csat=cfg["Csat"], scorecaster=sc)
            if method == "sf_ogd":
                return make_method(method, a, lr, window=burn, normaliser=config.sf_ogd_normaliser)
            if method == "eci":
                return make_method(method, a, lr, window=burn, c=c)
            return make_method(method, a, lr, window=burn)

        return make

    grid_spec = method_grid(name, scorecaster)
    sweep = {f"eci@c={c:g}": (ECI_LRS, c) for c in config.c_values}
    g = Grid()
    per_lr: dict[str, dict[str, dict[str, float]]] = {}
    runs = [(m, lrs, 1.0) for m, lrs in grid_spec.items()] + [(m, lrs, c) for m, (lrs, c) in sweep.items()]
    for method, lrs, c in runs:
        for lr in lrs:
            base = "eci" if method.startswith("eci@") else method
            lo, hi = two_sided(factory(base, lr, c), y, yhat)
            m = summarize(lo, hi, y, burn)
            g.add((method, lr), m, None)
            per_lr.setdefault(method, {})[f"{lr:g}"] = {k: m[k] for k in ("coverage", "avg_width", "median_width")}
    target = 1.0 - alpha
    rows: dict[str, dict[str, float]] = {}
    for method, lrs, _ in runs:
        lr = select_lr(g, method, lrs, target, config.min_coverage)
        rows[method] = {"lr": lr, **per_lr[method][f"{lr:g}"]}  # type: ignore[dict-item]
    best_e = min(ECI_FAMILY, key=lambda m: rows[m]["avg_width"])
    base_names = [m for m in BASELINES if m in rows]
    best_b = min(base_names, key=lambda m: rows[m]["avg_width"])
    out: dict[str, Any] = {
        "n": len(y),
        "T_burnin": burn,
        "selected": {m: rows[m] for m in grid_spec},
        "c_sweep": {k.split("=", 1)[1]: rows[k] for k in sweep},
        "per_lr": per_lr,
        "best_eci": best_e,
        "best_baseline": best_b,
        "width_ratio_best_eci_over_best_baseline": rows[best_e]["avg_width"] / rows[best_b]["avg_width"],
    }
    if scorecaster:
        out["scorecaster_cpu_s"] = cast_cpu
        out["scorecaster_refit_every"] = scorecaster_refit
        out["width_ratio_eci_scorecaster_over_eci"] = rows["eci_scorecaster"]["avg_width"] / rows["eci"]["avg_width"]
    return out


# ------------------------------------------------------------------------------------------- all tables
def benchmark(
    data_dir: str | Path,
    config: Config,
    *,
    forecasters: tuple[str, ...] = ("ar", "theta", "prophet"),
    cache_dir: str | Path | None = None,
    scorecaster: bool = True,
    scorecaster_refit: int = 1,
    datasets: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Every table for the series in `data_dir` (only `datasets` when given): {dataset: {forecaster: table or
    {"skipped": reason}}}."""
    from iclr25.eci_conformal.forecast import FORECASTERS
    from iclr25.shared.progress import progress

    for f in forecasters:
        if f not in FORECASTERS:
            raise ValueError(f"forecaster must be one of {', '.join(FORECASTERS)}; got {f!r}")
    data_dir = Path(data_dir)
    series = find_series(data_dir)
    if datasets is not None:
        series = {k: v for k, v in series.items() if k in datasets}
    if not series:
        raise ValueError(
            f"{data_dir} holds none of the paper's files (*stocks*.csv, elec2.csv, *climate*.csv, changepoint.csv)"
        )
    cache = Path(cache_dir) if cache_dir is not None else None
    out: dict[str, Any] = {}
    for name, y in series.items():
        for model in progress(forecasters, desc=f"{name} tables", unit="forecaster"):
            start = time.process_time()
            yhat, source = get_forecasts(data_dir, name, y, model, cache, progress_desc=f"{name} {model} forecasts")
            if yhat is None:
                out.setdefault(name, {})[model] = {"skipped": source}
                continue
            res = table(
                name,
                y,
                yhat,
                config,
                scorecaster=scorecaster,
                scorecaster_refit=scorecaster_refit,
                progress_desc=f"{name} {model} scorecasts",
            )
            res["forecast"] = source
            res["cpu_s"] = time.process_time() - start
            out.setdefault(name, {})[model] = res
    return out


def markdown(results: dict[str, Any], alpha: float = 0.1) -> str:
    """The tables as Markdown: per dataset, methods as rows and forecasters as columns (coverage % / avg width)."""
    lines = []
    for name, per_model in results.items():
        models = [m for m in per_model if "skipped" not in per_model[m]]
        lines.append(f"**{name}** (coverage % / average width at the selected lr; target {100 * (1 - alpha):g}%)")
        lines.append("")
        lines.append("| method | " + " | ".join(f"{m}: {per_model[m]['forecast']}" for m in models) + " |")
        lines.append("|---|" + "---|" * len(models))
        methods = list(per_model[models[0]]["selected"]) if models else []
        for method in methods:
            cells = []
            for m in models:
                r = per_model[m]["selected"][method]
                w = r["avg_width"]
                width = f"{w:.4g}" if math.isfinite(w) else "∞"
                cells.append(f"{100 * r['coverage']:.1f} / {width} (lr {r['lr']:g})")
            lines.append(f"| {LABELS.get(method, method)} | " + " | ".join(cells) + " |")
        for m in models:
            r = per_model[m]
            lines.append("")
            lines.append(
                f"{m}: best ECI variant / best baseline width = {r['width_ratio_best_eci_over_best_baseline']:.4f} "
                f"({LABELS[r['best_eci']]} vs {LABELS[r['best_baseline']]}); c sweep (coverage % / width): "
                + ", ".join(f"c={c}: {100 * v['coverage']:.1f} / {v['avg_width']:.4g}" for c, v in r["c_sweep"].items())
            )
        for m, r in per_model.items():
            if "skipped" in r:
                lines.append(f"{m}: skipped ({r['skipped']})")
        lines.append("")
    return "\n".join(lines)


def run_tables(
    out: str | Path,
    *,
    data_dir: str | Path | None = None,
    seed: int = 0,
    forecasters: tuple[str, ...] = ("ar", "theta", "prophet"),
    scorecaster: bool = True,
    scorecaster_refit: int = 1,
    datasets: tuple[str, ...] | None = None,
    config: Config | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write tables.json and tables.md into the run folder `out`: the paper's tables on the files in `data_dir`,
    or (no data_dir) on generated look-alike series (`write_generated_files`, seed `seed`); forecasts computed for
    user files are cached in `out/proc/<dataset>_test/<model>.npz` (the official layout)."""
    import tempfile

    from iclr25.shared.results import atomic_write_json, atomic_write_text
    from iclr25.shared.run import open_run_folder

    config = config or Config()
    with open_run_folder(Path(out), overwrite, paper="eci-conformal", command="tables") as folder:
        start = time.process_time()
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(data_dir) if data_dir is not None else write_generated_files(tmp, seed)
            cache = folder if data_dir is not None else None  # user data: forecasts cached beside the results
            res = benchmark(
                src,
                config,
                forecasters=forecasters,
                cache_dir=cache,
                scorecaster=scorecaster,
                scorecaster_refit=scorecaster_refit,
                datasets=datasets,
            )
        info = {
            "data": "user files" if data_dir is not None else f"generated look-alike series (seed {seed})",
            "alpha": config.alpha,
            "sf_ogd_normaliser": config.sf_ogd_normaliser,
            "cpu_s": time.process_time() - start,
            "tables": res,
        }
        atomic_write_json(folder / "tables.json", info)
        atomic_write_text(folder / "tables.md", markdown(res, config.alpha))
    return info
