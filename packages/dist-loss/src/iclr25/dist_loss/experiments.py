"""The experiments of Dist Loss (Nie, Tang, Hong, ICLR 2025, arXiv 2411.15216): plain metrics in, plain metrics out.

Setting (spec 6a): labels with the AgeDB-DIR train / balanced test histograms, noisy 16-d features of
the label, and the paper's two-stage protocol: stage 1 trains an MLP with plain L1; stage 2 (RRT)
retrains only the last layer on the frozen features with each loss, keeping the epoch with the best
balanced validation MAE. `stage1_and_heads` runs one seed of it; `benchmark_loss` times the losses.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from iclr25.dist_loss.config import GATE_METHODS, Config
from iclr25.dist_loss.names import HEAD_INITS
from iclr25.shared.progress import Progress


def fits_per_seed(config: Config) -> int:
    """How many models one seed of the synthetic task trains (stage 1, end to end, every RRT head)."""
    extra_inits = len(HEAD_INITS) - 1 if config.compare_default_init else 0
    return 1 + int(config.end_to_end) + len(config.methods) + extra_inits * len(GATE_METHODS)


def load_task(config: Config, seed: int) -> tuple[Any, tuple[float, float]]:
    """The seed's data (the synthetic task, or `config.data_file` split with `seed`) and its (many, few) shot
    thresholds; ValueError when a user's labels leave the label grid (`userdata.load_file_task`)."""
    from iclr25.dist_loss.data import make_tabular
    from iclr25.dist_loss.userdata import load_file_task

    if not config.data_file:
        data = make_tabular(seed, config.data_scale, config.dim, config.label_noise, config.feature_noise)
        return data, (config.many_shot, config.few_shot)
    return load_file_task(config.data_file, config.labels_file or None, config, seed)


def stage1_and_heads(
    config: Config, seed: int, device: str, bar: Progress | None = None, scale: Any = None
) -> tuple[dict[str, dict[str, float]], dict[str, Any], dict[str, float]]:
    """One seed: stage 1, every RRT head and (optionally) the end-to-end Dist model (`bar` counts the fits).

    `scale(name)`: the fabric/checkpointer/resume keywords of the fit called `name` (see `reproduce._scale_out`)."""
    import torch

    from iclr25.dist_loss.train import MLP, evaluate, fit, make_loss, predict, rrt
    from iclr25.shared.seed import seed_everything

    seed_everything(seed)
    data, (many, few) = load_task(config, seed)
    gen = torch.Generator().manual_seed(seed)

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, dtype=torch.float32, device=device)

    x_tr, x_val, x_te, y_tr = t(data.x_train), t(data.x_val), t(data.x_test), t(data.y_train)
    loss_kwargs = dict(
        lam=config.lam, eps=config.eps, bw=config.bw, min_label=config.min_label,
        max_label=config.max_label, step=config.step, bmc_sigma=config.label_noise,
    )  # fmt: skip
    common = dict(epochs=config.epochs_stage1, batch_size=config.batch_size, lr=config.lr, generator=gen)
    metrics: dict[str, dict[str, float]] = {}
    preds: dict[str, Any] = {}
    speed: dict[str, float] = {}

    def score(model: MLP) -> dict[str, float]:
        grid = dict(many=many, few=few, min_label=config.min_label, step=config.step)
        return evaluate(model, x_te, data.y_test, x_tr, data.y_train, **grid)

    def stage1(method: str, select: str) -> MLP:
        model = MLP(data.x_train.shape[1], config.hidden, config.depth, float(data.y_train.mean())).to(device)
        setup = make_loss(method, data.y_train, config.batch_size, device=device, **loss_kwargs)
        res = fit(
            model, list(model.parameters()), x_tr, y_tr, setup, x_val, data.y_val,
            select=select, lr_steps=config.lr_steps, min_label=config.min_label, step=config.step, **common, **_kwargs(scale, f"seed{seed}-stage1-{method}"),
        )  # fmt: skip
        speed[f"stage1_{method}_samples_per_s"] = res.samples_per_s
        if bar is not None:
            bar.update()
        return model

    backbone = stage1("l1", "plain")  # stage 1: plain L1, best plain val MAE (spec 6a)
    metrics["e2e_l1"] = score(backbone)
    if config.end_to_end:
        e2e = stage1("dist", "plain")
        metrics["e2e_dist"] = score(e2e)
        preds["e2e_dist"] = predict(e2e, x_tr)
    preds["e2e_l1"] = predict(backbone, x_tr)
    runs = [(m, config.rrt_head_init, f"rrt_{m}") for m in config.methods]
    if config.compare_default_init:
        for init in (i for i in HEAD_INITS if i != config.rrt_head_init):
            runs += [(m, init, f"rrt_{m}_{init}_init") for m in GATE_METHODS]
    for method, head_init, key in runs:
        model, res = rrt(
            backbone, method, x_tr, data.y_train, x_val, data.y_val, config.epochs_stage2,
            config.batch_size, config.lr, gen, config.lr_steps, head_init, **loss_kwargs,
            **_kwargs(scale, f"seed{seed}-{key}"),
        )  # fmt: skip
        if bar is not None:
            bar.update()
        metrics[key] = score(model)
        if key != f"rrt_{method}":
            continue
        speed[f"rrt_{method}_samples_per_s"] = res.samples_per_s
        preds[f"rrt_{method}"] = predict(model, x_tr)
        preds[f"rrt_{method}_test"] = predict(model, x_te)
    preds["y_train"], preds["y_test"] = data.y_train, data.y_test
    preds["shots"] = {"many": float(many), "few": float(few)}  # a bin's training count: > many, < few
    return metrics, preds, speed


def benchmark_loss(batch_sizes: tuple[int, ...], repeats: int, device: str, eps: float = 0.1) -> dict[str, float]:
    """Loss forward+backward time (ms) at each batch size: L1, Dist Loss, and the official-style CPU pipeline."""
    import torch

    from iclr25.dist_loss.data import agedb_labels
    from iclr25.dist_loss.labels import kde_label_density, pseudo_labels
    from iclr25.dist_loss.loss import DistLoss
    from iclr25.dist_loss.reference import numpy_pipeline_soft_sort
    from iclr25.shared.device import synchronize

    density = kde_label_density(agedb_labels("train"))
    gen = torch.Generator().manual_seed(0)
    out: dict[str, float] = {}
    dist = DistLoss("l1", lam=1.0, eps=eps)

    def pipeline_loss(p: torch.Tensor, y: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        s = numpy_pipeline_soft_sort(p, eps)
        return ((s - q).abs() + (p - y).abs()).mean()

    for b in batch_sizes:
        q = torch.as_tensor(pseudo_labels(density, b), dtype=torch.float32, device=device)
        y = torch.as_tensor(np.random.default_rng(b).choice(agedb_labels("train"), b), dtype=torch.float32)
        y = y.to(device)
        base = (y + 8 * torch.randn(b, generator=gen).to(device)).detach()
        fns = {
            "l1": lambda p, y=y: (p - y).abs().mean(),
            "dist": lambda p, y=y, q=q: dist(p, y, q),
            "official_style": lambda p, y=y, q=q: pipeline_loss(p, y, q),
        }
        for name, fn in fns.items():
            for i in range(repeats + 2):
                if i == 2:  # two warm-up calls
                    synchronize(device)
                    start = time.perf_counter()
                p = base.clone().requires_grad_(True)
                fn(p).backward()
            synchronize(device)
            out[f"loss_fwd_bwd_ms_{name}_b{b}"] = (time.perf_counter() - start) / repeats * 1e3
        out[f"dist_over_l1_b{b}"] = out[f"loss_fwd_bwd_ms_dist_b{b}"] / out[f"loss_fwd_bwd_ms_l1_b{b}"]
        out[f"official_style_over_dist_b{b}"] = (
            out[f"loss_fwd_bwd_ms_official_style_b{b}"] / out[f"loss_fwd_bwd_ms_dist_b{b}"]
        )
    return out


def _kwargs(scale: Any, name: str) -> dict[str, Any]:
    return scale(name) if scale is not None else {}
