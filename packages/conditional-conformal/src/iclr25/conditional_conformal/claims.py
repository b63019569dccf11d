"""The claims, as data (spec §9): gated claims with their margins, then the reported ones.

Which claims exist follows the config (its parts, sd_scales, datasets); each reads the metrics the
experiments store. A range claim shows "[lowest, highest]" over seeds (and x-bins) and tests both ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from iclr25.shared.claims import (
    AtLeast,
    AtMost,
    Below,
    Between,
    Declared,
    IsTrue,
    Measured,
    Near,
    Rule,
    lookup,
)

from .config import Config

# Paper, App. "Summary results" (50 splits, alpha = 0.1): worst-slab coverage and set length / sd(Y).
PAPER_WSC = {
    "bike": {"cp": 0.79, "pcp": 0.85, "pi": 0.92, "cp2_d": 0.89, "cp2_l": 0.89, "cqr": 0.90, "cqr2": 0.87},
    "blog": {"cp": 0.60, "pcp": 0.74, "pi": 0.91, "cp2_d": 0.90, "cp2_l": 0.89, "cqr": 0.87, "cqr2": 0.86},
    "fb1": {"cp": 0.49, "pcp": 0.64, "pi": 0.92, "cp2_d": 0.89, "cp2_l": 0.88, "cqr": 0.90, "cqr2": 0.87},
    "fb2": {"cp": 0.50, "pcp": 0.61, "pi": 0.91, "cp2_d": 0.88, "cp2_l": 0.88, "cqr": 0.89, "cqr2": 0.89},
    "meps19": {"cp": 0.54, "pcp": 0.78, "pi": 0.89, "cp2_d": 0.89, "cp2_l": 0.90, "cqr": 0.88, "cqr2": 0.89},
    "temp": {"cp": 0.87, "pcp": 0.89, "pi": 0.81, "cp2_d": 0.89, "cp2_l": 0.88, "cqr": 0.85, "cqr2": 0.86},
}
MDN_METHODS = ("cp2_l", "cp2_d", "cp2_hpd", "pcp", "cp")


# ------------------------------------------------------------------------------------------------ values
def _bins(rows: list[dict], method: str) -> np.ndarray:
    """Coverage per x-bin of `method`, [seeds, bins]."""
    return np.array([r[method]["bins"] for r in rows], dtype=float)  # dtype: results.json stores NaN as "nan"


def _range(values: Any) -> Measured:
    """ "[lowest, highest]" shown; (lowest, highest) tested."""
    v = np.asarray(values, dtype=float)
    return Measured(f"[{v.min():.3f}, {v.max():.3f}]", (v.min(), v.max()))


def _all_in(low: float, high: float, what: str) -> Rule:
    """Every value of a range claim in [low, high] (both ends of the shown range tested)."""

    def within(ends: tuple[float, float]) -> bool:
        return bool(ends[0] >= low and ends[1] <= high)

    return Rule(within, f"{what} in [{low:g}, {high:g}]")


def _bins_of(path: str, method: str) -> Callable[[dict, Config], Measured]:
    """The x-bin coverage range of `method` over the per-seed rows at `path`."""

    def bin_range(m: dict, cfg: Config) -> Measured:
        return _range(_bins(lookup(m, path), method))

    bin_range.__name__ = f"bins({path}, {method})"
    return bin_range


def _marginal_of(path: str, method: str) -> Callable[[dict, Config], Measured]:
    """The marginal coverage range of `method` over the per-seed rows at `path`."""

    def marginal_range(m: dict, cfg: Config) -> Measured:
        return _range([r[method]["coverage"] for r in lookup(m, path)])

    marginal_range.__name__ = f"marginal({path}, {method})"
    return marginal_range


def _all_off(nominal: float, gap: float) -> Rule:
    """Every seed's coverage at least `gap` away from `nominal`."""

    def off(coverages: tuple[float, ...]) -> bool:
        return bool(np.abs(np.array(coverages) - nominal).min() >= gap)

    return Rule(off, f"each seed |ours − {nominal:g}| >= {gap:g}")


def _pi_off_of(path: str) -> Callable[[dict, Config], Measured]:
    """The Π-only marginal coverage range shown; every seed's coverage tested."""

    def pi_off(m: dict, cfg: Config) -> Measured:
        pi = [float(r["pi"]["coverage"]) for r in lookup(m, path)]
        return Measured(_range(pi).shown, tuple(pi))

    pi_off.__name__ = f"marginal({path}, pi)"
    return pi_off


def _worst_bin(method: str) -> Callable[[dict, Config], float]:
    """`method`'s lowest x-bin coverage, the highest over seeds (Π = P)."""

    def worst_bin(m: dict, cfg: Config) -> float:
        return float(_bins(lookup(m, "synthetic.sd_x1"), method).min(1).max())

    worst_bin.__name__ = f"worst_bin(synthetic.sd_x1, {method})"
    return worst_bin


def _mean_lengths(m: dict) -> dict[str, float]:
    rows = lookup(m, "synthetic.sd_x1")
    return {
        k: float(np.mean(np.array([r[k]["length"] for r in rows], dtype=float)))
        for k in rows[0]
        if "length" in rows[0][k]
    }


def hpd_length_ratio(m: dict, cfg: Config) -> float:
    """Mean CP²-HPD set length over mean CP²-PCP-L set length (Π = P)."""
    lengths = _mean_lengths(m)
    return lengths["cp2_hpd"] / lengths["cp2_l"]


def length_order(m: dict, cfg: Config) -> Measured:
    """Every method's mean length shown; CP > CP²-L > CP²-HPD tested."""
    lengths = _mean_lengths(m)
    shown = ", ".join(f"{k} {v:.2f}" for k, v in lengths.items())
    return Measured(shown, lengths["cp"] > lengths["cp2_l"] and lengths.get("cp2_hpd", 0) < lengths["cp2_l"])


def qhat_linear(m: dict, cfg: Config) -> Measured:
    """Q̂_L's range over seeds."""
    return _range(lookup(m, "qhat.linear"))


def qhat_difference(m: dict, cfg: Config) -> Measured:
    """The largest |Q̂_D| over seeds (shown to 4 decimals)."""
    worst = np.abs(np.array(lookup(m, "qhat.difference"), dtype=float)).max()
    return Measured(f"{worst:.4f}", worst)


def _seed_mean(path: str) -> Callable[[dict, Config], float]:
    """The mean over seeds of the values at `path`."""

    def seed_mean(m: dict, cfg: Config) -> float:
        return float(np.mean(np.array(lookup(m, path), dtype=float)))

    seed_mean.__name__ = f"seed_mean({path})"
    return seed_mean


def rosenbrock_cp2l(m: dict, cfg: Config) -> Measured:
    """CP²-L coverage and WSC shown; the coverage tested."""
    r = lookup(m, "rosenbrock.cp2_l")
    cov, wsc = float(r["coverage"]), float(r["wsc"])
    return Measured(f"cov {cov:.3f}, wsc {wsc:.3f}", cov)


def _real_key(cfg: Config, method: str) -> str:
    """The run's column compared with the paper's (M = 50 samples; CQR/CQR2 run at the last M only)."""
    ms = cfg.real_ms[-1:] if method in ("cqr", "cqr2") else cfg.real_ms
    return f"{method}@M50" if 50 in ms else f"{method}@M{ms[0]}"


# ------------------------------------------------------------------------------------------------ claims
def declared(cfg: Config) -> list[Declared]:
    """The claims of a run of `cfg` (spec §9 / issue 16 item 6): gated claims with their margins, then the reported ones."""
    out: list[Declared] = []
    nominal = 1 - cfg.alpha
    if "validity" in cfg.parts:
        for n, reps in zip(cfg.validity_n, cfg.validity_reps, strict=True):
            lo, hi = (0.895, 0.907) if n >= 500 else (0.894, 0.92)
            out += [
                Declared(f"validity_n{n}_cp2{short}",
                         f"Thm 3.1: marginal coverage of CP²-PCP-{short} is 1 − α (oracle Π, n = {n}, {reps} reps)",
                         metric=f"validity.n{n}.mean_{adj}", check=Between(lo, hi), paper=nominal, source="Thm. 3.1",
                         gated=True)
                for adj, short in (("linear", "L"), ("difference", "D"))
            ]  # fmt: skip
    synthetic = "synthetic" in cfg.parts
    keys = list(dict.fromkeys(f"sd_x{scale:g}" for scale in cfg.sd_scales)) if synthetic else []
    all_bins = _all_in(0.86, 0.94, "all bins")
    if "sd_x1" in keys:
        oracle = "synthetic.sd_x1"
        out += [
            Declared("cond_oracle_cp2l_bins", "Π = P: every x-bin coverage of CP²-PCP-L near 1 − α, each seed",
                     metric=_bins_of(oracle, "cp2_l"), check=all_bins, paper=nominal, source="Thm. 3.3", gated=True),
            Declared("cond_oracle_pcp_min_bin", "PCP (one radius) under-covers some x-bin, each seed",
                     metric=_worst_bin("pcp"), check=Below(0.80), source="Fig. 2", gated=True,
                     note="max over seeds of min bin"),
            Declared("cond_oracle_cp_min_bin", "split CP under-covers some x-bin, each seed", metric=_worst_bin("cp"),
                     check=Below(0.70), source="Fig. 2", gated=True, note="max over seeds of min bin"),
            Declared("cond_oracle_hpd_bins", "CP²-HPD (exact density, M̃ = 100): every x-bin near 1 − α",
                     metric=_bins_of(oracle, "cp2_hpd"), check=all_bins, paper=nominal, source="Thm. 3.3", gated=True),
            Declared("hpd_length_ratio", "CP²-HPD sets are shorter than CP²-PCP-L sets (Fig. 2)",
                     metric=hpd_length_ratio, check=AtMost(0.95), source="Fig. 2", gated=True,
                     note="HPD / CP²-L mean length"),
            Declared("lengths_oracle", "mean length: CP > CP²-L ≈ PCP > CP²-HPD (pilot 4.13 / 3.22 / 3.06 / 2.81)",
                     metric=length_order, check=IsTrue(), source="Fig. 2", note="CP > CP²-L > CP²-HPD"),
        ]  # fmt: skip
        out += [
            Declared(f"cond_{meth}_bins", f"{meth} (quantile net, Π-free): x-bin coverage (Fig. 2: ≈ 0.9)",
                     metric=_bins_of(oracle, meth), check=_all_in(0.85, 0.95, "all bins"), source="Fig. 2")
            for meth in (("hd_pcp", "cqr", "cqr2") if cfg.cqr else ("hd_pcp",))
        ]  # fmt: skip
    for key in (k for k in keys if k != "sd_x1"):
        path, sigma = f"synthetic.{key}", key[4:]
        out += [
            Declared(f"misspec_{key}_cp2l_marginal", f"Π with σ{sigma}: CP²-L marginal coverage stays 1 − α",
                     metric=_marginal_of(path, "cp2_l"), check=_all_in(0.88, 0.92, "each seed"), paper=nominal,
                     source="Thm. 3.1", gated=True),
            Declared(f"misspec_{key}_cp2l_bins", f"Π with σ{sigma}: CP²-L x-bin coverage near 1 − α",
                     metric=_bins_of(path, "cp2_l"), check=_all_in(0.85, 0.95, "all bins"), paper=nominal,
                     source="Thm. 3.2", gated=True),
            Declared(f"misspec_{key}_pi_off", f"Π with σ{sigma}: the uncalibrated Π-only sets miss 1 − α",
                     metric=_pi_off_of(path), check=_all_off(nominal, 0.03), gated=True),
            *(Declared(f"misspec_{key}_{meth}_bins", f"Π with σ{sigma}: {meth} x-bin coverage (reported)",
                       metric=_bins_of(path, meth), check=_all_in(0.85, 0.95, "all bins"), source="Thm. 3.2")
              for meth in ("cp2_d", "cp2_hpd")),
        ]  # fmt: skip
    if "qhat" in cfg.parts:
        out += [
            Declared("qhat_linear", f"Π = P: Q̂_L ≈ 1 (n = {cfg.qhat_n}), each seed", metric=qhat_linear,
                     check=_all_in(0.95, 1.15, "each seed"), paper=1.0, source="Sec. 3", gated=True),
            Declared("qhat_difference", f"Π = P: Q̂_D ≈ 0 (n = {cfg.qhat_n}), each seed", metric=qhat_difference,
                     check=Below(0.02), paper=0.0, source="Sec. 3", gated=True, note="max over seeds of |Q̂_D|"),
        ]  # fmt: skip
    if "wsc" in cfg.parts:
        out += [
            Declared("wsc_half_bad", "WSC finds the half-covered region (x₁ ≤ 0 covered at 0.5)",
                     metric=_seed_mean("wsc.half_bad"), check=AtMost(0.62), gated=True,
                     note=f"{cfg.wsc_seeds}-seed mean"),
            Declared("wsc_iid", "WSC of iid 0.9 coverage stays near 0.9 (slab chosen on 25%, judged on 75%)",
                     metric=_seed_mean("wsc.iid"), check=AtLeast(0.88), gated=True, note=f"{cfg.wsc_seeds}-seed mean"),
        ]  # fmt: skip
    reported_bins = {"mdn": ("mdn.seeds", MDN_METHODS, "MDN estimator: {} x-bin coverage (reported)", "Sec. 4.1"),
                     "toy2d": ("toy2d.seeds", ("cp2_l", "pcp"), "2-D output toy (Euclidean balls in R²): {} x-bin "
                               "coverage", "")}  # fmt: skip
    for part, (path, methods, statement, source) in reported_bins.items():
        if part in cfg.parts:
            out += [
                Declared(f"{part}_{meth}_bins", statement.format(meth), metric=_bins_of(path, meth),
                         check=_all_in(0.85, 0.95, "all bins"), source=source)
                for meth in methods
            ]  # fmt: skip
    if "rosenbrock" in cfg.parts:
        out.append(
            Declared("rosenbrock_cp2l", "Rosenbrock-10d (unimodal): CP²-L marginal coverage and WSC (reported)",
                     metric=rosenbrock_cp2l, check=Between(0.88, 0.92), source="App. B.5", note="coverage tested")
        )  # fmt: skip
    if "real" in cfg.parts:
        out += [
            Declared(f"real_{name}_{meth}_wsc", f"{name}: worst-slab coverage of {meth}",
                     metric=f"real.{name}.{_real_key(cfg, meth)}.wsc", check=Near(paper, 0.05), paper=paper,
                     source='App. "Summary results"')
            for name in cfg.datasets
            for meth, paper in PAPER_WSC.get(name, {}).items()
            if cfg.cqr or meth not in ("cqr", "cqr2")
        ]  # fmt: skip
    return out
