"""The claims of the reproduction, as data (evaluated by `iclr25.shared.claims`): gated claims are asserted by the
tests (spec §9 checks 5–6), reported ones are shown. The paper's results are mostly figures (Fig. 2–4, 6), so most
claims carry no paper value; the thresholds of the gated ones were calibrated by the spec's pilots.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from iclr25.highway_bp.config import Config
from iclr25.highway_bp.experiments import fidelity_ks
from iclr25.shared.claims import Above, AtLeast, Below, Declared, IsTrue, Measured, Near, Rule, difference, lookup


def _value(m: dict[str, Any], path: str) -> float:
    """The number at `path` (results.json's "nan" strings as floats)."""
    return float(lookup(m, path))


def cosine_monotone(m: dict[str, Any], cfg: Config) -> Measured:
    """Whether the HBP(k) cosine to the exact gradient is non-decreasing over the measured k (1e-9 slack)."""
    cos = lookup(m, "fidelity.hbp")
    vals = [float(cos[str(k)]) for k in fidelity_ks(cfg.mlp_depth)]
    ok = all(b >= a - 1e-9 for a, b in itertools.pairwise(vals)) and not math.isnan(vals[0])
    return Measured("monotone" if ok else "not monotone", ok)


def _gru_compared_ks(cfg: Config) -> list[int]:
    """The k at which the GRU ran both Highway-BP and FPI, the gate's k last."""
    g = cfg.gate_k
    return [k for k in cfg.gru_fpi_ks if k in cfg.gru_hbp_ks and k != g] + [g]


def gru_worst_hbp_minus_fpi(m: dict[str, Any], cfg: Config) -> float:
    """The smallest acc(HBP k) - acc(FPI k) over the k at which the GRU ran both."""
    return min(_value(m, f"gru.acc.hbp_k{k}") - _value(m, f"gru.acc.fpi_k{k}") for k in _gru_compared_ks(cfg))


def gru_worst_seed_gap(m: dict[str, Any], cfg: Config) -> float:
    """The smallest per-seed acc(HBP k=gate_k) - acc(BPTT)."""
    return min(float(x) for x in lookup(m, f"gru.gap_hbp_k{cfg.gate_k}_to_bptt.per_seed"))


def gru_speedup(m: dict[str, Any], cfg: Config) -> float:
    """ms per step of BPTT over ms per step of HBP(k=gate_k) (Table 3's speed-up)."""
    return _value(m, "gru.step_ms.bptt") / _value(m, f"gru.step_ms.hbp_k{cfg.gate_k}")


def transformer_growing_k_gap(m: dict[str, Any], cfg: Config) -> Measured:
    """bpc(growing k) - bpc(BP) shown; tested: bpc(growing k) against bpc(constant k)."""
    grown = _value(m, f"transformer.bpc.hbp_k{cfg.tf_k_start}to{cfg.tf_k_end}")
    return Measured(
        grown - _value(m, "transformer.bpc.bp"), (grown, _value(m, f"transformer.bpc.hbp_k{cfg.tf_k_fixed}"))
    )


def _first_lower(pair: tuple[float, float]) -> bool:
    """first < second."""
    return pair[0] < pair[1]


def declared(cfg: Config) -> list[Declared]:
    """The claims of a run with config `cfg`, in the order of the claims table."""
    out: list[Declared] = []
    if cfg.fidelity:
        L = cfg.mlp_depth
        out += [
            Declared(
                "cosine_k0_below_0.9",
                "At init the k=0 Highway-BP gradient is a clear approximation (cosine to BP < 0.9)",
                metric="fidelity.hbp.0",
                check=Below(0.9),
                note="spec pilot 0.70-0.74",
                gated=True,
            ),
            Declared(
                "cosine_k4_near_1",
                "Cosine to the exact gradient grows with k to near 1 at k=4 (16-block residual MLP, init)",
                metric=f"fidelity.hbp.{min(4, L)}",
                check=AtLeast(0.98),
                note="spec pilot 0.997",
                gated=True,
            ),
            Declared(
                "cosine_kL_exact",
                "At k=L Highway-BP equals backprop (Theorem 2)",
                metric=f"fidelity.hbp.{L}",
                check=Near(1.0, 1e-10),
                paper=1.0,
                source="Theorem 2",
                gated=True,
            ),
            Declared(
                "cosine_increases_with_k",
                "The cosine to the exact gradient increases monotonically with k (observed here; not a claim of the paper)",
                metric=cosine_monotone,
                check=IsTrue(),
                note="non-decreasing in k",
            ),
        ]
    if cfg.mlp and 4 in cfg.mlp_ks:
        out.append(
            Declared(
                "mlp_hbp_k4_matches_bp",
                "Small k already matches backprop accuracy (digits, 16-block residual MLP, k=4)",
                metric=difference("mlp.acc.hbp_k4", "mlp.acc.bp"),
                check=AtLeast(-0.02),
                source="Fig. 2",
                note="acc(HBP k=4) - acc(BP)",
                gated=True,
            )
        )
    if cfg.mlp and 0 in cfg.mlp_ks:
        out.append(
            Declared(
                "mlp_hbp_k0_reasonable",
                "k=0 is already 'very reasonable' (paper: ~85% on CIFAR-10; here digits accuracy)",
                metric="mlp.acc.hbp_k0",
                check=AtLeast(0.85),
                paper=0.85,
                source="Fig. 2",
                gated=True,
            )
        )
    if cfg.resnet and (cfg.cifar_dir or cfg.data_dir):  # without the CIFAR-10 pickles the part is skipped
        for n in cfg.resnet_blocks:
            name, L = f"resnet{6 * n + 2}", 3 * n
            if 4 in cfg.resnet_ks:
                out.append(
                    Declared(
                        f"{name}_hbp_k4_matches_bp",
                        f"Highway-BP at k=4 matches BP test accuracy on CIFAR-10 ({name}, L={L}; paper: ResNet110, Fig. 2)",
                        metric=difference(f"resnet.{name}.acc.hbp_k4", f"resnet.{name}.acc.bp"),
                        check=AtLeast(-0.01),
                        source="Fig. 2",
                        note="acc(HBP k=4) - acc(BP)",
                    )
                )
            if 0 in cfg.resnet_ks:
                out.append(
                    Declared(
                        f"{name}_hbp_k0_reasonable",
                        f"k=0 is already 'very reasonable' on CIFAR-10 ({name}; paper: about 85%, Fig. 2)",
                        metric=f"resnet.{name}.acc.hbp_k0",
                        check=AtLeast(0.80),
                        paper=0.85,
                        source="Fig. 2",
                    )
                )
    if cfg.gru:
        out += _gru(cfg)
    if cfg.lm and not (cfg.lm_needs_text and not cfg.text_dir):  # without the text the part is skipped
        for cell in cfg.lm_cells:
            for k in [k for k in cfg.lm_hbp_ks if k in cfg.lm_fpi_ks]:
                out.append(
                    Declared(
                        f"lm_{cell}_hbp_k{k}_beats_fpi",
                        f"Highway-BP beats FPI at the same k={k} with a loss at every step "
                        f"(char-level {cell.upper()} LM, bits per char; Fig. 4)",
                        metric=difference(f"lm.{cell}.bpc.fpi_k{k}", f"lm.{cell}.bpc.hbp_k{k}"),
                        check=Above(0),
                        source="Fig. 4",
                        note=f"bpc(FPI k={k}) - bpc(HBP k={k})",
                    )
                )
    if cfg.transformer:
        out += _transformer(cfg)
    return out


def _gru(cfg: Config) -> list[Declared]:
    """The pixel-sequence GRU's claims (loss at the end; Fig. 4, Table 3)."""
    g = cfg.gate_k
    out = [
        Declared(
            f"gru_hbp_k{g}_beats_fpi",
            f"Highway-BP beats fixed-point iteration at the same k={g} (GRU, loss at the end; Fig. 4)",
            metric=difference(f"gru.acc.hbp_k{g}", f"gru.acc.fpi_k{g}"),
            check=AtLeast(0.08),
            source="Fig. 4",
            note=f"acc(HBP k={g}) - acc(FPI k={g})",
            gated=True,
        )
    ]
    ks = _gru_compared_ks(cfg)
    if len(ks) > 1:
        out.append(
            Declared(
                "gru_hbp_beats_fpi_every_k",
                "Highway-BP beats FPI at every k (GRU, loss at the end; Fig. 4)",
                metric=gru_worst_hbp_minus_fpi,
                check=Above(0),
                source="Fig. 4",
                note=f"min over k in {sorted(ks)} of acc(HBP k) - acc(FPI k)",
            )
        )
    if cfg.gru_bptt:
        out += [
            Declared(
                f"gru_hbp_k{g}_near_bptt",
                f"Highway-BP at k={g} reaches BPTT accuracy, mean over seeds (pixel-CIFAR GRU in the paper; Fig. 4)",
                metric=difference(f"gru.acc.hbp_k{g}", "gru.acc.bptt"),
                check=AtLeast(-0.05),
                source="Fig. 4",
                note=f"acc(HBP k={g}) - acc(BPTT)",  # reported: see the README's per-seed analysis
            ),
            Declared(
                f"gru_hbp_k{g}_near_bptt_every_seed",
                f"Highway-BP at k={g} reaches BPTT accuracy on every seed (worst seed shown)",
                metric=gru_worst_seed_gap,
                check=AtLeast(-0.05),
                source="Fig. 4",
                note=f"min over seeds of acc(HBP k={g}) - acc(BPTT)",
            ),
            Declared(
                f"gru_speedup_k{g}",
                f"Per-step speed-up of HBP(k={g}) over BPTT (paper, one GPU, GRU L=1024: x2.9; Table 3)",
                metric=gru_speedup,
                check=Above(1.0),
                paper=2.9,
                source="Table 3",
                note="reported: the speed-up needs parallel hardware",
            ),
        ]
    return out


def _transformer(cfg: Config) -> list[Declared]:
    """The GPT-2-style part's claims, all reported (§5.2, Fig. 3, Fig. 6)."""
    L, fixed, start, end = 2 * cfg.tf_blocks, cfg.tf_k_fixed, cfg.tf_k_start, cfg.tf_k_end
    return [
        Declared(
            "transformer_cosine_kL_exact",
            f"GPT-2-style stack with the γ trick: Highway-BP at k=L={L} equals backprop (Theorem 2)",
            metric=f"transformer.cosine_init.{L}",
            check=Near(1.0, 1e-5),
            paper=1.0,
            source="Theorem 2",
            note="float32",
        ),
        Declared(
            "transformer_low_k_higher_loss",
            f"With a low k the Transformer converges to a higher loss than BP (k={fixed}; Fig. 3)",
            metric=difference(f"transformer.bpc.hbp_k{fixed}", "transformer.bpc.bp"),
            check=Above(0),
            source="Fig. 3",
            note=f"bpc(HBP k={fixed}) - bpc(BP)",
        ),
        Declared(
            "transformer_growing_k_closes_gap",
            f"Growing k ({start} to {end}) lands closer to BP than a constant k={fixed}",
            metric=transformer_growing_k_gap,
            check=Rule(_first_lower, f"bpc(HBP k {start}->{end}) - bpc(BP) < bpc(HBP k={fixed}) - bpc(BP)"),
            source="Sec. 5.2",
        ),
        Declared(
            "transformer_cosine_k0_falls_in_training",
            "The k=0 cosine to the true gradient is lower after training than at init (BP-trained weights; Fig. 6)",
            metric=difference("transformer.cosine_end.bp.0", "transformer.cosine_init.0"),
            check=Below(0),
            source="Fig. 6",
            note="cos_end(k=0) - cos_init(k=0)",
        ),
    ]
