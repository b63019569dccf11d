"""Reproduction of "Error-quantified Conformal Inference for Time Series" (ICLR 2025, arXiv 2502.00818).

Protocol (the paper's Sec. 5 on generated data; learning-rate grids of the official changepoint config):
- settings "changepoint" (the paper's synthetic regression), "drift", "hetero"; n = 2000, seeds 0..S-1;
  forecaster: rolling OLS with intercept on X (window 100, yhat = 0 before 10 points);
- score: signed residual, two one-sided streams at alpha/2 (the paper's default); the absolute residual
  at alpha is reported too; metrics on indices t > T_burnin = 100;
- lr selection rule (ours, stated because the paper's "best over an lr range" is not specified): per
  method and setting, average coverage and average width over the seeds for each grid lr; among lrs
  whose mean coverage is >= 0.89 take the one with the smallest mean width (ACI's infinite widths count
  as infinite); if none qualifies, take the lr whose coverage is closest to 1 - alpha. This is an oracle
  choice on the evaluation data, like the paper's ("oracle selection"); a non-oracle variant evaluates
  each seed at the lr selected on the other seeds ("held-out selection", reported). The selection does
  NOT match coverage across methods (each method's pick can cover anywhere in [0.89, 1]); the matched-
  coverage comparison (reported) interpolates each method's seed-mean width at coverage exactly 1 - alpha
  between the two grid lrs whose coverages bracket it (`width_at_coverage`).
- seeds: `--seed S` shifts every random stream of the run (the settings' series, the validity stream, the
  score streams, the throughput stream, the generated table series) by S * SEED_STRIDE (`stream_seed`);
  S = 0 gives the committed results.
- long-run validity on a bounded dependent stream (T = 20 000, fixed lr), official vs accumulating update;
- the Conformal-PID paper's score streams ("mix1", "stationary", "increasing_lownoise"), scores used
  directly (alpha = 0.1, T_burnin of the official configs: 1000, 100, 100).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.eci_conformal.config import PRESETS, SETTINGS, Config
from iclr25.shared.progress import progress
from iclr25.shared.results import Claim, Report, atomic_write_json
from iclr25.shared.run import Run, reproduction

SLUG = "eci-conformal"
ECI_FAMILY: tuple[str, ...] = ("eci", "eci_cutoff", "eci_integral")
BASELINES: tuple[str, ...] = ("aci", "ogd", "sf_ogd", "decay_ogd")
LABELS = {
    "eci": "ECI",
    "eci_cutoff": "ECI-cutoff",
    "eci_integral": "ECI-integral",
    "eci_smoothed": "ECI-smoothed",
    "smoothed_ogd": "smoothed OGD",
    "eci_accumulate": "ECI (accumulating EQ)",
    "conformal_p": "Conformal P",
    "conformal_pi": "Conformal PI",
    "ogd": "OGD",
    "sf_ogd": "SF-OGD",
    "decay_ogd": "decay-OGD",
    "aci": "ACI",
    "aci_clipped": "ACI (clipped)",
    "trail": "Trail",
    "dtaci": "DtACI",
}


@dataclass
class _Grid:
    """Per (method, lr): per-seed metrics."""

    cov: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    avg: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    med: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    run: dict[tuple[str, float], list[float]] = field(default_factory=dict)
    rec: dict[tuple[str, float], list[float]] = field(default_factory=dict)

    def add(self, key: tuple[str, float], m: dict[str, float], rec: float | None) -> None:
        for store, name in ((self.cov, "coverage"), (self.avg, "avg_width"), (self.med, "median_width")):
            store.setdefault(key, []).append(m[name])
        self.run.setdefault(key, []).append(m["longest_miss_run"])
        if rec is not None:
            self.rec.setdefault(key, []).append(rec)


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


def select_lr(
    grid: _Grid,
    method: str,
    lrs: tuple[float | None, ...],
    target: float,
    min_cov: float,
    exclude: int | None = None,
) -> float | None:
    """The selection rule of the module docstring (seed-averaged coverage, then smallest mean width);
    `exclude` leaves one seed out of the averages (held-out selection)."""

    def mean(values: list[float]) -> float:
        kept = [v for i, v in enumerate(values) if i != exclude]
        return float(np.mean(kept))

    means = {lr: (mean(grid.cov[(method, lr)]), mean(grid.avg[(method, lr)])) for lr in lrs}
    ok = [lr for lr in lrs if means[lr][0] >= min_cov]
    if ok:
        return min(ok, key=lambda lr: means[lr][1])
    return min(lrs, key=lambda lr: abs(means[lr][0] - target))


def _summary_row(g: _Grid, m: str, lrs: tuple[float | None, ...], config: Config) -> dict[str, Any]:
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
    out: _Grid,
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
            g = _Grid()
            spec = {m: config.eci_lrs for m in methods}
            for k in range(config.seeds):
                _setting_run(config, setting, seed, k, "signed", spec, g, None, nudge=p)
            for m in methods:
                for name, value in _summary_row(g, m, spec[m], config).items():
                    key = f"{setting}/signed.{m}.{name}"
                    if p is None:
                        base[key] = value
                    else:
                        spread[key] = max(spread.get(key, 0.0), abs(value - base[key]))
    return spread


# `iclr25 compare` tolerances of the metrics that amplify last-bit differences, per preset (used only when a run's
# config is that preset's). The forecasts and every recursion here are bitwise fixed by IEEE arithmetic (the
# same numbers on every x86-64 CPU, measured with other CPUs' OpenBLAS kernels and glibc's non-FMA exp), but
# numpy's normal generator and the C library differ in the last bit on other platforms, and the accumulating
# ablation at lr 1 amplifies such bits into widths that move by up to ~1% on one series. Measured:
# `ulp_spread(PRESETS["quick"], 32)`: the largest change over 32 perturbations of the forecasts by 1-4 ulps.
# Rounded up to two significant digits; metrics whose spread is float noise (< 1e-9 relative) need none.
TOLERANCES: dict[str, dict[str, float]] = {
    "quick": {
        "changepoint/signed.eci_accumulate.avg_width": 1.4e-5,  # measured 1.32e-5
        "changepoint/signed.eci_accumulate.heldout_avg_width": 1.4e-5,  # measured 1.32e-5
        "hetero/signed.eci_accumulate.coverage": 0.0022,  # measured 0.00211
        "hetero/signed.eci_accumulate.heldout_coverage": 0.0022,  # measured 0.00211
        "hetero/signed.eci_accumulate.avg_width": 0.20,  # measured 0.196
        "hetero/signed.eci_accumulate.heldout_avg_width": 0.20,  # measured 0.196
        "hetero/signed.eci_accumulate.median_width": 0.26,  # measured 0.255
    }
}


def tolerances_for(scale: str, config: Config) -> dict[str, float]:
    """The declared `iclr25 compare` tolerances of a run: its preset's, if its config is that preset's."""
    return dict(TOLERANCES.get(scale, {})) if PRESETS.get(scale) == config else {}


SETTINGS_INDEX = {name: i for i, name in enumerate(SETTINGS)}
SEED_STRIDE = 100_003  # > every base seed used below (at most 40 000), so different --seed values never overlap


def stream_seed(base: int, seed: int) -> int:
    """The seed of one random stream of the run: its base seed shifted by the run's `--seed` (0: unchanged)."""
    return base + SEED_STRIDE * seed


def width_at_coverage(points: list[tuple[float, float]], target: float) -> float | None:
    """Width at coverage exactly `target`, linearly interpolated between the grid points (coverage, width)
    nearest to it from below and from above; None when the grid's coverages do not bracket the target or a
    bracketing width is infinite."""
    below = [p for p in points if p[0] <= target]
    above = [p for p in points if p[0] >= target]
    if not below or not above:
        return None
    c1, w1 = max(below, key=lambda p: (p[0], -p[1]))  # nearest below (the narrower one on ties)
    c2, w2 = min(above, key=lambda p: (p[0], p[1]))
    if not (math.isfinite(w1) and math.isfinite(w2)):
        return None
    return w1 if c2 == c1 else w1 + (w2 - w1) * (target - c1) / (c2 - c1)


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


def _score_streams(config: Config, seed: int) -> dict[str, Any]:
    from iclr25.eci_conformal.data import SCORE_STREAMS, make_score_stream
    from iclr25.eci_conformal.intervals import make_method
    from iclr25.eci_conformal.methods import run_online

    res: dict[str, Any] = {}
    streams = progress(list(SCORE_STREAMS.items()), desc="score streams", unit="stream")
    for name, burn in streams:  # T_burnin of the official configs (mix1: 1000, others: 100)
        for method in (*ECI_FAMILY, "conformal_p"):
            for lr in config.eci_lrs:
                covs = []
                for k in range(config.mix1_seeds):
                    s = make_score_stream(name, seed=stream_seed(k, seed))
                    q = run_online(make_method(method, config.alpha, lr, window=burn), s)
                    covs.append(float(np.mean((s <= q)[burn + 1 :])))
                res.setdefault(name, {})[f"{method}@{lr:g}"] = float(np.mean(covs))
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


def _figures(config: Config, run_dir: Path, keep: dict, selected: dict, widths: dict, seed: int) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr25.eci_conformal.metrics import covered, rolling_coverage
    from iclr25.shared.results import save_figure

    files = []
    setting = "changepoint" if "changepoint" in config.settings else config.settings[0]
    y, _ = keep[(setting, "y")]
    show = [m for m in ("eci", "eci_cutoff", "eci_integral", "conformal_p", "ogd", "aci") if m in selected[setting]]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for m in show:
        lo, hi = keep[(setting, m, selected[setting][m])]
        ax.plot(rolling_coverage(covered(lo, hi, y), 50), lw=1, label=f"{LABELS[m]} (lr {selected[setting][m]:g})")
    ax.axhline(1 - config.alpha, color="k", ls="--", lw=0.8)
    for tau in (500, 1500):
        ax.axvline(tau, color="grey", ls=":", lw=0.8)
    ax.set(xlabel="t", ylabel="rolling coverage (50)", title=f"{setting}, seed 0, signed score", ylim=(0.5, 1.02))
    ax.legend(fontsize=7, ncol=3, loc="lower right")
    files.append(save_figure(fig, run_dir / "rolling_coverage.png").name)

    fig, ax = plt.subplots(figsize=(9, 3.6))
    t = np.arange(len(y))
    sl = slice(400, 700)
    ax.plot(t[sl], y[sl], "k.", ms=2, label="y")
    for m, color in (("eci", "C0"), ("aci", "C3")):
        if m in selected[setting]:
            lo, hi = keep[(setting, m, selected[setting][m])]
            ax.fill_between(t[sl], lo[sl], hi[sl], alpha=0.25, color=color, label=LABELS[m])
    ax.axvline(500, color="grey", ls=":", lw=0.8)
    ax.set(xlabel="t", ylabel="y", title=f"{setting}: intervals around t = 500 (seed 0); blank where infinite")
    ax.legend(fontsize=7)
    files.append(save_figure(fig, run_dir / "intervals.png").name)

    fig, ax = plt.subplots(figsize=(9, 3.6))
    methods = [m for m in (*ECI_FAMILY, "conformal_p", *BASELINES) if m in widths[config.settings[0]]]
    xs = np.arange(len(methods))
    for i, s in enumerate(config.settings):
        vals = [widths[s][m] if math.isfinite(widths[s][m]) else np.nan for m in methods]
        ax.bar(xs + (i - 1) * 0.27, vals, width=0.27, label=s)
    ax.set_xticks(xs, [LABELS[m] for m in methods], rotation=30, fontsize=7)
    ax.set(ylabel="avg width at selected lr", title="selected widths (seed mean); ACI is missing where infinite")
    ax.legend(fontsize=7)
    files.append(save_figure(fig, run_dir / "widths.png").name)

    from iclr25.eci_conformal.data import make_bounded_stream
    from iclr25.eci_conformal.methods import eci

    stream = make_bounded_stream(config.validity_n, seed=stream_seed(7, seed))
    fig, ax = plt.subplots(figsize=(9, 3.4))
    steps = np.arange(1, len(stream) + 1)
    for mode, ls in (("official", "-"), ("accumulate", "--")):
        for lr in config.validity_lrs:
            q = eci(stream, config.alpha, lr, eq_mode=mode, proportional_lr=False)  # type: ignore[arg-type]
            ax.plot(steps, np.cumsum(stream <= q) / steps, ls=ls, lw=1, label=f"{mode}, lr {lr:g}")
    ax.axhline(1 - config.alpha, color="k", lw=0.8)
    ax.set(xscale="log", ylim=(0.75, 1.0), xlabel="t", ylabel="coverage so far")
    ax.set_title("bounded dependent stream, fixed lr: one-step EQ (official) vs accumulated EQ")
    ax.legend(fontsize=7)
    files.append(save_figure(fig, run_dir / "validity.png").name)
    return files


NOTES = (
    "Widths and coverage on indices t > T_burnin = 100, seed means. lr per method selected by the rule in "
    "reproduce.py (seed-averaged coverage >= 0.89, then smallest mean width): an oracle choice, like the "
    "paper's. Per-lr numbers for every method are in grid.json. score_streams numbers are coverages of method@lr."
)


@reproduction(SLUG, PRESETS)
def run(active: Run) -> Report:
    """Run the reproduction at `scale` (or with `config`), write results to `out`, return the Report.

    `seed` offsets the generated series' seeds; `device` and `wandb` are accepted for the common CLI
    but unused (the method is a scalar recursion on the CPU).
    """
    metrics, grid, throughput, figures = measure(active.config, active, active.seed)
    return active.report(
        claims(metrics, active.config, grid),
        metrics,
        throughput=throughput,
        figures=figures,
        notes=NOTES,
        tolerances=tolerances_for(active.scale, active.config),
    )


def measure(
    config: Config, active: Run, seed: int | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, float], list[str]]:
    """Every measurement of the reproduction: (metrics, per-lr grid, throughput, figure names); grid.json and
    the figures are written into the run folder. `seed` (default: the run's `--seed`) shifts every stream."""
    seed = active.seed if seed is None else seed
    cpu_start = time.process_time()
    target = 1.0 - config.alpha
    grids: dict[str, dict[str, _Grid]] = {}
    keep: dict = {}
    steps = 0
    scores = ("signed", "abs") if config.extras else ("signed",)
    bar = active.progress(total=len(scores) * len(config.settings) * config.seeds, desc="benchmark", unit="seed")
    for score in scores:
        spec = method_grid(config, extras=config.extras and score == "signed")
        if score == "abs":
            spec = {m: spec[m] for m in (*ECI_FAMILY, "conformal_p", *BASELINES)}
        for setting in config.settings:
            g = grids.setdefault(f"{setting}/{score}", {"": _Grid()})[""]
            for k in range(config.seeds):
                first = keep if (score == "signed" and k == 0) else None
                steps += _setting_run(config, setting, seed, k, score, spec, g, first)
                bar.update()
    bar.close()
    bench_cpu_s = max(time.process_time() - cpu_start, 1e-9)

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
            row = summary[m] = _summary_row(g, m, lrs, config)
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
    atomic_write_json(active.dir / "grid.json", grid_dump)
    figures = _figures(config, active.dir, keep, selected, sel_width, seed) if config.figures else []
    return metrics, grid_dump, throughput, figures


def claims(metrics: dict[str, Any], config: Config, grid: dict[str, Any]) -> list[Claim]:
    """The paper's claims judged on measured `metrics` and the per-lr `grid` (grid.json): every threshold is here."""
    target = 1.0 - config.alpha
    out: list[Claim] = []
    for setting in config.settings:
        key = f"{setting}/signed"
        covs = [grid[key][m][str(lr)]["coverage"] for m in ECI_FAMILY for lr in config.eci_lrs]
        worst = max(covs, key=lambda c: abs(c - target))
        out.append(
            Claim(
                name=f"coverage_{setting}",
                statement=f"{setting}: every ECI variant at every grid lr covers 1-alpha in the long run "
                "(seed-mean coverage after burn-in; worst case shown)",
                paper=target,
                ours=round(worst, 4),
                margin=f"abs(ours - {target:g}) <= {config.coverage_margin:g}",
                holds=abs(worst - target) <= config.coverage_margin,
                gated=True,
            )
        )
    val = metrics["validity_bounded_stream"]
    off = [v for k, v in val.items() if k.startswith("official")]
    acc = [v for k, v in val.items() if k.startswith("accumulate")]
    worst_off = max(off, key=lambda c: abs(c - target))
    out.append(
        Claim(
            name="validity_official_update",
            statement=f"official ECI update (one-step EQ), fixed lr in {list(config.validity_lrs)}, bounded "
            f"dependent stream, T = {config.validity_n}: long-run coverage = 1-alpha (worst lr)",
            paper=target,
            ours=round(worst_off, 4),
            margin=f"abs(ours - {target:g}) <= {config.validity_margin:g}",
            holds=abs(worst_off - target) <= config.validity_margin,
            gated=True,
        )
    )
    out.append(
        Claim(
            name="accumulating_update_biased",
            statement="the accumulating form q += lr (err - alpha + EQ) under-covers on the same stream "
            "(why the official one-step form is the default; best lr shown)",
            paper=None,
            ours=round(max(acc), 4),
            margin=f"ours <= {target - 0.02:g}",
            holds=max(acc) <= target - 0.02,
            gated=True,
        )
    )
    ratios: dict[str, float] = {}
    for setting in config.settings:
        summ = metrics[f"{setting}/signed"]
        best_eci, best_base = summ["best_eci"], summ["best_baseline"]
        ratio = ratios[setting] = summ["width_ratio_best_eci_over_best_baseline"]
        out.append(
            Claim(
                name=f"width_noninferior_{setting}",
                statement=f"{setting}: width of the best ECI variant ({LABELS[best_eci]}) vs the best of ACI, OGD, "
                f"SF-OGD, decay-OGD ({LABELS[best_base]}) at selected lrs (ratio)",
                paper="< 1 (narrower)",
                ours=round(ratio, 4),
                margin=f"ours <= {config.width_margin:g}",
                holds=ratio <= config.width_margin,
                gated=True,
            )
        )
    heldout = {
        s: metrics[f"{s}/signed"]["width_ratio_heldout_selection"]
        for s in config.settings
        if "width_ratio_heldout_selection" in metrics[f"{s}/signed"]
    }
    if heldout:
        worst_h = max(heldout.values())
        out.append(
            Claim(
                name="width_noninferior_heldout_lr",
                statement="best ECI variant vs best baseline when each seed is evaluated at the lr selected on the "
                "other seeds (non-oracle selection), worst setting",
                paper="< 1 (narrower)",
                ours=round(worst_h, 4),
                margin=f"ours <= {config.width_margin:g}",
                holds=worst_h <= config.width_margin,
                gated=False,
            )
        )
    for setting in config.settings:
        out.append(
            Claim(
                name=f"eci_narrower_{setting}",
                statement=f"{setting}: the paper's direction, best ECI variant strictly narrower than the best baseline",
                paper="< 1 (narrower)",
                ours=round(ratios[setting], 4),
                margin="ours < 1",
                holds=ratios[setting] < 1.0,
                gated=False,
            )
        )
    for setting in config.settings:
        summ = metrics[f"{setting}/signed"]
        ratio_m = summ.get("width_ratio_matched_coverage")
        out.append(
            Claim(
                name=f"width_matched_coverage_{setting}",
                statement=f"{setting}: best ECI variant vs best of ACI, OGD, SF-OGD, decay-OGD with each method's width "
                f"interpolated at coverage exactly {target:g} over its lr grid (at the selected lrs the two cover "
                f"{summ['coverage_gap_selected']:+.4f} apart); 'not matched' unless the lr grids of every baseline "
                f"and of one ECI variant bracket {target:g} (unbracketed: {', '.join(summ['unmatched']) or 'none'})",
                paper="< 1 (narrower)",
                ours=round(ratio_m, 4) if ratio_m is not None else "not matched",
                margin=f"ours <= {config.width_margin:g}",
                holds=ratio_m is not None and ratio_m <= config.width_margin,
                gated=False,
            )
        )
    if config.c_values:
        sweeps = [metrics[f"{s}/signed"]["c_sweep"] for s in config.settings]
        covs = [r["coverage"] for sw in sweeps for r in sw.values()]
        worst_c = max(covs, key=lambda c: abs(c - target))
        out.append(
            Claim(
                name="c_sensitivity_coverage",
                statement=f"ECI with c in {list(config.c_values)} at its selected lr covers 1-alpha on every setting "
                "(paper appendix: 89.4-90.2% for c in [0.1, 2]); worst case shown",
                paper=target,
                ours=round(worst_c, 4),
                margin=f"abs(ours - {target:g}) <= {config.coverage_margin:g}",
                holds=abs(worst_c - target) <= config.coverage_margin,
                gated=False,
            )
        )
        spread = max(
            max(r["avg_width"] for r in sw.values()) / min(r["avg_width"] for r in sw.values()) for sw in sweeps
        )
        out.append(
            Claim(
                name="c_sensitivity_width",
                statement="ECI's selected width varies little with c: max / min width over the c values, worst "
                "setting (paper appendix: 1.02-1.10 over its three forecasters)",
                paper="1.02-1.10",
                ours=round(spread, 4),
                margin="ours <= 1.10",
                holds=spread <= 1.10,
                gated=False,
            )
        )
    worst_eq = max(metrics[f"{s}/signed"]["width_ratio_eci_over_conformal_p"] for s in config.settings)
    out.append(
        Claim(
            name="eq_term_narrows_vs_conformal_p",
            statement="the EQ term narrows intervals: ECI vs its exact ablation Conformal P (same adaptive lr, "
            "no EQ), worst setting",
            paper="< 1 (narrower)",
            ours=round(worst_eq, 4),
            margin="ours < 1",
            holds=worst_eq < 1.0,
            gated=False,
        )
    )
    for name, covs in metrics.get("score_streams", {}).items():
        worst = max(covs.values(), key=lambda c: abs(c - target))
        out.append(
            Claim(
                name=f"coverage_{name}",
                statement=f"{name} score stream (Conformal-PID paper): ECI variants and Conformal P at every grid "
                "lr cover 1-alpha after burn-in (worst case shown)",
                paper=target,
                ours=round(worst, 4),
                margin=f"abs(ours - {target:g}) <= 0.005",
                holds=abs(worst - target) <= 0.005,
                gated=False,
            )
        )
    real = [
        (f"{name}_{model}", res) for name, per in metrics.get("real_data", {}).items() for model, res in per.items()
    ]
    for name, res in real:
        if "skipped" in res:
            continue
        ratio = res["width_ratio_best_eci_over_best_baseline"]
        out.append(
            Claim(
                name=f"width_noninferior_real_{name}",
                statement=f"{name} ({res['forecast']}): best ECI variant vs best baseline width at selected lrs",
                paper="< 1 (narrower)",
                ours=round(ratio, 4),
                margin=f"ours <= {config.width_margin:g}",
                holds=ratio <= config.width_margin,
                gated=False,
            )
        )
    return out


def load_grid(run_dir: str | Path) -> dict[str, Any]:
    """The per-lr grid (grid.json) of a reproduction run folder."""
    return json.loads((Path(run_dir) / "grid.json").read_text())
