"""The claims of the reproduction (spec §9.6), as data (evaluated by `iclr25.shared.claims`): gated claims are
asserted by the tests, the others are reported. Quick / ci: per trained model, PP against its controls (random
units, inverted PP) and the baselines on domain B; full: WikiText2 PPL against the paper's Table 2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iclr25.probe_pruning.config import Config
from iclr25.probe_pruning.experiments import FULL_METHODS, PRUNED
from iclr25.shared.claims import AtMost, Below, Declared, Measured, MissingMetric, Near, Rule, rounded

# Table 2 of the paper (WikiText2 PPL, LLaMA-2-7B), for the full preset
PAPER_TABLE2 = {
    0.2: {"dense": 6.0, "fullbatch": 7.3, "wanda-sp": 10.6, "flap": 10.3, "pp": 8.1},
    0.4: {"dense": 6.0, "fullbatch": 13.6, "wanda-sp": 43.8, "flap": 38.9, "pp": 16.8},
}


def _model(m: dict[str, Any], k: int) -> dict[str, Any]:
    """The metrics of the k-th trained model (its key is "seed<--seed + k>"), in the order the run trained them."""
    models = [v for key, v in m.items() if key.startswith("seed")]
    if k >= len(models):
        raise MissingMetric(f"no metrics of model {k} (the run holds {len(models)})")
    return models[k]


def dense_ppl(k: int) -> Callable[[dict[str, Any], Config], Measured]:
    """A metric function: model k's dense domain-B PPL (shown), with the lowest pruned PPL (tested as a pair)."""

    def dense(m: dict[str, Any], cfg: Config) -> Measured:
        p = _model(m, k)["ppl_B"]
        return Measured(round(float(p["dense"]), 3), (float(p["dense"]), min(float(p[x]) for x in PRUNED)))

    dense.__name__ = f"dense_ppl(model {k})"
    return dense


def ppl_ratio(k: int, domain: str, num: str, den: str) -> Callable[[dict[str, Any], Config], Measured]:
    """A metric function: PPL(num) / PPL(den) of model k on `domain` (shown), the two PPLs (tested as a pair)."""

    def ratio(m: dict[str, Any], cfg: Config) -> Measured:
        p = _model(m, k)[f"ppl_{domain}"]
        a, b = float(p[num]), float(p[den])
        return Measured(round(a / b, 4), (a, b))

    ratio.__name__ = f"ppl_ratio(model {k}, {domain}: {num} / {den})"
    return ratio


def latency_ratio(m: dict[str, Any], cfg: Config) -> Measured:
    """PP forward time (probing included) over the dense forward time, first model."""
    lat = m["latency"]
    ratio = float(lat["pp"]["seconds"]) / float(lat["dense"]["seconds"])
    return Measured(round(ratio, 3), ratio)


def lower(pair: tuple[float, float]) -> bool:
    """a < b."""
    return pair[0] < pair[1]


def at_most(pair: tuple[float, float]) -> bool:
    """a <= b."""
    return pair[0] <= pair[1]


def within_0_9(pair: tuple[float, float]) -> bool:
    """a <= 0.9 b."""
    return pair[0] <= 0.9 * pair[1]


def within_1_05(pair: tuple[float, float]) -> bool:
    """a <= 1.05 b."""
    return pair[0] <= 1.05 * pair[1]


def reported(value: Any) -> bool:
    """A value that is only shown: it holds whatever it is."""
    return True


def no_paper_value(value: Any) -> bool:
    """A PPL with no Table 2 value to compare with does not hold."""
    return False


def _per_model(cfg: Config, k: int) -> list[Declared]:
    """Domain-B gates and headline comparisons of model k (suffix seed<k>: its seed at --seed 0)."""
    s = f"seed{k}"
    out = [
        Declared(f"dense_le_pruned_{s}", "dense PPL <= every pruned PPL (domain B)", metric=dense_ppl(k),
                 check=Rule(at_most, "<= the lowest pruned PPL"), paper="dense best (Table 2)", source="Table 2",
                 gated=True),
        Declared(f"pp_lt_random_{s}", "PPL(PP) < PPL(random units), domain B", metric=ppl_ratio(k, "B", "pp", "random"),
                 check=Rule(lower, "PP / random < 1"), paper="not in paper (spec control)", gated=True,
                 tolerance=0.05),
        Declared(f"pp_vs_inverted_{s}", "PPL(PP) <= 0.9 PPL(inverted PP), domain B",
                 metric=ppl_ratio(k, "B", "pp", "inverted"), check=Rule(within_0_9, "PP / inverted <= 0.9"),
                 paper="not in paper (spec control)", gated=True, tolerance=0.05),
        Declared(f"fullbatch_vs_pp_{s}", "PPL(Full-batch) <= 1.05 PPL(PP), domain B",
                 metric=ppl_ratio(k, "B", "fullbatch", "pp"), check=Rule(within_1_05, "full / PP <= 1.05"),
                 paper="13.6 vs 16.8 (L2-7B, 40%)", source="Table 2", gated=True, tolerance=0.05),
        Declared(f"pp_vs_wanda_sp_{s}", "PP beats Wanda-sp (paper's headline), domain B",
                 metric=ppl_ratio(k, "B", "pp", "wanda-sp"), check=Rule(lower, "PP / Wanda-sp < 1"),
                 paper="16.8 vs 43.8", source="Table 2", tolerance=0.1),
        Declared(f"pp_vs_flap_{s}", "PP beats FLAP (paper's headline), domain B", metric=ppl_ratio(k, "B", "pp", "flap"),
                 check=Rule(lower, "PP / FLAP < 1"), paper="16.8 vs 38.9", source="Table 2", tolerance=0.1),
    ]  # fmt: skip
    if cfg.domain_a:
        out.append(
            Declared(f"fullbatch_vs_pp_domain_a_{s}", "PPL(Full-batch) <= 1.05 PPL(PP), domain A (in distribution)",
                     metric=ppl_ratio(k, "A", "fullbatch", "pp"), check=Rule(within_1_05, "full / PP <= 1.05"),
                     paper="13.6 vs 16.8", source="Table 2", tolerance=0.1)
        )  # fmt: skip
    return out


def _full(cfg: Config) -> list[Declared]:
    """The full preset: WikiText2 PPL of dense and of every method at every ratio against Table 2 (within 2 PPL)."""
    out = [
        Declared("dense_ppl", "dense WikiText2 PPL (LLaMA-2-7B)", metric=rounded("dense.ppl", 3), check=Near(6.0, 2),
                 paper=6.0, source="Table 2", tolerance=0.5)
    ]  # fmt: skip
    for ratio in (cfg.ratio, *cfg.ratios):
        paper = PAPER_TABLE2.get(round(ratio, 2), {})
        for method in FULL_METHODS:
            ref = paper.get(method)
            check = Near(ref, 2) if ref is not None else Rule(no_paper_value, "|ours - paper| <= 2 (no paper value)")
            out.append(
                Declared(f"{method}_ppl_r{ratio}", f"{method} WikiText2 PPL at {ratio:.0%}",
                         metric=rounded(f"r{ratio}.{method}.ppl", 3), check=check, paper=ref, source="Table 2",
                         tolerance=1.0)
            )  # fmt: skip
    return out


def declared(cfg: Config) -> list[Declared]:
    """The gated and reported claims of `cfg`'s run (spec §9.6), in report order."""
    if cfg.model_dir:
        return _full(cfg)
    out = [d for k in range(cfg.seeds) for d in _per_model(cfg, k)]
    out += [
        Declared("probe_flops_fraction", "analytic probe FLOPs <= 5% of the dense forward",
                 metric=rounded("flops.probe_fraction_pp", 5), check=AtMost(0.05), paper="about 1.5% (paper)",
                 source="Abstract", gated=True, tolerance=0.0),
        Declared("kept_flops_fraction", "analytic FLOPs of the pruned forward / dense",
                 metric=rounded("flops.kept_fraction", 4), check=Rule(reported, "reported"),
                 paper="not given for this setting", tolerance=0.0),
        Declared("wall_time_s", "the whole run (2 seeds, training included) takes <= 3 min",
                 metric=rounded("measure_wall_s", 1), check=AtMost(180), paper="spec: quick <= 3 min",
                 note="seconds, on the machine and load of the run", tolerance=1e4),
        # the load-independent cost: CPU seconds <= 180 fits 3 min even on one idle core
        Declared("cpu_time_s", "CPU seconds of the whole run, training workers included (independent of the load)",
                 metric=rounded("measure_cpu_s", 1), check=AtMost(180), paper="spec: quick <= 3 min",
                 note="CPU seconds: 3 min on one idle core", tolerance=1e4),
    ]  # fmt: skip
    if cfg.latency_reps:
        out.append(
            Declared("pp_latency_vs_dense", "PP forward (probing included) time / dense time, CPU tiny model",
                     metric=latency_ratio, check=Below(1), paper="faster than dense on LLaMA-2-7B (GPU)",
                     source="Abstract", tolerance=1.0)
        )  # fmt: skip
    return out
