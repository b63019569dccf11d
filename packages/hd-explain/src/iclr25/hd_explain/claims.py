"""The claims of the reproduction, as data (evaluated by `iclr25.shared.claims`), with every threshold in `GATES`.

The paper's values are the official repository's result tables (`random_noise_tables/*.csv`, `tables/*.csv`, means
over 30 seeds; Rectangular over 4), not numbers read off the paper's figures; our digits and mislabel settings are
small stand-ins for its CIFAR-10/SVHN ones, so those values are context, not like-for-like targets. Values are
shown to 4 decimals and tested unrounded; a threshold set by another method of the same run (the best of
IF/TracIn/RPS, the RBF kernel) is tested on the pair (ours, threshold).
"""

from __future__ import annotations

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


def _shown(value: Any) -> float:
    """A value as the claims table shows it: 4 decimals."""
    return round(float(value), 4)


def _versus(value: Any, threshold: float) -> Measured:
    """`value` shown to 4 decimals, tested unrounded against `threshold`, a number of the same run."""
    return Measured(_shown(value), (float(value), threshold))


def _best_baseline(mean: dict[str, Any], key: str) -> float:
    """The best (largest) `key` of IF, TracIn and RPS in a section's seed means."""
    return max(float(mean[b][key]) for b in PARAMETER_BASELINES)


def _at_least(pair: tuple[float, float]) -> bool:
    """ours >= the threshold of the same run."""
    ours, threshold = pair
    return ours >= threshold


def _above(pair: tuple[float, float]) -> bool:
    """ours > the threshold of the same run."""
    ours, threshold = pair
    return ours > threshold


def _below(pair: tuple[float, float]) -> bool:
    """ours < the threshold of the same run."""
    ours, threshold = pair
    return ours < threshold


def _collapses(pair: tuple[float, float]) -> bool:
    """The h = dim(x) + C hit rate is under the gate's cap and under h = dim(x)'s."""
    dim_d, dim_x = pair
    return dim_d < GATES["rect_dim_d_hit_max"] and dim_d < dim_x


def _rect_hit(m: dict[str, Any], cfg: Config) -> Measured:
    """Rectangular HD-Explain hit rate vs the best of IF/TracIn/RPS plus the gap."""
    r = lookup(m, "rectangular.mean")
    return _versus(r["hd"]["hit"], _best_baseline(r, "hit") + GATES["rect_hit_gap"])


def _rect_coverage(m: dict[str, Any], cfg: Config) -> Measured:
    """Rectangular HD-Explain coverage vs the best of IF/TracIn/RPS plus the gap."""
    r = lookup(m, "rectangular.mean")
    return _versus(r["hd"]["coverage"], _best_baseline(r, "coverage") + GATES["rect_coverage_gap"])


def _rect_dim_d_vs_dim_x(m: dict[str, Any], cfg: Config) -> Measured:
    """Rectangular hit rate with h = dim(x) + C, against h = dim(x)'s."""
    r = lookup(m, "rectangular.mean")
    return _versus(r["hd_dim_d"]["hit"], float(r["hd"]["hit"]))


def _rect_imq_and_star(m: dict[str, Any], cfg: Config) -> Measured:
    """The lower of the IMQ and HD-Explain* Rectangular hit rates vs the best of IF/TracIn/RPS."""
    r = lookup(m, "rectangular.mean")
    return _versus(min(r["hd_imq"]["hit"], r["hd_star"]["hit"]), _best_baseline(r, "hit"))


def _digits_hit(m: dict[str, Any], cfg: Config) -> Measured:
    """Digits HD-Explain hit rate vs max(the floor, the best of IF/TracIn/RPS plus the gap)."""
    d = lookup(m, "digits.mean")
    return _versus(d["hd"]["hit"], max(GATES["digits_hit_min"], _best_baseline(d, "hit") + GATES["digits_hit_gap"]))


def _digits_coverage(m: dict[str, Any], cfg: Config) -> Measured:
    """Digits HD-Explain coverage vs max(the floor, RPS's coverage plus the gap)."""
    d = lookup(m, "digits.mean")
    need = max(GATES["digits_coverage_min"], d["rps"]["coverage"] + GATES["digits_coverage_gap_rps"])
    return _versus(d["hd"]["coverage"], need)


def _digits_imq_vs_rbf(m: dict[str, Any], cfg: Config) -> Measured:
    """Digits IMQ hit rate vs the RBF hit rate minus the slack."""
    d = lookup(m, "digits.mean")
    return _versus(d["hd_imq"]["hit"], d["hd"]["hit"] - GATES["digits_imq_slack"])


def _digits_linear_vs_rbf(m: dict[str, Any], cfg: Config) -> Measured:
    """Digits linear-kernel hit rate vs the RBF hit rate."""
    d = lookup(m, "digits.mean")
    return _versus(d["hd_linear"]["hit"], float(d["hd"]["hit"]))


def _hard_noise_hd_vs_baselines(m: dict[str, Any], cfg: Config) -> Measured:
    """Digits HD-Explain hit rate on the hard probes vs the best of IF/TracIn/RPS there."""
    dh = lookup(m, "digits.hard_noise.mean")
    return _versus(dh["hd"]["hit"], _best_baseline(dh, "hit"))


def _hard_noise_hd_vs_similarity(m: dict[str, Any], cfg: Config) -> Measured:
    """Digits HD-Explain hit rate on the hard probes vs input-space RBF similarity's."""
    dh = lookup(m, "digits.hard_noise.mean")
    return _versus(dh["hd"]["hit"], float(dh["sim_input_rbf"]["hit"]))


def _mislabel_realistic(key: str) -> MetricFunction:
    """A metric function: recall@#flipped of `key` with the retrained model vs max(its floor, RPS's + the gap)."""

    def recall(m: dict[str, Any], cfg: Config) -> Measured:
        real = lookup(m, "mislabel.recall_at_flipped.realistic")
        need = max(GATES["mislabel_realistic_min"][key], real["rps"] + GATES["mislabel_realistic_gap_rps"])
        return _versus(real[key], need)

    recall.__name__ = f"mislabel_realistic({key})"
    return recall


def _images_hd_vs_baselines(perturbation: str) -> MetricFunction:
    """A metric function: the image HD-Explain hit rate under `perturbation` vs the best of IF/TracIn/RPS."""

    def hit(m: dict[str, Any], cfg: Config) -> Measured:
        res = lookup(m, f"images.results.{perturbation}")
        return _versus(res["hd"]["hit"], _best_baseline(res, "hit"))

    hit.__name__ = f"images_hd_vs_baselines({perturbation})"
    return hit


def _images_imq_vs_rbf(perturbation: str) -> MetricFunction:
    """A metric function: the image IMQ hit rate under `perturbation` vs the RBF hit rate."""

    def hit(m: dict[str, Any], cfg: Config) -> Measured:
        res = lookup(m, f"images.results.{perturbation}")
        return _versus(res["hd_imq"]["hit"], float(res["hd"]["hit"]))

    hit.__name__ = f"images_imq_vs_rbf({perturbation})"
    return hit


def _images_speed(m: dict[str, Any], cfg: Config) -> Measured:
    """Seconds per 100 image explanations (fit + explain), HD-Explain vs exact-Hessian IF."""
    sec = lookup(m, "images.seconds")
    return _versus(sec["hd"]["per_100_explanations_s"], float(sec["if"]["per_100_explanations_s"]))


def _rectangular(cfg: Config) -> list[Declared]:
    g, b = GATES, BASELINES_IN_WORDS
    return [
        Declared(
            "rect_hit_vs_baselines",
            f"Rectangular ({cfg.rect_seeds} seeds, h = {cfg.rect_bandwidth}): HD-Explain hit rate beats the best of "
            f"{b} by >= {g['rect_hit_gap']}",
            metric=_rect_hit, check=Rule(_at_least, f"ours >= best of {b} + {g['rect_hit_gap']}"),
            paper="official CSV: 0.512 vs 0.130 (IF)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "rect_coverage_vs_baselines",
            f"Rectangular: HD-Explain coverage beats the best of {b} by >= {g['rect_coverage_gap']}",
            metric=_rect_coverage, check=Rule(_at_least, f"ours >= best of {b} + {g['rect_coverage_gap']}"),
            paper="official CSV: 0.391 vs 0.219 (IF)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "rect_bandwidth_dim_d_collapses",
            f"Rectangular with the official current bandwidth h = dim(x) + C: hit rate < {g['rect_dim_d_hit_max']} "
            "and below h = dim(x)",
            metric=_rect_dim_d_vs_dim_x,
            check=Rule(_collapses, f"ours < {g['rect_dim_d_hit_max']} and ours < the hit rate with h = dim(x)"),
            gated=True,
        ),
        Declared(
            "rect_imq_and_star",
            f"Rectangular: HD-Explain IMQ and HD-Explain* hit rates (min of the two) also beat {b}",
            metric=_rect_imq_and_star, check=Rule(_above, f"ours > best of {b}"),
        ),
    ]  # fmt: skip


def _digits(cfg: Config) -> list[Declared]:
    g, b = GATES, BASELINES_IN_WORDS
    return [
        Declared(
            "digits_hit",
            f"digits ({cfg.digits_seeds} seeds): HD-Explain (RBF) hit >= {g['digits_hit_min']} and >= best of {b} "
            f"+ {g['digits_hit_gap']}",
            metric=_digits_hit,
            check=Rule(_at_least, f"ours >= max({g['digits_hit_min']}, best of {b} + {g['digits_hit_gap']})"),
            paper="official CSV, CIFAR-10: 0.994 vs 0.014 (RPS)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "digits_coverage",
            f"digits: HD-Explain coverage >= {g['digits_coverage_min']} and >= RPS + {g['digits_coverage_gap_rps']}",
            metric=_digits_coverage,
            check=Rule(_at_least, f"ours >= max({g['digits_coverage_min']}, RPS + {g['digits_coverage_gap_rps']})"),
            paper="official CSV, CIFAR-10: 0.918 vs 0.117 (RPS)", source=NOISE_SOURCE, gated=True,
        ),
        Declared(
            "digits_imq_vs_rbf",
            f"digits: IMQ hit >= RBF hit - {g['digits_imq_slack']}",
            metric=_digits_imq_vs_rbf, check=Rule(_at_least, f"ours >= RBF hit - {g['digits_imq_slack']}"),
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
            metric=_digits_linear_vs_rbf, check=Rule(_below, "ours < RBF hit"),
            paper="official CSV, SVHN: 0.282 (linear) vs 0.780 (RBF)", source=NOISE_SOURCE,
        ),
        Declared(
            "digits_hard_noise_hd_vs_baselines",
            f"digits, noise half-width {cfg.hard_noise_scale:g} Var (hard probes): HD-Explain hit vs the best of {b}",
            metric=_hard_noise_hd_vs_baselines, check=Rule(_above, f"ours > best of {b}"),
        ),
        Declared(
            "digits_hard_noise_hd_vs_similarity",
            "digits, hard probes: HD-Explain hit vs plain input-space RBF similarity, which no longer saturates there",
            metric=_hard_noise_hd_vs_similarity, check=Rule(_at_least, "ours >= input-space RBF similarity's hit"),
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
            metric=_mislabel_realistic(key),
            check=Rule(
                _at_least,
                f"ours >= max({g['mislabel_realistic_min'][key]}, RPS + {g['mislabel_realistic_gap_rps']})",
            ),
            gated=True,
        )
        for key, label, spec in (("hd", "HD-Explain", "0.56-0.79"), ("hd_star", "HD-Explain*", "0.50-0.69"))
    ]
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
        Declared(
            "mislabel_rps", f"RPS debugging (alpha_i[y_i] ascending), clean model: recall@{n}",
            metric=rounded("mislabel.recall_at_flipped.official.rps"), check=AtLeast(0.9),
            paper="official CSV, CIFAR-10 recall@100: 0.905", source=DEBUG_SOURCE,
        ),
        Declared(
            "mislabel_if", f"IF self-influence, clean model: recall@{n}",
            metric=rounded("mislabel.recall_at_flipped.official.if"), check=AtLeast(0.9),
            paper="official CSV, CIFAR-10 recall@100: 0.777", source=DEBUG_SOURCE,
        ),
    ]  # fmt: skip
    return out


def _images(cfg: Config) -> list[Declared]:
    out = []
    for p in cfg.perturbations:
        out += [
            Declared(
                f"images_{p}_hd_vs_baselines", f"images ({p}): HD-Explain hit vs the best of {BASELINES_IN_WORDS}",
                metric=_images_hd_vs_baselines(p), check=Rule(_above, f"ours > best of {BASELINES_IN_WORDS}"),
                paper="official CSV, CIFAR-10 noise: 0.994 vs 0.014" if p == "noise"
                else "official CSV, CIFAR-10 flip: 0.435",
                source=NOISE_SOURCE if p == "noise" else "official tables CSV (flip)",
            ),
            Declared(
                f"images_{p}_imq_vs_rbf", f"images ({p}): IMQ hit >= RBF hit",
                metric=_images_imq_vs_rbf(p), check=Rule(_at_least, "ours >= RBF hit"),
                paper="paper: IMQ >= RBF (no single number)", source="kernel ablation",
            ),
        ]  # fmt: skip
    out.append(
        Declared(
            "images_speed_hd_vs_if",
            "images: seconds for 100 explanations (fit + explain), HD-Explain vs exact-Hessian IF",
            metric=_images_speed, check=Rule(_below, "ours < IF's seconds"),
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
