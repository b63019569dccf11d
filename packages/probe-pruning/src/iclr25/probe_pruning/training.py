"""Training of the tiny byte-level LLaMA the quick reproduction prunes (spec §6a): d 64, 4 layers, 4 heads, d_ff 176,
RMSNorm, RoPE, SwiGLU, untied head; AdamW lr 3e-3, 50 warm-up steps then cosine decay to 10%, weight decay 0.01,
batch 16 x 64 bytes of a 50/50 mix of the two domains, a fixed number of steps (reproducible, no wall-clock limit)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from iclr25.probe_pruning.model import DecoderLM, ModelConfig, build_model, lm_loss

_CACHE: dict[tuple, tuple[DecoderLM, dict[str, Any]]] = {}


def _key(domains: list[np.ndarray], *args: Any) -> tuple:
    return (tuple((len(d), int(d[:4096].sum()), int(d[-4096:].sum())) for d in domains), *args)


def train_tiny(
    domains: list[np.ndarray],
    *,
    d_model: int = 64,
    n_layers: int = 4,
    n_heads: int = 4,
    d_ff: int = 176,
    steps: int = 700,
    batch: int = 16,
    seq: int = 64,
    lr: float = 3e-3,
    warmup: int = 50,
    weight_decay: float = 0.01,
    seed: int = 0,
    device: str = "cpu",
    progress: Callable[[Any], Any] | None = None,
    cache: bool = True,
) -> tuple[DecoderLM, dict[str, Any]]:
    """Train a TinyLlama on equal shares of each token stream in `domains`; returns (model, log) where log has
    the final loss, the wall time and samples/s. Identical calls in one process reuse the trained model."""
    key = _key(domains, d_model, n_layers, n_heads, d_ff, steps, batch, seq, lr, warmup, weight_decay, seed, device)
    if cache and key in _CACHE:
        return _CACHE[key]
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    cfg = ModelConfig(
        arch="llama", vocab_size=256, hidden_size=d_model, num_hidden_layers=n_layers, num_attention_heads=n_heads,
        num_key_value_heads=n_heads, intermediate_size=d_ff, max_position_embeddings=max(seq, 2048),
        rms_norm_eps=1e-5, rope_theta=10000.0,
    )  # fmt: skip
    model = build_model(cfg).to(device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": other, "weight_decay": 0.0}], lr=lr
    )

    def lr_at(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    per = [batch // len(domains) + (1 if i < batch % len(domains) else 0) for i in range(len(domains))]
    losses = []
    t0 = time.perf_counter()
    steps_iter = progress(range(steps)) if progress is not None else range(steps)
    model.train()
    for _ in steps_iter:
        rows = []
        for tokens, k in zip(domains, per, strict=True):
            starts = rng.integers(0, len(tokens) - seq, size=k)
            rows += [tokens[s : s + seq] for s in starts]
        ids = torch.from_numpy(np.stack(rows)).to(device)
        loss = lm_loss(model(ids).logits, ids)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    wall = time.perf_counter() - t0
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    log = {
        "final_loss": float(np.mean(losses[-20:])) if losses else float("nan"),
        "train_wall_s": wall,
        "train_samples_per_s": steps * batch / wall if wall > 0 else 0.0,
        "steps": steps,
    }
    if cache:
        _CACHE[key] = (model, log)
    return model, log


def _train_worker(payload: tuple[list[np.ndarray], dict[str, Any]]) -> tuple[dict, dict[str, Any], ModelConfig]:
    torch.set_num_threads(1)
    domains, kw = payload
    model, log = train_tiny(domains, cache=False, **kw)
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}, log, model.cfg


def train_seeds(
    domains: list[np.ndarray], seeds: list[int], workers: int = 1, **kw: Any
) -> list[tuple[DecoderLM, dict[str, Any]]]:
    """`train_tiny` for each seed; with `workers` > 1 (CPU) the seeds train in parallel spawned processes of one
    thread each (identical results: each seed's run is deterministic). Trained models are cached in-process."""
    names = ("d_model", "n_layers", "n_heads", "d_ff", "steps", "batch", "seq", "lr", "warmup", "weight_decay")
    defaults = {"d_model": 64, "n_layers": 4, "n_heads": 4, "d_ff": 176, "steps": 700, "batch": 16, "seq": 64,
                "lr": 3e-3, "warmup": 50, "weight_decay": 0.01}  # fmt: skip
    full = {**defaults, **{k: v for k, v in kw.items() if k in names}}
    device = kw.get("device", "cpu")
    keys = {s: _key(domains, *(full[n] for n in names), s, device) for s in seeds}
    todo = [s for s in seeds if keys[s] not in _CACHE]
    if workers > 1 and len(todo) > 1 and device == "cpu":
        from iclr25.shared.parallel import map_in_processes

        jobs = [(domains, {**full, "seed": s, "device": "cpu"}) for s in todo]
        outs = map_in_processes(_train_worker, jobs, workers, threads=1, desc="train seeds", unit="model")
        for s, (state, log, cfg) in zip(todo, outs, strict=True):
            model = build_model(cfg)
            model.load_state_dict(state)
            model.eval().requires_grad_(False)
            _CACHE[keys[s]] = (model, log)
    for s in todo:
        if keys[s] not in _CACHE:
            train_tiny(domains, **{**full, "seed": s, "device": device, "progress": kw.get("progress")})
    return [_CACHE[keys[s]] for s in seeds]
