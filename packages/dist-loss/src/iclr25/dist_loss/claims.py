"""The claims of Dist Loss (arXiv 2411.15216), as data: Dist/L1 ratios of the seed-mean test metrics.

The paper's tables were not read, so no paper number is compared: each claim is the paper's finding (few-shot
MAE down, predictions spread like the labels) as a ratio of RRT + Dist Loss to RRT + L1 on the same stage-1
backbone. The margins were set on the synthetic task; on a user's data file the claims are only reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iclr25.dist_loss.config import Config
from iclr25.shared.claims import Above, AtLeast, AtMost, Below, Declared, Measured, lookup

# RRT head initialisations compared with the configured one (`compare_default_init`), as the claims name them.
INITS = {
    "zero": "zero weights, bias = train-label mean",
    "default": "PyTorch's random weights, bias = train-label mean (spec 6a)",
    "official": "PyTorch's random weights and bias (the official trainer's fresh layer)",
}


def _ratio(dist: str, l1: str, key: str) -> Callable[[dict[str, Any], Config], Measured]:
    """Seed-mean test `key` of method `dist` over method `l1`: shown to 4 decimals, tested unrounded."""

    def ratio(m: dict[str, Any], cfg: Config) -> Measured:
        r = float(lookup(m, f"test.{dist}.{key}.mean")) / float(lookup(m, f"test.{l1}.{key}.mean"))  # "nan" as stored
        return Measured(round(r, 4), r)

    ratio.__name__ = f"ratio({dist}/{l1}, {key})"
    return ratio


def _speedup(batch: str) -> Callable[[dict[str, Any], Config], Measured]:
    """Loss time of the official-style pipeline over ours at batch size `batch`: shown to 3 decimals."""

    def speedup(m: dict[str, Any], cfg: Config) -> Measured:
        r = float(lookup(m, f"throughput.official_style_over_dist_b{batch}"))  # the run's loss timings
        return Measured(round(r, 3), r)

    speedup.__name__ = f"official_style_over_dist_b{batch}"
    return speedup


def declared(config: Config) -> list[Declared]:
    """The claims of a run of `config`: the four gated RRT ratios, then the reported variants and loss timings."""
    gated = not config.data_file  # the margins were set on the synthetic task; a user's data is only reported
    images = bool(config.data_dir)  # the image path trains neither the end-to-end model nor other head inits
    out = [
        Declared(
            "few_shot_mae_ratio",
            "RRT + Dist Loss lowers few-shot MAE vs RRT + L1 on the same stage-1 backbone (the paper reports its best "
            "few-shot results with RRT; its Tables 1-3 were not read, so no paper number is compared); "
            f"RRT head init: {config.rrt_head_init} (config rrt_head_init)",
            metric=_ratio("rrt_dist", "rrt_l1", "few_mae"),
            check=AtMost(0.92),
            source="Abstract",
            gated=gated,
            note="ratio Dist/L1",
        ),
        Declared(
            "many_shot_mae_ratio",
            "RRT + Dist Loss keeps many-shot MAE near RRT + L1",
            metric=_ratio("rrt_dist", "rrt_l1", "many_mae"),
            check=AtMost(1.10),
            gated=gated,
            note="ratio Dist/L1",
        ),
        Declared(
            "prediction_spread_ratio",
            "Dist Loss widens the prediction distribution (std of train predictions) toward the labels'",
            metric=_ratio("rrt_dist", "rrt_l1", "train_pred_std"),
            check=AtLeast(1.05),
            source="Abstract",
            gated=gated,
            note="ratio Dist/L1",
        ),
        Declared(
            "w1_ratio",
            "Dist Loss brings the prediction distribution closer to the labels' (W1, train split)",
            metric=_ratio("rrt_dist", "rrt_l1", "train_w1"),
            check=AtMost(0.95),
            source="Abstract",
            gated=gated,
            note="ratio Dist/L1",
        ),
    ]
    if config.end_to_end and not images:
        out.append(
            Declared(
                "end_to_end_few_shot_mae_ratio",
                "Dist Loss trained end to end (no RRT) lowers few-shot MAE vs plain L1",
                metric=_ratio("e2e_dist", "e2e_l1", "few_mae"),
                check=Below(1.0),
                note="ratio Dist/L1",
            )
        )
    if config.compare_default_init and not images:
        for init, what in INITS.items():
            if init == config.rrt_head_init:
                continue
            out.append(
                Declared(
                    f"{init}_init_few_shot_mae_ratio",
                    f"as few_shot_mae_ratio, but the RRT head starts from {what}",
                    metric=_ratio(f"rrt_dist_{init}_init", f"rrt_l1_{init}_init", "few_mae"),
                    check=AtMost(0.92),
                    note="ratio Dist/L1",
                )
            )
    for batch in sorted({str(b) for b in config.bench_batches}):  # in the order of the timing keys' names
        out.append(
            Declared(
                f"speed_vs_official_style_b{batch}",
                "our torch soft sort is faster than a per-batch CPU numpy round trip with a Python PAV",
                metric=_speedup(batch),
                check=Above(1.0),
                note="time ratio official-style/ours",
            )
        )
    return out
