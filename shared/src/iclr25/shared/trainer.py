"""`make_trainer`: a Lightning Trainer with this project's defaults, and `fit`, which always finishes wandb.

Defaults: everything goes into the run folder (never the current directory); CSV logs always, wandb
when asked; a progress bar only on a terminal; seeded, deterministic on CPU and "warn" on CUDA; bf16
mixed precision where the GPU supports it; one device unless asked for more (`devices`, `num_nodes`, `strategy`:
the `--devices/--num-nodes/--strategy` of `iclr25.shared.fabric.ScaleOut`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from iclr25.shared.device import configure_torch, pick_device, pick_precision
from iclr25.shared.logging import finish_wandb, make_loggers
from iclr25.shared.seed import seed_everything


def make_trainer(
    run_dir: str | Path,
    *,
    max_epochs: int | None = None,
    max_steps: int = -1,
    device: str = "auto",
    precision: str | None = None,
    wandb: str | None = "off",
    project: str = "iclr25",
    run_name: str | None = None,
    config: dict[str, Any] | None = None,
    seed: int | None = 0,
    threads: int | None = None,
    checkpoint: bool = False,
    checkpoint_every: int = 0,
    progress_bar: bool | None = None,
    callbacks: list[Any] | None = None,
    devices: int | str = 1,
    num_nodes: int = 1,
    strategy: str = "auto",
    **trainer_kwargs: Any,
) -> Any:
    """Build a `lightning.Trainer` writing only into `run_dir` (see module docstring for defaults).

    `checkpoint`: `<run_dir>/checkpoints/last.ckpt` (resume with `ckpt_path`), written at epoch ends and, with
    `checkpoint_every` > 0, every that many optimizer steps. `devices` ("auto": every GPU) processes per node on
    `num_nodes` nodes; several processes use DDP unless `strategy` says otherwise."""
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    accelerator = pick_device(device)
    configure_torch(accelerator, threads)  # CPU: `threads` intra-op threads (default: every core)
    if seed is not None:
        seed_everything(seed)
    if progress_bar is None:
        progress_bar = sys.stderr.isatty() and not os.environ.get("CI")
    if devices != "auto" and (isinstance(devices, bool) or not isinstance(devices, int) or devices < 1):
        raise ValueError(f"devices must be an integer >= 1 or 'auto', got {devices!r}")
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be an integer >= 1, got {num_nodes!r}")
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 0:
        raise ValueError(f"checkpoint_every must be an integer >= 0, got {checkpoint_every!r}")
    if strategy == "auto" and (devices == "auto" or devices > 1 or num_nodes > 1):
        strategy = "ddp"
    callbacks = list(callbacks or [])
    if checkpoint:
        every = {"every_n_train_steps": checkpoint_every} if checkpoint_every else {}
        callbacks.append(ModelCheckpoint(dirpath=run_dir / "checkpoints", save_last=True, **every))
    trainer_kwargs.setdefault("deterministic", "warn" if accelerator == "cuda" else True)
    return L.Trainer(
        default_root_dir=run_dir,
        accelerator="gpu" if accelerator == "cuda" else accelerator,
        devices=devices,
        num_nodes=num_nodes,
        strategy=strategy,
        precision=precision or pick_precision(accelerator),
        max_epochs=max_epochs,
        max_steps=max_steps,
        logger=make_loggers(run_dir, wandb=wandb, project=project, name=run_name, config=config),
        callbacks=callbacks,
        enable_checkpointing=checkpoint,
        enable_progress_bar=progress_bar,
        enable_model_summary=False,
        **trainer_kwargs,
    )


def fit(trainer: Any, module: Any, *args: Any, **kwargs: Any) -> Any:
    """`trainer.fit(...)`, then always close wandb, even when training raised.

    Lightning answers Ctrl-C with `sys.exit(1)`, the code of "a gated claim fails"; it becomes a
    KeyboardInterrupt again, so the run is marked interrupted and the CLI exits 130.
    """
    import signal

    try:
        return trainer.fit(module, *args, **kwargs)
    except SystemExit as e:
        if trainer.interrupted:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # Lightning ignores further Ctrl-C
            raise KeyboardInterrupt from e
        raise
    finally:
        finish_wandb()
