"""The claims of the reproduction, as data (evaluated by `iclr25.shared.claims`), with every threshold in `GATES`.

The paper's values are the official repository's result tables (`random_noise_tables/*.csv`, `tables/*.csv`, means
over 30 seeds; Rectangular over 4), not numbers read off the paper's figures; our digits and mislabel settings are
small stand-ins for its CIFAR-10/SVHN ones, so those values are context, not like-for-like targets. Values are
shown to 4 decimals and tested unrounded; a threshold set by another method of the same run (the best of
IF/TracIn/RPS, the RBF kernel) is tested on the pair (ours, threshold).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from iclr25.hd_explain.config import PRESETS, Config
from iclr25.shared.claims import AtLeast, AtMost, Declared, Measured, MetricFunction, Rule, lookup, rounded

# Gated thresholds (issue 24 / spec Sec. 6a and 9), in one place.
GATES = {
    "rect_hit_gap": 0.25,  # HD hit >= max(IF, TracIn, RPS) + this
    "rect_coverage_gap": 0.10,  # HD coverage >= max(IF, TracIn, RPS) + this
    "rect_dim_d_hit_max": 0.20,  # "dim_d" hit < this (and below "dim_x")
    "digits_hit_min": 0.80,
    "digits_hit_gap": 0.40,  # HD hit >= best of IF/TracIn/RPS + this
    "digits_coverage_min": 0.60,  # never gate absolute coverage above 0.6
    "digits_coverage_gap_rps": 0.20,
    "digits_imq_slack": 0.05,  # IMQ hit >= RBF hit - this
    "mislabel_recall_min": 0.90,  # recall@#flipped, official protocol (reported: every method reaches 1.0)
    # recall@#flipped with the model retrained on the corrupted labels (gated: RPS stays near chance there)
    "mislabel_realistic_min": {"hd": 0.60, "hd_star": 0.55},
    "mislabel_realistic_gap_rps": 0.30,  # ... and at least this above RPS
}
PARAMETER_BASELINES = ("if", "tracin", "rps")
BASELINES_IN_WORDS = "IF/TracIn/RPS"
NOISE_SOURCE = "official random_noise_tables CSV"
DEBUG_SOURCE = "official tables/Debug CSV"


def _versus(value: Any, threshold: float) -> Measured:
    """`value` shown to 4 decimals, tested unrounded against `threshold`, a number of the same run."""
    return Measured(round(float(value), 4), (float(value), threshold))


def _best_baseline(mean: dict[str, Any], key: str) -> float:
    """The best (largest) `key` of IF, TracIn and RPS in a section's seed means."""
    return max(float(mean[b][key]) for b in PARAMETER_BASELINES)


def _pair(compare: Callable[[float, float], bool]) -> Callable[[tuple[float, float]], bool]:
    """A rule on (ours, the threshold of the same run)."""
    return lambda pair: bool(compare(*pair))


_AT_LEAST, _ABOVE, _BELOW = _pair(operator.ge), _pair(operator.gt), _pair(operator.lt)


def _collapses(pair: tuple[float, float]) -> bool:
    """The h = dim(x) + C hit rate is under the gate's cap and under h = dim(x)'s."""
    dim_d, dim_x = pair
    return dim_d < GATES["rect_dim_d_hit_max"] and dim_d < dim_x


def _versus_best(section: str, key: str = "hit", gap: float = 0.0, floor: float | None = None) -> MetricFunction:
    """A metric function: HD-Explain's `key` in `section`'s seed means vs the best of IF/TracIn/RPS + `gap` (or
    `floor`, when that is higher)."""

    def versus_best(m: dict[str, Any], cfg: Config) -> Measured:
        mean = lookup(m, section)
        need = _best_baseline(mean, key) + gap
        return _versus(mean["hd"][key], need if floor is None else max(floor, need))

    versus_best.__name__ = f"versus_best({section}, hd.{key})"
    return versus_best


def _versus_method(
    section: str, method: str, other: str, key: str = "hit", offset: float = 0.0, floor: float | None = None
) -> MetricFunction:
    """A metric function: `method`'s `key` in `section` vs `other`'s plus `offset` (two methods of the same run),
    or `floor` when that is higher."""

    def versus(m: dict[str, Any], cfg: Config) -> Measured:
        mean = lookup(m, section)
        need = float(mean[other][key]) + offset
        return _versus(mean[method][key], need if floor is None else max(floor, need))

    versus.__name__ = f"versus({section}, {method}.{key}, {other}.{key})"
    return versus


def _rect_imq_and_star(m: dict[str, Any], cfg: Config) -> Measured:
    """The lower of the IMQ and HD-Explain* Rectangular hit rates vs the best of IF/TracIn/RPS."""
    r = lookup(m, "rectangular.mean")
    return _versus(min(r["hd_imq"]["hit"], r["hd_star"]["hit"]), _best_baseline(r, "hit"))


def _mislabel_realistic(key: str) -> MetricFunction:
    """A metric function: recall@#flipped of `key` with the retrained model vs max(its floor, RPS's + the gap)."""

    def recall(m: dict[str, Any], cfg: Config) -> Measured:
        real = lookup(m, "mislabel.recall_at_flipped.realistic")
        need = max(GATES["mislabel_realistic_min"][key], real["rps"] + GATES["mislabel_realistic_gap_rps"])
        return _versus(real[key], need)

    recall.__name__ = f"mislabel_realistic({key})"
    return recall


def _rectangular(cfg: Config) -> list[Declared]:
    g, b = GATES, BASELINES_IN_WORDS
    return [
        Declared(
            "rect_hit_vs_baselines",
            f"Rectangular ({cfg.rect_seeds} seeds, h = {cfg.rect_bandwidth}): HD-Explain hit rate beats the best of "
            f"{b} by >= {g['rect_hit_gap']}",
            metric=_versus_best("rectangular.mean", gap=g["rect_hit_gap"]), check=Rule(_AT_LEAST, f"ours >= best of {b} + {g['rect_hit_gap']}"),
            paper="official CSV: 0.512 vs 0.130 (IF)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "rect_coverage_vs_baselines",
            f"Rectangular: HD-Explain coverage beats the best of {b} by >= {g['rect_coverage_gap']}",
            metric=_versus_best("rectangular.mean", "coverage", gap=g["rect_coverage_gap"]), check=Rule(_AT_LEAST, f"ours >= best of {b} + {g['rect_coverage_gap']}"),
            paper="official CSV: 0.391 vs 0.219 (IF)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "rect_bandwidth_dim_d_collapses",
            f"Rectangular with the official current bandwidth h = dim(x) + C: hit rate < {g['rect_dim_d_hit_max']} "
            "and below h = dim(x)",
            metric=_versus_method("rectangular.mean", "hd_dim_d", "hd"),
            check=Rule(_collapses, f"ours < {g['rect_dim_d_hit_max']} and ours < the hit rate with h = dim(x)"),
            gated=True,
        ),
        Declared(
            "rect_imq_and_star",
            f"Rectangular: HD-Explain IMQ and HD-Explain* hit rates (min of the two) also beat {b}",
            metric=_rect_imq_and_star, check=Rule(_ABOVE, f"ours > best of {b}"),
        ),
    ]  # fmt: skip


def _digits(cfg: Config) -> list[Declared]:
    g, b = GATES, BASELINES_IN_WORDS
    return [
        Declared(
            "digits_hit",
            f"digits ({cfg.digits_seeds} seeds): HD-Explain (RBF) hit >= {g['digits_hit_min']} and >= best of {b} "
            f"+ {g['digits_hit_gap']}",
            metric=_versus_best("digits.mean", gap=g["digits_hit_gap"], floor=g["digits_hit_min"]),
            check=Rule(_AT_LEAST, f"ours >= max({g['digits_hit_min']}, best of {b} + {g['digits_hit_gap']})"),
            paper="official CSV, CIFAR-10: 0.994 vs 0.014 (RPS)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "digits_coverage",
            f"digits: HD-Explain coverage >= {g['digits_coverage_min']} and >= RPS + {g['digits_coverage_gap_rps']}",
            metric=_versus_method("digits.mean", "hd", "rps", "coverage", g["digits_coverage_gap_rps"], g["digits_coverage_min"]),
            check=Rule(_AT_LEAST, f"ours >= max({g['digits_coverage_min']}, RPS + {g['digits_coverage_gap_rps']})"),
            paper="official CSV, CIFAR-10: 0.918 vs 0.117 (RPS)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "digits_imq_vs_rbf",
            f"digits: IMQ hit >= RBF hit - {g['digits_imq_slack']}",
            metric=_versus_method("digits.mean", "hd_imq", "hd", offset=-g["digits_imq_slack"]), check=Rule(_AT_LEAST, f"ours >= RBF hit - {g['digits_imq_slack']}"),
            paper="official CSV, SVHN: 1.000 (IMQ) vs 0.780 (RBF)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "digits_input_similarity",
            "digits: plain input-space RBF similarity also reaches hit 1.0 (the noise is ~1 % of a pixel's std, so "
            "the digits hit rate shows the gap to the baselines, not the Stein kernel's correctness)",
            metric=rounded("digits.mean.sim_input_rbf.hit"), check=AtLeast(0.99),
        ),
        Declared(
            "digits_linear_below_rbf",
            "digits: the linear Stein kernel is weaker than RBF",
            metric=_versus_method("digits.mean", "hd_linear", "hd"), check=Rule(_BELOW, "ours < RBF hit"),
            paper="official CSV, SVHN: 0.282 (linear) vs 0.780 (RBF)", source=NOISE_SOURCE,
        ),
        Declared(
            "digits_hard_noise_hd_vs_baselines",
            f"digits, noise half-width {cfg.hard_noise_scale:g} Var (hard probes): HD-Explain hit vs the best of {b}",
            metric=_versus_best("digits.hard_noise.mean"), check=Rule(_ABOVE, f"ours > best of {b}"),
        ),
        Declared(
            "digits_hard_noise_hd_vs_similarity",
            "digits, hard probes: HD-Explain hit vs plain input-space RBF similarity, which no longer saturates there",
            metric=_versus_method("digits.hard_noise.mean", "hd", "sim_input_rbf"), check=Rule(_AT_LEAST, "ours >= input-space RBF similarity's hit"),
        ),
    ]  # fmt: skip


def _mislabel(cfg: Config) -> list[Declared]:
    g, n = GATES, cfg.n_flipped
    out = [
        Declared(
            f"mislabel_realistic_{key}",
            f"digits, {n} flipped labels, model retrained on the corrupted labels ({cfg.digits_seeds} seeds): {label} "
            f"self-score recall@{n} >= {g['mislabel_realistic_min'][key]} and >= RPS + "
            f"{g['mislabel_realistic_gap_rps']} (chance {n / cfg.digits_pool:.3f}; spec re-simulation {spec})",
            metric=_mislabel_realistic(key), check=Rule(_AT_LEAST, f"ours >= max({g['mislabel_realistic_min'][key]}, "
                                                        f"RPS + {g['mislabel_realistic_gap_rps']})"), gated=True,
        )
        for key, label, spec in (("hd", "HD-Explain", "0.56-0.79"), ("hd_star", "HD-Explain*", "0.50-0.69"))
    ]  # fmt: skip
    out += [
        Declared(
            f"mislabel_{key}",
            f"digits, {n} flipped labels, model trained on clean labels (official protocol; every method reaches 1.0 "
            f"here): {label} self-score recall@{n} >= {g['mislabel_recall_min']}",
            metric=rounded(f"mislabel.recall_at_flipped.official.{key}"), check=AtLeast(g["mislabel_recall_min"]),
            paper=f"official CSV, CIFAR-10 recall@100: {paper}", source=DEBUG_SOURCE,
        )
        for key, label, paper in (("hd", "HD-Explain", "0.185"), ("hd_star", "HD-Explain*", "0.984"))
    ]  # fmt: skip
    out += [
        Declared(f"mislabel_{key}", f"{what}, clean model: recall@{n}", metric=rounded(f"mislabel.recall_at_flipped.official.{key}"),
                 check=AtLeast(0.9), paper=f"official CSV, CIFAR-10 recall@100: {paper}", source=DEBUG_SOURCE)
        for key, what, paper in (("rps", "RPS debugging (alpha_i[y_i] ascending)", "0.905"), ("if", "IF self-influence", "0.777"))
    ]  # fmt: skip
    return out


def _images(cfg: Config) -> list[Declared]:
    out = []
    for p in cfg.perturbations:
        out += [
            Declared(
                f"images_{p}_hd_vs_baselines", f"images ({p}): HD-Explain hit vs the best of {BASELINES_IN_WORDS}",
                metric=_versus_best(f"images.results.{p}"), check=Rule(_ABOVE, f"ours > best of {BASELINES_IN_WORDS}"),
                paper="official CSV, CIFAR-10 noise: 0.994 vs 0.014" if p == "noise"
                else "official CSV, CIFAR-10 flip: 0.435",
                source=NOISE_SOURCE if p == "noise" else "official tables CSV (flip)",
            ),
            Declared(
                f"images_{p}_imq_vs_rbf", f"images ({p}): IMQ hit >= RBF hit",
                metric=_versus_method(f"images.results.{p}", "hd_imq", "hd"), check=Rule(_AT_LEAST, "ours >= RBF hit"),
                paper="paper: IMQ >= RBF (no single number)", source="kernel ablation",
            ),
        ]  # fmt: skip
    out.append(
        Declared(
            "images_speed_hd_vs_if",
            "images: seconds for 100 explanations (fit + explain), HD-Explain vs exact-Hessian IF",
            metric=_versus_method("images.seconds", "hd", "if", key="per_100_explanations_s"), check=Rule(_BELOW, "ours < IF's seconds"),
            paper="official CSV, CIFAR-10: 13 s vs 201 s", source=NOISE_SOURCE,
        )
    )  # fmt: skip
    return out


def declared(cfg: Config) -> list[Declared]:
    """The claims of a run with config `cfg`, in the order of the claims table (one block per section run)."""
    out: list[Declared] = []
    if "rectangular" in cfg.sections:
        out += _rectangular(cfg)
    if "digits" in cfg.sections:
        out += _digits(cfg)
    if "mislabel" in cfg.sections:
        out += _mislabel(cfg)
    if "images" in cfg.sections:
        out += _images(cfg)
    if cfg == PRESETS["quick"]:
        out.append(
            Declared(
                "quick_runtime", "the quick reproduction finishes within 3 minutes (wall clock, shared 2-core CPU)",
                metric=rounded("runtime_s"), check=AtMost(180),
            )
        )  # fmt: skip
    return out
