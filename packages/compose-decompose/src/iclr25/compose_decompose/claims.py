"""The claims of the CtD reproduction as data: the spec's gate (Decompose per-candidate accuracy >= 0.65 for CB and
GS, <= 0.55 with the message zeroed) and the mechanics are gated; every performance statement of the paper is
reported, holding or not (spec 6a, 9.7). The paper body was not readable: its statements come from the reviews and
a third-party summary, without numbers."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from iclr25.compose_decompose.config import Config
from iclr25.shared.claims import AtLeast, Declared, Measured, MetricFunction, MissingMetric, Rule, lookup


def _named(metric: Callable[..., Any], **params: str) -> MetricFunction:
    """`metric` with its keyword parameters fixed, named after them for the claims listing."""
    bound = functools.partial(metric, **params)
    bound.__name__ = f"{metric.__name__}[{', '.join(params.values())}]"  # type: ignore[attr-defined]
    return bound


def _mean(m: dict[str, Any], group: str, key: str) -> float:
    """The seed mean of `key` over the runs of `group` (`dataset/channel/K<k>[/ablation]`)."""
    return float(lookup(m, f"summary.{group}.{key}_mean"))


def _mech(m: dict[str, Any], key: str) -> float:
    """A method-independent check of spec 9 (`mechanics`)."""
    return float(lookup(m, f"mechanics.{key}"))


def _thing(channel: str, cfg: Config, size: str = "K") -> str:
    """The group of the symbolic runs of `channel` at the codebook size `size` names (`K` or `k_large`)."""
    return f"thing/{channel}/K{getattr(cfg, size)}"


# ---- metrics: a seed mean, shown to 3 decimals and tested unrounded, or two shown side by side


def decompose_cand_acc(m: dict[str, Any], cfg: Config, *, group: str) -> Measured:
    """Decompose per-candidate accuracy of `group` (seed mean)."""
    acc = _mean(m, group, "decompose_cand_acc")
    return Measured(round(acc, 3), acc)


def decompose_gate(m: dict[str, Any], cfg: Config, *, channel: str) -> Measured:
    """Decompose per-candidate accuracy of a THING channel, tested with its zero-message control."""
    g = _thing(channel, cfg)
    acc, zero = _mean(m, g, "decompose_cand_acc"), _mean(m, g, "decompose_cand_acc_zero_message")
    return Measured(round(acc, 3), (acc, zero))


def thing_mean(m: dict[str, Any], cfg: Config, *, channel: str, key: str) -> Measured:
    """The seed mean of `key` of a THING channel at K."""
    value = _mean(m, _thing(channel, cfg), key)
    return Measured(round(value, 3), value)


def cb_vs_gs(m: dict[str, Any], cfg: Config, *, key: str, size: str = "K") -> Measured:
    """CB's and GS's seed means of `key` at the codebook size `size` names, shown side by side, tested as (CB, GS)."""
    a, b = _mean(m, _thing("cb", cfg, size), key), _mean(m, _thing("gs", cfg, size), key)
    return Measured(f"CB {a:.3f} vs GS {b:.3f}", (a, b))


def cbm_at_k(m: dict[str, Any], cfg: Config) -> Measured:
    """Decompose CBM of CB and GS at K shown side by side; CB's is tested."""
    a, b = _mean(m, _thing("cb", cfg), "decompose_cbm"), _mean(m, _thing("gs", cfg), "decompose_cbm")
    return Measured(f"CB {a:.3f} vs GS {b:.3f}", a)


def cb_vs_qt_finetuned(m: dict[str, Any], cfg: Config) -> Measured:
    """Fine-tuned Compose game accuracy of CB's first-seed run against the QT ablation's (one seed)."""
    key, cb = "compose_finetuned_game_acc", _thing("cb", cfg)
    seeds = [int(n.rsplit("/s", 1)[1]) for n in lookup(m, "runs") if n.rsplit("/", 1)[0] == cb]
    if not seeds:
        raise MissingMetric(f"no run of {cb}")
    a = float(lookup(m, "runs").get(f"{cb}/s{min(seeds)}", {}).get(key, float("nan")))
    b = _mean(m, f"{cb.replace('/cb/', '/qt/')}/qt", key)
    return Measured(f"CB {a:.3f} vs QT {b:.3f}", (a, b))


def cbm_fixture(m: dict[str, Any], cfg: Config) -> Measured:
    """CBM match / precision / recall on the reference fixture, tested with its edge count."""
    fx = [_mech(m, f"cbm_fixture_{k}") for k in ("match", "precision", "recall")]
    return Measured(" / ".join(f"{x:.3f}" for x in fx), (*fx, _mech(m, "cbm_fixture_total_edges")))


def ami_bounds(m: dict[str, Any], cfg: Config) -> Measured:
    """AMI of a bijection and of independent labels."""
    bij, rnd = _mech(m, "ami_bijection"), _mech(m, "ami_random")
    return Measured(f"{bij:.3f} / {rnd:.3f}", (bij, rnd))


def straight_through(m: dict[str, Any], cfg: Config) -> Measured:
    """The CB channel's nearest-codeword rate and its forward and straight-through gradient errors."""
    near, fwd, grad = (_mech(m, f"vq_{k}") for k in ("nearest_match", "forward_err", "grad_err"))
    return Measured(f"nearest {near:.3f}, grad err {grad:.1e}", (near, fwd, grad))


def hard_distractors(m: dict[str, Any], cfg: Config) -> Measured:
    """Fraction of Compose distractors violating exactly one FVP, tested with the targets' fraction."""
    one, targets = _mech(m, "hard_distractor_exact_one"), _mech(m, "targets_satisfy")
    return Measured(round(one, 4), (one, targets))


# ---- tests of the values above that no single comparison expresses


def _learned_and_needs_message(v: tuple[float, float], min_acc: float, max_zero: float) -> bool:
    acc, zero = v
    return acc >= min_acc and zero <= max_zero


def _first_greater(v: tuple[float, float]) -> bool:
    return v[0] > v[1]


def _fixture_matches(v: tuple[float, ...]) -> bool:
    return bool(np.allclose(v[:3], (1.0, 0.9, 1.0), atol=5e-4)) and v[3] == 10


def _ami_within(v: tuple[float, float]) -> bool:
    return v[0] >= 0.999 and abs(v[1]) < 0.05


def _straight_through(v: tuple[float, float, float]) -> bool:
    return v[0] == 1.0 and v[1] < 1e-6 and v[2] < 1e-5


def _all_exact(v: tuple[float, float]) -> bool:
    return v[0] == 1.0 and v[1] == 1.0


PERFECT = "perfect on several datasets (no number read)"
SUMMARY_CB_GS = "CB > GS on most datasets (summary, no number read)"


def declared(cfg: Config) -> list[Declared]:
    """The claims table: gated sanity and mechanics, reported performance (spec 6a, 9); which exist follows the
    channels, codebook sizes, image datasets and ablations the config runs."""
    k, kl, n = cfg.K, cfg.k_large, cfg.compose_steps
    has = {ch: ch in cfg.channels for ch in ("cb", "gs")}
    gate = Rule(
        functools.partial(_learned_and_needs_message, min_acc=cfg.gate_min_acc, max_zero=cfg.gate_max_zero_acc),
        f"mean >= {cfg.gate_min_acc}; with the message zeroed <= {cfg.gate_max_zero_acc}",
    )
    cb_beats_gs = Rule(_first_greater, "CB > GS")
    out = [
        Declared(
            f"decompose_uses_message_{ch}",
            f"{ch.upper()} Decompose per-candidate accuracy (THING-like, {cfg.seeds} seeds, {cfg.steps} steps) is "
            "learned and needs the message",
            metric=_named(decompose_gate, channel=ch),
            check=gate,
            paper="perfect accuracy (no number read)",
            source="reviews",
            gated=True,
        )
        for ch in ("cb", "gs")
        if has[ch]
    ]
    out += [
        Declared(
            "cbm_reference_fixture",
            "CBM on the reference fixture (words_eos) gives match 1.000, precision 0.900, recall 1.000",
            metric=cbm_fixture,
            check=Rule(_fixture_matches, "each equal to 3 decimals"),
            paper="1.000 / 0.900 / 1.000 (reference code)",
            source="CBM reference code",
            gated=True,
            note="and 10 edges",
        ),
        Declared(
            "ami_bounds",
            "AMI is 1 for a message-phrase bijection and ~0 for independent labels (n = 2000)",
            metric=ami_bounds,
            check=Rule(_ami_within, "bijection >= 0.999, |random| < 0.05"),
            gated=True,
        ),
        Declared(
            "straight_through_vq",
            "CB sends the nearest codewords and passes the gradient straight through (d q / d z = I)",
            metric=straight_through,
            check=Rule(_straight_through, "nearest = 1, forward err < 1e-6, grad err < 1e-5"),
            gated=True,
        ),
        Declared(
            "hard_distractors",
            "Compose distractors each violate exactly one FVP of the phrase; targets satisfy it",
            metric=hard_distractors,
            check=Rule(_all_exact, "fraction = 1 (and targets 1)"),
            gated=True,
        ),
    ]
    # reported: the paper's performance statements at our scale
    if has["cb"]:
        out += [
            Declared(
                "decompose_game_acc_cb",
                "CB Decompose game accuracy (all candidates right) reaches the paper's perfect accuracy",
                metric=_named(thing_mean, channel="cb", key="decompose_game_acc"),
                check=AtLeast(0.95),
                paper="perfect (no number read); spec pilot 0.15-0.46",
                source="reviews",
            ),
            Declared(
                "compose_zero_shot_cb",
                f"CB composes zero-shot: {cfg.compose_size}-FVP held-out games, hard distractors, game accuracy",
                metric=_named(thing_mean, channel="cb", key="compose_zero_shot_game_acc"),
                check=AtLeast(0.95),
                paper=PERFECT,
                source="Abstract; reviews",
                note="a one-FVP receiver scores 0.125",
            ),
            Declared(
                "exact_word_set_cb",
                "CB Compose messages are the Decompose codewords of the phrase's FVPs",
                metric=_named(thing_mean, channel="cb", key="compose_zero_shot_exact_word_set"),
                check=AtLeast(0.95),
            ),
        ]
    if has["gs"]:
        out.append(
            Declared(
                "decompose_game_acc_gs",
                "GS Decompose game accuracy (the baseline, same agents and budget)",
                metric=_named(thing_mean, channel="gs", key="decompose_game_acc"),
                check=AtLeast(0.95),
                paper="no number read; spec pilot: GS learns faster than CB",
            )
        )
    if has["cb"] and has["gs"]:
        out += [
            Declared(
                "cbm_cb_vs_gs_k",
                f"Decompose CBM at K = {k} = #FVP (a perfect protocol of any channel scores 1 here)",
                metric=cbm_at_k,
                check=AtLeast(0.95),
                paper="CB perfect CBM (summary, no number read)",
                source="third-party summary",
                note="CB",
            ),
            Declared(
                "cb_beats_gs_compose",
                "CB composes better than GS zero-shot (game accuracy, same agents and budget)",
                metric=_named(cb_vs_gs, key="compose_zero_shot_game_acc"),
                check=cb_beats_gs,
                paper=SUMMARY_CB_GS,
                source="third-party summary",
            ),
            Declared(
                "exact_word_set_cb_vs_gs",
                "Exact-word-set rate of zero-shot Compose messages, CB vs GS",
                metric=_named(cb_vs_gs, key="compose_zero_shot_exact_word_set"),
                check=cb_beats_gs,
            ),
        ]
    if n:  # Compose fine-tuning on training combinations (held-out combinations, hard distractors)
        if has["cb"]:
            out.append(
                Declared(
                    "compose_finetuned_cb",
                    f"CB Compose game accuracy after {n} fine-tuning steps (held-out {cfg.compose_size}-FVP, hard)",
                    metric=_named(thing_mean, channel="cb", key="compose_finetuned_game_acc"),
                    check=AtLeast(0.95),
                    paper=PERFECT,
                    source="reviews",
                    note="zero-shot: compose_zero_shot_cb",
                )
            )
        if has["cb"] and has["gs"]:
            out.append(
                Declared(
                    "cb_beats_gs_compose_finetuned",
                    f"CB composes better than GS after {n} Compose fine-tuning steps (game accuracy)",
                    metric=_named(cb_vs_gs, key="compose_finetuned_game_acc"),
                    check=cb_beats_gs,
                    paper=SUMMARY_CB_GS,
                    source="third-party summary",
                )
            )
        if has["cb"] and "qt" in cfg.ablations:
            out.append(
                Declared(
                    "cb_beats_qt_compose_finetuned",
                    f"CB composes better than QT after {n} Compose fine-tuning steps (first seed; QT cannot compose "
                    "zero-shot)",
                    metric=cb_vs_qt_finetuned,
                    check=Rule(_first_greater, "CB > QT"),
                    paper="CB > QT on most datasets (summary, no number read)",
                    source="third-party summary",
                )
            )
    if kl and has["cb"] and has["gs"]:
        out.append(
            Declared(
                "cbm_cb_vs_gs_k_large",
                f"Decompose CBM at K = {kl}: CB is more compositional than GS",
                metric=_named(cb_vs_gs, key="decompose_cbm", size="k_large"),
                check=cb_beats_gs,
                paper="CB perfect CBM, beats GS (summary, no number read)",
                source="third-party summary",
            )
        )
    out += [
        Declared(
            f"{ds}_decompose_{ch}",
            f"{ds} images: {ch.upper()} Decompose per-candidate accuracy (the gate's image version)",
            metric=_named(decompose_cand_acc, group=f"{ds}/{ch}/K{k}"),
            check=AtLeast(cfg.gate_min_acc),
        )
        for ds in (cfg.image_datasets if cfg.image_seeds else ())
        for ch in ("cb", "gs")
        if has[ch]
    ]
    return out
