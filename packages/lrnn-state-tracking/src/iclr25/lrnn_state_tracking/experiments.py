"""The experiments of the reproduction of "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues"
(arXiv 2411.12537), each returning plain metrics (the claims judge them in `claims`, the plan is `reproduce`):
Figure 1, the Mamba parity pair, the Table-3 grid, the theory checks of §4 and the speed of the fast recurrences.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

from iclr25.lrnn_state_tracking.config import Config, grid_cells

__all__ = ["measure", "measure_speed", "theory_checks"]


def _grid_config(cfg: Config, task: str, model: str, eig_range: str, seed: int) -> Any:
    from iclr25.lrnn_state_tracking.training import TrainConfig

    parity = task == "parity"
    return TrainConfig(
        task=task,
        model=model,
        eig_range=eig_range if eig_range != "-" else "[-1,1]",
        d_model=cfg.grid_d_model,
        n_layers=cfg.grid_layers,
        n_heads=cfg.grid_heads,
        steps=cfg.grid_steps_parity if parity else cfg.grid_steps_mod,
        batch_size=cfg.grid_batch,
        lr=cfg.grid_lr,
        weight_decay=cfg.grid_wd_parity if parity else cfg.grid_wd_mod,
        warmup=cfg.grid_warmup_parity if parity else cfg.grid_warmup_mod,
        eval_n=cfg.eval_n,
        seed=seed,
        deltanet_mode=cfg.grid_deltanet_mode,
    )


def measure_speed(T: int = 1_024, reps: int = 3) -> dict[str, float]:
    """Tokens/s of the reference and fast forms at sequence length T, forward and forward+backward (min over reps)."""
    import torch

    from iclr25.lrnn_state_tracking.ops import delta_rule_chunked, diagonal_scan
    from iclr25.lrnn_state_tracking.reference import delta_rule_recurrent, diagonal_scan_reference

    g = torch.Generator().manual_seed(0)

    def best(fn: Any) -> float:
        fn()  # warm-up
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    B, D = 16, 16  # Figure-1-sized diagonal LRNN
    a = (torch.rand(B, T, D, generator=g) * 2 - 1).requires_grad_()
    b = torch.randn(B, T, D, generator=g).requires_grad_()
    B2, H, Dk = 2, 2, 16  # quick DeltaNet-sized heads
    q = torch.randn(B2, H, T, Dk, generator=g).requires_grad_()
    k = torch.nn.functional.normalize(torch.randn(B2, H, T, Dk, generator=g), dim=-1).requires_grad_()
    v = torch.randn(B2, H, T, Dk, generator=g).requires_grad_()
    beta = (2 * torch.rand(B2, H, T, generator=g)).requires_grad_()
    forms = {
        "diag_scan_loop": (lambda: diagonal_scan_reference(a, b), B * T),
        "diag_scan_chunked": (lambda: diagonal_scan(a, b, method="chunk"), B * T),
        "delta_rule_recurrent": (lambda: delta_rule_recurrent(q, k, v, beta)[0], B2 * T),
        "delta_rule_chunked": (lambda: delta_rule_chunked(q, k, v, beta, chunk_size=64)[0], B2 * T),
    }
    out: dict[str, float] = {}
    for name, (fn, tokens) in forms.items():
        with torch.no_grad():
            out[f"{name}_fwd_tokens_per_s"] = tokens / best(fn)
        out[f"{name}_fwd_bwd_tokens_per_s"] = tokens / best(lambda fn=fn: fn().sum().backward())
    for pass_ in ("fwd", "fwd_bwd"):
        out[f"diag_scan_speedup_{pass_}"] = (
            out[f"diag_scan_chunked_{pass_}_tokens_per_s"] / out[f"diag_scan_loop_{pass_}_tokens_per_s"]
        )
        out[f"delta_rule_speedup_{pass_}"] = (
            out[f"delta_rule_chunked_{pass_}_tokens_per_s"] / out[f"delta_rule_recurrent_{pass_}_tokens_per_s"]
        )
    return out


def theory_checks() -> dict[str, bool]:
    """The constructions of §4 (spec §9.3–9.4), each True when it holds exactly."""
    import numpy as np
    import torch

    from iclr25.lrnn_state_tracking import theory
    from iclr25.lrnn_state_tracking.data import permutations, word_problem

    rng = np.random.default_rng(0)
    perms_ok = True
    for _ in range(50):
        p = rng.permutation(5)
        factors = theory.permutation_to_householders(p)
        err = (theory.product(factors, 5) - theory.permutation_matrix(p)).abs().max().item()
        perms_ok &= err <= 1e-12 and len(factors) <= 4
    rot_ok = all(
        (theory.product(theory.rotation_as_two_reflections(2 * math.pi / m)) - theory.rotation(2 * math.pi / m))
        .abs()
        .max()
        .item()
        <= 1e-12
        for m in (3, 5, 60)
    )
    bits = torch.tensor(list(np.ndindex(*(2,) * 12)))  # all 2^12 strings of length 12
    parity_ok = torch.equal(theory.parity_lrnn(bits), bits.double().cumsum(1) % 2)
    long_bits = torch.from_numpy(rng.integers(0, 2, 10_000))
    parity_ok &= torch.equal(theory.parity_lrnn(long_bits), long_bits.double().cumsum(0) % 2)
    positive_freezes = all(
        (k := theory.first_constant_step(theory.finite_precision_orbit(a, 1.0, 100_000))) is not None and k <= 100_000
        for a in (0.3, 0.9, 0.999)
    )
    orbit = theory.finite_precision_orbit(-1.0, 1.0, 100_000)
    negative_alternates = bool((orbit == (np.arange(1, 100_001) % 2)).all())
    x, y = word_problem(16, 24, "all", seed=1)
    s5_ok = torch.equal(theory.s5_lrnn(x, permutations()), y)
    return {
        "permutations_as_reflections": bool(perms_ok),
        "rotation_as_two_reflections": bool(rot_ok),
        "parity_lrnn_exact": bool(parity_ok),
        "theorem1_positive_state_freezes": bool(positive_freezes),
        "theorem1_negative_alternates": negative_alternates,
        "s5_lrnn_exact": bool(s5_ok),
    }


def _length_curve(correct: Any, lengths: Any, bins: int = 9, lo: int = 40, hi: int = 256) -> tuple[list, list]:
    import numpy as np

    edges = np.linspace(lo, hi + 1, bins + 1)
    centers, accs = [], []
    for left, right in itertools.pairwise(edges):
        sel = (lengths >= left) & (lengths < right)
        if sel.any():
            centers.append(float((left + right) / 2))
            accs.append(float(correct[sel].mean()))
    return centers, accs


def measure(
    config: Config, active: Any, seed: int = 0
) -> tuple[dict[str, Any], dict[str, float], tuple[dict[str, tuple[list, list]], dict[str, list]]]:
    """Figure 1, the Table-3 grid, the theory checks and the speed of the fast forms: (metrics, throughput, (curves,
    losses)), the accuracy-vs-length curves and training losses for the figures; runs go to the run's logger."""
    from iclr25.lrnn_state_tracking.training import TrainConfig, evaluate, train
    from iclr25.shared.device import configure_torch
    from iclr25.shared.seed import seed_everything

    dev = active.device
    configure_torch(dev, threads=config.threads)
    seed_everything(seed)
    logger = active.logger
    metrics: dict[str, Any] = {}
    throughput: dict[str, float] = {}
    lengths = (config.eval_min_len, config.eval_max_len)
    curves: dict[str, tuple[list, list]] = {}
    losses: dict[str, list[tuple[int, float]]] = {}

    # ---- Figure 1: diagonal LRNN on parity, sigmoid ([0,1]) vs tanh ([-1,1])
    if config.fig1:
        fig1: dict[str, list[float]] = {}
        tokens, seconds = 0, 0.0
        for eig_range, label in (("[-1,1]", "tanh"), ("[0,1]", "sigmoid")):
            scores = []
            for i in range(config.fig1_seeds):
                tcfg = TrainConfig(
                    task="parity",
                    model="figure1",
                    eig_range=eig_range,
                    d_model=config.fig1_dim,
                    steps=config.fig1_steps,
                    batch_size=config.fig1_batch,
                    lr=config.fig1_lr,
                    warmup=0,
                    schedule="constant" if config.fig1_steps <= 2_000 else "cosine",
                    seed=seed + i,
                    # float32 on every device: under bf16 autocast the tanh model of the ci preset scored 0.31
                    # instead of 1.0 on an H200 (the CPU never autocasts), so the claim would measure the precision
                    amp=False,
                )
                res = train(
                    tcfg,
                    dev,
                    log_every=config.log_every,
                    desc=f"figure 1 {label} seed {i}",
                    **active.training_options(f"figure1-{label}-seed{i}", config.checkpoint_every),
                )
                tokens, seconds = tokens + res.train_tokens, seconds + res.seconds
                ev = evaluate(res.model, "parity", config.eval_n, lengths, device=dev)
                scores.append(ev["scaled_accuracy"])
                logger.log({f"fig1_{label}_seed{i}_scaled_acc": ev["scaled_accuracy"]})
                losses[f"{label} seed {i}"] = [(r["step"], r["loss"]) for r in res.history]
                if ev["scaled_accuracy"] >= max(scores):
                    curves[f"Figure-1 LRNN, {label}"] = _length_curve(ev["correct"], ev["lengths"], lo=lengths[0])
            fig1[label] = scores
        metrics["fig1_scaled_accuracy"] = fig1
        throughput["fig1_train_tokens_per_s"] = tokens / max(seconds, 1e-9)

    # ---- Mamba on parity at CPU scale: the same model with Ā = exp(ΔA) ([0,1]) or 2·exp(ΔA) - 1 ([-1,1])
    if config.mamba:
        mamba: dict[str, list[float]] = {}
        for eig_range in ("[-1,1]", "[0,1]"):
            scores = []
            for i in range(config.mamba_seeds):
                tcfg = TrainConfig(
                    task="parity",
                    model="mamba",
                    eig_range=eig_range,
                    d_model=config.mamba_d_model,
                    n_layers=1,
                    steps=config.mamba_steps,
                    batch_size=config.mamba_batch,
                    lr=config.mamba_lr,
                    warmup=config.mamba_warmup,
                    train_max_len=config.mamba_train_max_len,
                    seed=seed + i,
                )
                res = train(
                    tcfg,
                    dev,
                    log_every=config.log_every,
                    desc=f"mamba {eig_range} seed {i}",
                    **active.training_options(
                        f"mamba-{eig_range[1:-1].replace(',', '_')}-seed{i}", config.checkpoint_every
                    ),
                )
                ev = evaluate(res.model, "parity", config.eval_n, lengths, batch_size=256, device=dev)
                scores.append(ev["scaled_accuracy"])
                logger.log({f"mamba_{eig_range}_seed{i}_scaled_acc": ev["scaled_accuracy"]})
                losses[f"mamba {eig_range} seed {i}"] = [(r["step"], r["loss"]) for r in res.history]
                if ev["scaled_accuracy"] >= max(scores):
                    curves[f"Mamba 1L, {eig_range}"] = _length_curve(ev["correct"], ev["lengths"], lo=lengths[0])
            mamba[eig_range] = scores
        metrics["mamba_parity_scaled_accuracy"] = mamba

    # ---- Table 3 grid
    grid: dict[str, dict[str, list[float]]] = {}
    for task, model, eig_range in grid_cells(config):
        key = f"{model} {eig_range}" if eig_range != "-" else model
        scores = []
        for i in range(config.grid_seeds):
            tcfg = _grid_config(config, task, model, eig_range, seed + i)
            res = train(
                tcfg,
                dev,
                log_every=config.log_every,
                desc=f"{task} {key} seed {i}",
                **active.training_options(
                    f"{task}-{key}-seed{i}".replace(" ", "").replace(",", "_"), config.checkpoint_every
                ),
            )
            ev = evaluate(res.model, task, config.eval_n, lengths, device=dev, amp=tcfg.amp)
            scores.append(ev["scaled_accuracy"])
            throughput[f"{model}_{task}_train_tokens_per_s"] = res.tokens_per_s
            logger.log({f"{task}_{key}_seed{i}_scaled_acc": ev["scaled_accuracy"]})
            losses[f"{key} {task} seed {i}"] = [(r["step"], r["loss"]) for r in res.history]
            if task == "parity" and ev["scaled_accuracy"] >= max(scores):
                curves[f"{key} ({config.grid_layers}L)"] = _length_curve(ev["correct"], ev["lengths"], lo=lengths[0])
        grid.setdefault(task, {})[key] = scores
    if grid:
        metrics["table3_scaled_accuracy"] = grid

    # ---- theory and speed
    if config.theory:
        metrics["theory_checks"] = theory_checks()
    if config.speed_T:
        speed = measure_speed(config.speed_T, config.speed_reps)
        throughput.update({k: v for k, v in speed.items() if k.endswith("tokens_per_s")})
        metrics["speedup_at_T"] = {"T": config.speed_T, **{k: v for k, v in speed.items() if "speedup" in k}}
    return metrics, throughput, (curves, losses)
