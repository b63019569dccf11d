"""Fast paths for the reproduction of Grazzi, Siems et al., "Unlocking State-Tracking in Linear RNNs Through Negative
Eigenvalues" (ICLR 2025, arXiv 2411.12537): `torch.compile` of a whole training step measured against eager PyTorch,
and the full preset's step count, from which its time per GPU count is estimated.

The optional FLA Triton kernel (`ops.delta_rule_fla`, DeltaNet's `mode="fla"`) needs a GPU and `fla-core`;
`fla_speedup` measures it against our chunked delta rule, and `tests/test_gpu.py` runs both where they are present.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.nn.functional as F

from iclr25.lrnn_state_tracking.config import PRESETS, Config


def _step_fn(model: torch.nn.Module, opt: torch.optim.Optimizer) -> Any:
    def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = F.cross_entropy(model(x).float().flatten(0, 1), y.flatten(), ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        return loss

    return step


def compile_speedup(
    model: str = "deltanet",
    d_model: int = 32,
    n_layers: int = 1,
    n_heads: int = 2,
    batch_size: int = 64,
    seq_len: int = 40,
    reps: int = 20,
    device: str = "cpu",
    seed: int = 0,
) -> dict[str, float]:
    """Forward+backward time of one training batch, eager vs `torch.compile` (same weights, same batch).

    Returns tokens/s of both, the one-off compile time, and the largest difference between their losses and gradients.
    """
    from iclr25.lrnn_state_tracking.baselines import build_model
    from iclr25.lrnn_state_tracking.data import get_task

    torch.manual_seed(seed)
    net = build_model(model, get_task("parity").vocab_size, d_model, n_layers, n_heads, "[-1,1]").to(device)
    x, y = get_task("parity").sample(batch_size, (seq_len, seq_len), seed)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.0)  # lr 0: the weights stay identical across repetitions
    eager = _step_fn(net, opt)
    compiled = torch.compile(eager, dynamic=False)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    def grads() -> list[torch.Tensor]:
        return [p.grad.detach().clone() for p in net.parameters() if p.grad is not None]

    loss_e = eager(x, y)
    grads_e = grads()
    start = time.perf_counter()
    loss_c = compiled(x, y)  # the first call compiles
    sync()
    compile_s = time.perf_counter() - start
    grads_c = grads()
    diff = max(
        [abs(loss_e.item() - loss_c.item())]
        + [(a - b).abs().max().item() for a, b in zip(grads_e, grads_c, strict=True)]
    )
    out: dict[str, float] = {"compile_s": compile_s, "max_abs_diff": diff}
    for name, fn in (("eager", eager), ("compiled", compiled)):
        fn(x, y)
        sync()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn(x, y)
            sync()
            times.append(time.perf_counter() - start)
        out[f"{name}_tokens_per_s"] = x.numel() / min(times)
    out["speedup"] = out["compiled_tokens_per_s"] / out["eager_tokens_per_s"]
    return out


def fla_speedup(
    batch_size: int = 8, n_heads: int = 4, seq_len: int = 2_048, head_dim: int = 64, reps: int = 10, seed: int = 0
) -> dict[str, float]:
    """Forward+backward tokens/s of our chunked delta rule (float32) against FLA's Triton kernel (bfloat16) on CUDA,
    with β ∈ (0, 2) and unit keys, and the largest output difference between them."""
    from iclr25.lrnn_state_tracking.ops import delta_rule_chunked, delta_rule_fla

    if not torch.cuda.is_available():
        raise ValueError("fla_speedup needs a CUDA device")
    g = torch.Generator(device="cuda").manual_seed(seed)
    shape = (batch_size, n_heads, seq_len, head_dim)
    q, k, v = (torch.randn(shape, device="cuda", generator=g) for _ in range(3))
    k = F.normalize(k, dim=-1)
    beta = 2 * torch.rand(shape[:3], device="cuda", generator=g)
    leaves = [t.requires_grad_() for t in (q, k, v, beta)]
    forms = {"ours": lambda: delta_rule_chunked(*leaves, chunk_size=64)[0], "fla": lambda: delta_rule_fla(*leaves)[0]}
    with torch.no_grad():
        out: dict[str, float] = {"max_abs_diff": (forms["ours"]() - forms["fla"]()).abs().max().item()}
    for name, fn in forms.items():
        fn().sum().backward()  # warm-up (and Triton's compilation)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            fn().sum().backward()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        out[f"{name}_fwd_bwd_tokens_per_s"] = batch_size * seq_len / min(times)
    out["speedup"] = out["fla_fwd_bwd_tokens_per_s"] / out["ours_fwd_bwd_tokens_per_s"]
    return out


def full_preset_steps(config: Config | None = None) -> dict[str, int]:
    """Optimizer steps and training runs of the `full` preset (Figure 1 + the Table-3 grid), for time estimates."""
    cfg = config or PRESETS["full"]
    ranged = sum(2 if m in ("deltanet", "mamba") else 1 for m in cfg.grid_models)
    steps = {"parity": cfg.grid_steps_parity, "mod": cfg.grid_steps_mod, "modbra": cfg.grid_steps_mod}
    grid = sum(steps[t] for t in cfg.grid_tasks) * ranged * cfg.grid_seeds
    fig1 = 2 * cfg.fig1_seeds * cfg.fig1_steps if cfg.fig1 else 0
    runs = len(cfg.grid_tasks) * ranged * cfg.grid_seeds + (2 * cfg.fig1_seeds if cfg.fig1 else 0)
    return {"grid_steps": grid, "fig1_steps": fig1, "runs": runs}


def estimate_hours(seconds_per_step: float, gpus: int = 1, config: Config | None = None) -> float:
    """Hours for the `full` preset's grid at `seconds_per_step`, with independent runs spread over `gpus` GPUs."""
    if seconds_per_step <= 0 or gpus < 1:
        raise ValueError(f"need seconds_per_step > 0 and gpus >= 1, got {seconds_per_step}, {gpus}")
    return full_preset_steps(config)["grid_steps"] * seconds_per_step / gpus / 3600
