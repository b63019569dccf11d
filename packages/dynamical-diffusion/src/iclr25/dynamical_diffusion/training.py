"""Training and evaluation loops for Dynamical Diffusion (arXiv 2503.00951) on in-memory sequence tensors, and the
data (`make_data`) and model (`make_model`) a config trains, and the model.pt of a trained model (`save_model`,
`load_model`).

Training follows the official recipe: AdamW (PyTorch defaults, weight decay 0.01), constant learning rate, no
gradient clipping, no weight EMA, uniform t, MSE on the mixed noise over all frames. Batches, timesteps and noise
come from one seeded generator, so DPM and DyDiff see the same batch sequence.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from iclr25.dynamical_diffusion.config import Config
from iclr25.dynamical_diffusion.dydiff import DynamicalDiffusion
from iclr25.dynamical_diffusion.metrics import crps_pwm, crps_pwm_map, ensemble_mse, official_rmse
from iclr25.shared.device import synchronize
from iclr25.shared.files import save_torch
from iclr25.shared.progress import progress


def make_data(config: Config, seed: int, device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """Train and test sequences (N, S, C, *grid), scaled by the training max |value|.

    `device` runs the Navier-Stokes solver (ns2d) there; the other generators are numpy.
    """
    from functools import partial

    from iclr25.dynamical_diffusion import data

    S = config.n_context + config.n_future
    sim = data.GRID_SIMULATORS[config.dataset]
    if config.dataset == "ns2d":
        sim = partial(sim, device=device)
    train = sim(config.n_train, n_frames=S, n_context=config.n_context, size=config.size, seed=seed)
    test = sim(config.n_test, n_frames=S, n_context=config.n_context, size=config.size, seed=seed + 10_000)
    scale = float(np.abs(train).max())
    return train / scale, test / scale


def make_model(config: Config, gamma_ratio: float, dependent_noise: bool | None = None) -> Any:
    """A FrameStackUNet (1-D or 2-D per dataset) wrapped in DynamicalDiffusion with the given gamma ratio.

    `dependent_noise` defaults to the config's.
    """
    from iclr25.dynamical_diffusion.models import FrameStackUNet

    dims = 1 if config.dataset == "pde1d" else 2
    channels = 2 if config.dataset == "ns2d" else 1  # ns2d frames are velocity (u, v)
    net = FrameStackUNet(config.n_context + config.n_future, channels, dims, config.width, tuple(config.ch_mult))
    return DynamicalDiffusion(
        net,
        T=config.T,
        gamma_ratio=gamma_ratio,
        dependent_noise=config.dependent_noise if dependent_noise is None else dependent_noise,
        n_context=config.n_context,
    )


MODEL_FILE = "model.pt written by `train`"


def save_model(model: DynamicalDiffusion, config: Config, seed: int, path: Any, *, overwrite: bool = False) -> None:
    """Save `model`'s network weights with the config it was built and trained from (a plain dict) and the data seed
    to `path`, through the guarded writer (into a run folder this process holds, or as a new file)."""
    state = {"config": asdict(config), "seed": seed, "state_dict": model.net.state_dict()}
    save_torch(path, state, overwrite=overwrite)


def load_model(path: Any) -> tuple[DynamicalDiffusion, Config, int]:
    """(model, config, seed) from a file `save_model` wrote, on the CPU; a foreign, corrupt or unsafe file is a
    one-line error naming `path`.

    Weights only (`iclr25.shared.safeload`): the file holds a config dict, a seed and tensors; nothing in it runs.
    """
    from iclr25.shared.safeload import load_checkpoint

    state = load_checkpoint(path, required_keys=("config", "seed", "state_dict"), what=MODEL_FILE)
    try:
        config = Config(**{**state["config"], "ch_mult": tuple(state["config"]["ch_mult"])})
        model = make_model(config, config.gamma_ratio)
        model.net.load_state_dict(state["state_dict"])
        return model, config, int(state["seed"])
    except Exception as e:  # any unreadable or foreign content becomes one clear line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"checkpoint {path} is not a {MODEL_FILE} ({first})") from e


@dataclass
class TrainStats:
    """What one training run measured."""

    steps: int
    seconds: float
    final_loss: float
    losses: list[float]

    @property
    def steps_per_s(self) -> float:
        """Optimiser steps per second."""
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def train(
    model: DynamicalDiffusion,
    data: Tensor,
    steps: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    seed: int = 0,
    log_every: int = 100,
    logger: Any = None,
    tag: str = "",
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> TrainStats:
    """Train `model` on sequences `data` (N, S, C, *sp) already on the model's device; returns timing and losses.

    With `fabric` (several processes, `iclr25.shared.fabric`), every process draws the same global batch of
    `batch_size` sequences, timesteps and noise, and trains on its own equal share; the averaged gradients equal
    one process's on the whole batch. With `checkpointer`, the network, the optimiser, the step, the generators and
    the loss curve are saved every `checkpointer.every` steps and at the end; `resume` ("auto" or a checkpoint
    file) continues from one, ending with the same weights as an uninterrupted run.
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be >= 1, got {steps}, {batch_size}")
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if batch_size % world:
        raise ValueError(f"batch_size {batch_size} must be a multiple of the {world} processes")
    share = batch_size // world
    part = slice(rank * share, (rank + 1) * share) if world > 1 else None
    device = data.device
    net = model.net
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    if fabric is not None:
        wrapped, opt = fabric.setup(net, opt)
        model.net = wrapped  # the loss runs through the wrapper, so gradients are averaged over processes
    gen = torch.Generator(device=device).manual_seed(seed)
    idx_gen = torch.Generator().manual_seed(seed)
    state: dict[str, Any] = {"model": model.net, "optimizer": opt, "step": 0, "losses": [], "running": 0.0}
    if checkpointer is not None:
        state.update(gen=gen.get_state(), idx_gen=idx_gen.get_state())
        checkpointer.resume(resume, state, fabric)
        gen.set_state(state["gen"])
        idx_gen.set_state(state["idx_gen"])
    first, losses, running = int(state["step"]), list(state["losses"]), float(state["running"])
    model.train()
    synchronize(device.type)
    start = time.perf_counter()
    try:
        for step in progress(range(first + 1, steps + 1), desc=f"train {tag}".rstrip("/ "), unit="step"):
            idx = torch.randint(0, data.shape[0], (batch_size,), generator=idx_gen)
            loss = model.loss(data[idx.to(device)], generator=gen, part=part)
            opt.zero_grad(set_to_none=True)
            if fabric is not None:
                fabric.backward(loss)
            else:
                loss.backward()
            opt.step()
            running += loss.item()
            if step % log_every == 0 or step == steps:
                n = log_every if step % log_every == 0 else step % log_every
                mean = running / n if fabric is None else _mean_over_processes(fabric, running / n)
                losses.append(mean)
                if logger is not None:
                    logger.log({f"{tag}loss": mean}, step=step)
                running = 0.0
            if checkpointer is not None:
                state.update(step=step, losses=losses, running=running, gen=gen.get_state())
                state["idx_gen"] = idx_gen.get_state()
                if checkpointer.maybe_save(state, fabric) is None and step == steps:
                    checkpointer.save(state, fabric)  # the end, so a resumed run goes straight to sampling
    finally:
        model.net = net
    synchronize(device.type)
    seconds = time.perf_counter() - start
    model.eval()
    trained = steps - first  # fewer than `steps` when resumed
    return TrainStats(steps=trained, seconds=seconds, final_loss=losses[-1], losses=losses)


def _mean_over_processes(fabric: Any, value: float) -> float:
    from iclr25.shared.fabric import all_reduce_mean

    return all_reduce_mean(fabric, value)


def sample_batched(
    model: DynamicalDiffusion,
    cond: Tensor,
    n_frames: int,
    n_samples: int,
    ddim_steps: int,
    seed: int = 0,
    clip_x0: float | None = None,
    chunk: int = 256,
) -> tuple[Tensor, float]:
    """Sample (n_samples, B, S, C, *sp) in chunks of test cases; returns samples and seconds taken."""
    gen = torch.Generator(device=cond.device).manual_seed(seed)
    out = []
    synchronize(cond.device.type)
    start = time.perf_counter()
    for i in range(0, cond.shape[0], chunk):
        out.append(model.sample(cond[i : i + chunk], n_frames, n_samples, ddim_steps, clip_x0=clip_x0, generator=gen))
    synchronize(cond.device.type)
    return torch.cat(out, dim=1), time.perf_counter() - start


def evaluate(samples: Tensor, truth: Tensor, n_context: int) -> dict[str, Any]:
    """Metrics on the future frames: fair CRPS, ensemble-mean MSE, official RMSE, CRPS per lead time."""
    ens, y = samples[:, :, n_context:].float().cpu(), truth[:, n_context:].float().cpu()
    per_lead = crps_pwm_map(ens, y).flatten(2).mean(-1).mean(0)  # (S_out,)
    return {
        "crps": float(crps_pwm(ens, y)),
        "ens_mse": float(ensemble_mse(ens, y)),
        "official_rmse": float(official_rmse(ens, y).mean()),
        "crps_per_lead": [float(v) for v in per_lead],
        "max_abs_sample": float(ens.abs().max()),
    }
