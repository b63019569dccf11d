"""The experiments of the reproduction (the paper's Sec. 5 on generated data): the benchmark of every method at
every grid lr on the generated settings, the long-run validity stream, the Conformal-PID score streams, the
real-data tables when their files are given, and throughput. Each returns plain metrics; claims.py judges them.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.eci_conformal.config import SETTINGS, Config
from iclr25.eci_conformal.selection import Grid, select_lr, width_at_coverage
from iclr25.shared.parallel import map_in_processes
from iclr25.shared.run import Run

ECI_FAMILY: tuple[str, ...] = ("eci", "eci_cutoff", "eci_integral")
BASELINES: tuple[str, ...] = ("aci", "ogd", "sf_ogd", "decay_ogd")


def c_method(c: float) -> str:
    """Grid name of ECI run with sigmoid steepness c (the c-sensitivity sweep)."""
    return f"eci@c={c:g}"


def method_kwargs(method: str, config: Config) -> tuple[str, dict[str, Any]]:
    """Registry name and keyword arguments of a grid method name."""
    if method.startswith("eci@c="):
        return "eci", {"c": float(method.split("=", 1)[1])}
    if method == "sf_ogd":
        return method, {"normaliser": config.sf_ogd_normaliser}
    return method, {}


def method_grid(config: Config, extras: bool) -> dict[str, tuple[float | None, ...]]:
    """Methods and their lr grids."""
    grid: dict[str, tuple[float | None, ...]] = {m: config.eci_lrs for m in ECI_FAMILY}
    grid["conformal_p"] = config.eci_lrs
    grid["ogd"] = config.ogd_lrs
    grid["sf_ogd"] = config.sf_ogd_lrs
    grid["decay_ogd"] = config.decay_ogd_lrs
    grid["aci"] = config.aci_lrs
    for c in config.c_values:  # c-sensitivity sweep (ECI with sigmoid steepness c)
        grid[c_method(c)] = config.eci_lrs
    if extras:
        grid["eci_smoothed"] = config.eci_lrs
        grid["smoothed_ogd"] = config.eci_lrs
        grid["eci_accumulate"] = config.eci_lrs
        grid["conformal_pi"] = config.eci_lrs
        grid["aci_clipped"] = config.aci_lrs
        grid["trail"] = (None,)
        grid["dtaci"] = (None,)
    return grid


def summary_row(g: Grid, m: str, lrs: tuple[float | None, ...], config: Config) -> dict[str, Any]:
    """The reported row of method `m`: seed means at the selected lr, and the held-out selection's numbers."""
    target = 1.0 - config.alpha
    lr = select_lr(g, m, lrs, target, config.min_coverage)
    k = (m, lr)
    row = {
        "lr": lr,
        "coverage": float(np.mean(g.cov[k])),
        "avg_width": float(np.mean(g.avg[k])),
        "median_width": float(np.mean(g.med[k])),
        "longest_miss_run": float(np.mean(g.run[k])),
    }
    if g.rec.get(k):
        row["recovery_steps"] = float(np.mean(g.rec[k]))
    if len(g.cov[k]) > 1:  # held-out: each seed evaluated at the lr selected on the other seeds
        picks = [select_lr(g, m, lrs, target, config.min_coverage, exclude=i) for i in range(len(g.cov[k]))]
        row["heldout_coverage"] = float(np.mean([g.cov[(m, p)][i] for i, p in enumerate(picks)]))
        row["heldout_avg_width"] = float(np.mean([g.avg[(m, p)][i] for i, p in enumerate(picks)]))
    return row


def _setting_run(
    config: Config,
    setting: str,
    seed: int,
    k: int,
    score: str,
    grid_spec: dict,
    out: Grid,
    keep: dict | None,
    nudge: int | None = None,
) -> int:
    """Seed k of one setting (run seed `seed`): every method and lr of `grid_spec`; returns method-steps.
    `nudge`: move the forecasts by a few ulps first (`nudge_ulps`, perturbation number `nudge`)."""
    from iclr25.eci_conformal.data import CHANGEPOINTS, make_regression, rolling_ols
    from iclr25.eci_conformal.intervals import interval_from_scores
    from iclr25.eci_conformal.metrics import covered, recovery_time, summarize

    X, y = make_regression(setting, config.n, seed=stream_seed(10_000 * (SETTINGS_INDEX[setting] + 1) + k, seed))
    yhat = rolling_ols(X, y, window=config.ols_window, min_points=10)
    if nudge is not None:
        yhat = nudge_ulps(yhat, nudge)
    steps = 0
    for method, lrs in grid_spec.items():
        for lr in lrs:
            name, kw = method_kwargs(method, config)
            lo, hi = interval_from_scores(name, y, yhat, config.alpha, lr=lr, score=score, window=config.burn_in, **kw)
            steps += 2 * len(y) if score == "signed" else len(y)
            m = summarize(lo, hi, y, config.burn_in)
            rec = None
            if setting == "changepoint":
                cov = covered(lo, hi, y)
                rec = float(np.mean([recovery_time(cov, tau) for tau in CHANGEPOINTS if tau < len(y)]))
            out.add((method, lr), m, rec)
            if keep is not None:  # the first seed's intervals, for the figures
                keep[(setting, method, lr)] = (lo, hi)
    if keep is not None:
        keep[(setting, "y")] = (y, yhat)
    return steps


def benchmark_seed(item: tuple[str, str, int], config: Config, seed: int) -> tuple[Grid, dict, int, float]:
    """Seed k of one setting and score (`item`): its Grid, the intervals the figures draw (seed 0, signed score),
    the method-steps and the CPU seconds it took."""
    score, setting, k = item
    start = time.process_time()
    spec = method_grid(config, extras=config.extras and score == "signed")
    if score == "abs":
        spec = {m: spec[m] for m in (*ECI_FAMILY, "conformal_p", *BASELINES)}
    g, first = Grid(), {}
    steps = _setting_run(config, setting, seed, k, score, spec, g, first if score == "signed" and k == 0 else None)
    return g, first, steps, time.process_time() - start


def nudge_ulps(x: np.ndarray, k: int, max_ulps: int = 4) -> np.ndarray:
    """`x` with every entry moved by 1 to `max_ulps` units in the last place, up or down at random (perturbation
    number `k`): the size of the differences another CPU's BLAS/LAPACK kernels or C library make."""
    rng = np.random.default_rng(k)
    x = np.asarray(x, dtype=float)
    steps = rng.integers(1, max_ulps + 1, size=x.shape)
    towards = np.where(rng.random(x.shape) < 0.5, -np.inf, np.inf)
    out = x.copy()
    for i in range(max_ulps):
        move = steps > i
        out[move] = np.nextafter(out[move], towards[move])
    return out


def ulp_spread(
    config: Config, perturbations: int = 32, methods: tuple[str, ...] = ("eci_accumulate",), seed: int = 0
) -> dict[str, float]:
    """How far each reported metric of `methods` (signed score) moves when the forecasts move by a few ulps:
    the largest |change| over `perturbations` runs with `nudge_ulps` forecasts, by dotted metric name. This is
    the spread a rerun on another machine may show where a recursion amplifies last-bit differences."""
    base: dict[str, float] = {}
    spread: dict[str, float] = {}
    for p in (None, *range(perturbations)):
        for setting in config.settings:
            g = Grid()
            spec = {m: config.eci_lrs for m in methods}
            for k in range(config.seeds):
                _setting_run(config, setting, seed, k, "signed", spec, g, None, nudge=p)
            for m in methods:
                for name, value in summary_row(g, m, spec[m], config).items():
                    key = f"{setting}/signed.{m}.{name}"
                    if p is None:
                        base[key] = value
                    else:
                        spread[key] = max(spread.get(key, 0.0), abs(value - base[key]))
    return spread


SETTINGS_INDEX = {name: i for i, name in enumerate(SETTINGS)}
SEED_STRIDE = 100_003  # > every base seed used below (at most 40 000), so different --seed values never overlap


def stream_seed(base: int, seed: int) -> int:
    """The seed of one random stream of the run: its base seed shifted by the run's `--seed` (0: unchanged)."""
    return base + SEED_STRIDE * seed


def _validity(config: Config, seed: int) -> dict[str, Any]:
    from iclr25.eci_conformal.data import make_bounded_stream
    from iclr25.eci_conformal.methods import eci

    s = make_bounded_stream(config.validity_n, seed=stream_seed(7, seed))
    out: dict[str, Any] = {}
    for mode in ("official", "accumulate"):
        for lr in config.validity_lrs:
            q = eci(s, config.alpha, lr, eq_mode=mode, proportional_lr=False)  # type: ignore[arg-type]
            out[f"{mode}_lr{lr:g}"] = float(np.mean(s <= q))
    return out


def score_stream_seed(item: tuple[str, int, int], config: Config, seed: int) -> dict[str, float]:
    """Seed k of score stream `name` (burn-in `burn`): coverage after the burn-in of every ECI variant and
    Conformal-PID at every lr, by `method@lr`."""
    from iclr25.eci_conformal.data import make_score_stream
    from iclr25.eci_conformal.intervals import make_method
    from iclr25.eci_conformal.methods import run_online

    name, burn, k = item
    s = make_score_stream(name, seed=stream_seed(k, seed))
    out = {}
    for method in (*ECI_FAMILY, "conformal_p"):
        for lr in config.eci_lrs:
            q = run_online(make_method(method, config.alpha, lr, window=burn), s)
            out[f"{method}@{lr:g}"] = float(np.mean((s <= q)[burn + 1 :]))
    return out


def _score_streams(config: Config, seed: int) -> dict[str, Any]:
    """Each stream's coverage per method@lr, the mean over `mix1_seeds` seeds, the seeds in `config.workers`
    processes. T_burnin of the official configs: mix1 1000, the others 100."""
    from iclr25.eci_conformal.data import SCORE_STREAMS

    items = [(name, burn, k) for name, burn in SCORE_STREAMS.items() for k in range(config.mix1_seeds)]
    rows = map_in_processes(partial(score_stream_seed, config=config, seed=seed), items, config.workers,
                            desc="score streams", unit="seed")  # fmt: skip
    res: dict[str, Any] = {}
    for name in SCORE_STREAMS:
        mine = [row for (n, _, _), row in zip(items, rows, strict=True) if n == name]
        res[name] = {key: float(np.mean([row[key] for row in mine])) for key in mine[0]}
    return res


def real_data_benchmark(data_dir: str | Path, config: Config) -> dict[str, Any]:
    """The paper's tables (`tables.benchmark`) for the real files in `data_dir`, with the forecasters of
    `config.forecasters` (official cached `proc/<name>_test/<model>.npz` forecasts when present), without the
    Theta scorecaster (the `tables` entry point runs it)."""
    from iclr25.eci_conformal.tables import benchmark

    return benchmark(data_dir, config, forecasters=config.forecasters, scorecaster=False)


def _throughput(seed: int) -> dict[str, float]:
    """Steps per CPU second of single methods on a 10^5-step stream."""
    from iclr25.eci_conformal.intervals import make_method
    from iclr25.eci_conformal.methods import run_online

    x = np.random.default_rng(stream_seed(0, seed)).standard_normal(100_000)
    out = {}
    for name, lr in (("eci", 0.1), ("eci_integral", 0.1), ("aci", 0.01), ("ogd", 1.0)):
        start = time.process_time()  # CPU time: wall clock on a shared machine measures the load, not the code
        run_online(make_method(name, 0.1, lr), x)
        out[f"{name}_steps_per_s"] = len(x) / max(time.process_time() - start, 1e-9)
    return out


def measure(
    config: Config, active: Run, seed: int | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, float], tuple[dict, dict, dict]]:
    """Every measurement of the reproduction: (metrics, per-lr grid, throughput, what the figures draw: the first
    seed's intervals, the selected lrs and their widths). `seed` (default: the run's `--seed`) shifts every stream."""
    seed = active.seed if seed is None else seed
    cpu_start = time.process_time()
    target = 1.0 - config.alpha
    grids: dict[str, dict[str, Grid]] = {}
    keep: dict = {}
    steps = 0
    scores = ("signed", "abs") if config.extras else ("signed",)
    items = [(score, setting, k) for score in scores for setting in config.settings for k in range(config.seeds)]
    runs = map_in_processes(partial(benchmark_seed, config=config, seed=seed), items, config.workers,
                            desc="benchmark", unit="seed")  # fmt: skip
    for (score, setting, _), (g, first, n_steps, _) in zip(items, runs, strict=True):
        grids.setdefault(f"{setting}/{score}", {"": Grid()})[""].extend(g)  # seed order: the sequential lists
        keep.update(first)
        steps += n_steps
    bench_cpu_s = max(sum(r[3] for r in runs) if config.workers > 1 else time.process_time() - cpu_start, 1e-9)

    # ---- selection and summaries
    metrics: dict[str, Any] = {}
    grid_dump: dict[str, Any] = {}
    selected: dict[str, dict[str, float]] = {}
    sel_width: dict[str, dict[str, float]] = {}
    for key, gg in grids.items():
        g = gg[""]
        setting, score = key.split("/")
        spec = method_grid(config, extras=config.extras and score == "signed")
        methods = sorted({m for m, _ in g.cov}, key=list(spec).index)
        summary: dict[str, Any] = {}
        for m in methods:
            lrs = spec[m]
            row = summary[m] = summary_row(g, m, lrs, config)
            lr = row["lr"]
            if score == "signed":
                selected.setdefault(setting, {})[m] = lr  # type: ignore[assignment]
                sel_width.setdefault(setting, {})[m] = row["avg_width"]
            for lr_ in lrs:
                grid_dump.setdefault(key, {}).setdefault(m, {})[str(lr_)] = {
                    "coverage": float(np.mean(g.cov[(m, lr_)])),
                    "avg_width": float(np.mean(g.avg[(m, lr_)])),
                    "median_width": float(np.mean(g.med[(m, lr_)])),
                }
        metrics[key] = summary
        active.log_scalars(summary, prefix=f"{key}/")  # each setting's selected coverage and widths per method

    metrics["validity_bounded_stream"] = _validity(config, seed)
    for setting in config.settings:
        w = sel_width[setting]
        best_eci = min(ECI_FAMILY, key=lambda m: w[m])
        best_base = min(BASELINES, key=lambda m: w[m])
        metrics[f"{setting}/signed"]["best_eci"] = best_eci
        metrics[f"{setting}/signed"]["best_baseline"] = best_base
        metrics[f"{setting}/signed"]["width_ratio_best_eci_over_best_baseline"] = w[best_eci] / w[best_base]
        metrics[f"{setting}/signed"]["width_ratio_eci_over_conformal_p"] = w["eci"] / w["conformal_p"]
    for setting in config.settings:  # matched coverage: widths interpolated at coverage exactly 1 - alpha
        per_lr = grid_dump[f"{setting}/signed"]
        matched = {}
        for m in (*ECI_FAMILY, "conformal_p", *BASELINES):
            pts = [(v["coverage"], v["avg_width"]) for v in per_lr[m].values()]
            matched[m] = width_at_coverage(pts, target)
        summ = metrics[f"{setting}/signed"]
        summ["width_at_target_coverage"] = matched
        e = [w for m, w in matched.items() if m in ECI_FAMILY and w is not None]
        b = [w for m, w in matched.items() if m in BASELINES and w is not None]
        summ["unmatched"] = [m for m, w in matched.items() if w is None]
        # only a comparison against every baseline is a "best baseline" one: else none (the README says so)
        summ["width_ratio_matched_coverage"] = min(e) / min(b) if e and len(b) == len(BASELINES) else None
        summ["coverage_gap_selected"] = summ[summ["best_eci"]]["coverage"] - summ[summ["best_baseline"]]["coverage"]
        # every ECI variant at every grid lr (the seed means of grid.json): the gated long-run coverage claim
        summ["eci_grid_coverage"] = {
            f"{m}@{lr:g}": per_lr[m][str(lr)]["coverage"] for m in ECI_FAMILY for lr in config.eci_lrs
        }
        if config.c_values:
            summ["c_sweep"] = {f"{c:g}": summ[c_method(c)] for c in config.c_values}
    for setting in config.settings:
        summ = metrics[f"{setting}/signed"]
        if "heldout_avg_width" in summ["eci"]:
            best_e = min(summ[m]["heldout_avg_width"] for m in ECI_FAMILY)
            best_b = min(summ[m]["heldout_avg_width"] for m in BASELINES)
            summ["width_ratio_heldout_selection"] = best_e / best_b
    if config.mix1_seeds > 0:
        metrics["score_streams"] = _score_streams(config, seed)
    if config.data_dir:
        metrics["real_data"] = real_data_benchmark(config.data_dir, config)
    throughput = {"benchmark_steps_per_s": steps / bench_cpu_s, **_throughput(seed)}  # per CPU second
    return metrics, grid_dump, throughput, (keep, selected, sel_width)
